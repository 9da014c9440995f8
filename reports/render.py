"""Render a memlens report as HTML (one self-contained file) or GitHub-flavoured Markdown (the
formats html and md of memlens/output/formats/ call these; json is the report's `to_json`).

Every value reaches the page through a template with escaping on: HTML autoescape for HTML,
Markdown escaping of every `{{ }}` output for Markdown, and json.dumps for JSON. Kernel names
such as `void transpose<float, 32, 32, 0>(T1 *, ...)` therefore show as text everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from memlens.io.markdown import MdSafe, md_code, md_escape
from memlens.io.safe_text import neutral
from memlens.io.tables import Column
from memlens.model.kernel_names import NAME_WIDTH, elide_middle
from memlens.model.line_compare import LineChange
from memlens.reports.build import build_report  # noqa: F401  re-exported: commands/compare.py imports it from here
from memlens.reports.formatting import short_kernel
from memlens.reports.line_changes import figures_text, markdown_table
from memlens.reports.model import Comparison, FamilySection, Report, SourceView

TEMPLATES = Path(__file__).resolve().parent / "templates"


def changed_lines(comparisons: Sequence[Comparison]) -> list[tuple[str, LineChange]]:
    """(kernel, line) of every changed line of every kernel, worse first within a kernel; a kernel of a
    report of more than two runs names the later run."""
    rows = []
    for comparison in comparisons:
        for run_lines in comparison.lines:
            label = comparison.label if len(comparison.lines) == 1 else f"{comparison.label} ({run_lines.run})"
            rows += [(label, change) for change in run_lines.changes.changed]
    return rows


# --- HTML ---------------------------------------------------------------------------------------


def render_html(report: Report) -> str:
    from memlens.reports.charts import (  # matplotlib only when charts are drawn
        bench_chart,
        comparison_chart,
        family_chart,
        roofline_chart,
        sweep_chart,
    )

    charts: dict[str, Markup] = {}
    for index, run in enumerate(report.runs):
        for family in run.families:
            svg = family_chart(family.rows, f"memlens-{index}-{family.name}", run.exact_available)
            if svg:
                charts[f"{index}/{family.name}"] = Markup(svg)  # matplotlib escapes the text it writes
            svg = sweep_chart(family, f"memlens-{index}-{family.name}-sweep", run.exact_available)
            if svg:
                charts[f"{index}/{family.name}/sweep"] = Markup(svg)
            if run.bench is not None:
                svg = bench_chart(family.rows, f"memlens-{index}-{family.name}-bench", run.bench.copy_text)
                if svg:
                    charts[f"{index}/{family.name}/bench"] = Markup(svg)
            svg = roofline_chart(family, f"memlens-{index}-{family.name}-roofline")
            if svg:
                charts[f"{index}/{family.name}/roofline"] = Markup(svg)
        svg = family_chart(run.others, f"memlens-{index}-others", run.exact_available)
        if svg:
            charts[f"{index}/others"] = Markup(svg)
        if run.others_roofline is not None:
            section = FamilySection(run.others_heading, None, run.others, roofline=run.others_roofline)
            svg = roofline_chart(section, f"memlens-{index}-others-roofline")
            if svg:
                charts[f"{index}/others/roofline"] = Markup(svg)
    if report.comparisons:
        svg = comparison_chart(report.comparisons, "memlens-comparison")
        if svg:
            charts["comparison"] = Markup(svg)
    environment = _html_environment()
    environment.filters["short_kernel"] = lambda name: elide_middle(short_kernel(name), NAME_WIDTH)
    environment.filters["elide"] = lambda name: elide_middle(name, NAME_WIDTH)
    environment.filters["column_groups"] = column_groups
    environment.filters["line_figures"] = figures_text
    template = environment.get_template("report.html.j2")
    return template.render(report=report, charts=charts)


def _html_environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def column_groups(columns: Sequence[Column]) -> list[tuple[str, int]]:
    """(group, how many columns) of consecutive columns of one group, for a table's group header row."""
    groups: list[tuple[str, int]] = []
    for column in columns:
        if groups and groups[-1][0] == column.group:
            groups[-1] = (column.group, groups[-1][1] + 1)
        else:
            groups.append((column.group, 1))
    return groups


# --- Markdown -----------------------------------------------------------------------------------


MD_SASS_PER_LINE = 4  # SASS instructions listed under a hot line in Markdown (the HTML report lists all)


def source_block(view: SourceView) -> MdSafe:
    """A source view as a fenced code block: the figures in a margin, the line number, the code, and
    under each line with excess or local accesses its SASS instructions with their figures."""
    width = max((len(line.figures) for window in view.windows for line in window), default=0)
    rows: list[str] = []
    for index, window in enumerate(view.windows):
        if index:
            rows.append(f"{'':>{width}}   ⋯")
        for line in window:
            rows.append(f"{line.figures:>{width}} │{line.number:>5} │ {line.code}".rstrip())
            if line.heat:
                listed = line.instructions[:MD_SASS_PER_LINE]
                rows.extend(f"{'':>{width}} │{'':>5} │     ↳ {i.sass}: {i.figures}" for i in listed)
                more = len(line.instructions) - len(listed)
                if more:
                    rows.append(f"{'':>{width}} │{'':>5} │     ↳ … {more} more instructions")
    if view.left_out:
        rows.append(f"{view.left_out} more lines with figures not shown")
    text = neutral("\n".join(rows))
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return MdSafe(f"{fence}\n{text}\n{fence}")


def render_markdown(report: Report) -> str:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=False,  # Markdown, not HTML: every {{ }} goes through md_escape instead
        finalize=md_escape,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["code"] = md_code
    environment.filters["name"] = lambda name: md_code(elide_middle(str(name), NAME_WIDTH))
    environment.filters["md"] = lambda text: MdSafe(text)  # template-made Markdown only
    environment.filters["changed_lines"] = changed_lines
    environment.filters["line_table"] = lambda rows: MdSafe("\n".join(markdown_table(rows)))
    environment.filters["short_kernel"] = lambda name: elide_middle(short_kernel(name), NAME_WIDTH)
    environment.filters["source_block"] = source_block
    template = environment.get_template("report.md.j2")
    text = template.render(report=report)
    return re.sub(r"\n{3,}", "\n\n", text)
