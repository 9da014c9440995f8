"""bench.json: the records of a `memlens bench` run (timings, the copies they are compared with,
failures, provenance), written and read without the CUDA timing code (profiling/bench/timing.py), so the
report reads them with no GPU library.

bench.json schema 2 adds, per variant, the same-bytes copy it was compared with ("copy", null
where the family declares no min_bytes). Schema 1 files (one copy for every variant) are still read:
their variants are compared with their one copy, as when they were written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memlens.errors import InputError, MemlensError
from memlens.io.files import read_json
from memlens.model.json_kinds import wrong_kind
from memlens.model.results import RunResults
from memlens.model.run_layout import BENCH, RESULTS, Provenance
from memlens.model.time_at_stake import DramCeiling, dram_ceiling

BENCH_FILE = BENCH
BENCH_FORMAT = "memlens-bench"
SCHEMA_VERSION = 3  # 3: info's `memlens_command` for 2's `command`
SUPPORTED_SCHEMAS = (1, 2, 3)


# --- statistics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeSummary:
    """Launch times in milliseconds and their median, extremes and p10/p90 spread."""

    samples_ms: tuple[float, ...]
    median_ms: float
    min_ms: float
    max_ms: float
    p10_ms: float
    p90_ms: float

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> TimeSummary:
        """Percentiles interpolate linearly between the sorted samples (numpy's default)."""
        samples = tuple(float(s) for s in samples_ms)
        if not samples:
            raise ValueError("no time samples")
        if not all(math.isfinite(s) and s >= 0 for s in samples):
            raise ValueError("time samples must be finite and not negative")
        import numpy as np  # here, not at import: NumPy's threads would stop `memlens report` forking its readers

        p10, median, p90 = (float(v) for v in np.percentile(samples, [10, 50, 90]))
        return cls(samples, median, min(samples), max(samples), p10, p90)


# --- typed records ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CopyBandwidth:
    """A device-to-device copy of `buffer_bytes`; it moves twice that (read plus written). The
    launches rotated over `input_sets` source and destination buffer pairs."""

    buffer_bytes: int
    times: TimeSummary
    input_sets: int = 1

    @property
    def bytes_moved(self) -> int:
        return 2 * self.buffer_bytes

    @property
    def gb_per_s(self) -> float:
        return self.bytes_moved / self.times.median_ms / 1e6

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "bytes_moved": self.bytes_moved, "gb_per_s": self.gb_per_s}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CopyBandwidth:
        """The copy of a bench.json; its bytes moved and GB/s are derived again."""
        copy = cls(_positive_int(data["buffer_bytes"]), _times(data["times"]), _positive_int(data.get("input_sets", 1)))
        if copy.times.median_ms <= 0:
            raise ValueError("copy median time is 0")
        return copy


@dataclass(frozen=True)
class VariantTiming:
    family: str
    variant: str
    size: dict[str, int]
    min_bytes: int | None  # the family's fewest bytes a kernel must move; None if it declares none
    input_sets: int
    set_bytes: int
    times: TimeSummary
    gb_per_s: float | None  # min_bytes / median time
    pct_of_copy: float | None  # gb_per_s as a percentage of `copy`'s
    copy: CopyBandwidth | None = None  # the copy it is compared with; None without min_bytes

    @property
    def label(self) -> str:
        return f"{self.family}/{self.variant}"

    @property
    def rotated_bytes(self) -> int:
        return self.input_sets * self.set_bytes

    @classmethod
    def build(
        cls,
        family: str,
        variant: str,
        size: Mapping[str, int],
        min_bytes: int | None,
        input_sets: int,
        set_bytes: int,
        times: TimeSummary,
        copy: CopyBandwidth | None,
    ) -> VariantTiming:
        """The record, with its bandwidth derived from min_bytes, the median time and the copy's
        (`copy`: the same-bytes copy it is compared with; kept only where there is a bandwidth)."""
        gb_per_s = None if min_bytes is None or times.median_ms <= 0 else min_bytes / times.median_ms / 1e6
        if gb_per_s is not None and copy is None:
            raise ValueError(f"{family}/{variant}: a bandwidth with no copy to compare it with")
        reference = None if gb_per_s is None else copy
        pct = None if reference is None or gb_per_s is None else 100.0 * gb_per_s / reference.gb_per_s
        return cls(family, variant, dict(size), min_bytes, input_sets, set_bytes, times, gb_per_s, pct, reference)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["copy"] = None if self.copy is None else self.copy.to_json()
        return data


@dataclass(frozen=True)
class BenchFailure:
    family: str
    variant: str
    status: str  # "wrong" (output differs from the reference), "failed" (raised), "not_run", "skipped" (GPU too old)
    message: str = ""


@dataclass(frozen=True)
class BenchInfo(Provenance):
    """Where and how a bench was made: the provenance every run has, and bench's own."""

    l2_bytes: int
    repeats: int
    cuda_driver_version: str | None = None  # the CUDA version the driver supports, e.g. 13.0
    seed: int = 0
    small: bool = False
    sizes: tuple[str, ...] = ()  # NAME=VALUE overrides


@dataclass(frozen=True)
class BenchResults:
    info: BenchInfo
    copy: CopyBandwidth  # the GPU's copy over a buffer far larger than L2; the variants each have their own
    variants: tuple[VariantTiming, ...]
    failures: tuple[BenchFailure, ...] = ()

    def lookup(self, family: str | None, variant: str | None) -> VariantTiming | None:
        """The timing of family/variant, or None if this bench did not time it."""
        return next((v for v in self.variants if v.family == family and v.variant == variant), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": BENCH_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "info": asdict(self.info),
            "copy": self.copy.to_json(),
            "variants": [v.to_json() for v in self.variants],
            "failures": [asdict(f) for f in self.failures],
        }

    @classmethod
    def from_json(cls, data: Any, source: str = BENCH_FILE) -> BenchResults:
        wrong = wrong_kind(source, data, ("format", BENCH_FORMAT), "a memlens bench file (`memlens bench` writes one)")
        if wrong is not None:
            raise wrong
        version = data.get("schema_version")
        if version not in SUPPORTED_SCHEMAS:
            raise InputError(f"{source}: unsupported schema_version {version!r} (memlens reads {SUPPORTED_SCHEMAS})")
        try:
            info = BenchInfo(**_renamed(data["info"]), sizes=tuple(data["info"].get("sizes", ())))
            copy = CopyBandwidth.from_json(data["copy"])
            variants = tuple(_variant_from_json(v, copy if version == 1 else None) for v in data["variants"])
            failures = tuple(BenchFailure(**f) for f in data.get("failures", []))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{source}: malformed bench results ({type(exc).__name__}: {exc})") from None
        return cls(info, copy, variants, failures)


def _renamed(info: Mapping[str, Any]) -> dict[str, Any]:
    """bench.json's info with schema 2's `command` as `memlens_command`; `sizes` left to the caller."""
    return {("memlens_command" if key == "command" else key): value for key, value in info.items() if key != "sizes"}


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"expected a positive integer, got {value!r}")
    return value


def _times(data: Mapping[str, Any]) -> TimeSummary:
    samples = data["samples_ms"]
    if not isinstance(samples, list) or not all(type(s) in (int, float) for s in samples):
        raise ValueError(f"samples_ms must be a list of numbers, got {str(samples)[:60]}")
    return TimeSummary.of(samples)  # the summary is derived again from the samples


def _variant_from_json(data: Mapping[str, Any], schema_1_copy: CopyBandwidth | None) -> VariantTiming:
    """A variant of a bench.json: schema 1 compared every variant with the file's one copy (given);
    schema 2 records the copy of each ("copy", null where the family declares no min_bytes)."""
    min_bytes = None if data["min_bytes"] is None else _positive_int(data["min_bytes"])
    copy = schema_1_copy
    if schema_1_copy is None:
        copy = None if data["copy"] is None else CopyBandwidth.from_json(data["copy"])
    return VariantTiming.build(
        str(data["family"]),
        str(data["variant"]),
        {str(k): _positive_int(v) for k, v in data["size"].items()},
        min_bytes,
        _positive_int(data["input_sets"]),
        _positive_int(data["set_bytes"]),
        _times(data["times"]),
        copy,
    )


def load_bench(path: str | Path) -> BenchResults:
    """bench.json, or the bench.json of a run directory; InputError naming the file if unreadable."""
    path = Path(path)
    if path.is_dir():
        path = path / BENCH_FILE
    if not path.exists():
        raise InputError(f"{path}: no such file (run `memlens bench --into RUN` to time a run's variants)")
    return BenchResults.from_json(read_json(path), str(path))


def find_bench(run_dir: str | Path) -> BenchResults | None:
    """The report's hook: the bench results of a run directory, None if it has none (InputError if
    its bench.json is damaged)."""
    path = Path(run_dir) / BENCH_FILE
    return load_bench(path) if path.is_file() else None


def bench_beside(run_dir: str | Path) -> BenchResults | None:
    """The bench.json of a run directory for the time at stake's DRAM ceiling: None where it has none, or where
    it is damaged (the ceiling is then the peak, as without one: never an error)."""
    try:
        return find_bench(run_dir)
    except (MemlensError, OSError):
        return None


def copy_ceiling(bench: BenchResults | None, results: RunResults) -> DramCeiling | None:
    """The DRAM ceiling the time at stake of `results`' kernels takes (time_at_stake.dram_ceiling): the GPU's
    device-wide copy `bench` measured, where it was timed on the GPU the profile names (a bench of another GPU,
    or either unnamed: None, the peak), raised to the fastest DRAM throughput a kernel of the run reached."""
    if bench is None or not results.info.gpu_name or bench.info.gpu_name != results.info.gpu_name:
        return None
    return dram_ceiling(bench.copy.gb_per_s * 1e9, results.kernels)


def roofline_shares(run_dir: Path, results: BenchResults) -> dict[str, float]:
    """label -> the % of its roofline bound each compute-bound variant reaches at the bench's median
    time, as the run's profile (its results.json, where bench wrote into a profiled run) places it; {}
    without a readable profile (`memlens report` names a damaged one; the timings stand on their own)."""
    from memlens.model.roofline import ceilings_of, timed_share
    from memlens.readers import read_report

    if not (run_dir / RESULTS).is_file():
        return {}
    try:
        profile = read_report(run_dir / RESULTS)
    except MemlensError:
        return {}
    ceilings = ceilings_of(profile)
    kernels = {kernel.label: kernel for kernel in profile.kernels}
    found = {}
    for timing in results.variants:
        kernel = kernels.get(timing.label)
        share = timed_share(kernel, ceilings, timing.times.median_ms / 1e3) if kernel is not None else None
        if share is not None:
            found[timing.label] = share
    return found
