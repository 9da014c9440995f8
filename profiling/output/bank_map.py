"""`memlens banks`: the findings and the picture of a warp's banks.

The picture of a conflicting instruction is its worst recorded warp as the hardware serves it: 32
columns, one a bank, and one row a wavefront; one panel a phase (a warp for accesses of up to 4
bytes, a half-warp for 8, a quarter-warp for 16 and one 8x8 matrix of an ldmatrix or stmatrix). A
cell is the lane whose word the bank delivers in that wavefront, in one base-32 digit (0-9, a-v),
`+` where several lanes share the word, `.` where the bank is idle. An 8- or 16-byte lane fills 2 or 4
banks of a row. At 80 columns it fits: 32 cells and a label of 8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from memlens.io.safe_text import neutral
from memlens.io.units import n_way_words
from memlens.model.kernel_names import NAME_WIDTH, elide_middle
from memlens.theory.bank_analysis import BanksAnalysis, InstructionBanks
from memlens.theory.bank_matching import MatchedInstruction
from memlens.theory.bank_model import BANKS, Phase

LANE_DIGITS = "0123456789abcdefghijklmnopqrstuv"
SHARED, IDLE = "+", "."
LABEL_WIDTH = 10
LEGEND = (
    f"a cell: the lane (0-9, a-v: lanes 0-31) whose word the bank delivers in that wavefront; "
    f"{SHARED} several lanes on one word; {IDLE} the bank idle"
)


@dataclass(frozen=True)
class BanksFindings:
    """What `memlens banks FILE` found: the analysis, and whether to draw conflict-free instructions too."""

    analysis: BanksAnalysis
    draw_all: bool = False


def cell(lanes: tuple[int, ...] | None) -> str:
    if lanes is None:
        return IDLE
    return LANE_DIGITS[lanes[0]] if len(lanes) == 1 else SHARED


def bank_header() -> list[str]:
    tens = "".join(str(b // 10) if b % 10 == 0 else " " for b in range(BANKS))
    units = "".join(str(b % 10) for b in range(BANKS))
    return [(" " * (LABEL_WIDTH - 5) + "bank " + tens).rstrip(), " " * LABEL_WIDTH + units]


def _lane_span(lanes: Sequence[int]) -> str:
    return f"lane {lanes[0]}" if len(lanes) == 1 else f"lanes {lanes[0]}-{lanes[-1]}"


def phase_panel(phase: Phase, titled: bool) -> list[str]:
    lines = (
        [
            f"  phase {_lane_span(phase.lanes)}: {phase.wavefronts} wavefront{'s' * (phase.wavefronts != 1)}"
            f" (ideal {phase.ideal})"
        ]
        if titled
        else []
    )
    for n, row in enumerate(phase.rows, 1):
        lines.append(f"  wf {n:>2}".ljust(LABEL_WIDTH) + "".join(cell(lanes) for lanes in row))
    return lines


def picture(entry: InstructionBanks) -> list[str]:
    """The worst recorded warp's banks: the header, then a panel a phase."""
    warp = entry.worst
    titled = len(warp.phases) > 1 or entry.instruction.width > 4 or entry.instruction.access.matrix
    lines = bank_header()
    for phase in warp.phases:
        lines += phase_panel(phase, titled)
    return lines


def heading(entry: InstructionBanks) -> str:
    i = entry.instruction
    name = elide_middle(neutral(i.kernel), NAME_WIDTH)
    where = neutral(i.location)
    pc = f"  pc +0x{i.pc_offset:x}" if "pc +" not in where else ""
    matrices = f".x{i.matrices}" if i.matrices else ""
    return f"{name}  {where}{pc}  {i.access}{matrices}, {i.width} byte{'s' * (i.width != 1)} a lane"


def summary(entry: InstructionBanks) -> str:
    warps = len(entry.warps)
    drawn = f"; warp {entry.worst.index} drawn" if warps > 1 else ""
    spent = f"{entry.wavefronts} wavefront{'s' * (entry.wavefronts != 1)}"
    recorded = f"{warps} warp{'s' * (warps != 1)} recorded{drawn}"
    return f"{n_way_words(entry.n_way)}: {spent} over an ideal of {entry.ideal} ({recorded})"


def every_line(entry: InstructionBanks) -> str | None:
    every, n_way = entry.instruction.every, entry.every_n_way
    if every is None or n_way is None:
        return None
    spent = f"{every.wavefronts:,} wavefront{'s' * (every.wavefronts != 1)} over an ideal of {every.ideal:,}"
    return f"  all {every.executions:,} executions: {n_way_words(n_way)}, {spent}"


def _every_words(entry: InstructionBanks) -> str:
    n_way = entry.every_n_way
    return f" (every execution: {n_way_words(n_way)})" if n_way is not None and n_way > 1 else ""


def fix_line(entry: InstructionBanks) -> str | None:
    if entry.fix is None:
        return None
    warps = len(entry.warps)
    if entry.fix.kind == "none":
        return f"  fix: none found: {entry.fix.words}"
    proved = f"proved on the {warps} recorded warp{'s' * (warps != 1)}: 1-way"
    return f"  fix ({entry.fix.kind}, {proved}): {entry.fix.words}"


def banks_text(findings: BanksFindings) -> list[str]:
    analysis = findings.analysis
    entries = analysis.instructions
    conflicting = [e for e in entries if e.conflicting]
    fixed = [e for e in conflicting if e.fix is not None and e.fix.kind != "none"]
    gpu = f" ({neutral(analysis.gpu)})" if analysis.gpu else ""
    lines = [
        f"memlens banks {neutral(analysis.source)}{gpu}: {len(entries)} instruction{'s' * (len(entries) != 1)}, "
        f"{len(conflicting)} conflicting, a fix proved for {len(fixed)}"
    ]
    for entry in entries:
        if not (entry.conflicting or findings.draw_all):
            continue
        lines += ["", heading(entry), "  " + summary(entry)]
        every = every_line(entry)
        if every:
            lines.append(every)
        if entry.note:
            lines.append(f"  note: {entry.note}")
        lines += picture(entry)
        found = fix_line(entry)
        if found:
            lines.append(found)
    calm = [e for e in entries if not e.conflicting and not findings.draw_all]
    if calm:
        lines.append("")
        lines.append(f"conflict-free ({len(calm)}):")
        lines += [f"  {heading(e)}: {n_way_words(e.n_way)}{_every_words(e)}" for e in calm]
    if conflicting or findings.draw_all:
        lines += ["", LEGEND]
    return lines


def print_banks(findings: BanksFindings, out: TextIO) -> None:
    from memlens.io.terminal import fit_lines

    out.write("\n".join(fit_lines(banks_text(findings))) + "\n")


# --- a matched instruction's picture under its line (`memlens lines` of a run with banks.json) ---


def line_bank_map(match: MatchedInstruction) -> list[str]:
    """What `memlens lines` prints under a conflicting line: the instruction the trace recorded there, its
    n-way from the addresses (beside ncu's, where they differ), its worst warp's banks and the proved fix."""
    entry = match.banks
    i = entry.instruction
    matrices = f".x{i.matrices}" if i.matrices else ""
    measured = match.measured_n_way
    differs = "" if match.agrees or measured is None else f" (ncu measured {n_way_words(measured)})"
    lines = [f"bank map, {i.access}{matrices} at pc +0x{i.pc_offset:x}: {summary(entry)}{differs}"]
    if entry.note:
        lines.append(f"note: {entry.note}")
    lines += picture(entry)
    found = fix_line(entry)
    if found:
        lines.append(found.strip())
    return lines


def bank_map_json(match: MatchedInstruction) -> dict[str, Any]:
    """A line's `bank_map` in `memlens lines --json`: the drawn warp's recorded offsets, the n-way from the
    recorded addresses, ncu's, and the fix proved on them."""
    entry = match.banks
    i = entry.instruction
    worst = entry.worst
    return {
        "kernel": i.kernel,
        "pc_offset": i.pc_offset,
        "access": str(i.access),
        "width": i.width,
        "warps_recorded": len(entry.warps),
        "warp": worst.index,
        "offsets": list(i.warps[worst.index]),
        "n_way": round(entry.n_way, 4),
        "wavefronts": entry.wavefronts,
        "ideal": entry.ideal,
        "measured_n_way": None if match.measured_n_way is None else round(match.measured_n_way, 4),
        "fix": None if entry.fix is None else entry.fix.to_json(),
    }
