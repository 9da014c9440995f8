"""The terminal: tables drawn by rich (memlens.io.tables), notes below them. What a command prints
on standard output when no other format is asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

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
        console.print(gate_table(result))

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


def gate_table(result: GateResult) -> Table:
    """The verdicts as a rich table (io/tables.rich_table); every cell is a Text, so names print as they are."""
    from rich.text import Text

    from memlens.io.tables import Column, rich_table

    columns = [Column(header) for header in ("status", "rule", "kernel", "detail")]
    body = [
        (
            Text(v.status.upper(), style=_STYLE[v.status]),
            Text(neutral(v.rule)),
            Text(elide_middle(neutral(v.subject), NAME_WIDTH) or "-"),
            Text(neutral(v.message)),
        )
        for v in result.verdicts
    ]
    return rich_table(columns, body, title=f"memlens gate: {result.rules} on {result.source}", caption=result.summary())
