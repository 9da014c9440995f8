"""banks.json's instructions matched to the profile's: the picture of an instruction beside ncu's figure of it.

banks.json names an instruction by its kernel and `pc_offset`, its byte offset from the function's first
instruction; ncu correlates per-instruction values by absolute PC, which the reader turns into the same
offset (InstructionRecord.pc_offset: the PC less ncu's `launch__function_pcs`). Two kernel names are one
function where their qualified names agree, parameters and spacing aside (ncu writes
`cp_async_rows(const float4 *, float *)` where the trace's demangler writes `cp_async_rows(float4 const*,
float*)`). A pair stands only where the bytes a lane moves and the kind of access agree too: where they
do not, the profile and the trace ran different binaries, and nothing is matched.

The n-way of the recorded addresses (InstructionBanks.n_way) is then a third source of ncu's
per-instruction figure (wavefronts over ideal, InstructionRecord.ways): `agrees` says whether they are one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memlens.model.banks_file import BankAccess
from memlens.model.instruction_kinds import Side, Space
from memlens.model.instruction_table import InstructionRecord
from memlens.model.kernel_names import comparable_name
from memlens.model.results import KernelResult
from memlens.theory.bank_analysis import BanksAnalysis, InstructionBanks

N_WAY_DIGITS = 3  # the n-ways compared, rounded
SIDES = {
    BankAccess.LOAD: Side.LD,
    BankAccess.LDMATRIX: Side.LD,
    BankAccess.STORE: Side.ST,
    BankAccess.STMATRIX: Side.ST,
    BankAccess.CP_ASYNC: Side.ST,
    BankAccess.ATOMIC: Side.ATOM,
}
_CAST = re.compile(r"\((?:int|unsigned int|unsigned|long|unsigned long|bool|char)\)\s*(-?\d)")


@dataclass(frozen=True)
class MatchedInstruction:
    """One instruction of one launch: what ncu measured of it and what the trace recorded of it."""

    kernel: KernelResult
    record: InstructionRecord  # ncu's
    banks: InstructionBanks  # the recorded warps, served bank by bank

    @property
    def measured_n_way(self) -> float | None:
        return self.record.ways

    @property
    def agrees(self) -> bool:
        """Whether the n-way of the recorded addresses is ncu's (both rounded to N_WAY_DIGITS)."""
        measured = self.measured_n_way
        return measured is not None and round(measured, N_WAY_DIGITS) == round(self.banks.n_way, N_WAY_DIGITS)


def function_key(name: str) -> str:
    """A kernel's qualified name without its parameters, return type and spacing, template arguments'
    casts dropped: `void ns::tr<(int)0>(float *)` and `ns::tr<0>(float*)` are both `ns::tr<0>`; a Numba
    kernel's as ncu and the trace both name it (kernel_names.comparable_name)."""
    name = _CAST.sub(r"\1", comparable_name(name))
    depth, cut = 0, len(name)
    for n, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and n > 0:
            cut = n
            break
    head, depth, start = name[:cut].strip(), 0, 0
    for n, char in enumerate(head):  # the last word at template depth 0: the return type dropped
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == " " and depth == 0:
            start = n + 1
    return re.sub(r"\s+", "", head[start:])


def same_access(record: InstructionRecord, banks: InstructionBanks) -> bool:
    """Whether ncu's instruction moves what the recorded one does: shared memory, the same bytes a lane,
    the same side (a cp.async writes shared memory; ldmatrix reads it)."""
    instruction = banks.instruction
    return (
        record.space is Space.SHARED
        and record.width_bits == 8 * instruction.width
        and record.side is SIDES[instruction.access]
    )


def match_instructions(kernels: Iterable[KernelResult], analysis: BanksAnalysis) -> tuple[MatchedInstruction, ...]:
    """Every instruction of `kernels` that `analysis` recorded, launch by launch, in the kernels' order and
    address order; an instruction without its offset (a results.json written before memlens read it) has none."""
    recorded: dict[tuple[str, int], list[InstructionBanks]] = {}
    for entry in analysis.instructions:
        recorded.setdefault((function_key(entry.instruction.kernel), entry.instruction.pc_offset), []).append(entry)
    found = []
    for kernel in kernels:
        key = function_key(kernel.kernel)
        for record in kernel.instructions:
            if record.pc_offset is None:
                continue
            candidates = [e for e in recorded.get((key, record.pc_offset), ()) if same_access(record, e)]
            if len(candidates) == 1:
                found.append(MatchedInstruction(kernel, record, candidates[0]))
    return tuple(found)


def conflicting_at(
    matches: Sequence[MatchedInstruction], kernel: KernelResult, pcs: Iterable[int]
) -> list[MatchedInstruction]:
    """The matched instructions of `kernel` at `pcs` that ncu measured conflicting, the most excess first."""
    wanted = set(pcs)
    chosen = [m for m in matches if m.kernel is kernel and m.record.pc in wanted and (m.record.excess or 0.0) > 0]
    return sorted(chosen, key=lambda m: (-(m.record.excess or 0.0), m.record.pc))
