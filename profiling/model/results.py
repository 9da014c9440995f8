"""Typed results at the seams: one profiled kernel, the run it belongs to, and results.json."""

from __future__ import annotations

import functools
import json
import math
import numbers
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from memlens.errors import ConfigError, InputError, SetupError
from memlens.io.files import read_json
from memlens.io.safe_text import neutral
from memlens.model.catalogue import CATALOGUE, RETIRED_KEYS, derive_all
from memlens.model.instruction_table import InstructionRecord, with_kind_totals
from memlens.model.json_kinds import WANT_RESULTS, wrong_kind
from memlens.model.json_types import describe_type, fits
from memlens.model.kernel_names import kernel_label
from memlens.model.libraries import Library, library_of
from memlens.model.ncu_settings import NcuSettings
from memlens.model.run_layout import RESULTS, Provenance

# 2: kernels carry their shared- and local-memory `instructions`, outcomes their declared `sources`
# 3: info's `ncu_settings` for 2's `clock_control`, `cache_control`, `fast`; `memlens_command` for `command`
SCHEMA_VERSION = 3
SUPPORTED_SCHEMAS = (1, 2, 3)

# A derived metric -> the other catalogue keys its formula names, in order (missing_reason names the first missing)
_FORMULA_INPUTS: dict[str, tuple[str, ...]] = {
    metric.key: tuple(
        other.key
        for other in CATALOGUE.values()
        if other.key != metric.key and re.search(rf"\b{other.key}\b", metric.formula)
    )
    for metric in CATALOGUE.values()
    if metric.ncu is None
}


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


IDENTITY = ("label", "kernel", "family", "variant", "nvtx", "launch_id")  # KernelResult.identity()


@dataclass(frozen=True)
class KernelResult:
    """One profiled kernel launch."""

    kernel: str  # demangled name
    family: str | None = None  # from the memlens NVTX range; None for a plain ncu report
    variant: str | None = None
    launch_id: int = 0  # ncu's ID of the launch, unique within a report
    raw: dict[str, float | None] = field(default_factory=dict)  # catalogue key -> value
    missing: dict[str, str] = field(default_factory=dict)  # catalogue key -> reason
    # its shared- and local-memory SASS instructions (source_lines.py); empty where not read
    instructions: tuple[InstructionRecord, ...] = ()
    gpu_index: int | None = None  # the GPU that ran it (nvidia-smi's index), where memlens chose one (--gpus)
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    # A program's NVTX push/pop ranges open at the launch ("iteration > transpose/conflict", see
    # readers.common.program_label); None for suite runs and launches outside any range.
    nvtx: str | None = None
    # The size a sweep ran it at (--sweep FAMILY.NAME=V1,V2: its variant "variant@NAME=VALUE"); None: not written
    sweep_size: str | None = None
    sweep_value: int | None = None
    # How many times the memlens.range enclosing it ran in the program (program_run.range_runs): set beside
    # one profiled launch of many (--launches first); None where unknown, and then not written
    range_runs: int | None = None
    # The process that launched it, numbered in the order ncu connected to the program's processes
    # (RunInfo.processes), where a program run had more than one; None otherwise, and then not written
    process: int | None = None

    @property
    def label(self) -> str:
        """family/variant for suite kernels and "family/variant" ranges, else the program's NVTX
        range path, else the kernel name (a Numba kernel's function name, so a CSV and a .ncu-rep of
        one run give one label)."""
        if self.family and self.variant:
            return f"{self.family}/{self.variant}" + self._process_suffix
        return (self.nvtx or kernel_label(self.kernel)) + self._process_suffix

    @property
    def _process_suffix(self) -> str:
        return f" (process {self.process})" if self.process is not None else ""

    def identity(self) -> dict[str, Any]:
        """Which launch this is, the fields IDENTITY names: what every table, CSV and JSON of kernels starts with."""
        return {
            "label": self.label,
            "kernel": self.kernel,
            "family": self.family,
            "variant": self.variant,
            "nvtx": self.nvtx,
            "launch_id": self.launch_id,
        }

    @cached_property
    def library(self) -> Library | None:
        """The library whose kernel this is (cuBLAS, ...; model/libraries.py), by its name and the files its
        instructions name; None for the user's own."""
        return library_of(self.kernel, (record.file for record in self.instructions if record.file))

    def values(self) -> dict[str, float | None]:
        """Raw and derived figures by catalogue key."""
        return dict(self._values)

    def value(self, key: str) -> float | None:
        """metric(key).value, without making the MetricValue: what a table of thousands of kernels asks."""
        if key not in CATALOGUE:
            raise KeyError(key)
        value = self._values.get(key)
        return value if value is not None and math.isfinite(value) else None

    def metric(self, key: str) -> MetricValue:
        cached = self._metrics.get(key)
        if cached is None:
            unit, value = CATALOGUE[key].unit, self.value(key)
            if value is not None:
                cached = MetricValue(key, value, unit)
            else:
                cached = MetricValue(key, None, unit, self.missing_reason(key))
            self._metrics[key] = cached
        return cached

    def missing_reason(self, key: str) -> str:
        reason = self._reasons.get(key)
        if reason is None:
            reason = self._reasons[key] = self._find_missing_reason(key)
        return reason

    def _find_missing_reason(self, key: str) -> str:
        metric = CATALOGUE[key]
        if key in self.missing:
            return self.missing[key]
        if metric.ncu is None:  # derived: name the first missing input, through derived inputs too
            values = self._values
            for other in _FORMULA_INPUTS[key]:
                if values.get(other) is None:
                    return f"needs {CATALOGUE[other].ncu or other}: {self.missing_reason(other)}"
            reason = metric.na_reason(values) if metric.na_reason else None
            return reason or "an input is zero or missing"
        return "not in the report"

    # Caches, computed once per kernel on first use (`raw` and `missing` never change): cached_property stores
    # into __dict__, which works on a frozen dataclass; fields, equality, repr and asdict do not see it.
    @cached_property
    def _values(self) -> dict[str, float | None]:
        derived = derive_all(self.raw)
        # an older results.json stored some ratios (n-ways) as values, without the sums they derive from now
        kept = {key: value for key, value in derived.items() if value is not None or self.raw.get(key) is None}
        return {**self.raw, **kept}

    @cached_property
    def _metrics(self) -> dict[str, MetricValue]:
        return {}

    @cached_property
    def _reasons(self) -> dict[str, str]:
        return {}


PaperFigure = Callable[[Mapping[str, int]], int]  # a figure on paper as a function of the size


def _check_paper_figure(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"Expect: {what} is {value!r}, not a count (an int >= 0)")


@dataclass(frozen=True)
class Expect:
    """What memlens should measure for a variant, as a suite declares it (`from memlens import Expect`)
    and as results.json carries it (with `note` filled in by `described`)."""

    bank_conflicts: bool | None = None  # exact excess shared wavefronts > 0
    local_memory: bool | None = None  # local-memory load or store traffic > 0
    note: str = ""  # the expectation in words, e.g. "shared loads: 32-way conflict"
    # The exact excess shared wavefronts on paper (profiling/theory/bank_model.py, or by hand): a number or,
    # in a suite, a function of the size (the family's sizes by name) that `at_size` evaluates;
    # results.json records the number at the size the variant ran.
    excess_wavefronts: int | PaperFigure | None = None

    def __post_init__(self) -> None:
        figure = self.excess_wavefronts
        if figure is not None and not callable(figure):
            _check_paper_figure(figure, "excess_wavefronts")
            object.__setattr__(self, "excess_wavefronts", int(figure))

    def at_size(self, size: Mapping[str, int]) -> Expect:
        """This expectation with its paper figure as a number at `size`."""
        figure = self.excess_wavefronts
        if not callable(figure):
            return self
        value = figure(size)
        _check_paper_figure(value, f"excess_wavefronts({dict(size)})")
        return replace(self, excess_wavefronts=int(value))

    def describe(self) -> str:
        if self.note:
            return self.note
        parts = []
        if self.bank_conflicts is not None:
            parts.append("bank conflicts" if self.bank_conflicts else "no bank conflicts")
        if self.local_memory is not None:
            parts.append("local memory" if self.local_memory else "no local memory")
        return ", ".join(parts) or "no expectation declared"

    def described(self) -> Expect:
        """This expectation with its words in `note`, as results.json records it."""
        return replace(self, note=self.describe())


@dataclass(frozen=True)
class VariantOutcome:
    """What happened to one suite variant during a profile run."""

    family: str
    variant: str
    status: str  # "ok", "wrong" (output differs from reference), "failed" (raised), "not_run", "skipped" (GPU too old)
    message: str = ""
    demonstrates: str = ""  # the suite's one line on what the variant shows
    expect: Expect | None = None  # None in results written before the field existed
    baseline: bool = False  # the family's baseline, the variant others are compared with
    sources: tuple[str, ...] = ()  # the CUDA C++ files its declared kernels come from, as declared
    gpu_index: int | None = None  # the GPU it ran on, where memlens chose one (--gpus)
    # Where it ran, for runs shared out over GPUs (--gpus, --cluster): None otherwise, and then not written
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    host: str | None = None
    driver_version: str | None = None
    ncu_version: str | None = None

    def __post_init__(self) -> None:
        if self.expect is not None and not isinstance(self.expect, Expect):
            raise TypeError(f"expect must be an object, not {type(self.expect).__name__}")


@dataclass(frozen=True)
class RunInfo(Provenance):
    """Where and how a profile run was made: the provenance every run has, and profile's own."""

    compute_capability: str | None = None
    ncu_version: str | None = None
    ncu_settings: NcuSettings | None = None  # how ncu ran; None: read from a raw report, which does not say
    source: str | None = None  # the report file the kernels were read from
    # A program run's launch sampling (launch_sampling.py): "first", "N" or "all", the warm-up launches
    # left out of each kernel, and what is known of the launches each profiled one stands for
    launches: str | None = None
    warm_up: int | None = None
    launch_counts: str | None = None
    ranges_not_profiled: dict[str, int] | None = None  # memlens.range paths that ran -> runs; none profiled in them
    # the --nvtx-include filters of a second pass over the counted ranges the first left without a profiled
    # launch, selecting them by name (launch_sampling.py, "Ranges"); None: no second pass
    ranges_second_pass: str | None = None
    # A program run's NVTX selection: ncu's --nvtx-push-pop-scope ("process": every thread's launches, or
    # "thread"), what its filters selected (a line: the program's own ranges, or every range where it
    # opened none of its own, ...), and the processes ncu connected to ("PID (NAME)" -> number)
    push_pop_scope: str | None = None
    ranges_selected: str | None = None
    processes: dict[str, int] | None = None
    # The GPU's roofline ceilings (profiling/model/roofline.py): medians over the run's kernels of ncu's figures
    peak_flops_fp32: float | None = None  # FLOP/s
    peak_flops_fp64: float | None = None
    peak_flops_fp16: float | None = None
    peak_dram_bandwidth: float | None = None  # byte/s
    # The tensor-core roofs its kernels were placed on (roofline.TensorRoof.key, e.g. "peak_tensor_hgmma_bf16")
    # -> FLOP/s, the median over them; None where none was (and in results written before issue 45)
    peak_tensor_flops: dict[str, float] | None = None


@dataclass(frozen=True)
class RunResults:
    info: RunInfo
    kernels: tuple[KernelResult, ...]
    outcomes: tuple[VariantOutcome, ...] = ()
    complete: bool = True  # False when profiling was cut short (timeout, Ctrl-C, ncu failed) or measured nothing
    # file name (as the report names it) -> text of the sources the run kept: those a .ncu-rep embeds
    # (ncu --import-source yes), or those memlens kept at the end of its run (results.json "sources")
    embedded_sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    # when the file read was written (seconds since the epoch; None: not read from a file): a source
    # file on disk changed after it no longer holds the code that ran
    written_at: float | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        data = {
            "schema_version": SCHEMA_VERSION,
            "info": asdict(self.info),
            "complete": self.complete,
            "outcomes": [_outcome_json(o) for o in self.outcomes],
            "kernels": [_kernel_json(k) for k in self.kernels],
        }
        if self.embedded_sources:  # optional: the code as it ran, for the files the kernels' lines name
            data["sources"] = dict(self.embedded_sources)
        return data

    def dataframe(self) -> Any:
        """One row per launch: label, kernel, family, variant, nvtx, launch_id, then every catalogue
        figure in its catalogue unit, the column named `key (unit)` as `memlens metrics --csv` names it
        (`duration (ns)`; NaN where missing); `.attrs["units"]` and `.attrs["keys"]` give each column's
        unit and catalogue key. Needs pandas (the `pandas` extra)."""
        try:
            import pandas
        except ImportError as exc:
            raise SetupError(f'a DataFrame needs pandas ({exc}): pip install "memlens[pandas]"') from None
        named = {key: metric.column for key, metric in CATALOGUE.items()}  # as `metrics --csv` names them
        rows = [{**k.identity(), **{named[key]: k.value(key) for key in CATALOGUE}} for k in self.kernels]
        frame = pandas.DataFrame(rows, columns=[*IDENTITY, *named.values()])
        frame.attrs["units"] = {named[key]: metric.unit for key, metric in CATALOGUE.items()}
        frame.attrs["keys"] = {column: key for key, column in named.items()}  # column -> catalogue key
        return frame

    @classmethod
    def from_json(cls, data: Any, source: str = RESULTS) -> RunResults:
        wrong = wrong_kind(source, data, None, WANT_RESULTS)
        if wrong is not None:
            raise wrong
        version = data.get("schema_version")
        if type(version) is not int or version not in SUPPORTED_SCHEMAS:
            readable = ", ".join(map(str, SUPPORTED_SCHEMAS))
            raise InputError(f"{source}: unsupported schema_version {version!r} (this memlens reads {readable})")
        try:
            info = _info_from_json(data.get("info"))
            kernels = tuple(_kernel_from_json(k, f"kernels[{i}]") for i, k in enumerate(_list(data, "kernels")))
            outcomes = tuple(_outcome_from_json(o, f"outcomes[{i}]") for i, o in enumerate(_list(data, "outcomes", [])))
            complete = data.get("complete", True)
            if not isinstance(complete, bool):
                raise ValueError(f"complete must be true or false, not {_short(complete)}")
            sources = data.get("sources", {})
            if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
                raise ValueError("sources must map file names to their text")
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{source}: malformed results ({exc})") from None
        kept = {printable(name): printable(text) for name, text in sources.items()}
        return cls(info, kernels, outcomes, complete, embedded_sources=kept)


WHERE_FIELDS = ("gpu_name", "gpu_uuid", "host", "driver_version", "ncu_version")  # VariantOutcome's, optional


def _outcome_json(outcome: VariantOutcome) -> dict[str, Any]:
    data = asdict(outcome)
    for key in WHERE_FIELDS:
        if data[key] is None:
            del data[key]  # a run on one GPU: results.json as before these fields
    return data


def _kernel_json(kernel: KernelResult) -> dict[str, Any]:
    data = asdict(kernel)
    if kernel.sweep_size is None and kernel.sweep_value is None:
        del data["sweep_size"], data["sweep_value"]  # a run without sweeps: results.json as before them
    if kernel.range_runs is None:
        del data["range_runs"]
    if kernel.process is None:
        del data["process"]
    if kernel.library is not None:  # written for readers of the file; memlens derives it again on reading
        data["library"] = kernel.library.name
    return data


# --- reading results.json: every field checked against its type, so nothing odd gets further ----

STATUSES = ("ok", "wrong", "failed", "not_run", "skipped")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with control characters other than tab and newline (ESC and the like, which could
    drive a terminal) replaced by U+FFFD, and bidirectional controls (U+202E, which would reverse
    the text around it) shown as their codes: for names and messages read from files."""
    return neutral(_CONTROL.sub("\ufffd", text))


def _short(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (dict, list, str)) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _list(data: dict[str, Any], key: str, default: list[Any] | None = None) -> list[Any]:
    if key not in data and default is not None:
        return default
    value = data.get(key)
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list, not {_short(value)}")
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _checked(cls: type, data: Any, where: str, nested: tuple[str, ...] = ()) -> dict[str, Any]:
    """`data` as keyword arguments of the dataclass `cls`, each field of a plain type checked
    (`nested` names the fields the caller checks); ValueError naming the first bad field. Kept rather
    than msgspec or pydantic (tests/benchmarks/handwritten_vs_libraries.py, the H200 suite's results.json:
    6.8-7.8 ms here, 0.5-1.2 ms there): both take a NaN and an unknown field without a word, which
    results.json must refuse; refusing them needs msgspec Structs for the model's dataclasses."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object, not {_short(data)}")
    hints = _hints(cls)
    for key, value in data.items():
        if key not in hints:
            raise ValueError(f"{where}: unknown field {key!r}")
        if key not in nested and not fits(value, hints[key]):
            raise ValueError(f"{where}.{key} must be {describe_type(hints[key])}, not {_short(value)}")
    return {key: printable(value) if isinstance(value, str) else value for key, value in data.items()}


_SCHEMA_2_SETTINGS = ("clock_control", "cache_control", "fast")  # info's, before ncu_settings held them


def _info_from_json(data: Any) -> RunInfo:
    """results.json's info; schema 2's flat `clock_control`, `cache_control` and `fast` read into its
    `ncu_settings`, its `command` as `memlens_command`."""
    if isinstance(data, dict) and "command" in data and "memlens_command" not in data:
        data = {("memlens_command" if key == "command" else key): value for key, value in data.items()}
    if isinstance(data, dict) and any(key in data for key in _SCHEMA_2_SETTINGS):
        data = dict(data)
        old = {key: data.pop(key) for key in _SCHEMA_2_SETTINGS if key in data}
        if "ncu_settings" not in data and (old.get("clock_control") or old.get("cache_control")):
            data["ncu_settings"] = {key: value for key, value in old.items() if value is not None}
    fields = _checked(RunInfo, data, "info", nested=("ncu_settings",))
    if fields.get("ncu_settings") is not None:
        settings = _checked(NcuSettings, fields["ncu_settings"], "info.ncu_settings")
        try:
            fields["ncu_settings"] = NcuSettings(**settings)
        except ConfigError as exc:
            raise ValueError(f"info.ncu_settings: {exc}") from None
    return RunInfo(**fields)


def _outcome_from_json(data: Any, where: str) -> VariantOutcome:
    fields = _checked(VariantOutcome, data, where, nested=("expect", "sources"))
    sources = fields.get("sources", [])
    if not isinstance(sources, (list, tuple)) or not all(isinstance(item, str) for item in sources):
        raise ValueError(f"{where}.sources must be a list of text")
    fields["sources"] = tuple(printable(item) for item in sources)
    if fields.get("status") not in STATUSES:
        raise ValueError(f"{where}.status {_short(fields.get('status'))} is not one of {', '.join(STATUSES)}")
    if fields.get("expect") is not None:
        fields["expect"] = Expect(**_checked(Expect, fields["expect"], f"{where}.expect"))
    return VariantOutcome(**fields)


def _kernel_from_json(data: Any, where: str = "kernel") -> KernelResult:
    if isinstance(data, dict) and "library" in data:
        # the library the run named: derived again from the name and lines (a file older than the field
        # has none), so that what this memlens knows of libraries applies to older runs too
        data = dict(data)
        library = data.pop("library")
        if library is not None and not isinstance(library, str):
            raise ValueError(f"{where}.library must be text or null, not {_short(library)}")
    fields = _checked(KernelResult, data, where, nested=("raw", "missing", "instructions"))
    records = fields.get("instructions", [])
    if not isinstance(records, (list, tuple)):
        raise ValueError(f"{where}.instructions must be a list, not {_short(records)}")
    fields["instructions"] = tuple(
        InstructionRecord(**_checked(InstructionRecord, record, f"{where}.instructions[{i}]"))
        for i, record in enumerate(records)
    )
    for key, kind in (("raw", float | None), ("missing", str)):
        mapping = fields.get(key, {})
        if not isinstance(mapping, dict) or not all(fits(v, kind) for v in mapping.values()):
            what = "finite numbers or null" if key == "raw" else "text"
            raise ValueError(f"{where}.{key} must map metric keys to {what}")
    raw = {k: v for k, v in fields.get("raw", {}).items() if k not in RETIRED_KEYS}
    fields["missing"] = {k: v for k, v in fields.get("missing", {}).items() if k not in RETIRED_KEYS}
    unknown = set(raw) - set(CATALOGUE)
    if unknown:
        raise ValueError(f"{where}: unknown metric keys {sorted(unknown)}")
    fields["raw"] = with_kind_totals(
        {k: (None if v is None else float(v)) for k, v in raw.items()}, fields["instructions"]
    )
    fields["missing"] = {k: printable(v) for k, v in fields.get("missing", {}).items()}
    return KernelResult(**fields)


def load_results(path: Path) -> RunResults:
    return RunResults.from_json(read_json(path), str(path))
