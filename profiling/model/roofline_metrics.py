"""The catalogue's roofline and global-memory metrics (PMPP chapter 5): the FLOP counters by precision, the
peaks, the intensities, and the global-memory sector figures; model/catalogue.py adds them to its table."""

from __future__ import annotations

import functools

from memlens.model.metric import SECTOR_BYTES, Metric, Values, _ratio, _scale, _sum
from memlens.model.tensor_paths import tensor_flops

# Floating-point work from ncu's per-opcode thread-instruction counters (predicated-on threads only),
# counted as ncu's roofline sections count it: an FMA is 2 FLOPs, an add or a multiply 1; HFMA2-class
# half-precision instructions work on 2 lanes (HFMA 4 FLOPs, HADD and HMUL 2). Tensor-core work (HMMA, HGMMA,
# DMMA, ...) is counted apart, from ncu's sm__ops_path_tensor_* counters (model/tensor_paths.py): `flops` is
# CUDA cores' alone, intensities count both (work_flops). Not counted: special functions (MUFU: sqrt, rcp,
# exp), conversions, integer work, and bf16 or fp8 arithmetic outside the HFMA/HADD/HMUL classes. `flops` is
# fp32 + fp64 only: ptxas zeroes and moves registers with
# `HFMA2.MMA Rd, -RZ, RZ, 0, 0`, which the HFMA counter counts (transpose_tile64_swizzled and matmul_pmpp
# show it in the H100 `--set full` recording), so flops_fp16 is an upper bound on real half-precision work.
HIT_RATE_NOISE = 0.15  # how far the hit rates moved between two runs of one input (model/catalogue.py says where)

_FLOP_COUNTERS = (  # key, ncu opcode, FLOPs per thread instruction
    ("fp32_ffma_inst", "ffma", 2),
    ("fp32_fadd_inst", "fadd", 1),
    ("fp32_fmul_inst", "fmul", 1),
    ("fp64_dfma_inst", "dfma", 2),
    ("fp64_dadd_inst", "dadd", 1),
    ("fp64_dmul_inst", "dmul", 1),
    ("fp16_hfma_inst", "hfma", 4),
    ("fp16_hadd_inst", "hadd", 2),
    ("fp16_hmul_inst", "hmul", 2),
)
_PRECISIONS = {"fp32": "single", "fp64": "double", "fp16": "half"}
NO_FLOPS = "no floating-point work"

ROOFLINE_RAW = [
    *(
        Metric(
            key,
            "inst",
            f"{op.upper()} thread instructions executed (predicated-on threads; {flops} FLOPs each)",
            f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum",
            deterministic=True,
            roofline=True,
            per_cycle=f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed",
        )
        for key, op, flops in _FLOP_COUNTERS
    ),
    # The GPU's own ceilings, as ncu's SpeedOfLight roofline sections compute them (per kernel: clocks
    # are measured during the kernel).
    Metric(
        "peak_ffma_per_cycle",
        "inst/cycle",
        "the GPU's peak FFMA thread instructions per SM cycle, all SMs",
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
        deterministic=True,
        over_launches="duration_weighted",
    ),
    Metric(
        "peak_dfma_per_cycle",
        "inst/cycle",
        "the GPU's peak DFMA thread instructions per SM cycle, all SMs",
        "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
        deterministic=True,
        over_launches="duration_weighted",
    ),
    Metric(
        "peak_hfma_per_cycle",
        "inst/cycle",
        "the GPU's peak HFMA thread instructions per SM cycle, all SMs",
        "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained",
        deterministic=True,
        over_launches="duration_weighted",
    ),
    Metric(
        "sm_clock",
        "hz",
        "SM cycles per second during the kernel",
        "sm__cycles_elapsed.avg.per_second",
        timed=True,
        over_launches="duration_weighted",
    ),
    Metric(
        "peak_dram_bytes_per_cycle",
        "byte/cycle",
        "the GPU's peak DRAM bytes per DRAM cycle",
        "dram__bytes.sum.peak_sustained",
        deterministic=True,
        over_launches="duration_weighted",
    ),
    Metric(
        "dram_clock",
        "hz",
        "DRAM cycles per second during the kernel",
        "dram__cycles_elapsed.avg.per_second",
        timed=True,
        over_launches="duration_weighted",
    ),
    # Global memory: coalescing, L1 and L2 traffic. A warp's global load or store instruction is one
    # L1TEX request (as for local memory above: instruction counters, not L1TEX's request counters).
    Metric(
        "global_load_sectors",
        "sector",
        "32-byte sectors global loads asked of L1TEX",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "lower",
        deterministic=True,
        roofline=True,
    ),
    Metric(
        "global_store_sectors",
        "sector",
        "32-byte sectors global stores sent to L1TEX",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "lower",
        deterministic=True,
        roofline=True,
    ),
    Metric(
        "global_load_requests",
        "inst",
        "warp-level global load instructions executed (LDG: one request each)",
        "smsp__inst_executed_op_global_ld.sum",
        deterministic=True,
    ),
    Metric(
        "global_store_requests",
        "inst",
        "warp-level global store instructions executed (STG: one request each)",
        "smsp__inst_executed_op_global_st.sum",
        deterministic=True,
    ),
    Metric(
        "l2_sectors_from_l1",
        "sector",
        "32-byte sectors the L1TEX units read from or wrote to L2",
        "lts__t_sectors_srcunit_tex.sum",
        "lower",
    ),
    Metric(
        "l1_hit_rate",
        "%",
        "share of L1TEX sector lookups that hit",
        "l1tex__t_sector_hit_rate.pct",
        "higher",
        noise=HIT_RATE_NOISE,
        over_launches="duration_weighted",
    ),
    Metric(
        "l2_hit_rate",
        "%",
        "share of L2 sector lookups that hit",
        "lts__t_sector_hit_rate.pct",
        "higher",
        noise=HIT_RATE_NOISE,
        over_launches="duration_weighted",
    ),
]


# precision -> its counters' (key, FLOPs per instruction): _flops runs for every kernel read
_FLOP_WEIGHTS = {
    precision: tuple((key, weight) for key, _, weight in _FLOP_COUNTERS if key.startswith(precision))
    for precision in _PRECISIONS
}


def _peak_flops(values: Values, op: str, weight: float) -> float | None:
    return _scale(_product(values.get(f"peak_{op}_per_cycle"), values.get("sm_clock")), weight)


def _flops(values: Values, precision: str) -> float | None:
    total = 0.0
    for key, weight in _FLOP_WEIGHTS[precision]:
        count = values.get(key)
        if count is None:
            return None
        total += count * weight
    return float(total)


def _all_flops(values: Values) -> float | None:
    return _sum(_flops(values, "fp32"), _flops(values, "fp64"))  # fp16 left out: see above


def work_flops(values: Values) -> float | None:
    """FLOPs on CUDA cores (`flops`) and on tensor cores where they were measured (`--roofline`, or a
    plain report of ncu's roofline sections): what a kernel's arithmetic intensity counts."""
    flops, tensor = _all_flops(values), tensor_flops(values)
    return flops if flops is None or tensor is None else flops + tensor


def _intensity(values: Values, bytes_moved: float | None) -> float | None:
    """FLOP per byte; None where there is no floating-point work (no intensity, not 0 nor infinity)."""
    flops = work_flops(values)
    return None if not flops else _ratio(flops, bytes_moved)


def _no_flops(values: Values) -> str | None:
    return NO_FLOPS if work_flops(values) == 0 else None


def _dram_bytes(values: Values) -> float | None:
    """Bytes read plus written; where a report has not them, ncu's sections' rate times the duration."""
    moved = _sum(values.get("dram_read_bytes"), values.get("dram_write_bytes"))
    if moved is not None:
        return moved
    rated = _product(values.get("dram_throughput"), _scale(values.get("duration"), 1e-9))
    return None if rated is None else float(round(rated))  # a count of bytes: the product's last bits are noise


def _product(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a * b


def _l1_bytes(v: Values) -> float | None:
    return _scale(_sum(v.get("global_load_sectors"), v.get("global_store_sectors")), SECTOR_BYTES)


_FLOP_FORMULA = {
    precision: " + ".join(
        (f"{weight} * {key}" if weight > 1 else key) for key, _, weight in _FLOP_COUNTERS if key.startswith(precision)
    )
    for precision in _PRECISIONS
}
ROOFLINE_DERIVED = [
    *(
        Metric(
            f"flops_{precision}",
            "FLOP",
            f"{_PRECISIONS[precision]}-precision floating-point operations (CUDA cores; no tensor cores)"
            + (": counts ptxas's HFMA2.MMA register moves too, an upper bound" if precision == "fp16" else ""),
            better=None,
            deterministic=True,
            formula=_FLOP_FORMULA[precision],
            derive=functools.partial(_flops, precision=precision),
        )
        for precision in _PRECISIONS
    ),
    Metric(
        "flops",
        "FLOP",
        "floating-point operations, fp32 + fp64 on CUDA cores (an FMA is 2; not counted: fp16, whose counter"
        " includes register moves, tensor-core work, MUFU special functions, conversions)",
        deterministic=True,
        formula="flops_fp32 + flops_fp64",
        derive=_all_flops,
    ),
    Metric(
        "total_flops",
        "FLOP",
        "floating-point operations on CUDA cores (flops) and tensor cores (tensor_flops)",
        deterministic=True,
        formula="flops + tensor_flops",
        derive=lambda v: _sum(_all_flops(v), tensor_flops(v)),
    ),
    Metric(
        "flop_rate",
        "FLOP/second",
        "achieved floating-point operations per second on CUDA cores",
        better="higher",
        timed=True,
        formula="flops / (duration * 1e-9)",
        derive=lambda v: _ratio(_all_flops(v), _scale(v.get("duration"), 1e-9)),
    ),
    Metric(
        "l1_global_bytes",
        "byte",
        "bytes of global loads and stores at L1TEX (32-byte sectors)",
        better="lower",
        deterministic=True,
        formula=f"(global_load_sectors + global_store_sectors) * {SECTOR_BYTES}",
        derive=_l1_bytes,
    ),
    Metric(
        "l2_bytes",
        "byte",
        "bytes between the L1TEX units and L2 (32-byte sectors)",
        better="lower",
        formula=f"l2_sectors_from_l1 * {SECTOR_BYTES}",
        derive=lambda v: _scale(v.get("l2_sectors_from_l1"), SECTOR_BYTES),
    ),
    Metric(
        "arithmetic_intensity",
        "FLOP/byte",
        "FLOPs (CUDA and tensor cores) per DRAM byte (n/a for a kernel with no floating-point work)",
        better="higher",
        formula="(flops + tensor-core FLOPs where measured) / dram_bytes",
        derive=lambda v: _intensity(v, _dram_bytes(v)),
        na_reason=_no_flops,
    ),
    Metric(
        "arithmetic_intensity_l2",
        "FLOP/byte",
        "FLOPs per byte between L1TEX and L2",
        better="higher",
        formula="(flops + tensor-core FLOPs where measured) / l2_bytes",
        derive=lambda v: _intensity(v, _scale(v.get("l2_sectors_from_l1"), SECTOR_BYTES)),
        na_reason=_no_flops,
    ),
    Metric(
        "arithmetic_intensity_l1",
        "FLOP/byte",
        "FLOPs per byte of global loads and stores at L1TEX",
        better="higher",
        deterministic=True,
        formula="(flops + tensor-core FLOPs where measured) / l1_global_bytes",
        derive=lambda v: _intensity(v, _l1_bytes(v)),
        na_reason=_no_flops,
    ),
    Metric(
        "global_load_sectors_per_request",
        "sector/request",
        "sectors per global load request: 4 for a fully coalesced warp load of 4-byte values, 32 for one"
        " sector a thread",
        better="lower",
        deterministic=True,
        formula="global_load_sectors / global_load_requests",
        derive=lambda v: _ratio(v.get("global_load_sectors"), v.get("global_load_requests")),
    ),
    Metric(
        "global_store_sectors_per_request",
        "sector/request",
        "sectors per global store request: 4 for a fully coalesced warp store of 4-byte values",
        better="lower",
        deterministic=True,
        formula="global_store_sectors / global_store_requests",
        derive=lambda v: _ratio(v.get("global_store_sectors"), v.get("global_store_requests")),
    ),
    *(
        Metric(
            f"peak_flops_{precision}",
            "FLOP/second",
            f"the GPU's peak {_PRECISIONS[precision]}-precision FLOP/s at the kernel's SM clock (CUDA cores)",
            timed=True,
            formula=f"peak_{op}_per_cycle * {weight} * sm_clock",
            derive=functools.partial(_peak_flops, op=op, weight=weight),
        )
        for precision, op, weight in (("fp32", "ffma", 2), ("fp64", "dfma", 2), ("fp16", "hfma", 4))
    ),
    Metric(
        "peak_dram_bandwidth",
        "byte/second",
        "the GPU's peak DRAM bandwidth at the kernel's DRAM clock",
        timed=True,
        formula="peak_dram_bytes_per_cycle * dram_clock",
        derive=lambda v: _product(v.get("peak_dram_bytes_per_cycle"), v.get("dram_clock")),
    ),
]
