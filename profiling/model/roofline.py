"""The roofline of a run (PMPP chapter 5): the GPU's ceilings and where a kernel sits under them.

Ceilings come from ncu's own device metrics, as its SpeedOfLight roofline sections compute them
(peak FMA thread instructions per cycle x FLOPs per FMA x SM clock; peak DRAM bytes per cycle x DRAM
clock: catalogue keys peak_flops_* and peak_dram_bandwidth). A run's ceiling is the median over its
kernels (the clocks are measured during each kernel). A kernel is memory-bound where its intensity
times the DRAM bandwidth is below the compute peak of its precision, compute-bound above: the ridge
point is peak FLOP/s over peak bytes/s.

Tensor cores (issue 45): a kernel whose tensor-core operations (model/tensor_paths.py) outnumber its
CUDA-core FLOPs is placed on the roof of the tensor path it used most (its precision and op, dense, or
sparse where it did 2:4-sparse work), never on the fp32 one: its intensity counts both units' FLOPs, its
achieved rate and peak are that path's, the peak at the SM clock measured during the kernel, as ncu's
SpeedOfLight_HierarchicalTensorRooflineChart section computes them (`<op>.sum.per_cycle_elapsed` over
`.sum.peak_sustained`: 90.3% for the cuBLAS GEMM of tests/fixtures/nvidia_h200/tensor). The run's
tensor ceilings (RunInfo.peak_tensor_flops, drawn in the report) are medians over its kernels.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from memlens.model.results import KernelResult, RunResults
from memlens.model.tensor_paths import TENSOR_PATHS, TensorPath

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
    """The run's ceilings: each as results.json records it, else the median of its kernels' figures;
    and the tensor roofs its kernels used (TensorRoof.key -> FLOP/s)."""
    found = run_ceilings(results.kernels)
    for field in CEILING_KEYS:
        recorded = getattr(results.info, field, None)
        found[field] = recorded if recorded is not None else found[field]
    recorded_tensor = results.info.peak_tensor_flops
    found.update(recorded_tensor if recorded_tensor is not None else tensor_ceilings(results.kernels) or {})
    return found


@dataclass(frozen=True)
class TensorRoof:
    """A tensor-core path's roof: dense, or sparse (2:4) where the kernel did sparse work on it."""

    path: TensorPath
    sparse: bool

    @property
    def key(self) -> str:
        return self.path.roof_key(self.sparse)

    @property
    def label(self) -> str:
        return self.path.label(self.sparse)

    @property
    def density(self) -> str:
        return "sparse" if self.sparse else "dense"


def _path_ops(kernel: KernelResult, path: TensorPath, sparse: bool) -> float | None:
    return kernel.value(path.ops_key(sparse)) if sparse is False or path.sparse else 0.0


def tensor_work(kernel: KernelResult) -> tuple[TensorRoof, float] | None:
    """The tensor-core roof of the path with most of the kernel's operations, and those operations
    (dense and sparse); None where its tensor work was not measured or its CUDA cores did more FLOPs."""
    best: tuple[TensorRoof, float] | None = None
    for path in TENSOR_PATHS:
        dense, sparse = _path_ops(kernel, path, False), _path_ops(kernel, path, True)
        if dense is None or sparse is None:
            continue
        if dense + sparse > 0 and (best is None or dense + sparse > best[1]):
            best = (TensorRoof(path, sparse > 0), dense + sparse)
    if best is None or best[1] <= (kernel.value("flops") or 0.0):
        return None
    return best


def _tensor_peak(kernel: KernelResult, roof: TensorRoof) -> float | None:
    per_cycle, clock = kernel.value(roof.path.peak_key(roof.sparse)), kernel.value("sm_clock")
    return None if per_cycle is None or clock is None else per_cycle * clock


def tensor_ceilings(kernels: Iterable[KernelResult]) -> dict[str, float] | None:
    """RunInfo.peak_tensor_flops: each tensor roof the kernels were placed on (TensorRoof.key), the median
    over them of its peak FLOP/s at their clocks; None where no kernel was placed on one."""
    peaks: dict[str, list[float]] = {}
    for kernel in kernels:
        work = tensor_work(kernel)
        peak = _tensor_peak(kernel, work[0]) if work else None
        if work is not None and peak is not None:
            peaks.setdefault(work[0].key, []).append(peak)
    return {key: statistics.median(values) for key, values in peaks.items()} or None


def roof_label(key: str) -> str | None:
    """The label of a tensor roof from its key (ceilings_of): "bf16 tensor (dense)"."""
    for path in TENSOR_PATHS:
        for sparse in (False, True):
            if path.roof_key(sparse) == key:
                return path.label(sparse)
    return None


@dataclass(frozen=True)
class Bound:
    """Where one kernel sits under the roofline of one GPU."""

    precision: str  # the precision of most of its FLOPs
    intensity: float  # FLOP per DRAM byte
    peak_flops: float  # of that precision, FLOP/s
    dram_bandwidth: float  # bytes/s
    achieved: float  # FLOP/s
    roof: TensorRoof | None = None  # the tensor-core path it is judged on; None: CUDA cores
    work: float | None = None  # the FLOPs `achieved` counts (those of the roof's unit)

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
    floating-point work (the kernel's `arithmetic_intensity` says which). Mostly tensor-core work is
    judged on its tensor path's roof (tensor_bound)."""
    work = tensor_work(kernel)
    if work is not None:
        return tensor_bound(kernel, *work, ceilings.get("peak_dram_bandwidth"))
    precision = main_precision(kernel)
    intensity = kernel.metric("arithmetic_intensity").value
    achieved = kernel.metric("flop_rate").value
    if precision is None or intensity is None or achieved is None:
        return None
    peak, bandwidth = ceilings.get(f"peak_flops_{precision}"), ceilings.get("peak_dram_bandwidth")
    if not peak or not bandwidth:
        return None
    return Bound(precision, intensity, peak, bandwidth, achieved, work=kernel.value("flops"))


def tensor_bound(kernel: KernelResult, roof: TensorRoof, ops: float, bandwidth: float | None) -> Bound | None:
    """The kernel on the roof of its main tensor path: the path's operations a second against its peak at
    the kernel's own SM clock (what ncu's section shows), its intensity over both units' FLOPs."""
    intensity, duration, peak = (
        kernel.value("arithmetic_intensity"),
        kernel.value("duration"),
        _tensor_peak(kernel, roof),
    )
    if intensity is None or not duration or not peak or not bandwidth:
        return None
    return Bound(roof.path.precision, intensity, peak, bandwidth, ops / (duration * 1e-9), roof, ops)


def timed_share(kernel: KernelResult, ceilings: Mapping[str, float | None], seconds: float) -> float | None:
    """The % of its roofline bound a compute-bound kernel reaches doing its FLOPs in `seconds` (a bench's
    median time); None where it is memory-bound, has no place under the roofline or no time."""
    where = bound(kernel, ceilings)
    if where is None or not where.work or where.memory_bound or seconds <= 0:
        return None
    return 100.0 * where.work / seconds / where.limit
