"""The HTML report: one self-contained file (`report --format html`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from memlens.reports.model import Report


class Html:
    name = "html"
    suffix = ".html"

    def report(self, report: Report, out: TextIO) -> None:
        from memlens.reports.render import render_html  # jinja2 and the charts only when a page is made

        out.write(render_html(report))


FORMAT = Html()
