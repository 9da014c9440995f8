"""Tensor-core work (issue 45): the paths ncu counts tensor-core operations on, their peaks, and the
catalogue's tensor figures (model/catalogue.py takes TENSOR_RAW and TENSOR_DERIVED from here).

On sm_90 ncu counts tensor-core math operations two ways, as its `SpeedOfLight_HierarchicalTensorRoofline
Chart` section reads them: per op, source and sparsity (`sm__ops_path_tensor_op_{hgmma,hmma,igmma,imma}_src_*
_sparsity_{off,on}`) and per source (`sm__ops_path_tensor_src_*`: every op and both sparsities together).
memlens reads the per-op counters and never the per-source totals of the same work (each op would count
twice), because only they give the peak of the path a kernel used: on an H200 the per-source bf16 peak,
1,081,344 ops a cycle, is the sparse HGMMA one, twice the dense 540,672; HMMA's dense fp16 peak (360,448) is
two thirds of HGMMA's. fp8 (QGMMA) and fp64 (DMMA) have only per-source counters on sm_90, so for them the
source is the path. One op is one FLOP (a multiply-add counts 2): the 4096^3 bf16 cuBLAS GEMM of
tests/fixtures/nvidia_h200/tensor counts 137,438,953,472 = 2*4096^3 HGMMA ops. The binary int1 paths
(BMMA, BGMMA) are not FLOPs and are left out. Every name was checked against `ncu --query-metrics --chip
gh100` (ncu 2025.3.1) and the section's metrics in the recorded `--set full` report.

The counters cost replay passes, so memlens asks for them only with `--roofline` (Metric.roofline); their
peaks (`.sum.peak_sustained`, ops a cycle) come with them. A path's peak in FLOP/s is its peak a cycle
times the SM clock measured during the kernel (`sm__cycles_elapsed.avg.per_second`), as in the section.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from memlens.model.metric import Metric, Values, _ratio, _scale, _sum

_OPS = "sm__ops_path_tensor_"


@dataclass(frozen=True)
class TensorPath:
    """One tensor-core path: an instruction on one source precision (and accumulator), dense or sparse."""

    key: str  # in catalogue keys: tensor_ops_<key>, tensor_ops_<key>_sparse, peak_tensor_<key>_per_cycle, ...
    precision: str  # the source precision: bf16, fp16, tf32, fp8, fp64, int8
    name: str  # what its roof is called: "bf16", "fp16 HMMA" ("bf16 tensor (dense)")
    dense: str  # ncu's counter of its dense work (sparsity off)
    sparse: str | None  # ncu's counter of its 2:4-sparse work; None where there is none (DMMA)

    @property
    def floating(self) -> bool:
        return self.precision != "int8"

    def label(self, sparse: bool) -> str:
        """The roof's label in a chart: "bf16 tensor (dense)", "fp16 HMMA tensor (sparse)"."""
        return f"{self.name} tensor ({'sparse' if sparse else 'dense'})"

    def ops_key(self, sparse: bool) -> str:
        return f"tensor_ops_{self.key}" + ("_sparse" if sparse else "")

    def peak_key(self, sparse: bool) -> str:
        return f"peak_tensor_{self.key}" + ("_sparse" if sparse else "") + "_per_cycle"

    def roof_key(self, sparse: bool) -> str:
        """The run's ceiling of this path (roofline.ceilings_of, RunInfo.peak_tensor_flops)."""
        return f"peak_tensor_{self.key}" + ("_sparse" if sparse else "")


def _path(key: str, precision: str, name: str, counter: str, sparsity: bool = True) -> TensorPath:
    if not sparsity:
        return TensorPath(key, precision, name, _OPS + counter, None)
    return TensorPath(key, precision, name, f"{_OPS}{counter}_sparsity_off", f"{_OPS}{counter}_sparsity_on")


# Warpgroup MMA (HGMMA, IGMMA: Hopper's fastest paths) is named by its precision alone; warp-level MMA
# (HMMA, IMMA: mma.sync, as FlashAttention 2 and Ampere-era code issue it) by its op too.
TENSOR_PATHS: tuple[TensorPath, ...] = (
    _path("hgmma_bf16", "bf16", "bf16", "op_hgmma_src_bf16_dst_fp32"),
    _path("hgmma_fp16", "fp16", "fp16", "op_hgmma_src_fp16"),
    _path("hgmma_tf32", "tf32", "tf32", "op_hgmma_src_tf32_dst_fp32"),
    _path("hmma_bf16", "bf16", "bf16 HMMA", "op_hmma_src_bf16_dst_fp32"),
    _path("hmma_fp16", "fp16", "fp16 HMMA", "op_hmma_src_fp16_dst_fp32"),
    _path("hmma_fp16_acc16", "fp16", "fp16 HMMA fp16-accumulate", "op_hmma_src_fp16_dst_fp16"),
    _path("hmma_tf32", "tf32", "tf32 HMMA", "op_hmma_src_tf32_dst_fp32"),
    _path("fp8", "fp8", "fp8", "src_fp8"),
    _path("fp64", "fp64", "fp64", "src_fp64", sparsity=False),
    _path("igmma_int8", "int8", "int8", "op_igmma_src_int8"),
    _path("imma_int8", "int8", "int8 IMMA", "op_imma_src_int8"),
)
TENSOR_PRECISIONS = ("bf16", "fp16", "tf32", "fp8", "fp64")  # floating point: tensor_flops_<precision>


def _variants(path: TensorPath) -> tuple[bool, ...]:
    return (False, True) if path.sparse else (False,)


def _raw(path: TensorPath, sparse: bool) -> tuple[Metric, Metric]:
    counter = path.sparse if sparse else path.dense
    unit = "FLOP" if path.floating else "op"
    kind = ("2:4-sparse" if sparse else "dense") if path.sparse else "dense (no sparse form)"
    ops = Metric(
        path.ops_key(sparse),
        unit,
        f"{path.name} tensor-core operations, {kind} (one op is one FLOP)",
        f"{counter}.sum",
        deterministic=True,
        roofline=True,
    )
    peak = Metric(
        path.peak_key(sparse),
        f"{unit}/cycle",
        f"the GPU's peak {path.name} {kind} tensor-core operations a cycle",
        f"{counter}.sum.peak_sustained",
        over_launches="duration_weighted",
        deterministic=True,
        roofline=True,
    )
    return ops, peak


TENSOR_RAW: tuple[Metric, ...] = tuple(m for p in TENSOR_PATHS for s in _variants(p) for m in _raw(p, s))
_OPS_KEYS = {
    precision: tuple(p.ops_key(s) for p in TENSOR_PATHS if p.precision == precision for s in _variants(p))
    for precision in (*TENSOR_PRECISIONS, "int8")
}


def _precision_ops(values: Values, precision: str) -> float | None:
    return _sum(*(values.get(key) for key in _OPS_KEYS[precision]))


def tensor_flops(values: Values) -> float | None:
    """Floating-point tensor-core operations, every precision (None where a counter was not measured)."""
    return _sum(*(_precision_ops(values, precision) for precision in TENSOR_PRECISIONS))


def path_ops(values: Values, path: TensorPath) -> float | None:
    """A path's operations, dense and sparse."""
    return _sum(*(values.get(path.ops_key(s)) for s in _variants(path)))


TENSOR_DERIVED: tuple[Metric, ...] = (
    *(
        Metric(
            f"tensor_flops_{precision}",
            "FLOP",
            f"{precision} tensor-core operations, every path (one op is one FLOP)",
            deterministic=True,
            formula=" + ".join(_OPS_KEYS[precision]),
            derive=functools.partial(_precision_ops, precision=precision),
        )
        for precision in TENSOR_PRECISIONS
    ),
    Metric(
        "tensor_int8_ops",
        "op",
        "int8 tensor-core operations (integer: not FLOPs)",
        deterministic=True,
        formula=" + ".join(_OPS_KEYS["int8"]),
        derive=functools.partial(_precision_ops, precision="int8"),
    ),
    Metric(
        "tensor_flops",
        "FLOP",
        "floating-point operations on tensor cores, every precision",
        deterministic=True,
        formula=" + ".join(f"tensor_flops_{p}" for p in TENSOR_PRECISIONS),
        derive=tensor_flops,
    ),
    Metric(
        "tensor_flop_rate",
        "FLOP/second",
        "achieved tensor-core floating-point operations per second",
        better="higher",
        timed=True,
        formula="tensor_flops / (duration * 1e-9)",
        derive=lambda v: _ratio(tensor_flops(v), _scale(v.get("duration"), 1e-9)),
    ),
)
