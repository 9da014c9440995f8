"""The one catalogue of metrics: every ncu metric memlens asks for and every figure derived
from them, with its unit, its meaning in a line, and (for derived figures) its formula.

Runner, readers, report and gate all take metric names from here.
Units are ncu's base units (`--print-units base`): ns, byte, byte/second, %, and counts.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping

from memlens.model.metric import (
    SECTION_CYCLES,
    SECTOR_BYTES,
    Better,
    Metric,
    OverLaunches,
    Values,
    _diff,
    _ratio,
    _scale,
    _sum,
)
from memlens.model.per_instruction import (
    _PER_INSTRUCTION,
    GLOBAL_KEYS,
    GLOBAL_REQUESTS,
    GLOBAL_SECTORS,
    GLOBAL_SECTORS_IDEAL,
    KIND_KEYS,
    LOCAL_EXECUTIONS,
    MEMORY_ACCESS_SIZE,
    MEMORY_ACCESS_TYPE,
    MEMORY_TYPE,
    PER_PC_EXECUTIONS,
    PER_PC_METRICS,
    REMOTE_SHARED_EXECUTIONS,
    SHARED_KEYS,
    GlobalKeys,
    KindKeys,
    SharedKeys,
)
from memlens.model.tensor_paths import TENSOR_DERIVED, TENSOR_RAW, tensor_flops

__all__ = [  # the per-instruction names, re-exported: the catalogue is where every metric name is found
    "SECTION_CYCLES", "SECTOR_BYTES", "Better", "Metric", "OverLaunches", "Values", "GLOBAL_KEYS", "GLOBAL_REQUESTS",
    "GLOBAL_SECTORS", "GLOBAL_SECTORS_IDEAL", "KIND_KEYS", "LOCAL_EXECUTIONS", "MEMORY_ACCESS_SIZE",
    "MEMORY_ACCESS_TYPE", "MEMORY_TYPE", "PER_PC_EXECUTIONS", "PER_PC_METRICS", "REMOTE_SHARED_EXECUTIONS",
    "SHARED_KEYS", "GlobalKeys", "KindKeys", "SharedKeys",
]  # fmt: skip

# What the hardware bank-conflict counter counts (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}), as
# measured against the exact excess: every cycle the L1 pipeline spent on a shared load or store beyond the
# first, whatever the cause (the padded transpose: 378,791 against an exact 0), and nothing of atomics (a 32-way
# atomic kernel: 0 against 2,031,616 exact).
HW_COUNTS = (
    "the L1 pipeline's bank-conflict count of shared loads plus stores: it includes cycles that are not address"
    " conflicts, and counts no atomics"
)

# How far the counters that vary between runs of one input move (Metric.noise; timed figures: model/noise.py).
# Between two ncu runs of the same binaries on one GPU (the suite and suite_fast recordings and the three
# memory_kinds and two triton_attention recordings, H100 and H200: 88 pairs of launches) DRAM bytes, L2
# sectors and the hardware wavefront counters moved at most 3.3% (below the 5% default of Metric.noise),
# the hit rates at most 11.4%, the hardware bank-conflict counters 4.7% there but by tens of percent
# between runs of larger kernels (its false conflicts).
HW_CONFLICT_NOISE = 0.25
HIT_RATE_NOISE = 0.15

# The metrics are a table, one metric a few lines as a reader scans them: not reformatted.
# fmt: off
_RAW = [
    Metric("duration", "ns", "kernel duration on the GPU", "gpu__time_duration.sum", "lower", timed=True),
    Metric("dram_read_bytes", "byte", "bytes read from device memory (DRAM)", "dram__bytes_read.sum", "lower"),
    Metric("dram_write_bytes", "byte", "bytes written to device memory (DRAM)", "dram__bytes_write.sum", "lower"),
    # ncu's roofline sections' DRAM figure, never asked for: a plain `--set roofline` report holds it, and
    # not the bytes read and written (times the duration it is their sum: 176,558,592 bytes, exactly, for
    # the cuBLAS GEMM of tests/fixtures/nvidia_h200/tensor's `--set full` report)
    Metric("dram_throughput", "byte/second", "DRAM bytes read and written per second, as ncu's roofline sections"
           " read them (where a report lacks dram_read_bytes and dram_write_bytes)", "dram__bytes.sum.per_second",
           over_launches="duration_weighted", timed=True, asked=False),
    Metric(
        "dram_pct_of_peak",
        "%",
        "DRAM throughput as a percentage of the peak sustained rate",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "higher",
        over_launches="duration_weighted",
        timed=True,
    ),
    Metric(
        "shared_ld_instructions", "inst",
        "warp-level shared-memory load instructions, hardware counter (counts cp.async LDGSTS, not ldmatrix LDSM)",
        "smsp__inst_executed_op_shared_ld.sum", deterministic=True,
        aliases=("smsp__sass_inst_executed_op_shared_ld.sum", "sass__inst_executed_shared_loads"),
    ),
    Metric(
        "shared_st_instructions", "inst",
        "warp-level shared-memory store instructions by the hardware counter (counts neither stmatrix nor cp.async)",
        "smsp__inst_executed_op_shared_st.sum", deterministic=True,
        aliases=("smsp__sass_inst_executed_op_shared_st.sum", "sass__inst_executed_shared_stores"),
    ),
    Metric(
        "shared_ld_wavefronts", "wavefront", "shared-memory load wavefronts processed by L1TEX",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "lower",
    ),
    Metric(
        "shared_st_wavefronts", "wavefront", "shared-memory store wavefronts processed by L1TEX",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "lower",
    ),
    Metric(
        "hw_ld_bank_conflicts", "conflict",
        "the L1 pipeline's bank-conflict count of shared loads: cycles that are not address conflicts included"
        " (exact_excess_wavefronts counts those alone)",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "lower", noise=HW_CONFLICT_NOISE,
    ),
    Metric(
        "hw_st_bank_conflicts", "conflict",
        "the L1 pipeline's bank-conflict count of shared stores: cycles that are not address conflicts included"
        " (exact_excess_wavefronts counts those alone)",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "lower", noise=HW_CONFLICT_NOISE,
    ),
    Metric(
        "shared_wavefronts", "wavefront", "shared-memory wavefronts, counted per instruction by instrumentation",
        "memory_l1_wavefronts_shared", "lower", instrumented=True, deterministic=True,
    ),
    Metric(
        "shared_wavefronts_ideal", "wavefront",
        "wavefronts the same shared-memory accesses would need with no bank conflict",
        "memory_l1_wavefronts_shared_ideal", instrumented=True, deterministic=True,
    ),
    # Local-memory instructions, not L1TEX's local request counters: on Hopper those need two more
    # replay passes of every kernel (6 instead of 4 for this whole list); a warp's local access
    # instruction is one request.
    Metric(
        "local_ld_instructions", "inst", "warp-level local-memory load instructions executed",
        "smsp__inst_executed_op_local_ld.sum", "lower", deterministic=True,
    ),
    Metric(
        "local_st_instructions", "inst", "warp-level local-memory store instructions executed",
        "smsp__inst_executed_op_local_st.sum", "lower", deterministic=True,
    ),
    Metric(
        "local_ld_sectors", "sector", "32-byte sectors of local-memory loads",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "lower", deterministic=True,
    ),
    Metric(
        "local_st_sectors", "sector", "32-byte sectors of local-memory stores",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "lower", deterministic=True,
    ),
    Metric("registers_per_thread", "register", "registers allocated per thread",
           "launch__registers_per_thread", "lower", deterministic=True, over_launches="max"),
    Metric("static_shared_per_block", "byte", "static shared memory per block",
           "launch__shared_mem_per_block_static", deterministic=True, over_launches="max"),
    Metric("dynamic_shared_per_block", "byte", "dynamic shared memory per block",
           "launch__shared_mem_per_block_dynamic", deterministic=True, over_launches="max"),
    Metric("grid_size", "block", "blocks in the grid", "launch__grid_size", deterministic=True, over_launches="max"),
    Metric("block_size", "thread", "threads per block", "launch__block_size", deterministic=True,
           over_launches="max"),
]

_DERIVED = [
    Metric(
        "dram_bytes", "byte", "bytes moved to and from device memory",
        better="lower", formula="dram_read_bytes + dram_write_bytes (else dram_throughput * duration * 1e-9)",
        derive=lambda v: _dram_bytes(v),
    ),
    Metric(
        "dram_bandwidth", "byte/second", "achieved DRAM bandwidth",
        better="higher", timed=True, formula="(dram_read_bytes + dram_write_bytes) / (duration * 1e-9)",
        derive=lambda v: _ratio(_dram_bytes(v), _scale(v.get("duration"), 1e-9)),
    ),
    Metric(
        "shared_ld_ways", "wavefront/inst",
        "hardware shared-load wavefronts per load instruction (2 for a conflict-free 8-byte load, 4 for 16-byte)",
        better="lower", formula="shared_ld_wavefronts / shared_ld_instructions",
        derive=lambda v: _ratio(v.get("shared_ld_wavefronts"), v.get("shared_ld_instructions")),
    ),
    Metric(
        "shared_st_ways", "wavefront/inst",
        "hardware shared-store wavefronts per store instruction (2 for a conflict-free 8-byte store, 4 for 16-byte)",
        better="lower", formula="shared_st_wavefronts / shared_st_instructions",
        derive=lambda v: _ratio(v.get("shared_st_wavefronts"), v.get("shared_st_instructions")),
    ),
    Metric(
        "exact_excess_wavefronts", "wavefront",
        "shared-memory wavefronts beyond the conflict-free ideal: the exact cost of bank conflicts",
        better="lower", instrumented=True, deterministic=True, problem_above_zero=True,
        formula="shared_wavefronts - shared_wavefronts_ideal",
        derive=lambda v: _diff(v.get("shared_wavefronts"), v.get("shared_wavefronts_ideal")),
    ),
    Metric(
        "hw_bank_conflicts", "conflict", HW_COUNTS,
        better="lower", noise=HW_CONFLICT_NOISE, formula="hw_ld_bank_conflicts + hw_st_bank_conflicts",
        derive=lambda v: _sum(v.get("hw_ld_bank_conflicts"), v.get("hw_st_bank_conflicts")),
    ),
    Metric(
        "local_ld_bytes", "byte", "bytes of local-memory loads",
        better="lower", deterministic=True, problem_above_zero=True, formula=f"local_ld_sectors * {SECTOR_BYTES}",
        derive=lambda v: _scale(v.get("local_ld_sectors"), SECTOR_BYTES),
    ),
    Metric(
        "local_st_bytes", "byte", "bytes of local-memory stores",
        better="lower", deterministic=True, problem_above_zero=True, formula=f"local_st_sectors * {SECTOR_BYTES}",
        derive=lambda v: _scale(v.get("local_st_sectors"), SECTOR_BYTES),
    ),
    Metric(
        "local_bytes", "byte", "bytes of local-memory traffic, loads plus stores",
        better="lower", deterministic=True, formula=f"(local_ld_sectors + local_st_sectors) * {SECTOR_BYTES}",
        derive=lambda v: _scale(_sum(v.get("local_ld_sectors"), v.get("local_st_sectors")), SECTOR_BYTES),
    ),
]

# --- Roofline and global memory (PMPP chapter 5) ------------------------------------------------
# Floating-point work from ncu's per-opcode thread-instruction counters (predicated-on threads only),
# counted as ncu's roofline sections count it: an FMA is 2 FLOPs, an add or a multiply 1; HFMA2-class
# half-precision instructions work on 2 lanes (HFMA 4 FLOPs, HADD and HMUL 2). Tensor-core work (HMMA, HGMMA,
# DMMA, ...) is counted apart, from ncu's sm__ops_path_tensor_* counters (model/tensor_paths.py): `flops` is
# CUDA cores' alone, intensities count both (work_flops). Not counted: special functions (MUFU: sqrt, rcp,
# exp), conversions, integer work, and bf16 or fp8 arithmetic outside the HFMA/HADD/HMUL classes. `flops` is
# fp32 + fp64 only: ptxas zeroes and moves registers with
# `HFMA2.MMA Rd, -RZ, RZ, 0, 0`, which the HFMA counter counts (transpose_tile64_swizzled and matmul_pmpp
# show it in the H100 `--set full` recording), so flops_fp16 is an upper bound on real half-precision work.
_FLOP_COUNTERS = (  # key, ncu opcode, FLOPs per thread instruction
    ("fp32_ffma_inst", "ffma", 2), ("fp32_fadd_inst", "fadd", 1), ("fp32_fmul_inst", "fmul", 1),
    ("fp64_dfma_inst", "dfma", 2), ("fp64_dadd_inst", "dadd", 1), ("fp64_dmul_inst", "dmul", 1),
    ("fp16_hfma_inst", "hfma", 4), ("fp16_hadd_inst", "hadd", 2), ("fp16_hmul_inst", "hmul", 2),
)
_PRECISIONS = {"fp32": "single", "fp64": "double", "fp16": "half"}
NO_FLOPS = "no floating-point work"

_ROOFLINE_RAW = [
    *(
        Metric(
            key, "inst", f"{op.upper()} thread instructions executed (predicated-on threads; {flops} FLOPs each)",
            f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum", deterministic=True, roofline=True,
            per_cycle=f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed",
        )
        for key, op, flops in _FLOP_COUNTERS
    ),
    # The GPU's own ceilings, as ncu's SpeedOfLight roofline sections compute them (per kernel: clocks
    # are measured during the kernel).
    Metric("peak_ffma_per_cycle", "inst/cycle", "the GPU's peak FFMA thread instructions per SM cycle, all SMs",
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", deterministic=True,
           over_launches="duration_weighted"),
    Metric("peak_dfma_per_cycle", "inst/cycle", "the GPU's peak DFMA thread instructions per SM cycle, all SMs",
           "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", deterministic=True,
           over_launches="duration_weighted"),
    Metric("peak_hfma_per_cycle", "inst/cycle", "the GPU's peak HFMA thread instructions per SM cycle, all SMs",
           "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained", deterministic=True,
           over_launches="duration_weighted"),
    Metric("sm_clock", "hz", "SM cycles per second during the kernel", "sm__cycles_elapsed.avg.per_second",
           timed=True, over_launches="duration_weighted"),
    Metric("peak_dram_bytes_per_cycle", "byte/cycle", "the GPU's peak DRAM bytes per DRAM cycle",
           "dram__bytes.sum.peak_sustained", deterministic=True,
           over_launches="duration_weighted"),
    Metric("dram_clock", "hz", "DRAM cycles per second during the kernel", "dram__cycles_elapsed.avg.per_second",
           timed=True, over_launches="duration_weighted"),
    # Global memory: coalescing, L1 and L2 traffic. A warp's global load or store instruction is one
    # L1TEX request (as for local memory above: instruction counters, not L1TEX's request counters).
    Metric("global_load_sectors", "sector", "32-byte sectors global loads asked of L1TEX",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "lower", deterministic=True, roofline=True),
    Metric("global_store_sectors", "sector", "32-byte sectors global stores sent to L1TEX",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "lower", deterministic=True, roofline=True),
    Metric("global_load_requests", "inst", "warp-level global load instructions executed (LDG: one request each)",
           "smsp__inst_executed_op_global_ld.sum", deterministic=True),
    Metric("global_store_requests", "inst", "warp-level global store instructions executed (STG: one request each)",
           "smsp__inst_executed_op_global_st.sum", deterministic=True),
    Metric("l2_sectors_from_l1", "sector", "32-byte sectors the L1TEX units read from or wrote to L2",
           "lts__t_sectors_srcunit_tex.sum", "lower"),
    Metric("l1_hit_rate", "%", "share of L1TEX sector lookups that hit", "l1tex__t_sector_hit_rate.pct", "higher",
           noise=HIT_RATE_NOISE, over_launches="duration_weighted"),
    Metric("l2_hit_rate", "%", "share of L2 sector lookups that hit", "lts__t_sector_hit_rate.pct", "higher",
           noise=HIT_RATE_NOISE, over_launches="duration_weighted"),
]


# precision -> its counters' (key, FLOPs per instruction): _flops runs for every kernel read
_FLOP_WEIGHTS = {precision: tuple((key, weight) for key, _, weight in _FLOP_COUNTERS if key.startswith(precision))
                 for precision in _PRECISIONS}  # fmt: skip


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
_ROOFLINE_DERIVED = [
    *(
        Metric(
            f"flops_{precision}", "FLOP",
            f"{_PRECISIONS[precision]}-precision floating-point operations (CUDA cores; no tensor cores)"
            + (": counts ptxas's HFMA2.MMA register moves too, an upper bound" if precision == "fp16" else ""),
            better=None, deterministic=True, formula=_FLOP_FORMULA[precision],
            derive=functools.partial(_flops, precision=precision),
        )
        for precision in _PRECISIONS
    ),
    Metric(
        "flops", "FLOP",
        "floating-point operations, fp32 + fp64 on CUDA cores (an FMA is 2; not counted: fp16, whose counter"
        " includes register moves, tensor-core work, MUFU special functions, conversions)",
        deterministic=True, formula="flops_fp32 + flops_fp64", derive=_all_flops,
    ),
    Metric(
        "total_flops", "FLOP", "floating-point operations on CUDA cores (flops) and tensor cores (tensor_flops)",
        deterministic=True, formula="flops + tensor_flops", derive=lambda v: _sum(_all_flops(v), tensor_flops(v)),
    ),
    Metric(
        "flop_rate", "FLOP/second", "achieved floating-point operations per second on CUDA cores",
        better="higher", timed=True, formula="flops / (duration * 1e-9)",
        derive=lambda v: _ratio(_all_flops(v), _scale(v.get("duration"), 1e-9)),
    ),
    Metric(
        "l1_global_bytes", "byte", "bytes of global loads and stores at L1TEX (32-byte sectors)",
        better="lower", deterministic=True,
        formula=f"(global_load_sectors + global_store_sectors) * {SECTOR_BYTES}", derive=_l1_bytes,
    ),
    Metric(
        "l2_bytes", "byte", "bytes between the L1TEX units and L2 (32-byte sectors)",
        better="lower", formula=f"l2_sectors_from_l1 * {SECTOR_BYTES}",
        derive=lambda v: _scale(v.get("l2_sectors_from_l1"), SECTOR_BYTES),
    ),
    Metric(
        "arithmetic_intensity", "FLOP/byte",
        "FLOPs (CUDA and tensor cores) per DRAM byte (n/a for a kernel with no floating-point work)",
        better="higher", formula="(flops + tensor-core FLOPs where measured) / dram_bytes",
        derive=lambda v: _intensity(v, _dram_bytes(v)),
        na_reason=_no_flops,
    ),
    Metric(
        "arithmetic_intensity_l2", "FLOP/byte", "FLOPs per byte between L1TEX and L2",
        better="higher", formula="(flops + tensor-core FLOPs where measured) / l2_bytes",
        derive=lambda v: _intensity(v, _scale(v.get("l2_sectors_from_l1"), SECTOR_BYTES)), na_reason=_no_flops,
    ),
    Metric(
        "arithmetic_intensity_l1", "FLOP/byte", "FLOPs per byte of global loads and stores at L1TEX",
        better="higher", deterministic=True, formula="(flops + tensor-core FLOPs where measured) / l1_global_bytes",
        derive=lambda v: _intensity(v, _l1_bytes(v)), na_reason=_no_flops,
    ),
    Metric(
        "global_load_sectors_per_request", "sector/request",
        "sectors per global load request: 4 for a fully coalesced warp load of 4-byte values, 32 for one"
        " sector a thread", better="lower", deterministic=True, formula="global_load_sectors / global_load_requests",
        derive=lambda v: _ratio(v.get("global_load_sectors"), v.get("global_load_requests")),
    ),
    Metric(
        "global_store_sectors_per_request", "sector/request",
        "sectors per global store request: 4 for a fully coalesced warp store of 4-byte values",
        better="lower", deterministic=True, formula="global_store_sectors / global_store_requests",
        derive=lambda v: _ratio(v.get("global_store_sectors"), v.get("global_store_requests")),
    ),
    *(
        Metric(
            f"peak_flops_{precision}", "FLOP/second",
            f"the GPU's peak {_PRECISIONS[precision]}-precision FLOP/s at the kernel's SM clock (CUDA cores)",
            timed=True, formula=f"peak_{op}_per_cycle * {weight} * sm_clock",
            derive=functools.partial(_peak_flops, op=op, weight=weight),
        )
        for precision, op, weight in (("fp32", "ffma", 2), ("fp64", "dfma", 2), ("fp16", "hfma", 4))
    ),
    Metric(
        "peak_dram_bandwidth", "byte/second", "the GPU's peak DRAM bandwidth at the kernel's DRAM clock",
        timed=True, formula="peak_dram_bytes_per_cycle * dram_clock",
        derive=lambda v: _product(v.get("peak_dram_bytes_per_cycle"), v.get("dram_clock")),
    ),
]
# fmt: on
_RAW += _ROOFLINE_RAW + list(TENSOR_RAW)
_DERIVED += _ROOFLINE_DERIVED + list(TENSOR_DERIVED)


CATALOGUE: dict[str, Metric] = {m.key: m for m in _RAW + _DERIVED + _PER_INSTRUCTION}
RAW_METRICS: tuple[Metric, ...] = tuple(_RAW)
DERIVED_METRICS: tuple[Metric, ...] = tuple(_DERIVED) + tuple(m for m in _PER_INSTRUCTION if m.derive)
PER_INSTRUCTION_METRICS: tuple[Metric, ...] = tuple(m for m in _PER_INSTRUCTION if not m.derive)
BY_NCU_NAME: dict[str, Metric] = {m.ncu: m for m in _RAW if m.ncu}
NCU_ALIASES: dict[str, Metric] = {alias: m for m in _RAW for alias in m.aliases}  # ncu's other names
# the names a count is read from where a report holds it only as ncu's roofline sections do (Metric.per_cycle)
SECTION_NAMES = frozenset({m.per_cycle for m in _RAW if m.per_cycle} | {SECTION_CYCLES})

# Keys earlier memlens versions wrote and this one no longer collects: results files that hold them
# still load, without them (local_*_requests gave way to local_*_instructions: 2 replay passes fewer).
RETIRED_KEYS = frozenset({"local_ld_requests", "local_st_requests"})

DEVICE_ATTRIBUTES = {"gpu_name": "device__attribute_display_name",  # read beside the metrics, to label a run
                     "cc_major": "device__attribute_compute_capability_major",
                     "cc_minor": "device__attribute_compute_capability_minor"}  # fmt: skip


def ncu_metric_names(fast: bool = False, roofline: bool = False) -> list[str]:
    """The `--metrics` list for ncu; `fast` leaves out the instrumented pass, `roofline` adds the
    FLOP and L1 global-sector counters (on an H200 they take the list from 4 replay passes a kernel to 6)."""
    names = [m.ncu for m in RAW_METRICS if m.ncu and m.asked and not (fast and m.instrumented)
             and (roofline or not m.roofline)]  # fmt: skip
    per_pc = [] if fast else list(PER_PC_METRICS)
    return names + per_pc + list(DEVICE_ATTRIBUTES.values())


def derive_all(raw: Values) -> dict[str, float | None]:
    """Every derived figure from the raw values (None where an input is missing)."""
    return {m.key: m.derive(raw) for m in DERIVED_METRICS if m.derive}


def lookup(key: str, table: Mapping[str, Metric] = CATALOGUE) -> Metric:
    """The metric named `key` in `table`; a KeyError whose message suggests the closest names."""
    try:
        return table[key]
    except KeyError:
        close = difflib.get_close_matches(key, table, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(f"unknown metric {key!r}{hint}") from None
