"""Source lines that changed between two builds, as words and as a Markdown table for a pull request
(`memlens compare --md`, the report of several runs): code, figures before and after, the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from memlens.io.markdown import MdSafe, md_code, md_escape
from memlens.io.units import format_count
from memlens.model.line_compare import LineChange, LineFigures

# GitHub refuses a comment over 65,536 characters: a table stops before this many, saying how many lines it left out
MARKDOWN_LIMIT = 60_000
CODE_WIDTH = 100  # characters of a line's code in a table cell
VERDICT = {"worse": "🔴 worse", "new": "🟠 new", "better": "🟢 better", "gone": "⚪ gone", "same": "same"}
_PARTS = (
    ("excess_wavefronts_ld", "excess wavefronts (loads)"),
    ("excess_wavefronts_st", "excess wavefronts (stores)"),
    ("excess_wavefronts_atom", "excess wavefronts (atomics)"),
    ("excess_wavefronts_mma", "excess wavefronts (tensor-core operand reads)"),
    ("local_ld", "local loads"),
    ("local_st", "local stores"),
)


def figures_text(figures: LineFigures | None) -> str:
    """A line's figures in words: "131,072 excess wavefronts (loads), 0 excess wavefronts (stores)"; "—" for none."""
    if figures is None:
        return "—"
    parts = [f"{format_count(value)} {words}" for key, words in _PARTS if (value := getattr(figures, key)) is not None]
    return ", ".join(parts) or "—"


def code_text(source: str | None, width: int = CODE_WIDTH) -> str:
    if source is None:
        return ""
    return source if len(source) <= width else source[: width - 1] + "…"


def markdown_table(changes: Sequence[tuple[str, LineChange]], limit: int = MARKDOWN_LIMIT) -> list[MdSafe]:
    """A table of (kernel label, line change) rows within `limit` characters; where rows had to be left
    out, a last line says how many."""
    lines = [MdSafe("| kernel | line | code | before | after | verdict |"), MdSafe("|---|---|---|---|---|---|")]
    size = sum(len(line) + 1 for line in lines)
    for index, (label, change) in enumerate(changes):
        row = MdSafe("| " + " | ".join(_cells(label, change)) + " |")
        left = len(changes) - index
        if size + len(row) + 1 > limit - 200:  # room for the line that says what was left out
            lines.append(
                MdSafe(
                    f"\n… {left} more changed line{'s' if left != 1 else ''} not shown"
                    " (`memlens compare --json` lists every line)"
                )
            )
            break
        lines.append(row)
        size += len(row) + 1
    return lines


def _cells(label: str, change: LineChange) -> list[str]:
    code = md_code(code_text(change.source)) if change.source else "—"
    if change.base_source:
        code = MdSafe(f"{md_code(code_text(change.base_source))} → {code}")
    where = change.location.replace(" -> ", " → ")
    return [
        md_code(label),
        md_escape(where),
        code,
        md_escape(figures_text(change.base)),
        md_escape(figures_text(change.head)),
        VERDICT[change.change],
    ]
