"""A banks.json file analysed: for each recorded instruction, in the file's order, its wavefronts and
ideal summed over the recorded warps, its n-way (their ratio, as ncu's per-instruction
`memory_l1_wavefronts_shared` over `memory_l1_wavefronts_shared_ideal`), the warp to draw (the one
with the most excess wavefronts, the first of equals) and, where it conflicts, the fix proved on
every recorded warp (theory/bank_fix.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlens.model.banks_file import BanksFile, RecordedInstruction, read_banks_file
from memlens.model.nvtx_names import compile_filter
from memlens.model.run_layout import BANKS_FILE
from memlens.theory.bank_fix import Fix, find_fix
from memlens.theory.recorded_banks import ServedWarp, serve_instruction, serving_note


@dataclass(frozen=True)
class InstructionBanks:
    instruction: RecordedInstruction
    warps: tuple[ServedWarp, ...]
    fix: Fix | None  # None where the instruction is conflict-free
    note: str | None = None

    @property
    def wavefronts(self) -> int:
        return sum(w.wavefronts for w in self.warps)

    @property
    def ideal(self) -> int:
        return sum(w.ideal for w in self.warps)

    @property
    def n_way(self) -> float:
        return self.wavefronts / self.ideal if self.ideal else 1.0

    @property
    def every_n_way(self) -> float | None:
        """The n-way over every warp-level execution, where the file has their figures (else None)."""
        every = self.instruction.every
        if every is None:
            return None
        return every.wavefronts / every.ideal if every.ideal else 1.0

    @property
    def conflicting(self) -> bool:
        return self.wavefronts > self.ideal

    @property
    def worst(self) -> ServedWarp:
        return max(self.warps, key=lambda w: (w.excess, -w.index))

    def to_json(self) -> dict[str, Any]:
        entry = self.instruction.to_json()
        entry.pop("warps")
        entry.pop("sources", None)
        entry.update(
            {
                "warps_recorded": len(self.warps),
                "n_way": round(self.n_way, 4),
                "wavefronts": self.wavefronts,
                "ideal": self.ideal,
                "worst_warp": self.worst.index,
                "fix": None if self.fix is None else self.fix.to_json(),
            }
        )
        if self.instruction.every is not None and self.every_n_way is not None:
            entry["every_execution"] = {**self.instruction.every.to_json(), "n_way": round(self.every_n_way, 4)}
        if self.note:
            entry["note"] = self.note
        return entry


@dataclass(frozen=True)
class BanksAnalysis:
    source: str
    gpu: str | None
    instructions: tuple[InstructionBanks, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "memlens.banks.analysis",
            "version": 1,
            "source": self.source,
            "gpu": self.gpu,
            "instructions": [i.to_json() for i in self.instructions],
        }


def analyse(instruction: RecordedInstruction) -> InstructionBanks:
    warps = tuple(serve_instruction(instruction))
    conflicting = sum(w.wavefronts for w in warps) > sum(w.ideal for w in warps)
    fix = find_fix(instruction) if conflicting else None
    return InstructionBanks(instruction, warps, fix, serving_note(instruction))


def analyse_file(banks: BanksFile, source: str, pattern: str | None = None) -> BanksAnalysis:
    """Every instruction (of the kernels `pattern` finds, a regex searched in the kernel's name)."""
    regex = compile_filter(pattern)
    chosen = [i for i in banks.instructions if regex is None or regex.search(i.kernel)]
    return BanksAnalysis(source, banks.gpu, tuple(analyse(i) for i in chosen))


def analyse_run(directory: Path) -> BanksAnalysis | None:
    """The banks.json of a run directory (`memlens profile --banks`) analysed; None where it holds none.
    InputError naming the file where it is damaged."""
    path = directory / BANKS_FILE
    if not path.is_file():
        return None
    return analyse_file(read_banks_file(path), str(path))
