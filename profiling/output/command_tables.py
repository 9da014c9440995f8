"""The terminal tables of `memlens check`, `bench`, `list`, `doctor` and `baseline show`: each command
hands its typed findings here (through `memlens.output.renderer("table", SUBJECT)`), and each table
is drawn by io/tables.rich_table with io/tables.Column columns. The engine's modules are imported
where a table needs them: `memlens doctor` must not import NumPy (the suite, bench) to say it is
missing."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.cells import cell_len

from memlens.io.tables import Column, fit_columns, longest_word, rich_table, shorten_to_fit
from memlens.io.terminal import console, table_console
from memlens.io.units import format_bytes, format_duration, format_percent, format_value
from memlens.model.kernel_names import NAME_WIDTH, elide_lines, elide_middle

if TYPE_CHECKING:
    from rich.console import Console

    from memlens.bench.results import BenchResults, VariantTiming
    from memlens.doctor import Check
    from memlens.gate.baseline import Baseline
    from memlens.static.check import StaticResults

NA = "n/a"

# --- memlens check ----------------------------------------------------------------------------------

CHECK_COLUMNS = tuple(
    Column(header, numeric=header.endswith("B") or header == "regs")
    for header in ("variant", "kernel", "regs", "stack B", "spill st B", "spill ld B", "shared B", "PTX .local")
)


def print_check(results: StaticResults, out: TextIO | None = None) -> None:
    """What the compiler decided per kernel, one row a kernel. No word breaks (io/tables.fit_columns):
    where the columns cannot fit their longest words, each kernel goes on a line of its own under its
    variant, and names too long for what is left are shortened in the middle."""
    from memlens.static.check import rows

    title = f"memlens check {results.source}: {results.arch}, {results.compiler or 'no compiler used'}"
    where = table_console(file=out)
    columns: Sequence[Column] = CHECK_COLUMNS
    body: Sequence[Sequence[str]] = list(rows(results))
    fitted = fit_columns(columns, body, where.width)
    if fitted is not None:
        columns = fitted
    else:
        columns = (Column("variant\n  kernel"), *CHECK_COLUMNS[2:])
        body = [(f"{variant}\n  {kernel}", *figures) for variant, kernel, *figures in body]
        shortened = shorten_to_fit(columns, body, 0, where.width, elide_lines)
        if shortened is not None:
            columns, body = shortened
    where.print(rich_table(columns, body, title=title))


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
    if results.variants or results.failures:  # none: `bench --copy-only`, the copy alone
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
    """Its measurements and environment on a line, then its figures: one row a kernel, one column a
    figure (headed by its key, broken after an underscore where the figure's values are narrower), as
    many tables as it takes to fit the width, each with the kernels' column."""
    baseline = view.baseline
    environment = ", ".join(f"{k} {v}" for k, v in vars(baseline.environment).items() if v)
    where = table_console(file=out)
    where.print(f"baseline {view.file}: {baseline.measurements}, {environment or 'no environment'}")
    values = baseline.values
    if not values:
        return
    figures = list(dict.fromkeys(key for figures in values.values() for key in figures))
    shown = {
        key: [_figure(key, kernel[key]) if key in kernel else "-" for kernel in values.values()] for key in figures
    }
    names = [elide_middle(key, NAME_WIDTH) for key in values]
    label = min(max(cell_len(name) for name in [*names, "kernel"]), max(LABEL_WIDTH, where.width // 3))
    kernel = Column("kernel", width=label, wrap=False)
    names = [elide_middle(name, label) for name in names]
    for group in _figure_groups(shown, where.width - label - 4):
        columns = [
            kernel,
            *(Column(_key_lines(key, width), numeric=True, wrap=False, width=width) for key, width in group),
        ]
        body = [[name, *(shown[key][row] for key, _ in group)] for row, name in enumerate(names)]
        where.print(rich_table(columns, body))


LABEL_WIDTH = 20  # characters of a kernel's name in `baseline show` kept however narrow the terminal


def _figure_groups(shown: dict[str, list[str]], room: int) -> list[list[tuple[str, int]]]:
    """The figures in their order, each with its column's width, in runs that fit `room` cells (each
    column with its padding and border); a figure's column is as wide as its widest value or the
    longest part of its key up to an underscore."""
    groups: list[list[tuple[str, int]]] = [[]]
    used = 0
    for key, cells in shown.items():
        width = max(max(map(cell_len, cells)), max(map(cell_len, _KEY_PARTS.findall(key))))
        if groups[-1] and used + width + 3 > room:
            groups.append([])
            used = 0
        groups[-1].append((key, width))
        used += width + 3
    return groups


_KEY_PARTS = re.compile(r"[^_]*_|[^_]+")  # a key's parts, each with the underscore after it


def _key_lines(key: str, width: int) -> str:
    """`key` on lines of at most `width` characters, broken only after an underscore
    (`shared_ld_` / `instructions`); a part wider than `width` on a line of its own."""
    lines = [""]
    for part in _KEY_PARTS.findall(key):
        if lines[-1] and cell_len(lines[-1] + part) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(lines)


def _figure(key: str, value: float) -> str:
    """A figure with its unit ("0.554 ms", "4,224 B"); a count in full."""
    from memlens.gate.rules import ALL_METRICS

    metric = ALL_METRICS.get(key)
    return format_value(value, metric.unit if metric else "")
