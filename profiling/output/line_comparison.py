"""What `memlens compare` shows of two builds, kernel by kernel and line by line: in words for the
terminal (`compare_text`, the table format), as JSON (`compare_json`, the json format) and as a Markdown
table of the changed lines for a pull request (`compare_markdown`, the md format), from the typed findings
`memlens.output.findings.CompareFindings`. SARIF and GitHub's annotations take the lines that got worse
through memlens.output.findings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memlens.io.files import shown_path
from memlens.io.markdown import md_code, md_escape
from memlens.model.line_compare import CHANGES, NO_LINE_DATA, LineChange
from memlens.output.findings import Compared
from memlens.reports.line_changes import MARKDOWN_LIMIT, figures_text, markdown_table


def summary(compared: Sequence[Compared], no_lines: Sequence[str]) -> str:
    if no_lines:
        return "source lines not compared"
    counts = {change: sum(c.lines.count(change) for c in compared) for change in CHANGES}
    changed = sum(n for change, n in counts.items() if change != "same")
    parts = ", ".join(f"{counts[change]} {change}" for change in CHANGES[:-1] if counts[change])
    return f"{changed} line{'s' if changed != 1 else ''} changed" + (f" ({parts})" if parts else "")


def compare_text(
    base: str,
    head: str,
    compared: Sequence[Compared],
    no_lines: Sequence[str],
    show_all: bool,
    notes: Sequence[str] = (),
) -> list[str]:
    kernels = f"{len(compared)} kernel{'s' if len(compared) != 1 else ''}"
    title = f"{kernels}, {summary(compared, no_lines)}" if no_lines else f"{summary(compared, no_lines)} in {kernels}"
    out = [f"memlens compare: {shown_path(base)} -> {shown_path(head)}: {title}"]
    out += [f"note: {note}" for note in notes]
    out += [f"note: {shown_path(name)}: {NO_LINE_DATA}" for name in no_lines]
    for kernel in compared:
        out.append("")
        presence = (
            ""
            if kernel.lines.in_base and kernel.lines.in_head
            else ("  (only in HEAD)" if kernel.lines.in_head else "  (only in BASE)")
        )
        out.append(f"{kernel.label}  [{' -> '.join(kernel.statuses)}]{presence}")
        moved = [f for f in kernel.figures if show_all or f["direction"] in ("better", "worse")]
        for figure in moved:
            change = f" ({_change_words(figure)})" if figure["change"] else ""
            out.append(f"  {figure['header']}: {figure['base_text']} -> {figure['head_text']}{change}")
        lines = kernel.lines.lines if show_all else kernel.lines.changed
        for line in lines:
            out += _text_line(line)
        same = kernel.lines.count("same")
        if not show_all and same:
            out.append(f"  {same} line{'s' if same != 1 else ''} the same (--all shows them)")
        if not kernel.lines.lines and not no_lines:
            out.append("  no shared- or local-memory lines")
        out += [f"  note: {note}" for note in kernel.lines.notes]
    return out


def _change_words(figure: dict[str, object]) -> str:
    """`worse, +11.4%`, with the noise band where the figure has one: `same (within noise: ±8.7%), +6.4%`."""
    noise = figure.get("noise")
    band = f"±{noise['fraction'] * 100:.1f}%" if isinstance(noise, dict) else None
    if band is None or figure["direction"] == "n/a" or figure["base"] in (0, figure["head"]):  # no change, or from 0
        return f"{figure['direction']}, {figure['change']}"
    if figure["direction"] == "same":
        return f"same (within noise: {band}), {figure['change']}"
    return f"{figure['direction']}, {figure['change']}, beyond noise {band}"


def _text_line(line: LineChange) -> list[str]:
    before, after = figures_text(line.base), figures_text(line.head)
    out = [f"  {line.change:<6}  {line.location}  {before} -> {after}"]
    if line.base_source:
        out.append(f"      - {line.base_source}")
        out.append(f"      + {line.source}")
    elif line.source and line.file:
        out.append(f"      {line.source}")
    return out


def compare_json(
    base: str, head: str, compared: Sequence[Compared], no_lines: Sequence[str], notes: Sequence[str] = ()
) -> dict[str, object]:
    return {
        "kind": "memlens-compare",
        "schema_version": 1,
        "base": base,
        "head": head,
        "summary": summary(compared, no_lines),
        "notes": [*notes, *(f"{name}: {NO_LINE_DATA}" for name in no_lines)],
        "kernels": [
            {
                "label": k.label,
                "statuses": list(k.statuses),
                "in_base": k.lines.in_base,
                "in_head": k.lines.in_head,
                "figures": list(k.figures),
                "notes": list(k.lines.notes),
                "changed_lines": len(k.lines.changed),
            }
            for k in compared
        ],
        "lines": [line.to_json(k.label) for k in compared for line in k.lines.lines],
    }


def compare_markdown(
    base: str, head: str, compared: Sequence[Compared], no_lines: Sequence[str], gpus: Sequence[str] = ()
) -> str:
    head_lines = [
        f"## memlens compare: {md_escape(summary(compared, no_lines))}",
        "",
        f"{md_code(Path(base).name or base)} → {md_code(Path(head).name or head)}",
        "",
    ]
    notes = [f"> {md_escape(note)}" for note in gpus]
    notes += [f"> {md_escape(name)}: {md_escape(NO_LINE_DATA)}" for name in no_lines]
    notes += [f"> {md_code(k.label)}: {md_escape(note)}" for k in compared for note in k.lines.notes]
    rows = [(k.label, line) for k in compared for line in k.lines.changed]
    text = "\n".join(head_lines + (notes + [""] if notes else []))
    if not rows:
        return text + ("" if no_lines else "No source line changed.\n")
    return text + "\n".join(markdown_table(rows, MARKDOWN_LIMIT - len(text))) + "\n"
