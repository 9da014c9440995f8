"""GitHub-flavoured Markdown: the gate's step summary (`gate --summary FILE`) and the report
(`report --format md`)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, TextIO

from memlens.io.markdown import md_code, md_escape
from memlens.model.kernel_names import NAME_WIDTH, elide_middle

if TYPE_CHECKING:
    from memlens.gate.evaluate import GateResult, Verdict
    from memlens.output.findings import CompareFindings
    from memlens.reports.model import Report


class Markdown:
    name = "md"
    suffix = ".md"

    def gate(self, result: GateResult, out: TextIO) -> None:
        out.write(gate_summary(result))

    def report(self, report: Report, out: TextIO) -> None:
        out.write(render_markdown(report))

    # `memlens compare`: its changed lines for a pull request (memlens/output/line_comparison.py)
    def compare(self, found: CompareFindings, out: TextIO) -> None:
        from memlens.output.line_comparison import compare_markdown

        out.write(compare_markdown(found.base, found.head, found.compared, found.no_lines, found.notes) + "\n")


FORMAT = Markdown()

_ICON = {"pass": "✅ pass", "warn": "⚠️ warn", "fail": "❌ fail", "skip": "⏭️ skip"}


def gate_summary(result: GateResult) -> str:
    """A GitHub step summary: failures, warnings and skips in a table, passing checks folded away."""
    lines = [
        f"## memlens gate: {result.summary()}",
        "",
        f"Rules `{_code(result.rules)}` on {result.kind} results `{_code(result.source)}`.",
        "",
    ]
    lines += [f"> {md_escape(note)}" for note in result.notes] + ([""] if result.notes else [])
    order = {"fail": 0, "warn": 1, "skip": 2}
    shown = sorted((v for v in result.verdicts if v.status != "pass"), key=lambda v: order[v.status])
    passed = [v for v in result.verdicts if v.status == "pass"]
    if shown:
        lines += _markdown_table(shown) + [""]
    if passed:
        lines += ["<details><summary>" + f"{len(passed)} passing checks" + "</summary>", ""]
        lines += _markdown_table(passed) + ["", "</details>"]
    return "\n".join(lines) + "\n"


def _markdown_table(verdicts: Sequence[Verdict]) -> list[str]:
    from memlens.gate.evaluate import figure_text
    from memlens.gate.rules import ALL_METRICS

    lines = [
        "| status | rule | kernel | metric | value | bound | baseline | detail |",
        "|---|---|---|---|---:|---|---:|---|",
    ]
    for v in verdicts:
        unit = ALL_METRICS[v.metric].unit if v.metric in ALL_METRICS else ""
        cells = [
            _ICON[v.status],
            md_escape(v.rule),
            md_code(elide_middle(v.subject, NAME_WIDTH)) if v.subject else "—",
            md_escape(v.metric or "—"),
            figure_text(v.value, unit),
            md_escape(v.bound or "—"),
            figure_text(v.baseline, unit),
            md_escape(v.message),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _code(text: str) -> str:
    """`text` for a one-backtick code span (no escapes work there): backticks and breaks dropped."""
    return " ".join(text.replace("`", "'").splitlines())


# --- the report (`report --format md`) ------------------------------------------------------------
# Every value reaches the page through a template (reports/templates/report.md.j2) whose `{{ }}` outputs
# are Markdown-escaped: kernel names such as `void transpose<float, 32, 32, 0>(T1 *, ...)` show as text.

if TYPE_CHECKING:
    from jinja2 import Environment

    from memlens.io.markdown import MdSafe
    from memlens.model.line_compare import LineChange
    from memlens.reports.model import Comparison, SourceView

MD_SASS_PER_LINE = 4  # SASS instructions listed under a hot line in Markdown (the HTML report lists all)


def render_markdown(report: Report) -> str:
    import re

    text = _markdown_environment().get_template("report.md.j2").render(report=report)
    return re.sub(r"\n{3,}", "\n\n", text)


@cache
def _markdown_environment() -> Environment:
    """One a process, as the HTML report's: it keeps report.md.j2 compiled for the next page."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # jinja2 only when a page is made

    from memlens.io.markdown import MdSafe
    from memlens.reports import TEMPLATES
    from memlens.reports.formatting import short_kernel
    from memlens.reports.line_changes import markdown_table

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
    return environment


def changed_lines(comparisons: Sequence[Comparison]) -> list[tuple[str, LineChange]]:
    """(kernel, line) of every changed line of every kernel, worse first within a kernel; a kernel of a
    report of more than two runs names the later run."""
    rows = []
    for comparison in comparisons:
        for run_lines in comparison.lines:
            label = comparison.label if len(comparison.lines) == 1 else f"{comparison.label} ({run_lines.run})"
            rows += [(label, change) for change in run_lines.changes.changed]
    return rows


def source_block(view: SourceView) -> MdSafe:
    """A source view as a fenced code block: the figures in a margin, the line number, the code, and
    under each line with excess or local accesses its SASS instructions with their figures."""
    import re

    from memlens.io.markdown import MdSafe
    from memlens.io.safe_text import neutral

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
