"""The one catalogue of metrics: every ncu metric memlens asks for and every figure derived
from them, with its unit, its meaning in a line, and (for derived figures) its formula.

Runner, readers, report and gate all take metric names from here.
Units are ncu's base units (`--print-units base`): ns, byte, byte/second, %, and counts.
"""

from __future__ import annotations

import difflib
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
from memlens.model.roofline_metrics import (  # noqa: F401 (NO_FLOPS, _FLOP_COUNTERS: read through the catalogue)
    _FLOP_COUNTERS,
    NO_FLOPS,
    ROOFLINE_DERIVED,
    ROOFLINE_RAW,
    _dram_bytes,
)
from memlens.model.tensor_paths import TENSOR_DERIVED, TENSOR_RAW

__all__ = [  # the per-instruction names, re-exported: the catalogue is where every metric name is found
    "SECTION_CYCLES",
    "SECTOR_BYTES",
    "Better",
    "Metric",
    "OverLaunches",
    "Values",
    "GLOBAL_KEYS",
    "GLOBAL_REQUESTS",
    "GLOBAL_SECTORS",
    "GLOBAL_SECTORS_IDEAL",
    "KIND_KEYS",
    "LOCAL_EXECUTIONS",
    "MEMORY_ACCESS_SIZE",
    "MEMORY_ACCESS_TYPE",
    "MEMORY_TYPE",
    "PER_PC_EXECUTIONS",
    "PER_PC_METRICS",
    "REMOTE_SHARED_EXECUTIONS",
    "SHARED_KEYS",
    "GlobalKeys",
    "KindKeys",
    "SharedKeys",
]

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
# the hit rates at most 11.4% (roofline_metrics.HIT_RATE_NOISE), the hardware bank-conflict counters 4.7%
# there but by tens of percent between runs of larger kernels (its false conflicts).
HW_CONFLICT_NOISE = 0.25

_RAW = [
    Metric("duration", "ns", "kernel duration on the GPU", "gpu__time_duration.sum", "lower", timed=True),
    Metric("dram_read_bytes", "byte", "bytes read from device memory (DRAM)", "dram__bytes_read.sum", "lower"),
    Metric("dram_write_bytes", "byte", "bytes written to device memory (DRAM)", "dram__bytes_write.sum", "lower"),
    # ncu's roofline sections' DRAM figure, never asked for: a plain `--set roofline` report holds it, and
    # not the bytes read and written (times the duration it is their sum: 176,558,592 bytes, exactly, for
    # the cuBLAS GEMM of tests/fixtures/nvidia_h200/tensor's `--set full` report)
    Metric(
        "dram_throughput",
        "byte/second",
        "DRAM bytes read and written per second, as ncu's roofline sections"
        " read them (where a report lacks dram_read_bytes and dram_write_bytes)",
        "dram__bytes.sum.per_second",
        over_launches="duration_weighted",
        timed=True,
        asked=False,
    ),
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
        "shared_ld_instructions",
        "inst",
        "warp-level shared-memory load instructions, hardware counter (counts cp.async LDGSTS, not ldmatrix LDSM)",
        "smsp__inst_executed_op_shared_ld.sum",
        deterministic=True,
        aliases=("smsp__sass_inst_executed_op_shared_ld.sum", "sass__inst_executed_shared_loads"),
    ),
    Metric(
        "shared_st_instructions",
        "inst",
        "warp-level shared-memory store instructions by the hardware counter (counts neither stmatrix nor cp.async)",
        "smsp__inst_executed_op_shared_st.sum",
        deterministic=True,
        aliases=("smsp__sass_inst_executed_op_shared_st.sum", "sass__inst_executed_shared_stores"),
    ),
    Metric(
        "shared_ld_wavefronts",
        "wavefront",
        "shared-memory load wavefronts processed by L1TEX",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "lower",
    ),
    Metric(
        "shared_st_wavefronts",
        "wavefront",
        "shared-memory store wavefronts processed by L1TEX",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "lower",
    ),
    Metric(
        "hw_ld_bank_conflicts",
        "conflict",
        "the L1 pipeline's bank-conflict count of shared loads: cycles that are not address conflicts included"
        " (exact_excess_wavefronts counts those alone)",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "lower",
        noise=HW_CONFLICT_NOISE,
    ),
    Metric(
        "hw_st_bank_conflicts",
        "conflict",
        "the L1 pipeline's bank-conflict count of shared stores: cycles that are not address conflicts included"
        " (exact_excess_wavefronts counts those alone)",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        "lower",
        noise=HW_CONFLICT_NOISE,
    ),
    Metric(
        "shared_wavefronts",
        "wavefront",
        "shared-memory wavefronts, counted per instruction by instrumentation",
        "memory_l1_wavefronts_shared",
        "lower",
        instrumented=True,
        deterministic=True,
    ),
    Metric(
        "shared_wavefronts_ideal",
        "wavefront",
        "wavefronts the same shared-memory accesses would need with no bank conflict",
        "memory_l1_wavefronts_shared_ideal",
        instrumented=True,
        deterministic=True,
    ),
    # Local-memory instructions, not L1TEX's local request counters: on Hopper those need two more
    # replay passes of every kernel (6 instead of 4 for this whole list); a warp's local access
    # instruction is one request.
    Metric(
        "local_ld_instructions",
        "inst",
        "warp-level local-memory load instructions executed",
        "smsp__inst_executed_op_local_ld.sum",
        "lower",
        deterministic=True,
    ),
    Metric(
        "local_st_instructions",
        "inst",
        "warp-level local-memory store instructions executed",
        "smsp__inst_executed_op_local_st.sum",
        "lower",
        deterministic=True,
    ),
    Metric(
        "local_ld_sectors",
        "sector",
        "32-byte sectors of local-memory loads",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
        "lower",
        deterministic=True,
    ),
    Metric(
        "local_st_sectors",
        "sector",
        "32-byte sectors of local-memory stores",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
        "lower",
        deterministic=True,
    ),
    # a device attribute, read with the launch's counters in no pass of its own (model/time_at_stake.py)
    Metric(
        "sm_count",
        "SM",
        "streaming multiprocessors on the GPU",
        "device__attribute_multiprocessor_count",
        deterministic=True,
        over_launches="max",
    ),
    Metric(
        "registers_per_thread",
        "register",
        "registers allocated per thread",
        "launch__registers_per_thread",
        "lower",
        deterministic=True,
        over_launches="max",
    ),
    Metric(
        "static_shared_per_block",
        "byte",
        "static shared memory per block",
        "launch__shared_mem_per_block_static",
        deterministic=True,
        over_launches="max",
    ),
    Metric(
        "dynamic_shared_per_block",
        "byte",
        "dynamic shared memory per block",
        "launch__shared_mem_per_block_dynamic",
        deterministic=True,
        over_launches="max",
    ),
    Metric("grid_size", "block", "blocks in the grid", "launch__grid_size", deterministic=True, over_launches="max"),
    Metric("block_size", "thread", "threads per block", "launch__block_size", deterministic=True, over_launches="max"),
]

_DERIVED = [
    Metric(
        "dram_bytes",
        "byte",
        "bytes moved to and from device memory",
        better="lower",
        formula="dram_read_bytes + dram_write_bytes (else dram_throughput * duration * 1e-9)",
        derive=lambda v: _dram_bytes(v),
    ),
    Metric(
        "dram_bandwidth",
        "byte/second",
        "achieved DRAM bandwidth",
        better="higher",
        timed=True,
        formula="(dram_read_bytes + dram_write_bytes) / (duration * 1e-9)",
        derive=lambda v: _ratio(_dram_bytes(v), _scale(v.get("duration"), 1e-9)),
    ),
    Metric(
        "shared_ld_ways",
        "wavefront/inst",
        "hardware shared-load wavefronts per load instruction (2 for a conflict-free 8-byte load, 4 for 16-byte)",
        better="lower",
        formula="shared_ld_wavefronts / shared_ld_instructions",
        derive=lambda v: _ratio(v.get("shared_ld_wavefronts"), v.get("shared_ld_instructions")),
    ),
    Metric(
        "shared_st_ways",
        "wavefront/inst",
        "hardware shared-store wavefronts per store instruction (2 for a conflict-free 8-byte store, 4 for 16-byte)",
        better="lower",
        formula="shared_st_wavefronts / shared_st_instructions",
        derive=lambda v: _ratio(v.get("shared_st_wavefronts"), v.get("shared_st_instructions")),
    ),
    Metric(
        "exact_excess_wavefronts",
        "wavefront",
        "shared-memory wavefronts beyond the conflict-free ideal: the exact cost of bank conflicts",
        better="lower",
        instrumented=True,
        deterministic=True,
        problem_above_zero=True,
        formula="shared_wavefronts - shared_wavefronts_ideal",
        derive=lambda v: _diff(v.get("shared_wavefronts"), v.get("shared_wavefronts_ideal")),
    ),
    Metric(
        "hw_bank_conflicts",
        "conflict",
        HW_COUNTS,
        better="lower",
        noise=HW_CONFLICT_NOISE,
        formula="hw_ld_bank_conflicts + hw_st_bank_conflicts",
        derive=lambda v: _sum(v.get("hw_ld_bank_conflicts"), v.get("hw_st_bank_conflicts")),
    ),
    Metric(
        "local_ld_bytes",
        "byte",
        "bytes of local-memory loads",
        better="lower",
        deterministic=True,
        problem_above_zero=True,
        formula=f"local_ld_sectors * {SECTOR_BYTES}",
        derive=lambda v: _scale(v.get("local_ld_sectors"), SECTOR_BYTES),
    ),
    Metric(
        "local_st_bytes",
        "byte",
        "bytes of local-memory stores",
        better="lower",
        deterministic=True,
        problem_above_zero=True,
        formula=f"local_st_sectors * {SECTOR_BYTES}",
        derive=lambda v: _scale(v.get("local_st_sectors"), SECTOR_BYTES),
    ),
    Metric(
        "local_bytes",
        "byte",
        "bytes of local-memory traffic, loads plus stores",
        better="lower",
        deterministic=True,
        formula=f"(local_ld_sectors + local_st_sectors) * {SECTOR_BYTES}",
        derive=lambda v: _scale(_sum(v.get("local_ld_sectors"), v.get("local_st_sectors")), SECTOR_BYTES),
    ),
]

_RAW += ROOFLINE_RAW + list(TENSOR_RAW)
_DERIVED += ROOFLINE_DERIVED + list(TENSOR_DERIVED)


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

DEVICE_ATTRIBUTES = {
    "gpu_name": "device__attribute_display_name",  # read beside the metrics, to label a run
    "cc_major": "device__attribute_compute_capability_major",
    "cc_minor": "device__attribute_compute_capability_minor",
}


def ncu_metric_names(fast: bool = False, roofline: bool = False) -> list[str]:
    """The `--metrics` list for ncu; `fast` leaves out the instrumented pass, `roofline` adds the
    FLOP and L1 global-sector counters (on an H200 they take the list from 4 replay passes a kernel to 6)."""
    names = [
        m.ncu
        for m in RAW_METRICS
        if m.ncu and m.asked and not (fast and m.instrumented) and (roofline or not m.roofline)
    ]
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
