"""What `memlens lines` shows of each kernel's hottest source lines: in words for the terminal
(`lines_text`, the table format) and as JSON (`lines_json`, the json format), from the typed findings
`memlens.output.findings.LinesFindings`; the pieces both share (a line's figures in words, a kernel's
notes and line-info hint). The formats that render it are memlens/output/formats/{table,json}.py; SARIF
and GitHub's annotations take every line through memlens.output.findings."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.cells import cell_len, set_cell_size

from memlens.io.units import format_count, plural
from memlens.model.kernel_lines import KernelLines
from memlens.model.kernel_names import ELLIPSIS, elide_middle, short_kernel
from memlens.model.results import KernelResult
from memlens.model.source_lines import LINE_INFO_HINT, LineRecord, line_words, placement_note
from memlens.model.time_at_stake import Stake, kernel_floor, stake_words
from memlens.output.bank_map import LEGEND, bank_map_json, line_bank_map
from memlens.theory.bank_matching import MatchedInstruction, conflicting_at


def describe(line: LineRecord) -> str:
    """The figures of a line in words: "shared loads 32-way, 65,011,712 excess wavefronts; ..."."""
    words = "; ".join(line_words(line, format_count))
    if words:
        return words
    return "executed, no memory figures" if any(kind.executions for kind in line.kinds) else "not executed"


def kernel_notes(entry: KernelLines, shown: tuple[LineRecord, ...]) -> list[str]:
    """What a reader must know beside the lines: whose kernel it is, where a library's (what the user
    controls instead of its code), how the conflicting accesses are served (the rule a fix must meet),
    and what the report does not hold although the kernel's counters say it ran."""
    library = entry.kernel.library
    notes = [library.advice] if library else []
    notes += list(dict.fromkeys(k.phase for line in shown for k in line.kinds if k.phase and k.excess))
    missing = unrecorded_local(entry.kernel)
    placed = placement_note(entry.kernel.instructions) if any(line.inlined_from for line in shown) else None
    return notes + [note for note in (missing, placed, ceiling_note(entry)) if note]


def ceiling_note(entry: KernelLines) -> str | None:
    """Where the run's bench.json gave a DRAM ceiling below the peak: what the time at stake took DRAM at."""
    if entry.ceiling is None:
        return None
    floor = kernel_floor(entry.kernel, entry.ceiling)
    if floor.dram_at == "peak":
        return None
    return f"time at stake takes the kernel's DRAM bytes at {floor.dram_at} (the run's bench.json), not at peak"


def line_info_hint(entry: KernelLines) -> str | None:
    """How to name the kernel's source lines, where it has none and they are the user's to name: never for
    a library's kernel (cuBLAS's code is not the user's, whatever line info would show)."""
    library = entry.kernel.library
    if entry.line_info or (library is not None and not library.line_advice):
        return None
    return LINE_INFO_HINT


def unrecorded_local(kernel: KernelResult) -> str | None:
    """The statement that the report holds no per-instruction local-memory counts, where the kernel's
    counters say it executed local loads or stores that no line shows (None otherwise)."""
    counted = sum(kernel.value(key) or 0.0 for key in ("local_ld_instructions", "local_st_instructions"))
    if not counted or any(record.space == "local" for record in kernel.instructions):
        return None
    return (
        f"this report holds no per-instruction local-memory counts, though the kernel executed "
        f"{format_count(counted)} local load and store instructions; re-profile with memlens profile, or ncu "
        "--metrics inst_executed or --section SourceCounters, to name their lines"
    )


def _wrapped(text: str, width: int | None, indent: str) -> list[str]:
    if width is None:
        return [indent + text]
    return textwrap.wrap(text, max(20, width), initial_indent=indent, subsequent_indent=indent + "  ")


def stale_words(line: LineRecord) -> str:
    return (
        f"{line.file} changed after the report was written: its code is not shown (a memlens run keeps "
        "its sources; plain ncu: --import-source yes)"
    )


def _fit(text: str, width: int | None) -> str:
    if width is None or cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + ELLIPSIS


def drawn(matches: Sequence[MatchedInstruction], entry: KernelLines, line: LineRecord) -> MatchedInstruction | None:
    """The recorded instruction whose bank map a conflicting line shows: of those ncu measured conflicting on
    it, the one with the most excess wavefronts (None where the run holds no banks.json or it recorded none)."""
    if not matches or line.excess <= 0:
        return None
    chosen = conflicting_at(matches, entry.kernel, line.pcs)
    return chosen[0] if chosen else None


def lines_text(
    found: Sequence[KernelLines], top: int, width: int | None = None, matches: Sequence[MatchedInstruction] = ()
) -> list[str]:
    """The lines of each kernel in words; with `width` (a terminal's), no line longer than it: kernel
    names shortened to what a person wrote (the full name is in --json), long code cut with "…". Under a
    conflicting line, the bank map of its instruction recorded by the trace, where `matches` has it."""
    out: list[str] = []
    mapped = False
    for entry in found:
        kernel = entry.kernel
        name = short_kernel(kernel.kernel)  # the full name is in --json
        launch = (f"  [{kernel.library.name}]" if kernel.library else "") + f"  [launch {kernel.launch_id}]"
        title = kernel.label if kernel.label in (kernel.kernel, name) else f"{kernel.label}  ({name})"
        if width is not None and cell_len(title + launch) > width:
            title = elide_middle(title, max(8, width - cell_len(launch)))
        out.append(_fit(title + launch, width))
        shown = entry.lines if top == 0 else entry.lines[:top]
        if not shown:
            out.append("  no shared-memory, local-memory or TMA instructions in the per-instruction data")
        for index, line in enumerate(shown):
            temporary = "  (a temporary file of the compiler, gone now)" if line.temporary else ""
            stake = stake_words(entry.stake(index))
            stake = f"  ({stake})" if stake else ""
            # wrapped, not cut: a figure is never shortened
            text = f"{line.location}  {describe(line)}{stake}  [{' '.join(line.opcodes)}]{temporary}"
            out.extend(_wrapped(text, width, "  "))
            if line.source:
                out.append(_fit(f"      {line.source}", width))
            elif line.stale:
                out.extend(_wrapped(f"({stale_words(line)})", width, "      "))
            match = drawn(matches, entry, line)
            if match is not None:
                mapped = True
                for text in line_bank_map(match):
                    out.extend(_wrapped(text, width, "      "))
        if len(entry.lines) > len(shown):
            out.append(f"  ... {plural(len(entry.lines) - len(shown), 'more line')} (--top 0 shows all)")
        for note in kernel_notes(entry, shown):
            out.extend(_wrapped(f"note: {note}", width, "  "))
        hint = line_info_hint(entry)
        if hint and entry.lines:
            out.extend(_wrapped(f"hint: {hint}", width, "  "))
        out.append("")
    if mapped:
        out.extend(_wrapped(f"bank maps: {LEGEND}", width, ""))
        out.append("")
    return out[:-1] if out else out


def _line_json(matches: Sequence[MatchedInstruction], entry: KernelLines, line: LineRecord) -> dict[str, object]:
    data = line.to_json()
    match = drawn(matches, entry, line)
    if match is not None:
        data["bank_map"] = bank_map_json(match)
    return data


def lines_json(found: Sequence[KernelLines], top: int, matches: Sequence[MatchedInstruction] = ()) -> dict[str, object]:
    return {
        "kernels": [
            {
                **entry.kernel.identity(),
                "library": entry.kernel.library.name if entry.kernel.library else None,
                "line_info": entry.line_info,
                "hint": line_info_hint(entry),
                "lines": [
                    {**_line_json(matches, entry, line), **_stake_json(entry.stake(index))}
                    for index, line in enumerate(entry.lines if top == 0 else entry.lines[:top])
                ],
                "headroom": _stake_json(entry.headroom),
                **_ceiling_json(entry),
                "notes": kernel_notes(entry, entry.lines if top == 0 else entry.lines[:top]),
            }
            for entry in found
        ]
    }


def _ceiling_json(entry: KernelLines) -> dict[str, object]:
    """The DRAM ceiling the kernel's stakes took, where the run's bench.json gave one (nothing without: the peak)."""
    if entry.ceiling is None:
        return {}
    floor = kernel_floor(entry.kernel, entry.ceiling)
    return {"dram_ceiling": {"bytes_per_second": floor.dram_bandwidth, "at": floor.dram_at}}


def _stake_json(stake: Stake | None) -> dict[str, object]:
    """A line's (or a kernel's) time at stake: an upper bound, a fraction of the kernel's duration (None: a
    figure it needs is missing)."""
    return {
        "time_at_stake": stake.fraction if stake else None,
        "seconds_at_stake": stake.seconds if stake else None,
        "stake_bounded_by": stake.by if stake else None,
    }
