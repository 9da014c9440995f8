"""CSV, one row a kernel, every catalogue metric with its unit in the header (`metrics --csv`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from memlens.output.kernel_metrics import KernelMetrics


class Csv:
    name = "csv"
    suffix = ".csv"

    def metrics(self, table: KernelMetrics, out: TextIO) -> None:
        from memlens.output.kernel_metrics import write_csv

        write_csv(table.kernels, out)


FORMAT = Csv()
