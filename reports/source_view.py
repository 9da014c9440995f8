"""The source view of a kernel, as Nsight Compute's source page shows it: the code around the lines that
touch shared or local memory, each line with its figures in a margin and a heat level, and the SASS
instructions of a line with their own figures (shown on expand in HTML; listed in Markdown).

The text is the code as it ran where the run kept it (ncu --import-source, or results.json's
"sources"); else the file on disk, unless it changed after the report was written, when the view says
so and shows no code (another line's code at a line's number would mislead). Figures are per line of
all the kernel's launches together, from its shared- and local-memory instructions (source_lines.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from memlens.model.instruction_table import InstructionRecord
from memlens.model.results import KernelResult, VariantOutcome
from memlens.model.source_lines import SourceMap
from memlens.reports.formatting import compact_count, counted
from memlens.reports.hot_lines import RunSources
from memlens.reports.model import SourceInstruction, SourceView, SourceViewLine

CONTEXT = 3  # lines of code shown above and below each line with figures
MERGE_GAP = 2  # windows this close are shown as one
MAX_LINES = 160  # lines of one file's view; further windows are left out, said so
HEAT_LEVELS = 4  # heat 1..4 by the line's share of the hottest line's excess wavefronts + local accesses


ORIGIN_WORDS = {
    "kept": "the code as it ran (kept in the report or the run)",
    "disk": "the file as it is on disk now, unchanged since the report was written",
    "changed": "the file changed after the report was written: its code is not shown (a memlens run keeps"
    " its sources; plain ncu: --import-source yes)",
    "missing": "the file is not here and the run kept no copy: figures by line number only",
}


def source_views(
    kernels: Sequence[KernelResult], outcome: VariantOutcome | None, sources: RunSources, root: Path | None = None
) -> tuple[SourceView, ...]:
    """A view per source file of the kernels' memory instructions that carry line info, the file
    with the most excess wavefronts and local accesses first."""
    merged: dict[tuple[str, int], InstructionRecord] = {}  # one record an instruction, its launches summed
    for kernel in kernels:
        for r in kernel.instructions:
            if not (r.file and r.line):
                continue
            key = (kernel.kernel, r.pc)
            before = merged.get(key)
            merged[key] = (
                r
                if before is None
                else replace(
                    before,
                    executions=_add(before.executions, r.executions),
                    wavefronts=_add(before.wavefronts, r.wavefronts),
                    ideal=_add(before.ideal, r.ideal),
                )
            )
    records = list(merged.values())
    if not records:
        return ()
    source_map = SourceMap(
        (root or Path.cwd()).resolve(), sources.embedded, outcome.sources if outcome else (), sources.written_at
    )
    by_file: dict[str, list[InstructionRecord]] = {}
    for record in records:
        by_file.setdefault(record.file or "", []).append(record)
    views = [_view(recorded, group, source_map, kernels[0].kernel) for recorded, group in by_file.items()]
    views.sort(key=lambda pair: -pair[1])
    return tuple(view for view, _ in views)


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _view(
    recorded: str, records: list[InstructionRecord], source_map: SourceMap, kernel: str
) -> tuple[SourceView, float]:
    shown, path, _ = source_map.resolve(recorded, kernel)
    text, changed = source_map.file_text(recorded, path)
    kept = bool(source_map.embedded and recorded in source_map.embedded)
    origin = "kept" if kept else "changed" if changed else "disk" if text is not None else "missing"
    code = text.splitlines() if text is not None else []
    by_line: dict[int, list[InstructionRecord]] = {}
    for record in sorted(records, key=lambda r: r.pc):
        by_line.setdefault(record.line or 0, []).append(record)
    heat = {number: _heat_of(group) for number, group in by_line.items()}
    hottest = max(heat.values(), default=0.0)
    numbers = sorted(by_line)
    windows, shown_lines, left_out = [], 0, 0
    for start, end in _windows(numbers, len(code)):
        if shown_lines + end - start + 1 > MAX_LINES:
            left_out += sum(1 for n in numbers if start <= n <= end)
            continue
        shown_lines += end - start + 1
        windows.append(
            tuple(_line(n, code, by_line.get(n, []), heat.get(n, 0.0), hottest, origin) for n in range(start, end + 1))
        )
    view = SourceView(shown, origin, ORIGIN_WORDS[origin], tuple(windows), left_out)
    return view, hottest


def _windows(numbers: list[int], length: int) -> list[tuple[int, int]]:
    """[start, end] line ranges around each line with figures, merged where close; within the file
    where its text is known (a line past its end is shown alone)."""
    found: list[tuple[int, int]] = []
    for number in numbers:
        start = max(1, number - CONTEXT)
        end = min(number + CONTEXT, length) if length >= number else number
        start = start if length >= number else number
        if found and start <= found[-1][1] + MERGE_GAP + 1:
            found[-1] = (found[-1][0], max(found[-1][1], end))
        else:
            found.append((start, end))
    return found


def _heat_of(records: list[InstructionRecord]) -> float:
    return sum(r.excess or 0.0 for r in records) + sum(r.executions or 0.0 for r in records if r.space == "local")


def _line(
    number: int, code: list[str], records: list[InstructionRecord], heat: float, hottest: float, origin: str
) -> SourceViewLine:
    text = code[number - 1] if origin in ("kept", "disk") and 0 < number <= len(code) else ""
    level = 0 if heat <= 0 or hottest <= 0 else max(1, min(HEAT_LEVELS, round(HEAT_LEVELS * heat / hottest)))
    return SourceViewLine(
        number, text.rstrip().expandtabs(4), _margin(records), level, tuple(_instruction(r) for r in records)
    )


def _margin(records: list[InstructionRecord]) -> str:
    """A line's figures in a few words: each shared side's n-way and excess, local executions."""
    parts = []
    for side, name in (("ld", "ld"), ("st", "st")):
        chosen = [r for r in records if r.space == "shared" and r.side == side]
        if not chosen:
            continue
        wavefronts = sum(r.wavefronts or 0.0 for r in chosen)
        ideal = sum(r.ideal or 0.0 for r in chosen)
        excess = sum(r.excess or 0.0 for r in chosen)
        ways = f"{wavefronts / ideal:.3g}-way" if ideal else "n/a"
        parts.append(f"{name} {ways}" + (f" +{compact_count(excess)}" if excess else ""))
    for side, name in (("ld", "LDL"), ("st", "STL")):
        executions = [r.executions for r in records if r.space == "local" and r.side == side]
        if executions:
            total = sum(e or 0.0 for e in executions)
            parts.append(f"{name} {compact_count(total)}")
    return " · ".join(parts)


def _instruction(record: InstructionRecord) -> SourceInstruction:
    if record.space == "shared":
        ways = record.ways
        words = f"{ways:.3g}-way" if ways is not None else "n/a"
        if record.excess:
            words += f", {counted(compact_count(record.excess), 'excess wavefront')}"
    else:
        words = f"local {'load' if record.side == 'ld' else 'store'}"
    if record.executions is not None:
        words += f", {counted(compact_count(record.executions), 'execution')}"
    return SourceInstruction(record.sass, record.executions, record.wavefronts, record.ideal, words)
