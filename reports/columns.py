"""The columns of a family's table and the cells of one kernel's row: which figure each column shows
and how (the n-way columns: the exact figure where the run has it)."""

from __future__ import annotations

from memlens.io.tables import Column
from memlens.model import shared_figures
from memlens.model.catalogue import CATALOGUE, HW_COUNTS, KIND_KEYS
from memlens.model.instruction_kinds import SharedKind, Side
from memlens.model.results import KernelResult
from memlens.reports.formatting import format_count, format_value
from memlens.reports.model import NONE, SPEEDUP, Cell, Severity
from memlens.reports.verdicts import HW_LABEL

SHARED_PER_BLOCK = "shared_per_block"


def figure_column(key: str, header: str, group: str, kind: str, title: str = "") -> Column:
    """A column of the report's variant tables: the figure `key` (a catalogue key or a report figure)
    under `header`, in `group`, formatted as `kind` (reports.formatting.FORMATTERS), `title` its legend."""
    return Column(header, key=key, group=group, kind=kind, title=title)


COLUMNS: tuple[Column, ...] = (
    figure_column(
        "duration", "duration", "time", "duration", "kernel duration on the GPU (all launches of the variant)"
    ),
    figure_column(SPEEDUP, "speedup", "time", "speedup", "the family's baseline duration divided by this duration"),
    figure_column("dram_bandwidth", "bandwidth", "DRAM", "bandwidth", "bytes read plus written, per second"),
    figure_column("dram_pct_of_peak", "% of peak", "DRAM", "percent", "DRAM throughput as a percentage of peak"),
    figure_column(
        "shared_ld_ways",
        "ld n-way",
        "shared memory",
        "ways",
        "shared loads' (LDS) wavefronts over the conflict-free ideal of the same loads (exact; 1 = no conflict at "
        "any width); without the exact pass, wavefronts per load instruction (hover: the hardware figure)",
    ),
    *(
        figure_column(KIND_KEYS[kind].ways, f"{header} n-way", "shared memory", "ways", title)
        for kind, header, title in (
            (SharedKind.LDMATRIX, "ldmatrix", "ldmatrix loads' wavefronts over their own conflict-free ideal"),
        )
    ),
    figure_column(
        "shared_st_ways",
        "st n-way",
        "shared memory",
        "ways",
        "shared stores' (STS) wavefronts over the conflict-free ideal of the same stores (exact; 1 = no conflict at "
        "any width); without the exact pass, wavefronts per store instruction (hover: the hardware figure)",
    ),
    *(
        figure_column(KIND_KEYS[kind].ways, f"{header} n-way", "shared memory", "ways", title)
        for kind, header, title in (
            (SharedKind.STMATRIX, "stmatrix", "stmatrix stores' wavefronts over their own conflict-free ideal"),
            (SharedKind.CP_ASYNC, "cp.async", "cp.async's shared-memory writes' wavefronts over their own ideal"),
            (SharedKind.ATOMICS, "atomic", "shared atomics' wavefronts over their own conflict-free ideal"),
            (SharedKind.TENSOR_CORE, "tensor-core", "tensor-core operand reads' (wgmma) wavefronts over their ideal"),
        )
    ),
    figure_column(
        "exact_excess_wavefronts",
        "excess wavefronts",
        "shared memory",
        "compact",
        "exact: instrumented wavefronts minus the conflict-free ideal",
    ),
    figure_column(
        "hw_bank_conflicts",
        HW_LABEL,
        "shared memory",
        "compact",
        HW_COUNTS,
    ),
    figure_column("local_ld_bytes", "local loads", "local memory", "bytes", "bytes of local-memory loads"),
    figure_column("local_st_bytes", "local stores", "local memory", "bytes", "bytes of local-memory stores"),
    figure_column("registers_per_thread", "registers", "resources", "count", "registers per thread"),
    figure_column(SHARED_PER_BLOCK, "shared / block", "resources", "bytes", "static plus dynamic shared memory"),
)
# `memlens bench` figures (bench.json in the run directory): in the family tables of runs that have one
BENCH_MEDIAN, BENCH_BANDWIDTH, BENCH_PCT = "bench_median", "bench_bandwidth", "bench_pct_of_copy"
BENCH_COLUMNS: tuple[Column, ...] = (
    figure_column(
        BENCH_MEDIAN,
        "bench median",
        "memlens bench",
        "milliseconds",
        "median launch time timed by memlens bench with CUDA events, outside ncu (hover for p10–p90)",
    ),
    figure_column(
        BENCH_BANDWIDTH,
        "bench bandwidth",
        "memlens bench",
        "gb_per_s",
        "the family's min_bytes (the fewest bytes the kernel must move) over the bench median",
    ),
    figure_column(
        BENCH_PCT,
        "% of copy bandwidth",
        "memlens bench",
        "percent",
        "bench bandwidth as a percentage of a device-to-device copy of the same bytes (the family's min_bytes,"
        " half read, half written) timed the same way by the same bench (hover for the copy)",
    ),
)
BENCH_UNITS = {BENCH_MEDIAN: "ms", BENCH_BANDWIDTH: "GB/s", BENCH_PCT: "%"}
NO_MIN_BYTES = "the family declares no min_bytes: no bandwidth"

# The n-way columns, one a kind of shared access: the exact figure where the run has it (a conflict-free 16-byte
# load or ldmatrix reads 1, not the 4 wavefronts the hardware counts per instruction), as `memlens metrics` and
# `lines` show it; shared loads and stores fall back on the hardware's figure. A run's tables leave out the
# n-way columns of the kinds none of its kernels has (model.Report.run_columns).
WAYS_KINDS = {
    "shared_ld_ways": SharedKind.LOADS,
    "shared_st_ways": SharedKind.STORES,
    **{KIND_KEYS[kind].ways: kind for kind in SharedKind if kind not in (SharedKind.LOADS, SharedKind.STORES)},
}
_HW_WAYS = {SharedKind.LOADS: "shared_ld_ways", SharedKind.STORES: "shared_st_ways"}


def kernel_cells(kernel: KernelResult) -> dict[str, Cell]:
    cells = {}
    for column in COLUMNS:
        if column.key == SPEEDUP:
            continue
        if column.key == SHARED_PER_BLOCK:
            cells[column.key] = _shared_per_block(kernel, column)
            continue
        if column.key in WAYS_KINDS:
            cells[column.key] = _ways_cell(kernel, column)
            continue
        metric = kernel.metric(column.key)
        flag: Severity | None = "bad" if CATALOGUE[column.key].problem_above_zero and (metric.value or 0) > 0 else None
        exact = format_count(metric.value) if metric.value is not None and column.kind == "compact" else ""
        cells[column.key] = Cell(
            column.key,
            metric.value,
            metric.unit,
            format_value(metric.value, column.kind),
            exact,
            metric.missing_reason,
            flag,
        )
    return cells


def _ways_cell(kernel: KernelResult, column: Column) -> Cell:
    """The exact n-way, the hardware figure on hover; or the hardware figure, marked as a fallback."""
    kind = WAYS_KINDS[column.key]
    figure = shared_figures.kind_n_way(kernel, kind)
    if figure.value is None:  # none counted is "—", as `memlens metrics` shows it; the note says why on hover
        side = Side.LD if kind is SharedKind.LOADS else Side.ST
        none = figure.exact or (kind in _HW_WAYS and shared_figures.no_such_access(kernel, side, figure))
        return Cell(column.key, None, "wavefront/ideal", NONE if none else "n/a", missing_reason=figure.note)
    if figure.exact:
        counted = kernel.metric(_HW_WAYS[kind]).value if kind in _HW_WAYS else None
        hardware = (
            "exact"
            if counted is None
            else (f"exact; the hardware counts {format_value(counted, column.kind)} wavefronts per instruction")
        )
        return Cell(
            column.key,
            figure.value,
            "wavefront/ideal",
            format_value(figure.value, column.kind),
            hardware,
            flag="bad" if figure.value > 1 else None,
        )
    return Cell(
        column.key,
        figure.value,
        "wavefront/inst",
        format_value(figure.value, column.kind) + "*",
        f"fallback: {figure.note}",
    )


def _shared_per_block(kernel: KernelResult, column: Column) -> Cell:
    static = kernel.metric("static_shared_per_block")
    dynamic = kernel.metric("dynamic_shared_per_block")
    if static.value is None or dynamic.value is None:
        reason = static.missing_reason or dynamic.missing_reason
        return Cell(column.key, None, "byte", "n/a", missing_reason=reason)
    total = static.value + dynamic.value
    return Cell(column.key, total, "byte", format_value(total, column.kind))
