"""The terminal: tables drawn by rich (memlens.io.tables), notes below them. What a command prints
on standard output when no other format is asked for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from rich.cells import cell_len

from memlens.io.safe_text import neutral
from memlens.model.kernel_names import NAME_WIDTH, elide_middle

if TYPE_CHECKING:
    from rich.table import Table

    from memlens.doctor import Check
    from memlens.gate.evaluate import GateResult
    from memlens.output.bank_map import BanksFindings
    from memlens.output.command_tables import BaselineView, BenchTable, SuiteListing
    from memlens.output.findings import CompareFindings, LinesFindings
    from memlens.output.kernel_metrics import KernelMetrics
    from memlens.static.check import StaticResults


class Terminal:
    name = "table"
    suffix = ""

    def gate(self, result: GateResult, out: TextIO) -> None:
        from memlens.io.terminal import table_console

        console = table_console(file=out)
        for note in result.notes:
            console.print(f"note: {note}")
        console.print(gate_table(result, console.width))

    def metrics(self, table: KernelMetrics, out: TextIO) -> None:
        from memlens.output.kernel_metrics import print_metrics

        print_metrics(table, out)

    # the other commands' tables (memlens/output/command_tables.py)
    def check(self, results: StaticResults, out: TextIO) -> None:
        from memlens.output.command_tables import print_check

        print_check(results, out)

    def bench(self, table: BenchTable, out: TextIO) -> None:
        from memlens.output.command_tables import print_bench

        print_bench(table, out)

    def suite(self, listing: SuiteListing, out: TextIO) -> None:
        from memlens.output.command_tables import print_suite

        print_suite(listing, out)

    def doctor(self, checks: list[Check], out: TextIO) -> None:
        from memlens.output.command_tables import print_doctor

        print_doctor(checks, out)

    def baseline(self, view: BaselineView, out: TextIO) -> None:
        from memlens.output.command_tables import print_baseline

        print_baseline(view, out)

    def banks(self, findings: BanksFindings, out: TextIO) -> None:
        from memlens.output.bank_map import print_banks

        print_banks(findings, out)

    # `memlens lines` (memlens/output/line_listing.py)
    def lines(self, found: LinesFindings, out: TextIO) -> None:
        from memlens.output.line_listing import lines_text

        out.write("\n".join(lines_text(found.kernels, found.top, found.width, found.bank_maps)) + "\n")

    # `memlens compare` (memlens/output/line_comparison.py)
    def compare(self, found: CompareFindings, out: TextIO) -> None:
        from memlens.io.terminal import fit_lines
        from memlens.output.line_comparison import compare_text

        text = compare_text(found.base, found.head, found.compared, found.no_lines, found.show_all, found.notes)
        out.write("\n".join(fit_lines(text, found.wide)) + "\n")


FORMAT = Terminal()

_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def gate_table(result: GateResult, width: int | None = None) -> Table:
    """The verdicts as a rich table (io/tables.rich_table); every cell is a Text, so names print as they are.
    Within `width` cells no word breaks (io/tables.fit_columns): where the four columns cannot fit their
    longest words, each detail goes on a line of its own under its kernel, and kernel names too long for
    what is left are shortened in the middle; where even that cannot fit, rich folds the cells."""
    from rich.text import Text

    from memlens.io.tables import Column, fit_columns, rich_table, shorten_to_fit

    rows = [
        (v.status.upper(), neutral(v.rule), elide_middle(neutral(v.subject), NAME_WIDTH) or "-", neutral(v.message))
        for v in result.verdicts
    ]
    columns = [Column(header) for header in ("status", "rule", "kernel", "detail")]
    body: Sequence[Sequence[str]] = rows
    fitted = None if width is None else fit_columns(columns, body, width)
    if fitted is not None:
        columns = fitted
    elif width is not None:  # the detail under its kernel, the name shortened to the room left
        columns = [Column("status"), Column("rule"), Column("kernel\n  detail")]
        body = [(s, r, f"{k}\n  {d}") for s, r, k, d in rows]
        shortened = shorten_to_fit(columns, body, 2, width, _shorten_kernel)
        if shortened is not None:
            columns, body = shortened
            room = columns[2].width
            body = [(s, r, _indent_detail(cell, room)) for s, r, cell in body] if room else body
    cells = [(Text(row[0], style=_STYLE[row[0].lower()]), *(Text(cell) for cell in row[1:])) for row in body]
    title = f"memlens gate: {result.rules} on {result.source}"
    return rich_table(columns, cells, title=title, caption=result.summary())


def _indent_detail(cell: str, width: int) -> str:
    """The kernel's line, then its detail wrapped between words to `width`, its lines indented (where its
    longest word leaves room for that)."""
    import textwrap

    kernel, _, detail = cell.partition("\n")
    indent = "  " if max(map(cell_len, detail.split()), default=0) + 2 <= width else ""  # else a word would break
    lines = textwrap.wrap(
        detail.strip(),
        width,
        initial_indent="  ",
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join([kernel, *lines])


def _shorten_kernel(cell: str, width: int) -> str:
    """A kernel's name (the cell's first line) in at most `width` characters; its detail as it is."""
    kernel, _, detail = cell.partition("\n")
    return f"{elide_middle(kernel, width)}\n{detail}"
