"""The terminal tables of `memlens check`, `bench`, `list`, `doctor` and `baseline show`: each command
hands its typed findings here (through `memlens.output.renderer("table", SUBJECT)`), and each table
is drawn by io/tables.rich_table with io/tables.Column columns. The engine's modules are imported
where a table needs them: `memlens doctor` must not import NumPy (the suite, bench) to say it is
missing."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.cells import cell_len

from memlens.io.tables import Column, longest_word, rich_table
from memlens.io.terminal import console, table_console
from memlens.io.units import format_bytes, format_duration, format_percent, format_value
from memlens.model.kernel_names import NAME_WIDTH, elide_middle

if TYPE_CHECKING:
    from rich.console import Console

    from memlens.bench.results import BenchResults, VariantTiming
    from memlens.doctor import Check
    from memlens.gate.baseline import Baseline
    from memlens.static.check import StaticResults

NA = "n/a"

# --- memlens check ----------------------------------------------------------------------------------

CHECK_COLUMNS = tuple(
    Column(header, numeric=header.endswith("B") or header == "registers")
    for header in ("variant", "kernel", "registers", "stack B", "spill st B", "spill ld B", "shared B", "PTX .local")
)


def print_check(results: StaticResults, out: TextIO | None = None) -> None:
    """What the compiler decided per kernel, one row a kernel."""
    from memlens.static.check import rows

    title = f"memlens check {results.source}: {results.arch}, {results.compiler or 'no compiler used'}"
    table_console(file=out).print(rich_table(CHECK_COLUMNS, list(rows(results)), title=title))


# --- memlens bench ----------------------------------------------------------------------------------

COPY_HEADER = "copy GB/s (same bytes)"
BENCH_COLUMNS = tuple(
    Column(header, numeric=header not in ("variant", "size"), wrap=False, overflow="ellipsis")
    for header in ("variant", "size", "sets", "median", "p10 - p90", "min", "GB/s", COPY_HEADER, "% of copy")
)


@dataclass(frozen=True)
class BenchTable:
    """A bench's timings, the run directory its bench.json went to, the share of its roofline of each
    compute-bound variant the run's profile judges (by label), and a line a family that was skipped."""

    results: BenchResults
    run_dir: Path
    roofline_shares: dict[str, float]
    skipped: tuple[str, ...] = ()


def print_bench(table: BenchTable, out: TextIO | None = None) -> None:
    """The GPU's copy, one row a variant, the notes, and where bench.json went."""
    from memlens.bench.results import BENCH_FILE

    where = table_console(file=out)
    results = table.results
    info, copy = results.info, results.copy
    driver = f", driver {info.driver_version}" if info.driver_version else ""
    where.print(
        f"{info.gpu_name}{driver}: device-to-device copy {copy.gb_per_s:,.0f} GB/s "
        f"({format_bytes(copy.buffer_bytes)} buffer); median of {info.repeats} launches"
    )
    judged = {label: f"{format_percent(share)} of roofline" for label, share in table.roofline_shares.items()}
    body = []
    for timing in results.variants:
        cells = bench_row(timing, info.l2_bytes)
        if timing.label in judged:
            cells[-1] = judged[timing.label]
        body.append(cells)
    where.print(rich_table(BENCH_COLUMNS, body))
    for line in bench_notes(results, table.skipped):
        where.print(line)
    if judged:
        where.print(
            f"% of copy: a compute-bound variant ({', '.join(judged)}) is judged by its roofline instead:"
            " its FLOPs (the run's profile) over the median time, as a % of its roofline bound on this GPU"
        )
    elif any(timing.family == "matmul" for timing in results.variants):
        where.print(
            "% of copy judges memory-bound kernels; a compute-bound one is judged by its roofline: "
            "`memlens profile --roofline`, then `memlens bench --into` that run"
        )
    where.print(f"written: {table.run_dir / BENCH_FILE}")


def bench_row(timing: VariantTiming, l2_bytes: int) -> list[str]:
    times = timing.times
    flattered = "*" if cache_may_flatter(timing, l2_bytes) else ""
    return [
        timing.label,
        " ".join(f"{k}={v}" for k, v in timing.size.items()),
        f"{timing.input_sets}{flattered}",
        _ms(times.median_ms),
        f"{_ms(times.p10_ms)} - {_ms(times.p90_ms)}",
        _ms(times.min_ms),
        NA if timing.gb_per_s is None else f"{timing.gb_per_s:,.1f}",
        NA if timing.copy is None else f"{timing.copy.gb_per_s:,.1f}",
        NA if timing.pct_of_copy is None else format_percent(timing.pct_of_copy),
    ]


def _ms(milliseconds: float) -> str:
    return format_duration(milliseconds * 1e6)


def cache_may_flatter(timing: VariantTiming, l2_bytes: int) -> bool:
    from memlens.bench.timing import L2_MULTIPLE

    return timing.rotated_bytes < L2_MULTIPLE * l2_bytes


def bench_notes(results: BenchResults, skipped: Sequence[str] = ()) -> list[str]:
    from memlens.bench.timing import L2_MULTIPLE
    from memlens.suite import SKIPPED

    lines = []
    l2 = results.info.l2_bytes
    if any(cache_may_flatter(t, l2) for t in results.variants):
        lines.append(
            f"* the input sets together hold less than {L2_MULTIPLE}x the L2 cache "
            f"({format_bytes(l2)}): the cache may flatter these times"
        )
    if any(t.copy is not None for t in results.variants):
        lines.append(
            f"% of copy: of {COPY_HEADER!r}, a device-to-device copy of the variant's min_bytes "
            "(half read, half written) timed the same way as the variant; not of the header's copy"
        )
    if any(t.min_bytes is None for t in results.variants):
        lines.append("GB/s: n/a where the family declares no min_bytes")
    lines.extend(f"{f.family}/{f.variant}: {f.status}: {f.message}" for f in results.failures if f.status != SKIPPED)
    lines.extend(skipped)
    return lines


# --- memlens list -----------------------------------------------------------------------------------

SUITE_HEADERS = ("family", "variant", "demonstrates", "expect", "on paper")


@dataclass(frozen=True)
class SuiteListing:
    """A suite's variants, one row each (SUITE_HEADERS), and a line a family that needs a newer GPU;
    `wide`: the table however wide the terminal."""

    path: str
    rows: tuple[tuple[str, str, str, str, str], ...]
    requirements: tuple[str, ...] = ()
    wide: bool = False


def print_suite(listing: SuiteListing, out: TextIO | None = None) -> None:
    """The table where each column can be as wide as its longest word (lines break between words),
    else one block a variant."""
    where = table_console(file=out)
    body = listing.rows
    widest = [longest_word([header, *(row[index] for row in body)]) for index, header in enumerate(SUITE_HEADERS)]
    if listing.wide or sum(widest) + 3 * len(SUITE_HEADERS) + 1 <= where.width:
        if listing.wide:  # every cell on one line
            longest = [
                max(cell_len(cell) for cell in (header, *(row[i] for row in body)))
                for i, header in enumerate(SUITE_HEADERS)
            ]
            where.width = max(where.width, sum(longest) + 3 * len(SUITE_HEADERS) + 1)
        columns = [Column(header, min_width=width) for header, width in zip(SUITE_HEADERS, widest, strict=True)]
        where.print(rich_table(columns, body, title=f"suite {listing.path}"))
    else:
        _suite_blocks(where, listing)
    for line in listing.requirements:
        where.print(line)


def _suite_blocks(where: Console, listing: SuiteListing) -> None:
    """One block a variant: its name, then each field on lines of its own, wrapped between words."""
    where.print(f"suite {listing.path}")
    for family, name, *fields in listing.rows:
        where.print(f"\n{family} / {name}")
        for header, text in zip(SUITE_HEADERS[2:], fields, strict=True):
            where.print(
                textwrap.fill(
                    f"{header}: {text}",
                    where.width,
                    initial_indent="  ",
                    subsequent_indent="  ",
                    break_long_words=False,
                    break_on_hyphens=False,
                ),
                soft_wrap=True,
            )


# --- memlens doctor ---------------------------------------------------------------------------------


def print_doctor(checks: Sequence[Check], out: TextIO | None = None) -> None:
    """One row a check: ok, MISSING (required) or warning, what was found, what to fix."""
    columns = (
        Column("check"),
        Column("status"),
        Column("detail", ratio=3),  # paths and versions that must read whole; the fix column's advice wraps well
        # a fix such as `pip install 'memlens[cuda13]'` breaks between words, never inside one (a ratio
        # column's `width` is its minimum)
        Column("fix", ratio=2, width=longest_word([check.fix for check in checks])),
    )
    body = [
        (check.name, "ok" if check.ok else ("MISSING" if check.required else "warning"), check.detail, check.fix)
        for check in checks
    ]
    console(file=out).print(rich_table(columns, body, title="memlens doctor", expand=True))


# --- memlens baseline show --------------------------------------------------------------------------


@dataclass(frozen=True)
class BaselineView:
    """A baseline and the file it was read from."""

    file: Path
    baseline: Baseline


def print_baseline(view: BaselineView, out: TextIO | None = None) -> None:
    """Its measurements and environment, then one row a kernel with every figure and its unit."""
    baseline = view.baseline
    environment = ", ".join(f"{k} {v}" for k, v in vars(baseline.environment).items() if v)
    title = f"baseline {view.file}: {baseline.measurements}, {environment or 'no environment'}"
    body = [
        (elide_middle(key, NAME_WIDTH), ", ".join(f"{m}={_figure(m, v)}" for m, v in values.items()))
        for key, values in baseline.values.items()
    ]
    table_console(file=out).print(rich_table((Column("kernel"), Column("figures")), body, title=title))


def _figure(key: str, value: float) -> str:
    """A figure with its unit ("0.554 ms", "4,224 B"); a count in full."""
    from memlens.gate.rules import ALL_METRICS

    metric = ALL_METRICS.get(key)
    return format_value(value, metric.unit if metric else "")
