"""The HTML report: one self-contained file (`report --format html`).

Every value reaches the page through a template with HTML autoescape on (reports/templates/); kernel
names such as `void transpose<float, 32, 32, 0>(T1 *, ...)` therefore show as text. The charts are
reports/charts.py's SVG, drawn by matplotlib, which escapes the text it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from jinja2 import Environment

    from memlens.io.tables import Column
    from memlens.reports.model import Report


class Html:
    name = "html"
    suffix = ".html"

    def report(self, report: Report, out: TextIO) -> None:
        out.write(render_html(report))


FORMAT = Html()


def render_html(report: Report) -> str:
    # jinja2 and the charts (matplotlib) only when a page is made
    from markupsafe import Markup

    from memlens.reports.chart_processes import draw_charts
    from memlens.reports.charts import bench_chart, comparison_chart, family_chart, roofline_chart, sweep_chart
    from memlens.reports.glossary import GLOSSARY
    from memlens.reports.model import FamilySection

    wanted: dict[str, tuple[str, Callable[..., str | None]]] = {}  # key: (salt, the chart's function)
    for index, run in enumerate(report.runs):
        exact = run.exact_available
        for family in run.families:
            salt, key = f"memlens-{index}-{family.name}", f"{index}/{family.name}"
            wanted[key] = (salt, partial(family_chart, family.rows, exact=exact))
            wanted[f"{key}/sweep"] = (f"{salt}-sweep", partial(sweep_chart, family, exact=exact))
            if run.bench is not None:
                copy_text = run.bench.copy_text
                wanted[f"{key}/bench"] = (f"{salt}-bench", partial(bench_chart, family.rows, copy_text=copy_text))
            wanted[f"{key}/roofline"] = (f"{salt}-roofline", partial(roofline_chart, family))
        wanted[f"{index}/others"] = (f"memlens-{index}-others", partial(family_chart, run.others, exact=exact))
        if run.others_roofline is not None:
            section = FamilySection(run.others_heading, None, run.others, roofline=run.others_roofline)
            wanted[f"{index}/others/roofline"] = (f"memlens-{index}-others-roofline", partial(roofline_chart, section))
    if report.comparisons:
        wanted["comparison"] = ("memlens-comparison", partial(comparison_chart, report.comparisons))
    # Each chart twice, for a screen and for a phone (report.html.j2's CSS shows one); none where there is
    # nothing to draw. matplotlib escapes the text it writes.
    charts = {
        key: Markup(f'<div class="wide">{drawn[0]}</div><div class="narrow">{drawn[1]}</div>')
        for key, drawn in zip(wanted, draw_charts(list(wanted.values())), strict=True)
        if drawn is not None
    }
    template = _html_environment().get_template("report.html.j2")
    return template.render(report=report, charts=charts, glossary=GLOSSARY)


@cache
def _html_environment() -> Environment:
    """One a process: it keeps each template compiled (0.09 s for report.html.j2) for the next page."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from memlens.model.kernel_names import NAME_WIDTH, elide_middle
    from memlens.reports import TEMPLATES
    from memlens.reports.formatting import short_kernel
    from memlens.reports.line_changes import figures_text
    from memlens.reports.model import verdict_details

    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["short_kernel"] = lambda name: elide_middle(short_kernel(name), NAME_WIDTH)
    environment.filters["elide"] = lambda name: elide_middle(name, NAME_WIDTH)
    environment.filters["column_groups"] = column_groups
    environment.filters["line_figures"] = figures_text
    environment.filters["verdict_details"] = verdict_details
    return environment


def column_groups(columns: Sequence[Column]) -> list[tuple[str, int]]:
    """(group, how many columns) of consecutive columns of one group, for a table's group header row."""
    groups: list[tuple[str, int]] = []
    for column in columns:
        if groups and groups[-1][0] == column.group:
            groups[-1] = (column.group, groups[-1][1] + 1)
        else:
            groups.append((column.group, 1))
    return groups
