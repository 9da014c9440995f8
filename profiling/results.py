"""Typed results at the seams: one profiled kernel, the run it belongs to, and results.json."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .catalogue import CATALOGUE, derive_all
from .errors import InputError

SCHEMA_VERSION = 1
SUPPORTED_SCHEMAS = (1,)


@dataclass(frozen=True)
class MetricValue:
    """A metric of one kernel: its value in the catalogue's unit, or why it is missing."""

    key: str
    value: float | None
    unit: str
    missing_reason: str | None = None

    @property
    def available(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class KernelResult:
    """One profiled kernel launch."""

    kernel: str  # demangled name
    family: str | None = None  # from the memlens NVTX range; None for a plain ncu report
    variant: str | None = None
    launch_id: int = 0  # ncu's ID of the launch, unique within a report
    raw: dict[str, float | None] = field(default_factory=dict)  # catalogue key -> value
    missing: dict[str, str] = field(default_factory=dict)  # catalogue key -> reason

    @property
    def label(self) -> str:
        """family/variant for suite kernels, the kernel name otherwise."""
        if self.family and self.variant:
            return f"{self.family}/{self.variant}"
        return self.kernel

    def values(self) -> dict[str, float | None]:
        """Raw and derived figures by catalogue key."""
        return {**self.raw, **derive_all(self.raw)}

    def metric(self, key: str) -> MetricValue:
        metric = CATALOGUE[key]
        value = self.values().get(key)
        if value is not None and math.isfinite(value):
            return MetricValue(key, value, metric.unit)
        return MetricValue(key, None, metric.unit, self.missing_reason(key))

    def missing_reason(self, key: str) -> str:
        metric = CATALOGUE[key]
        if key in self.missing:
            return self.missing[key]
        if metric.ncu is None:  # derived: name the first missing input, through derived inputs too
            values = self.values()
            for other in CATALOGUE.values():
                if other.key != key and re.search(rf"\b{other.key}\b", metric.formula) and values.get(other.key) is None:
                    return f"needs {other.key}: {self.missing_reason(other.key)}"
            return "an input is zero or missing"
        return "not in the report"


@dataclass(frozen=True)
class Expectation:
    """A variant's declared expectation (the suite's `Expect`), carried into results.json."""

    bank_conflicts: bool | None = None  # exact excess shared wavefronts > 0
    local_memory: bool | None = None  # local-memory load or store traffic > 0
    note: str = ""  # the expectation in words


@dataclass(frozen=True)
class VariantOutcome:
    """What happened to one suite variant during a profile run."""

    family: str
    variant: str
    status: str  # "ok", "wrong" (output differs from reference), "failed" (raised), "not_run"
    message: str = ""
    demonstrates: str = ""  # the suite's one line on what the variant shows
    expect: Expectation | None = None  # None in results written before the field existed
    baseline: bool = False  # the family's baseline, the variant others are compared with

    def __post_init__(self) -> None:
        if isinstance(self.expect, dict):  # as the runner and results.json give it
            object.__setattr__(self, "expect", Expectation(**self.expect))
        elif self.expect is not None and not isinstance(self.expect, Expectation):
            raise TypeError(f"expect must be an object, not {type(self.expect).__name__}")


@dataclass(frozen=True)
class RunInfo:
    """Where and how a run was made."""

    gpu_name: str | None = None
    compute_capability: str | None = None
    driver_version: str | None = None
    ncu_version: str | None = None
    clock_control: str | None = None
    cache_control: str | None = None
    fast: bool = False
    command: str | None = None
    started_at: str | None = None  # ISO 8601
    wall_seconds: float | None = None
    suite: str | None = None
    suite_commit: str | None = None
    memlens_version: str | None = None
    source: str | None = None  # the report file the kernels were read from


@dataclass(frozen=True)
class RunResults:
    info: RunInfo
    kernels: tuple[KernelResult, ...]
    outcomes: tuple[VariantOutcome, ...] = ()
    complete: bool = True  # False when the run stopped before every variant ran

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "info": asdict(self.info),
            "complete": self.complete,
            "outcomes": [asdict(o) for o in self.outcomes],
            "kernels": [asdict(k) for k in self.kernels],
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "results.json") -> RunResults:
        if not isinstance(data, dict):
            raise InputError(f"{source}: not a memlens results object")
        version = data.get("schema_version")
        if version not in SUPPORTED_SCHEMAS:
            raise InputError(
                f"{source}: unsupported schema_version {version!r} (this memlens reads {SUPPORTED_SCHEMAS})"
            )
        try:
            info = RunInfo(**data["info"])
            kernels = tuple(_kernel_from_json(k) for k in data["kernels"])
            outcomes = tuple(VariantOutcome(**o) for o in data.get("outcomes", []))
            complete = bool(data.get("complete", True))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{source}: malformed results ({exc})") from None
        return cls(info, kernels, outcomes, complete)


def _kernel_from_json(data: dict[str, Any]) -> KernelResult:
    raw = {str(k): (None if v is None else float(v)) for k, v in data.get("raw", {}).items()}
    unknown = set(raw) - set(CATALOGUE)
    if unknown:
        raise ValueError(f"unknown metric keys {sorted(unknown)}")
    return KernelResult(
        kernel=str(data["kernel"]),
        family=data.get("family"),
        variant=data.get("variant"),
        launch_id=int(data.get("launch_id", 0)),
        raw=raw,
        missing={str(k): str(v) for k, v in data.get("missing", {}).items()},
    )


def load_results(path: Path) -> RunResults:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    return RunResults.from_json(data, str(path))
