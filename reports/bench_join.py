"""A run's `memlens bench` results (its bench.json) joined to its report: the family tables' bench
cells, each family's copy its percentages are of, the header's copy bandwidth and the bench's notes."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from memlens.io.units import format_bytes
from memlens.model.results import RunInfo
from memlens.reports.columns import BENCH_BANDWIDTH, BENCH_COLUMNS, BENCH_MEDIAN, BENCH_PCT, BENCH_UNITS, NO_MIN_BYTES
from memlens.reports.formatting import STATUS_WORDS, format_value
from memlens.reports.model import BenchSummary, BenchTiming, Cell, HeaderItem, Row

if TYPE_CHECKING:
    from memlens.bench.results import BenchResults, CopyBandwidth


# The copy a variant's % of copy bandwidth is of: since bench.json schema 2 a copy of the variant's
# min_bytes timed the same way (its own); in schema 1 files the bench's one copy over a large buffer.
SAME_BYTES = "of the same bytes as the variants"


def bench_summary(bench: BenchResults, source: str) -> BenchSummary:
    failures = tuple(f"{f.family}/{f.variant}: {_failure_words(f.status, f.message)}" for f in bench.failures)
    references = _references(bench)
    if len(references) > 1:
        copy_text = SAME_BYTES
    else:
        reference = references[0][0] if references else bench.copy
        copy_text = _gb(reference) + ("" if reference == bench.copy else f" over {format_bytes(reference.bytes_moved)}")
    return BenchSummary(
        source=source,
        gpu_name=bench.info.gpu_name,
        started_at=bench.info.started_at,
        repeats=bench.info.repeats,
        copy_buffer_bytes=bench.copy.buffer_bytes,
        copy_median_ms=bench.copy.times.median_ms,
        copy_gb_per_s=bench.copy.gb_per_s,
        copy_text=copy_text,
        failures=failures,
    )


def bench_header(bench: BenchResults, summary: BenchSummary) -> tuple[HeaderItem, ...]:
    copy = (
        f"{_gb(bench.copy)} (memlens bench: device-to-device copy of {format_bytes(bench.copy.buffer_bytes)},"
        f" read plus written, median of {len(bench.copy.times.samples_ms)} launches)"
    )
    items = [HeaderItem("copy bandwidth", copy)]
    own = [(reference, families) for reference, families in _references(bench) if reference != bench.copy]
    if own:
        each = " · ".join(
            f"{', '.join(families)} {_gb(reference)} over {format_bytes(reference.bytes_moved)}"
            for reference, families in own
        )
        items.append(
            HeaderItem(
                "copy, same bytes",
                "each variant's % of copy bandwidth is of a device-to-device copy of its family's min_bytes"
                f" (half read, half written), timed the same way: {each}",
            )
        )
    how = [bench.info.gpu_name, bench.info.started_at or "", f"{bench.info.repeats} launches per variant"]
    if bench.info.small:
        how.append("--small sizes")
    how.extend(f"--size {size}" for size in bench.info.sizes)
    items.append(HeaderItem("bench", " · ".join(part for part in [summary.source, *how] if part)))
    return tuple(items)


def family_copy(family: str, bench: BenchResults) -> str:
    """The copy the family's bench percentages are of, in words; "" where that is the bench's one copy
    (a schema 1 bench.json) or no variant of the family has a percentage."""
    own = [reference for reference, families in _references(bench) if family in families and reference != bench.copy]
    if not own:
        return ""
    return "% of copy bandwidth: of a device-to-device copy " + "; ".join(
        f"of {format_bytes(c.bytes_moved)}, the variants' min_bytes (half read, half written), timed the same way:"
        f" {_gb(c)}, median {format_value(c.times.median_ms, 'milliseconds')} over {len(c.times.samples_ms)} launches"
        for c in own
    )


def _references(bench: BenchResults) -> list[tuple[CopyBandwidth, list[str]]]:
    """The copies the variants were compared with, each with the families compared with it, in order."""
    found: list[tuple[CopyBandwidth, list[str]]] = []
    for timing in bench.variants:
        if timing.copy is None:
            continue
        entry = next((e for e in found if e[0] == timing.copy), None)
        if entry is None:
            found.append((timing.copy, [timing.family]))
        elif timing.family not in entry[1]:
            entry[1].append(timing.family)
    return found


def _gb(copy: CopyBandwidth) -> str:
    return format_value(copy.gb_per_s, "gb_per_s")


def _copy_words(copy: CopyBandwidth | None, bench: BenchResults) -> str:
    """The hover text of a % of copy bandwidth cell: the copy it is of."""
    if copy is None:
        return ""
    what = "the bench's copy" if copy == bench.copy else "the variant's min_bytes, half read, half written"
    return (
        f"of a device-to-device copy of {format_bytes(copy.bytes_moved)} ({what}): {_gb(copy)},"
        f" median {format_value(copy.times.median_ms, 'milliseconds')}"
    )


def bench_notes(bench: BenchResults, summary: BenchSummary, info: RunInfo) -> list[str]:
    notes = []
    if info.gpu_name and bench.info.gpu_name and info.gpu_name != bench.info.gpu_name:
        notes.append(
            f"the bench was timed on {bench.info.gpu_name}, the profile on {info.gpu_name}:"
            " bench and ncu figures are of different GPUs"
        )
    if summary.failures:
        notes.append("memlens bench did not time: " + "; ".join(summary.failures))
    return notes


def _failure_words(status: str, message: str) -> str:
    return STATUS_WORDS.get(status, status) + (f" ({message})" if message else "")


def with_bench(row: Row, family: str, bench: BenchResults) -> Row:
    """The row with its bench cells: the timing of family/variant, or n/a saying why there is none.
    An invalid row keeps its figures withheld."""
    if not row.valid:
        return row
    timing = bench.lookup(family, row.name)
    if timing is None:
        failure = next((f for f in bench.failures if (f.family, f.variant) == (family, row.name)), None)
        reason: str | None = (
            f"memlens bench: {_failure_words(failure.status, failure.message)}"
            if failure
            else "not timed by memlens bench (not in its bench.json)"
        )
        cells = {c.key: Cell(c.key, None, BENCH_UNITS[c.key], "n/a", missing_reason=reason) for c in BENCH_COLUMNS}
        return replace(row, cells={**row.cells, **cells})
    times = timing.times
    copy = timing.copy
    figures = BenchTiming(
        times.median_ms,
        times.p10_ms,
        times.p90_ms,
        len(times.samples_ms),
        timing.min_bytes,
        timing.gb_per_s,
        timing.pct_of_copy,
        None if copy is None else copy.bytes_moved,
        None if copy is None else copy.times.median_ms,
        None if copy is None else copy.gb_per_s,
    )
    kinds = {c.key: c.kind for c in BENCH_COLUMNS}
    spread = (
        f"median {times.median_ms:.5g} ms; p10 {format_value(times.p10_ms, 'milliseconds')},"
        f" p90 {format_value(times.p90_ms, 'milliseconds')} over {len(times.samples_ms)} launches"
    )
    median = Cell(BENCH_MEDIAN, times.median_ms, "ms", format_value(times.median_ms, kinds[BENCH_MEDIAN]), spread)
    cells = {BENCH_MEDIAN: median}
    for key, value in ((BENCH_BANDWIDTH, timing.gb_per_s), (BENCH_PCT, timing.pct_of_copy)):
        reason = NO_MIN_BYTES if value is None else None
        exact = _copy_words(copy, bench) if key == BENCH_PCT and value is not None else ""
        cells[key] = Cell(key, value, BENCH_UNITS[key], format_value(value, kinds[key]), exact, missing_reason=reason)
    return replace(row, cells={**row.cells, **cells}, bench=figures)
