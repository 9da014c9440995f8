"""GitHub-flavoured Markdown: the gate's step summary (`gate --summary FILE`) and the report
(`report --format md`)."""

from __future__ import annotations

from collections.abc import Sequence
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
        from memlens.reports.render import render_markdown

        out.write(render_markdown(report))

    # `memlens compare`: its changed lines for a pull request (memlens/output/line_comparison.py)
    def compare(self, found: CompareFindings, out: TextIO) -> None:
        from memlens.output.line_comparison import compare_markdown

        out.write(compare_markdown(found.base, found.head, found.compared, found.no_lines, found.notes) + "\n")


FORMAT = Markdown()

_ICON = {"pass": "✅ pass", "warn": "⚠️ warn", "fail": "❌ fail", "skip": "⏭️ skip"}


def gate_summary(result: GateResult) -> str:
    """A GitHub step summary: failures, warnings and skips in a table, passing checks folded away."""
    lines = [f"## memlens gate: {result.summary()}", "",
             f"Rules `{_code(result.rules)}` on {result.kind} results `{_code(result.source)}`.", ""]  # fmt: skip
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

    lines = ["| status | rule | kernel | metric | value | bound | baseline | detail |",
             "|---|---|---|---|---:|---|---:|---|"]  # fmt: skip
    for v in verdicts:
        unit = ALL_METRICS[v.metric].unit if v.metric in ALL_METRICS else ""
        cells = [_ICON[v.status], md_escape(v.rule), md_code(elide_middle(v.subject, NAME_WIDTH)) if v.subject else "—",
                 md_escape(v.metric or "—"), figure_text(v.value, unit), md_escape(v.bound or "—"),
                 figure_text(v.baseline, unit), md_escape(v.message)]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _code(text: str) -> str:
    """`text` for a one-backtick code span (no escapes work there): backticks and breaks dropped."""
    return " ".join(text.replace("`", "'").splitlines())
