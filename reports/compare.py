"""Several runs in one report: each kernel (family/variant, or kernel name) across the runs, every
figure beside the first run's with its change, better or worse by the catalogue's `better`."""

from __future__ import annotations

from memlens.model.catalogue import CATALOGUE
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
# Timings move between runs of the same code: changes within this fraction read as "same".
# Counts marked deterministic in the catalogue must match exactly. The hardware bank-conflict
# counter's false conflicts vary by tens of percent between identical runs.
NOISE = 0.02
NOISE_BY_KEY = {"hw_bank_conflicts": 0.25}
# Runs on different GPU models: each figure also as a share of its own GPU's ceilings, so a kernel
# memory-bound on one GPU and not on the other shows it. DRAM % of peak is ncu's own, per kernel;
# % of copy is the DRAM bandwidth over the run's bench copy bandwidth (bench.json, where it has one).
DRAM_PCT_OF_COPY, MEMORY_BOUND = "dram_pct_of_copy", "memory_bound"
# ncu's Speed Of Light rule reads throughput below 60% of peak as latency-bound: at or above, memory-bound
MEMORY_BOUND_PCT = 60.0
CEILING_COLUMNS = (
    figure_column("dram_pct_of_peak", "DRAM % of its GPU's peak", "DRAM", "percent",
                  "ncu's DRAM throughput, % of peak"),
    figure_column(DRAM_PCT_OF_COPY, "DRAM % of its GPU's copy", "DRAM", "percent",
                  "DRAM bandwidth over the copy bandwidth memlens bench measured on the run's GPU"),
    figure_column(MEMORY_BOUND, f"memory-bound (DRAM ≥ {MEMORY_BOUND_PCT:g}% of peak)", "DRAM", "percent",
                  "DRAM throughput at or above the share of peak where ncu stops calling a kernel latency-bound"),
)  # fmt: skip
BOUND_TEXT = {True: "memory-bound", False: "not memory-bound"}

# figures outside the catalogue: (better, deterministic)
EXTRA_RULES = {BENCH_MEDIAN: ("lower", False), DRAM_PCT_OF_COPY: ("higher", False), MEMORY_BOUND: (None, False)}


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
        cells = _cells(key, values, column.kind, [r.label for r in runs])
        metrics.append(CompareMetric(key, column.header, _rule(key)[0], tuple(cells)))
    return Comparison(label, statuses, tuple(metrics))


def _rule(key: str) -> tuple[str | None, bool]:
    """(better, deterministic) of a compared figure."""
    if key in EXTRA_RULES:
        return EXTRA_RULES[key]
    metric = CATALOGUE[key]
    return metric.better, metric.deterministic


def _cells(key: str, values: list[float | None], kind: str, runs: list[str]) -> list[CompareCell]:
    reference = values[0]
    cells = [CompareCell(runs[0], reference, format_value(reference, kind))]
    for run, value in zip(runs[1:], values[1:], strict=True):
        text = format_value(value, kind)
        if value is None or reference is None:
            cells.append(CompareCell(run, value, text))
            continue
        change, change_text, direction = _change(key, reference, value)
        cells.append(CompareCell(run, value, text, change, change_text, direction))
    return cells


def _change(key: str, reference: float, value: float) -> tuple[float | None, str, Direction]:
    better, deterministic = _rule(key)
    tolerance = 0.0 if deterministic else NOISE_BY_KEY.get(key, NOISE)
    if reference == 0:
        if value == 0:
            return 0.0, signed_percent(0), "same"
        return None, "was 0", _direction(better, value > 0)
    change = (value - reference) / abs(reference)
    if abs(change) <= tolerance:
        return change, signed_percent(change), "same"
    return change, signed_percent(change), _direction(better, change > 0)


def _direction(better: str | None, increased: bool) -> Direction:
    if better is None:
        return "n/a"
    return "better" if increased == (better == "higher") else "worse"
