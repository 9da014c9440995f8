"""The one catalogue of metrics: every ncu metric memlens asks for and every figure derived
from them, with its unit, its meaning in a line, and (for derived figures) its formula.

Runner, readers, report and gate all take metric names from here.
Units are ncu's base units (`--print-units base`): ns, byte, byte/second, %, and counts.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Better = Literal["lower", "higher"] | None
# How the launches of one variant add up: counts and times sum, per-launch settings (registers,
# shared memory, grid and block) take the largest, a percentage of peak is weighted by duration.
OverLaunches = Literal["sum", "max", "duration_weighted"]
Values = Mapping[str, "float | None"]

SECTOR_BYTES = 32  # an L1TEX sector is 32 bytes


@dataclass(frozen=True)
class Metric:
    key: str
    unit: str
    meaning: str
    ncu: str | None = None  # the ncu metric name; None for a derived figure
    better: Better = None  # which direction is an improvement, for gates and speedups
    instrumented: bool = False  # needs ncu's instrumented replay pass (skipped by --fast)
    formula: str = ""  # for derived figures, in words over catalogue keys
    derive: Callable[[Values], float | None] | None = None
    deterministic: bool = False  # a count that does not vary between runs of one input
    over_launches: OverLaunches = "sum"  # how a variant's launches combine into one figure
    problem_above_zero: bool = False  # any value above zero marks a problem (excess wavefronts, local traffic)


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return num / den


def _sum(*parts: float | None) -> float | None:
    if any(p is None for p in parts):
        return None
    return float(sum(parts))  # type: ignore[arg-type]


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _scale(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


_RAW = [
    Metric("duration", "ns", "kernel duration on the GPU", "gpu__time_duration.sum", "lower"),
    Metric("dram_read_bytes", "byte", "bytes read from device memory (DRAM)", "dram__bytes_read.sum", "lower"),
    Metric("dram_write_bytes", "byte", "bytes written to device memory (DRAM)", "dram__bytes_write.sum", "lower"),
    Metric(
        "dram_pct_of_peak",
        "%",
        "DRAM throughput as a percentage of the peak sustained rate",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "higher",
        over_launches="duration_weighted",
    ),
    Metric(
        "shared_ld_instructions", "inst", "warp-level shared-memory load instructions executed",
        "smsp__inst_executed_op_shared_ld.sum", deterministic=True,
    ),
    Metric(
        "shared_st_instructions", "inst", "warp-level shared-memory store instructions executed",
        "smsp__inst_executed_op_shared_st.sum", deterministic=True,
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
        "hardware counter of shared-load bank conflicts (over-counts: see exact_excess_wavefronts)",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "lower",
    ),
    Metric(
        "hw_st_bank_conflicts", "conflict",
        "hardware counter of shared-store bank conflicts (over-counts: see exact_excess_wavefronts)",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "lower",
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
        better="lower", formula="dram_read_bytes + dram_write_bytes",
        derive=lambda v: _sum(v.get("dram_read_bytes"), v.get("dram_write_bytes")),
    ),
    Metric(
        "dram_bandwidth", "byte/second", "achieved DRAM bandwidth",
        better="higher", formula="(dram_read_bytes + dram_write_bytes) / (duration * 1e-9)",
        derive=lambda v: _ratio(
            _sum(v.get("dram_read_bytes"), v.get("dram_write_bytes")), _scale(v.get("duration"), 1e-9)
        ),
    ),
    Metric(
        "shared_ld_ways", "wavefront/inst", "shared-load wavefronts per load instruction (n-way)",
        better="lower", formula="shared_ld_wavefronts / shared_ld_instructions",
        derive=lambda v: _ratio(v.get("shared_ld_wavefronts"), v.get("shared_ld_instructions")),
    ),
    Metric(
        "shared_st_ways", "wavefront/inst", "shared-store wavefronts per store instruction (n-way)",
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
        "excess_wavefronts_per_shared_ld", "wavefront/inst",
        "exact excess wavefronts per shared-load instruction",
        better="lower", instrumented=True,
        formula="exact_excess_wavefronts / shared_ld_instructions",
        derive=lambda v: _ratio(
            _diff(v.get("shared_wavefronts"), v.get("shared_wavefronts_ideal")), v.get("shared_ld_instructions")
        ),
    ),
    Metric(
        "hw_bank_conflicts", "conflict", "hardware bank-conflict counter, loads plus stores (over-counts)",
        better="lower", formula="hw_ld_bank_conflicts + hw_st_bank_conflicts",
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

CATALOGUE: dict[str, Metric] = {m.key: m for m in _RAW + _DERIVED}
RAW_METRICS: tuple[Metric, ...] = tuple(_RAW)
DERIVED_METRICS: tuple[Metric, ...] = tuple(_DERIVED)
BY_NCU_NAME: dict[str, Metric] = {m.ncu: m for m in _RAW if m.ncu}

# Keys earlier memlens versions wrote and this one no longer collects: results files that hold them
# still load, without them (local_*_requests gave way to local_*_instructions: 2 replay passes fewer).
RETIRED_KEYS = frozenset({"local_ld_requests", "local_st_requests"})

# Device attributes read alongside the metrics, to label a run.
DEVICE_ATTRIBUTES = {
    "gpu_name": "device__attribute_display_name",
    "cc_major": "device__attribute_compute_capability_major",
    "cc_minor": "device__attribute_compute_capability_minor",
}


def ncu_metric_names(fast: bool = False) -> list[str]:
    """The `--metrics` list for ncu; `fast` leaves out the instrumented pass."""
    names = [m.ncu for m in RAW_METRICS if m.ncu and not (fast and m.instrumented)]
    return names + list(DEVICE_ATTRIBUTES.values())


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
