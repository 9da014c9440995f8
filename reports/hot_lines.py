"""A variant's hot lines for the report: the source lines (or, without line info, the SASS
instructions) with excess shared-memory wavefronts or local-memory accesses, and a verdict
sentence naming each ("kernels/transpose.cu:40 `...`: 32-way loads, 65.0 M excess wavefronts")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memlens.model.results import KernelResult, VariantOutcome
from memlens.model.source_lines import LineRecord, SourceMap, line_words, placement_note, roll_up
from memlens.model.time_at_stake import DramCeiling
from memlens.reports.formatting import compact_count
from memlens.reports.model import VerdictSentence

STALE_WORDS = "the file changed after the report was written: its code is not shown"
TOP_LINES = 3  # hot lines shown per variant
CODE_WIDTH = 80  # characters of a line's code quoted in a verdict


@dataclass(frozen=True)
class RunSources:
    """What a run says about its source files: the text it kept per file, and when its report was written;
    its GPU's compute capability, which the time its lines put at stake needs (time_at_stake.sm_count), and the
    DRAM ceiling its bench.json measured, which the stakes take DRAM bytes at (None: the GPU's peak)."""

    embedded: Mapping[str, str] | None = None
    written_at: float | None = None
    compute_capability: str | None = None
    dram_ceiling: DramCeiling | None = None


def hot_lines(
    kernels: list[KernelResult],
    outcome: VariantOutcome | None,
    root: Path | None = None,
    embedded: Mapping[str, str] | None = None,
    written_at: float | None = None,
) -> tuple[LineRecord, ...]:
    """The variant's lines with excess wavefronts or local accesses, hottest first (all its
    launches together: one line's instructions sum over them). `embedded`: the text the run kept
    per file; `written_at`: when its report was written (a file on disk changed since is not quoted)."""
    return hottest(every_line(kernels, outcome, root, embedded, written_at))


def hottest(lines: tuple[LineRecord, ...]) -> tuple[LineRecord, ...]:
    """Of a variant's lines, the TOP_LINES with excess wavefronts or local accesses, hottest first."""
    return tuple(line for line in lines if line.excess > 0 or line.local_executions > 0)[:TOP_LINES]


def every_line(
    kernels: list[KernelResult],
    outcome: VariantOutcome | None,
    root: Path | None = None,
    embedded: Mapping[str, str] | None = None,
    written_at: float | None = None,
) -> tuple[LineRecord, ...]:
    """Each line of the variant's kernels (all its launches together), hottest first."""
    instructions = [record for kernel in kernels for record in kernel.instructions]
    if not instructions:
        return ()
    sources = SourceMap((root or Path.cwd()).resolve(), embedded, outcome.sources if outcome else (), written_at)
    return tuple(roll_up(instructions, sources, kernels[0].kernel))


def line_findings(
    lines: tuple[LineRecord, ...], kernels: list[KernelResult] | None = None
) -> tuple[VerdictSentence, ...]:
    """A verdict a hot line; and, where one holds inlined library code that went on the nearest line for
    want of the binary's inline chain, how it was placed, once (source_lines.placement_note)."""
    found = tuple(VerdictSentence("line", "bad", line_sentence(line)) for line in lines)
    inlined = any(line.inlined_from for line in lines)
    note = placement_note(r for kernel in kernels or () for r in kernel.instructions) if inlined else None
    return found + ((VerdictSentence("line", "unknown", note),) if note else ())


def line_sentence(line: LineRecord) -> str:
    where = line.location
    if line.source:
        code = line.source if len(line.source) <= CODE_WIDTH else line.source[: CODE_WIDTH - 1] + "…"
        where += f" `{code}`"
    elif line.stale:
        where += f" ({STALE_WORDS})"
    return f"{where}: {figures(line)}"


def figures(line: LineRecord) -> str:
    """The kinds on the line with a problem: conflicts or local accesses."""
    return ", ".join(line_words(line, compact_count, problems_only=True))


def tma_findings(kernels: list[KernelResult]) -> tuple[VerdictSentence, ...]:
    """The kernel's TMA transfers, named on their lines: ncu counts their executions, not their
    shared-memory wavefronts, so their bank behaviour is not measured (never "no shared access")."""
    by_line: dict[str, float] = {}
    for record in (r for kernel in kernels for r in kernel.instructions if r.space == "tma"):
        where = f"{record.file}:{record.line}" if record.file else record.sass
        by_line[where] = by_line.get(where, 0.0) + (record.executions or 0.0)
    if not by_line:
        return ()
    lines = ", ".join(f"{where} ({compact_count(count)})" for where, count in by_line.items())
    return (
        VerdictSentence(
            "line",
            "unknown",
            f"TMA transfers, executions by line: {lines}; ncu counts no shared-memory "
            "wavefronts for the copy engine, so their bank behaviour is not measured",
        ),
    )
