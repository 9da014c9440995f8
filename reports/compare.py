"""Several runs in one report: each kernel (family/variant, or kernel name) across the runs, every
figure beside the first run's with its change, better or worse by the catalogue's `better` where the
change is beyond the figure's noise (model/noise.py: a count exactly, a duration beyond the runs' bench
p10-p90 or the stated floor), else same."""

from __future__ import annotations

from memlens.model.catalogue import CATALOGUE, Metric
from memlens.model.noise import Band, Spread, band_of, judge
from memlens.reports.columns import BENCH_COLUMNS, BENCH_MEDIAN, COLUMNS, figure_column
from memlens.reports.formatting import format_value, signed_percent
from memlens.reports.model import CompareCell, CompareMetric, Comparison, Direction, Row, RunSection

COMPARED = (
    "duration",
    "dram_bandwidth",
    "exact_excess_wavefronts",
    "hw_bank_conflicts",
    "local_ld_bytes",
    "local_st_bytes",
    "registers_per_thread",
)
# Runs on different GPU models: each figure also as a share of its own GPU's ceilings, so a kernel
# memory-bound on one GPU and not on the other shows it. DRAM % of peak is ncu's own, per kernel;
# % of copy is the DRAM bandwidth over the run's bench copy bandwidth (bench.json, where it has one).
DRAM_PCT_OF_COPY, MEMORY_BOUND = "dram_pct_of_copy", "memory_bound"
# ncu's Speed Of Light rule reads throughput below 60% of peak as latency-bound: at or above, memory-bound
MEMORY_BOUND_PCT = 60.0
CEILING_COLUMNS = (
    figure_column(
        "dram_pct_of_peak", "DRAM % of its GPU's peak", "DRAM", "percent", "ncu's DRAM throughput, % of peak"
    ),
    figure_column(
        DRAM_PCT_OF_COPY,
        "DRAM % of its GPU's copy",
        "DRAM",
        "percent",
        "DRAM bandwidth over the copy bandwidth memlens bench measured on the run's GPU",
    ),
    figure_column(
        MEMORY_BOUND,
        f"memory-bound (DRAM ≥ {MEMORY_BOUND_PCT:g}% of peak)",
        "DRAM",
        "percent",
        "DRAM throughput at or above the share of peak where ncu stops calling a kernel latency-bound",
    ),
)
BOUND_TEXT = {True: "memory-bound", False: "not memory-bound"}

# figures outside the catalogue, as metrics: how they compare and how they vary
EXTRA_METRICS = {
    BENCH_MEDIAN: Metric(BENCH_MEDIAN, "ms", "median launch time timed by memlens bench", better="lower", timed=True),
    DRAM_PCT_OF_COPY: Metric(
        DRAM_PCT_OF_COPY, "%", "DRAM bandwidth over the bench copy's", better="higher", timed=True
    ),
    MEMORY_BOUND: Metric(MEMORY_BOUND, "", "DRAM at or above the share of peak of a memory-bound kernel"),
}


def compare(runs: tuple[RunSection, ...]) -> tuple[Comparison, ...]:
    """Every kernel across the runs; the bench median too when the first run and another have
    bench results (a run without shows n/a)."""
    if len(runs) < 2:
        return ()
    keys: tuple[str, ...] = COMPARED
    if runs[0].bench is not None and any(run.bench is not None for run in runs[1:]):
        keys = (*COMPARED, BENCH_MEDIAN)
    if len(gpu_models(runs)) > 1:
        with_copy = (DRAM_PCT_OF_COPY,) if any(run.bench is not None for run in runs) else ()
        keys = (*keys, "dram_pct_of_peak", *with_copy, MEMORY_BOUND)
    tables = [_rows_by_label(run) for run in runs]
    labels = list(dict.fromkeys(label for table in tables for label in table))
    return tuple(_comparison(label, [t.get(label) for t in tables], runs, keys) for label in labels)


def gpu_models(runs: tuple[RunSection, ...]) -> list[str]:
    """The GPU models of the runs, each once, in order."""
    return list(dict.fromkeys(name for run in runs if (name := run.info.get("gpu_name"))))


def _value(key: str, row: Row | None, run: RunSection) -> float | None:
    """A compared figure of one row: its cell, or a share of its own GPU's ceilings."""
    if row is None or not row.valid:
        return None
    if key == DRAM_PCT_OF_COPY:
        bandwidth = _value("dram_bandwidth", row, run)
        if bandwidth is None or run.bench is None or run.bench.copy_gb_per_s <= 0:
            return None
        return 100.0 * bandwidth / (run.bench.copy_gb_per_s * 1e9)
    if key == MEMORY_BOUND:
        share = _value("dram_pct_of_peak", row, run)
        return None if share is None else float(share >= MEMORY_BOUND_PCT)
    cell = row.cells.get(key)
    return None if cell is None else cell.value


def _rows_by_label(run: RunSection) -> dict[str, Row]:
    rows = {row.label: row for family in run.families for row in family.rows}
    for row in run.others:
        rows.setdefault(row.label, row)
    return rows


def _comparison(label: str, rows: list[Row | None], runs: tuple[RunSection, ...], keys: tuple[str, ...]) -> Comparison:
    statuses = tuple("absent" if row is None else row.status for row in rows)
    columns = {c.key: c for c in (*COLUMNS, *BENCH_COLUMNS, *CEILING_COLUMNS)}
    metrics = []
    for key in keys:
        values = [_value(key, row, run) for row, run in zip(rows, runs, strict=True)]
        column = columns[key]
        if key == MEMORY_BOUND:
            cells = [
                CompareCell(run.label, v, "n/a" if v is None else BOUND_TEXT[v >= 1])
                for v, run in zip(values, runs, strict=True)
            ]
            metrics.append(CompareMetric(key, column.header, None, tuple(cells)))
            continue
        bands = _bands(key, rows)
        cells = _cells(key, values, column.kind, [r.label for r in runs], bands)
        metrics.append(CompareMetric(key, column.header, metric_of(key).better, tuple(cells)))
    return Comparison(label, statuses, tuple(metrics))


def metric_of(key: str) -> Metric:
    """The metric of a compared figure: the catalogue's, or one of the report's own."""
    return EXTRA_METRICS.get(key) or CATALOGUE[key]


def _spread(row: Row | None) -> Spread | None:
    bench = row.bench if row is not None else None
    return None if bench is None else Spread(bench.median_ms, bench.p10_ms, bench.p90_ms)


def _bands(key: str, rows: list[Row | None]) -> list[Band | None]:
    """Each later run's noise band against the first run (None: compared exactly)."""
    first = rows[0]
    duration = first.cells.get("duration") if first is not None else None
    return [
        band_of(
            metric_of(key),
            None if duration is None else duration.value,
            (_spread(first), _spread(row)),
            bench_figure=key == BENCH_MEDIAN,
        )
        for row in rows[1:]
    ]


def _cells(
    key: str, values: list[float | None], kind: str, runs: list[str], bands: list[Band | None]
) -> list[CompareCell]:
    reference = values[0]
    cells = [CompareCell(runs[0], reference, format_value(reference, kind))]
    for run, value, band in zip(runs[1:], values[1:], bands, strict=True):
        text = format_value(value, kind)
        if value is None or reference is None:
            cells.append(CompareCell(run, value, text, noise=band))
            continue
        change, change_text, direction = _change(key, reference, value, band)
        cells.append(CompareCell(run, value, text, change, change_text, direction, band))
    return cells


def _change(key: str, reference: float, value: float, band: Band | None) -> tuple[float | None, str, Direction]:
    better = metric_of(key).better
    if reference == 0:
        if value == 0:
            return 0.0, signed_percent(0), "same"
        return None, "was 0", _direction(better, value > 0)
    change = (value - reference) / abs(reference)
    return change, signed_percent(change), judge(reference, value, better, band)


def _direction(better: str | None, increased: bool) -> Direction:
    if better is None:
        return "n/a"
    return "better" if increased == (better == "higher") else "worse"
