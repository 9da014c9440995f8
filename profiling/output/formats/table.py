"""The terminal: tables drawn by rich (memlens.io.tables), notes below them. What a command prints
on standard output when no other format is asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from memlens.io.safe_text import neutral
from memlens.model.kernel_names import NAME_WIDTH, elide_middle

if TYPE_CHECKING:
    from rich.table import Table

    from memlens.gate.evaluate import GateResult
    from memlens.output.kernel_metrics import KernelMetrics


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


FORMAT = Terminal()

_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def gate_table(result: GateResult) -> Table:
    """The verdicts as a rich table; every cell is a Text, so names print as they are."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"memlens gate: {result.rules} on {result.source}", caption=result.summary())
    for column in ("status", "rule", "kernel", "detail"):
        table.add_column(column, overflow="fold")
    for v in result.verdicts:
        table.add_row(Text(v.status.upper(), style=_STYLE[v.status]), Text(neutral(v.rule)),
                      Text(elide_middle(neutral(v.subject), NAME_WIDTH) or "-"), Text(neutral(v.message)))  # fmt: skip
    return table
