"""The one home of the rules behind a kernel's shared-memory figures as people read them: a side's
accesses, its n-way and its excess per access. Exact (from the per-instruction data, every kind of
instruction counted where it belongs) wherever the report has it; else the hardware counters' figure,
marked as a fallback, since those counters classify today's instructions differently (they count a
cp.async as a load, and no ldmatrix, stmatrix or cp.async as a store)."""

from __future__ import annotations

from dataclasses import dataclass

from memlens.model.catalogue import KIND_KEYS, SHARED_KEYS
from memlens.model.instruction_kinds import SHARED_KIND_WORDS, SharedKind, Side
from memlens.model.instruction_table import SIDE_WORDS as SIDE_WORDS  # re-exported: a side in words
from memlens.model.results import KernelResult

FALLBACK = (
    "the hardware counter (this report has no per-instruction figures): it counts cp.async as loads and no "
    "ldmatrix, stmatrix or cp.async as stores"
)
HW_WAYS = "the hardware's wavefronts per instruction: a conflict-free 8-byte access reads 2 and a 16-byte one 4"


def hw_ways_note(kernel: KernelResult, side: Side | str) -> str:
    """HW_WAYS, and why the exact n-way is missing as the report says it (a --fast run, a CSV, ...)."""
    why = kernel.missing_reason(SHARED_KEYS[Side(side)].ways) or "not in the report"
    return f"{HW_WAYS} (no exact n-way: {why})"


@dataclass(frozen=True)
class Figure:
    """A figure and where it comes from: `exact` from the per-instruction data, else the hardware
    counter's fallback; `note` says why the value is missing, or what the fallback is."""

    value: float | None
    exact: bool
    note: str | None = None

    @property
    def fallback(self) -> bool:
        return self.value is not None and not self.exact


def accesses(kernel: KernelResult, side: Side | str) -> Figure:
    """Warp-level executions of the side's instructions (loads, stores, atomics, tensor-core reads)."""
    keys = SHARED_KEYS[Side(side)]
    exact = kernel.value(keys.executions)
    if exact is not None:
        return Figure(exact, True)
    if keys.hw_instructions is None:  # no hardware counter of this side
        return Figure(None, True, kernel.missing_reason(keys.executions))
    counted = kernel.value(keys.hw_instructions)
    if counted is None:
        return Figure(None, False, kernel.missing_reason(keys.hw_instructions))
    return Figure(counted, False, FALLBACK)


def n_way(kernel: KernelResult, side: Side | str) -> Figure:
    """The side's wavefronts over the conflict-free ideal of the same accesses (1 = no conflict, whatever
    the width or instruction); without the exact pass, the hardware's wavefronts per instruction."""
    side = Side(side)
    keys = SHARED_KEYS[side]
    exact = kernel.value(keys.ways)
    if exact is not None:
        return Figure(exact, True)
    if kernel.value(keys.excess) is not None:  # the exact pass ran: no such access
        return Figure(None, True, f"no shared-memory {SIDE_WORDS[side]}s")
    if keys.hw_instructions is None or keys.hw_ways is None:
        return Figure(None, False, kernel.missing_reason(keys.ways))
    if kernel.value(keys.hw_instructions) == 0:
        why = kernel.missing_reason(keys.ways) or "not in the report"
        return Figure(
            None,
            False,
            f"the hardware counts no shared-memory {SIDE_WORDS[side]} instructions "
            f"(it counts no ldmatrix or stmatrix); no exact n-way: {why}",
        )
    hardware = kernel.value(keys.hw_ways)
    if hardware is None:
        return Figure(None, False, kernel.missing_reason(keys.hw_ways))
    return Figure(hardware, False, hw_ways_note(kernel, side))


_FALLBACK_SIDE = {SharedKind.LOADS: Side.LD, SharedKind.STORES: Side.ST}  # a hardware counter of their own


def kind_n_way(kernel: KernelResult, kind: SharedKind) -> Figure:
    """One kind's wavefronts over its own conflict-free ideal (an ldmatrix apart from the plain loads beside
    it); without the exact pass, shared loads and stores take their side's hardware figure (n_way)."""
    keys = KIND_KEYS[kind]
    exact = kernel.value(keys.ways)
    if exact is not None:
        return Figure(exact, True)
    if kernel.value(keys.ideal) == 0 and not kernel.value(keys.wavefronts):  # the exact pass found none
        return Figure(None, True, f"no {SHARED_KIND_WORDS[kind]}")
    side = _FALLBACK_SIDE.get(kind)
    if kernel.value(keys.wavefronts) is None and kernel.value(SHARED_KEYS[Side.LD].excess) is None and side:
        return n_way(kernel, side)  # no exact pass: the hardware's figure
    return Figure(None, False, kernel.missing_reason(keys.ways))


def no_such_access(kernel: KernelResult, side: Side | str, figure: Figure) -> bool:
    """Whether a side's missing n-way means the kernel has no such access (shown "-"), not a missing figure
    (n/a): the exact pass found none, or, without it, the hardware counted none."""
    counter = SHARED_KEYS[Side(side)].hw_instructions
    return figure.value is None and (figure.exact or (counter is not None and kernel.value(counter) == 0))


def excess_per_access(kernel: KernelResult, side: Side | str) -> Figure:
    """The side's exact excess wavefronts over its executions."""
    side = Side(side)
    excess = kernel.value(SHARED_KEYS[side].excess)
    if excess is None:
        return Figure(None, True, kernel.missing_reason(SHARED_KEYS[side].excess))
    count = accesses(kernel, side)
    if not count.value:
        return Figure(None, count.exact, count.note or f"no shared-memory {SIDE_WORDS[side]}s")
    return Figure(excess / count.value, count.exact, count.note)


def conflicting_sides(kernel: KernelResult) -> list[Side]:
    """The sides with exact excess wavefronts; empty where the report has no split."""
    return [side for side, keys in SHARED_KEYS.items() if (kernel.value(keys.excess) or 0) > 0]
