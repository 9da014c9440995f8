"""The bank maps of a run's hot lines, for the report: where the run directory holds a banks.json (`memlens
profile --banks`), each conflicting instruction of a hot line that the trace recorded (matched to ncu's by
theory/bank_matching.py) is drawn beside the line's measured figure: its worst recorded warp as the
hardware serves it, 32 bank columns, a row a wavefront, a panel a phase (8- and 16-byte accesses, ldmatrix),
each cell the lane whose word the bank delivers; and the fix proved on the recorded addresses in one
sentence. The figure is laid out here (BankMapFigure) and drawn as plain SVG by
templates/_bank_map.html.j2, so it scales with the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memlens.io.units import n_way_words
from memlens.model.results import RunResults
from memlens.reports.model import BankMapFigure, BankMapPanel, BankMapRow, LaneMark, Report, Row, RunSection
from memlens.theory.bank_analysis import BanksAnalysis, InstructionBanks
from memlens.theory.bank_matching import MatchedInstruction, match_instructions
from memlens.theory.bank_model import BANKS, Phase

CELL = 14.0  # a bank's column, and a wavefront's row
LABELS = 22.0  # the rows' labels (the wavefront's number), left of bank 0
HEADER = 15.0  # the banks' numbers
TITLE = 15.0  # a panel's title
GAP = 5.0  # between panels


def _phase_title(phase: Phase) -> str:
    lanes = phase.lanes
    span = f"lane {lanes[0]}" if len(lanes) == 1 else f"lanes {lanes[0]}-{lanes[-1]}"
    return f"{span}: {phase.wavefronts} wavefront{'s' * (phase.wavefronts != 1)} (ideal {phase.ideal})"


def _summary(match: MatchedInstruction) -> str:
    entry = match.banks
    warps = len(entry.warps)
    drawn = f", warp {entry.worst.index} drawn" if warps > 1 else ""
    figure = (
        f"{n_way_words(entry.n_way)} from the recorded addresses: {entry.wavefronts} wavefronts over an ideal of "
        f"{entry.ideal} ({warps} warp{'s' * (warps != 1)} recorded{drawn})"
    )
    if entry.note:
        figure += f" ({entry.note})"
    measured = match.measured_n_way
    if measured is None:
        return figure
    return figure + (
        f"; ncu measured the same {n_way_words(measured)}"
        if match.agrees
        else f"; ncu measured {n_way_words(measured)}"
    )


def fix_sentence(entry: InstructionBanks) -> str:
    fix = entry.fix
    if fix is None:
        return ""
    if fix.kind == "none":
        return f"No fix found: {fix.words}."
    warps = len(entry.warps)
    return f"Fix ({fix.kind}, proved 1-way on the {warps} recorded warp{'s' * (warps != 1)}): {fix.words}."


def bank_map_figure(match: MatchedInstruction, location: str) -> BankMapFigure:
    """The worst recorded warp of `match`'s instruction, laid out: a panel a phase, a row a wavefront."""
    entry = match.banks
    instruction = entry.instruction
    warp = entry.worst
    titled = len(warp.phases) > 1 or instruction.width > 4 or instruction.access.matrix
    y = HEADER
    panels = []
    for phase in warp.phases:
        title_y = 0.0
        if titled:
            title_y = y + TITLE - 3
            y += TITLE
        busy = [sum(1 for row in phase.rows if row[bank] is not None) for bank in range(BANKS)]
        rows = []
        for number, row in enumerate(phase.rows, 1):
            marks = tuple(
                LaneMark(LABELS + bank * CELL, y, bank, lanes, busy[bank] > 1)
                for bank, lanes in enumerate(row)
                if lanes is not None
            )
            rows.append(BankMapRow(str(number), y, marks))
            y += CELL
        panels.append(BankMapPanel(_phase_title(phase) if titled else "", title_y, tuple(rows)))
        y += GAP
    matrices = f".x{instruction.matrices}" if instruction.matrices else ""
    heading = (
        f"{instruction.access}{matrices} at pc +0x{instruction.pc_offset:x}, "
        f"{instruction.width} byte{'s' * (instruction.width != 1)} a lane"
    )
    return BankMapFigure(
        location=location,
        heading=heading,
        summary=_summary(match),
        fix=fix_sentence(entry),
        width=LABELS + BANKS * CELL + 1,
        height=y,
        cell=CELL,
        columns=tuple(LABELS + bank * CELL for bank in range(BANKS)),
        panels=tuple(panels),
    )


def row_bank_maps(row: Row, matches: Sequence[MatchedInstruction]) -> Row:
    """`row` with the bank map of each conflicting instruction of its hot lines that the trace recorded
    (each instruction once, all its launches together), the most excess wavefronts first on a line."""
    figures = []
    for line in row.hot_lines:
        pcs = set(line.pcs)
        chosen = [
            m for m in matches if m.kernel.kernel in row.kernels and m.record.pc in pcs and (m.record.excess or 0.0) > 0
        ]
        excess: dict[int, float] = {}
        first: dict[int, MatchedInstruction] = {}
        for m in chosen:
            excess[m.record.pc] = excess.get(m.record.pc, 0.0) + (m.record.excess or 0.0)
            first.setdefault(m.record.pc, m)
        for pc in sorted(first, key=lambda pc: (-excess[pc], pc)):
            figures.append(bank_map_figure(first[pc], line.location))
    return replace(row, bank_maps=tuple(figures)) if figures else row


def run_bank_maps(run: RunSection, matches: Sequence[MatchedInstruction]) -> RunSection:
    families = tuple(replace(f, rows=tuple(row_bank_maps(r, matches) for r in f.rows)) for f in run.families)
    return replace(run, families=families, others=tuple(row_bank_maps(r, matches) for r in run.others))


def with_bank_maps(report: Report, banks: Sequence[tuple[RunResults, BanksAnalysis] | None]) -> Report:
    """`report` with the bank maps of each run whose banks.json is given (its results and the analysis)."""
    runs = tuple(
        run if pair is None else run_bank_maps(run, match_instructions(pair[0].kernels, pair[1]))
        for run, pair in zip(report.runs, banks, strict=True)
    )
    return replace(report, runs=runs)
