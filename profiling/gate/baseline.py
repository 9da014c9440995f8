"""Baselines: the figures of one run saved to compare later runs with (`max_regression` rules).

A baseline is a versioned JSON file::

    {"kind": "memlens-baseline", "schema_version": 1, "created_at": "...", "source": "runs/x/results.json",
     "measurements": "profile",                 # or "static" (from `memlens check --json`)
     "environment": {"gpu_name": "NVIDIA H200", "compute_capability": "9.0", "driver_version": "580.159.04",
                     "ncu_version": "2025.3.1.0", "clock_control": "base", "arch": null, "compiler": null},
     "kernels": [{"key": "transpose/padded", "kernel": "transpose_padded",
                  "values": {"duration": 321000.0, "exact_excess_wavefronts": 0.0, ...},
                  "lines": [{"file": "kernels/transpose.cu", "line": 40, "source": "out[...] = tile[...];",
                             "excess_wavefronts_ld": 0.0, "excess_wavefronts_st": null,
                             "local_ld": null, "local_st": null}, ...]}]}

`lines` (where the run has per-instruction values) are the kernel's source lines with their code, so
line rules (`line_excess_wavefronts`, `line_local_accesses`) compare with them with no old report.
`key` is the kernel's label ("family/variant", or the kernel name in a plain report), with "#2",
"#3" for later launches of the same label. Counters do not carry from one GPU model to another,
so gating against a baseline of another GPU (or compute capability, or static target) is refused
unless the user allows it; other differences (driver, ncu, clock control) become notes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memlens.errors import ConfigError, InputError
from memlens.gate.evaluate import Environment, Kind, Measurements
from memlens.io.files import Output, read_json, write_json_output
from memlens.model.catalogue import CATALOGUE
from memlens.model.json_kinds import wrong_kind
from memlens.model.line_compare import SourceLine
from memlens.model.run_layout import input_files
from memlens.static.check import STATIC_METRICS

KIND = "memlens-baseline"
WANT_BASELINE = "a memlens baseline (write one with `memlens baseline save RUN -o FILE`)"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Baseline:
    measurements: Kind
    environment: Environment
    source: str
    created_at: str
    kernels: dict[str, str] = field(default_factory=dict)  # subject key -> kernel name
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # subject key -> metric key -> value
    lines: dict[str, tuple[SourceLine, ...]] = field(default_factory=dict)  # subject key -> its source lines

    def value(self, subject_key: str, metric_key: str) -> float | None:
        return self.values.get(subject_key, {}).get(metric_key)

    def has_kernel(self, subject_key: str) -> bool:
        """Whether the baseline holds the kernel at all (with or without the figure a rule asks for)."""
        return subject_key in self.values or subject_key in self.kernels or subject_key in self.lines

    def lines_of(self, subject_key: str) -> tuple[SourceLine, ...] | None:
        """The kernel's source lines with their code; None where the baseline has none for it."""
        return self.lines.get(subject_key)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "created_at": self.created_at,
            "source": self.source,
            "measurements": self.measurements,
            "environment": asdict(self.environment),
            "kernels": [
                {
                    "key": key,
                    "kernel": self.kernels.get(key, ""),
                    "values": values,
                    **({"lines": [line.to_json() for line in self.lines[key]]} if key in self.lines else {}),
                }
                for key, values in self.values.items()
            ],
        }


def from_measurements(measurements: Measurements, created_at: str | None = None) -> Baseline:
    """Every available figure of every kernel (catalogue keys, or static keys for a static check)."""
    keys = list(STATIC_METRICS if measurements.kind == "static" else CATALOGUE)
    values: dict[str, dict[str, float]] = {}
    kernels: dict[str, str] = {}
    for subject in measurements.subjects:
        figures = {key: subject.measured.metric(key).value for key in keys}
        values[subject.key] = {key: value for key, value in figures.items() if value is not None}
        kernels[subject.key] = str(getattr(subject.measured, "kernel", ""))
    lines = {key: found.lines for key, found in (measurements.lines or {}).items()}
    stamp = created_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    return Baseline(measurements.kind, measurements.environment, measurements.source, stamp, kernels, values, lines)


def save_baseline(baseline: Baseline, path: str | Path, inputs: Sequence[Path] = ()) -> Output:
    """Write atomically (see fileio.write_output); never over an input (`inputs`, the run's source)
    nor a raw profiler report. A folder (`path` ending in /) gets `baseline_name(baseline)`."""
    return write_json_output(
        path,
        baseline.to_json(),
        inputs=[*inputs, *input_files(baseline.source or None)],
        default_name=baseline_name(baseline),
    )


def baseline_name(baseline: Baseline) -> str:
    """The baseline's file name in a folder: `<gpu slug>.json`, as `baseline_for` looks it up, or
    `<arch>.json` for a static check's."""
    environment = baseline.environment
    return f"{gpu_slug(environment.gpu_name or environment.arch or 'baseline') or 'baseline'}.json"


def load_baseline(path: Path) -> Baseline:
    data = read_json(path, what="baseline")
    wrong = wrong_kind(str(path), data, ("kind", KIND), WANT_BASELINE)
    if wrong is not None:
        raise wrong
    if data.get("schema_version") != SCHEMA_VERSION:
        raise InputError(
            f"{path}: unsupported baseline schema_version {data.get('schema_version')!r}"
            f" (this memlens reads {SCHEMA_VERSION})"
        )
    try:
        known = {f.name for f in fields(Environment)}
        environment = Environment(**{k: v for k, v in data["environment"].items() if k in known})
        kernels = {str(k["key"]): str(k.get("kernel", "")) for k in data["kernels"]}
        values = {str(k["key"]): {str(m): float(v) for m, v in k["values"].items()} for k in data["kernels"]}
        lines = {
            str(k["key"]): tuple(SourceLine.from_json(line) for line in k["lines"])
            for k in data["kernels"]
            if k.get("lines") is not None
        }
        kind = data["measurements"]
        if kind not in ("profile", "static"):
            raise ValueError(f"measurements {kind!r}")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{path}: malformed baseline ({exc})") from None
    return Baseline(
        kind, environment, str(data.get("source", "")), str(data.get("created_at", "")), kernels, values, lines
    )


def gpu_slug(gpu_name: str) -> str:
    """A GPU model as a file name: "NVIDIA H100 80GB HBM3" -> "nvidia_h100_80gb_hbm3"."""
    return re.sub(r"[^a-z0-9]+", "_", gpu_name.lower()).strip("_")


def baseline_for(folder: Path, environment: Environment) -> Path:
    """`<folder>/<gpu slug>.json`, the baseline of the run's GPU model; ConfigError (one line, exit 2)
    naming what was looked for where the run names no GPU or the folder has no baseline for it."""
    if not folder.is_dir():
        raise ConfigError(f"--baseline-dir {folder}: not a folder")
    if not environment.gpu_name:
        raise ConfigError(f"--baseline-dir {folder}: the run does not name its GPU; pass --baseline FILE")
    path = folder / f"{gpu_slug(environment.gpu_name)}.json"
    if not path.is_file():
        have = ", ".join(sorted(p.name for p in folder.glob("*.json"))) or "none"
        raise ConfigError(
            f"--baseline-dir {folder}: no baseline for {environment.gpu_name} ({path.name}; there: {have})"
        )
    return path


def compatibility(baseline: Baseline, measurements: Measurements, allow_mismatch: bool = False) -> list[str]:
    """Notes on how the run differs from the baseline; ConfigError when the two cannot be compared
    (another GPU model, compute capability or static target) and `allow_mismatch` is False."""
    if baseline.measurements != measurements.kind:
        raise ConfigError(
            f"the baseline holds {baseline.measurements} figures and the run {measurements.kind} figures:"
            " save a baseline from the same kind of results"
        )
    before, now = baseline.environment, measurements.environment
    blocking = ["gpu_name", "compute_capability"] if measurements.kind == "profile" else ["arch"]
    notes = []
    for name in blocking:
        old, new = getattr(before, name), getattr(now, name)
        if old is None or new is None or old != new:
            what = f"baseline {name} {old or 'unknown'}, run {new or 'unknown'}"
            if not allow_mismatch:
                raise ConfigError(
                    f"{what}: counters do not compare across them (pass --allow-mismatch to compare anyway)"
                )
            notes.append(f"{what}: compared anyway (--allow-mismatch)")
    for name in ("driver_version", "ncu_version", "clock_control", "compiler"):
        old, new = getattr(before, name), getattr(now, name)
        if old != new and (old or new):
            notes.append(f"baseline {name} {old or 'unknown'}, run {new or 'unknown'}")
    return notes
