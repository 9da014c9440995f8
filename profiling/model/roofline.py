"""The roofline of a run (PMPP chapter 5): the GPU's ceilings and where a kernel sits under them.

Ceilings come from ncu's own device metrics, as its SpeedOfLight roofline sections compute them
(peak FMA thread instructions per cycle x FLOPs per FMA x SM clock; peak DRAM bytes per cycle x DRAM
clock: catalogue keys peak_flops_* and peak_dram_bandwidth). A run's ceiling is the median over its
kernels (the clocks are measured during each kernel). A kernel is memory-bound where its intensity
times the DRAM bandwidth is below the compute peak of its precision, compute-bound above: the ridge
point is peak FLOP/s over peak bytes/s.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from memlens.model.results import KernelResult, RunResults

PRECISIONS = ("fp32", "fp64", "fp16")
COUNTED = ("fp32", "fp64")  # the precisions `flops` adds up (catalogue: fp16's counter counts register moves)
# RunInfo field -> the catalogue key it is the run's median of
CEILING_KEYS = {f"peak_flops_{p}": f"peak_flops_{p}" for p in PRECISIONS} | {
    "peak_dram_bandwidth": "peak_dram_bandwidth"
}
# the three levels a kernel's intensity is measured at, with their catalogue keys
LEVELS = (("DRAM", "arithmetic_intensity"), ("L2", "arithmetic_intensity_l2"), ("L1", "arithmetic_intensity_l1"))


def run_ceilings(kernels: Iterable[KernelResult]) -> dict[str, float | None]:
    """RunInfo's ceiling fields: the median of each over the kernels that have it (None if none has)."""
    kernels = list(kernels)
    found: dict[str, float | None] = {}
    for field, key in CEILING_KEYS.items():
        values = [v for k in kernels if (v := k.metric(key).value) is not None]
        found[field] = statistics.median(values) if values else None
    return found


def ceilings_of(results: RunResults) -> dict[str, float | None]:
    """The run's ceilings: each as results.json records it, else the median of its kernels' figures."""
    found = run_ceilings(results.kernels)
    for field in CEILING_KEYS:
        recorded = getattr(results.info, field, None)
        found[field] = recorded if recorded is not None else found[field]
    return found


@dataclass(frozen=True)
class Bound:
    """Where one kernel sits under the roofline of one GPU."""

    precision: str  # the precision of most of its FLOPs
    intensity: float  # FLOP per DRAM byte
    peak_flops: float  # of that precision, FLOP/s
    dram_bandwidth: float  # bytes/s
    achieved: float  # FLOP/s

    @property
    def memory_roof(self) -> float:
        return self.intensity * self.dram_bandwidth

    @property
    def memory_bound(self) -> bool:
        return self.memory_roof < self.peak_flops

    @property
    def limit(self) -> float:
        """The most FLOP/s the roofline allows at this intensity."""
        return min(self.memory_roof, self.peak_flops)

    @property
    def pct_of_limit(self) -> float:
        return 100.0 * self.achieved / self.limit

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/B) where the memory roof meets the compute peak."""
        return self.peak_flops / self.dram_bandwidth


def main_precision(kernel: KernelResult) -> str | None:
    """The precision with the most FLOPs of those `flops` counts (fp32, fp64); None where the kernel
    has none (or they were not measured)."""
    counts = {p: kernel.metric(f"flops_{p}").value for p in COUNTED}
    measured = {p: c for p, c in counts.items() if c}
    return max(measured, key=lambda p: measured[p]) if measured else None


def bound(kernel: KernelResult, ceilings: Mapping[str, float | None]) -> Bound | None:
    """The kernel's place under the roofline; None where a figure it needs is missing, or it does no
    floating-point work (the kernel's `arithmetic_intensity` says which)."""
    precision = main_precision(kernel)
    intensity = kernel.metric("arithmetic_intensity").value
    achieved = kernel.metric("flop_rate").value
    if precision is None or intensity is None or achieved is None:
        return None
    peak, bandwidth = ceilings.get(f"peak_flops_{precision}"), ceilings.get("peak_dram_bandwidth")
    if not peak or not bandwidth:
        return None
    return Bound(precision, intensity, peak, bandwidth, achieved)


def timed_share(kernel: KernelResult, ceilings: Mapping[str, float | None], seconds: float) -> float | None:
    """The % of its roofline bound a compute-bound kernel reaches doing its FLOPs in `seconds` (a bench's
    median time); None where it is memory-bound, has no place under the roofline or no time."""
    flops = kernel.value("flops")
    where = bound(kernel, ceilings) if flops else None
    if where is None or where.memory_bound or seconds <= 0:
        return None
    return 100.0 * flops / seconds / where.limit  # type: ignore[operator]
