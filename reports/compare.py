"""Several runs in one report: each kernel (family/variant, or kernel name) across the runs, every
figure beside the first run's with its change, better or worse by the catalogue's `better`."""

from __future__ import annotations

from memlens.catalogue import CATALOGUE

from .build import BENCH_COLUMNS, BENCH_MEDIAN, COLUMNS
from .formatting import format_value, signed_percent
from .model import CompareCell, CompareMetric, Comparison, Direction, Row, RunSection

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
# figures outside the catalogue: (better, deterministic)
EXTRA_RULES = {BENCH_MEDIAN: ("lower", False)}


def compare(runs: tuple[RunSection, ...]) -> tuple[Comparison, ...]:
    """Every kernel across the runs; the bench median too when the first run and another have
    bench results (a run without shows n/a)."""
    if len(runs) < 2:
        return ()
    keys = COMPARED
    if runs[0].bench is not None and any(run.bench is not None for run in runs[1:]):
        keys = (*COMPARED, BENCH_MEDIAN)
    tables = [_rows_by_label(run) for run in runs]
    labels = list(dict.fromkeys(label for table in tables for label in table))
    return tuple(_comparison(label, [t.get(label) for t in tables], runs, keys) for label in labels)


def _rows_by_label(run: RunSection) -> dict[str, Row]:
    rows = {row.label: row for family in run.families for row in family.rows}
    for row in run.others:
        rows.setdefault(row.label, row)
    return rows


def _comparison(label: str, rows: list[Row | None], runs: tuple[RunSection, ...], keys: tuple[str, ...]) -> Comparison:
    statuses = tuple("absent" if row is None else row.status for row in rows)
    columns = {c.key: c for c in (*COLUMNS, *BENCH_COLUMNS)}
    metrics = []
    for key in keys:
        values = [row.cells[key].value if row is not None and row.valid and key in row.cells else None for row in rows]
        column = columns[key]
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
