"""A variant's hot lines for the report: the source lines (or, without line info, the SASS
instructions) with excess shared-memory wavefronts or local-memory accesses, and a verdict
sentence naming each ("kernels/transpose.cu:40 `...`: 32-way loads, 65.0 M excess wavefronts")."""

from __future__ import annotations

from pathlib import Path

from memlens.results import KernelResult, VariantOutcome
from memlens.source_lines import LineRecord, SourceMap, line_words, roll_up

from .formatting import compact_count
from .model import Finding

TOP_LINES = 3  # hot lines shown per variant
CODE_WIDTH = 80  # characters of a line's code quoted in a verdict


def hot_lines(kernels: list[KernelResult], outcome: VariantOutcome | None, root: Path | None = None,
              embedded: dict[str, str] | None = None) -> tuple[LineRecord, ...]:  # fmt: skip
    """The variant's lines with excess wavefronts or local accesses, hottest first (all its
    launches together: one line's instructions sum over them)."""
    instructions = [record for kernel in kernels for record in kernel.instructions]
    if not instructions:
        return ()
    sources = SourceMap((root or Path.cwd()).resolve(), embedded, outcome.sources if outcome else ())
    lines = roll_up(instructions, sources, kernels[0].kernel)
    return tuple(line for line in lines if line.excess > 0 or line.local_executions > 0)[:TOP_LINES]


def line_findings(lines: tuple[LineRecord, ...]) -> tuple[Finding, ...]:
    return tuple(Finding("line", "bad", line_sentence(line)) for line in lines)


def line_sentence(line: LineRecord) -> str:
    where = line.location
    if line.source:
        code = line.source if len(line.source) <= CODE_WIDTH else line.source[: CODE_WIDTH - 1] + "…"
        where += f" `{code}`"
    return f"{where}: {figures(line)}"


def figures(line: LineRecord) -> str:
    """The kinds on the line with a problem: conflicts or local accesses."""
    return ", ".join(line_words(line, compact_count, problems_only=True))
