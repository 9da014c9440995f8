"""How the hardware serves a recorded shared-memory instruction (model/banks_file.py), warp by warp:
the bank model's phases and wavefronts (theory/bank_model.py) on the very lane offsets recorded.

- loads, stores and atomics: the lanes of a phase as the width decides (a warp up to 4 bytes, a
  half-warp for 8, a quarter-warp for 16); lanes on one word share it, whether they ask for the
  same address or for different bytes of it (u8, u16). Atomics are served as loads: on the H100, 32
  lanes on one address took the ideal's wavefronts (seen on the GPU machine, 2026-11-26).
- ldmatrix, stmatrix: one 8x8 matrix a phase, lanes 0-7, 8-15, 16-23, 24-31 giving its 8 row
  addresses (16 bytes a row); the lanes past the .x1 or .x2's matrices give none.
- cp.async: the banks as a store of its width (the picture); with the global addresses recorded
  (`sources`), its wavefronts are those of the global lines it reads (bank_model.cp_async_wavefronts).

The ideal is ncu's: one wavefront per 32 distinct words per phase with an active lane; n-way is
wavefronts over ideal, summed over the recorded warps (a ratio of sums).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memlens.model.banks_file import BankAccess, RecordedInstruction
from memlens.theory.bank_model import (
    BANKS,
    LANES_PER_MATRIX,
    Phase,
    cp_async_wavefronts,
    lane_words,
    lanes_per_phase,
    serve,
)

Offsets = Sequence["int | None"]
CP_ASYNC_NOTE = (
    "cp.async: the wavefronts of the global lines it reads, fitted to the H100 (bank_model.cp_async_wavefronts)"
)
CP_ASYNC_NO_SOURCES = "cp.async without its global addresses: served as a store of its width"


@dataclass(frozen=True)
class ServedWarp:
    """One recorded warp-level execution as the hardware serves it."""

    index: int  # which of the instruction's recorded warps
    phases: tuple[Phase, ...]
    wavefronts: int
    ideal: int

    @property
    def excess(self) -> int:
        return self.wavefronts - self.ideal


def served_lanes(instruction: RecordedInstruction, offsets: Offsets) -> list[int | None]:
    """The offsets the hardware reads: an ldmatrix/stmatrix .x1 or .x2 reads only the first 8 or 16 lanes'."""
    if instruction.access.matrix and instruction.matrices is not None:
        used = LANES_PER_MATRIX * instruction.matrices
        return [offset if lane < used else None for lane, offset in enumerate(offsets)]
    return list(offsets)


def serve_warp(instruction: RecordedInstruction, offsets: Offsets, index: int = 0) -> ServedWarp:
    """Warp `index` of `instruction`, at `offsets` (the recorded ones, or a fix's)."""
    lanes = served_lanes(instruction, offsets)
    group = LANES_PER_MATRIX if instruction.access.matrix else None
    phases = tuple(serve(lanes, instruction.width, group))
    spent = sum(phase.wavefronts for phase in phases)
    ideal = sum(phase.ideal for phase in phases)
    if instruction.access is BankAccess.CP_ASYNC and instruction.sources is not None:
        spent = cp_async_wavefronts(lanes, instruction.sources[index], instruction.width)
    return ServedWarp(index, phases, spent, ideal)


def serve_instruction(instruction: RecordedInstruction, warps: Sequence[Offsets] | None = None) -> list[ServedWarp]:
    """Every recorded warp of `instruction` (or the same warps at other offsets, lane for lane)."""
    chosen = instruction.warps if warps is None else warps
    return [serve_warp(instruction, offsets, n) for n, offsets in enumerate(chosen)]


def conflict_free(instruction: RecordedInstruction, warps: Sequence[Offsets]) -> bool:
    """Whether every warp, at these offsets, takes only its ideal's wavefronts (stops at the first that does not).
    A phase asks for at most 32 words (128 bytes), so its ideal is one wavefront: it is conflict-free when no
    bank is asked for two words; cp.async with its sources goes by the whole model."""
    if instruction.access is BankAccess.CP_ASYNC and instruction.sources is not None:
        return all(served.wavefronts == served.ideal for served in _lazily(instruction, warps))
    group = LANES_PER_MATRIX if instruction.access.matrix else lanes_per_phase(instruction.width)
    return all(_one_word_a_bank(served_lanes(instruction, offsets), instruction.width, group) for offsets in warps)


def _one_word_a_bank(offsets: Sequence[int | None], width: int, group: int) -> bool:
    for start in range(0, len(offsets), group):
        word_of_bank: dict[int, int] = {}
        for offset in offsets[start : start + group]:
            if offset is None:
                continue
            for word in lane_words(offset, width):
                if word_of_bank.setdefault(word % BANKS, word) != word:
                    return False
    return True


def _lazily(instruction: RecordedInstruction, warps: Sequence[Offsets]) -> Iterator[ServedWarp]:
    for n, offsets in enumerate(warps):
        yield serve_warp(instruction, offsets, n)


def serving_note(instruction: RecordedInstruction) -> str | None:
    if instruction.access is not BankAccess.CP_ASYNC:
        return None
    return CP_ASYNC_NOTE if instruction.sources is not None else CP_ASYNC_NO_SOURCES
