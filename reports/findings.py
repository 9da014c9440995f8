"""The run's findings, ranked: what the report's first screen lists. Each finding is one thing at one place
(a source line's bank conflicts, local memory or uncoalesced accesses; a kernel's headroom to its floor; a
library's kernel), with the time it puts at stake (model/time_at_stake.py: an upper bound, a fraction of its
kernel's duration), what happens in one sentence and the fix in one sentence."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

from memlens.model.instruction_kinds import Space, Side
from memlens.model.instruction_table import RUNTIME_ARRAY, SPILL, KindTotals
from memlens.model.libraries import Library
from memlens.model.source_lines import LineRecord
from memlens.reports.formatting import compact_count, counted, format_duration
from memlens.reports.model import Finding


class FindingKind(str, Enum):
    """What a finding is about: it decides the fix."""

    SHARED_CONFLICT = "shared bank conflicts"
    CHUNK_CONFLICT = "16-byte shared accesses conflict"  # ldmatrix, stmatrix, cp.async, 16-byte loads and stores
    SHARED_ATOMIC = "shared atomics conflict"
    LOCAL_ARRAY = "local array"
    SPILL = "register spill"
    UNCOALESCED = "uncoalesced global accesses"
    HEADROOM_DRAM = "kernel above its DRAM floor"
    HEADROOM_FLOPS = "kernel above its FLOP floor"
    LIBRARY = "a library's kernel"


FIXES = {
    FindingKind.SHARED_CONFLICT: "pad each row (e.g. [32][33]) or XOR-swizzle the column with the row",
    FindingKind.CHUNK_CONFLICT: "swizzle the 16-byte chunk index with the row (chunk ^ row % 8)",
    FindingKind.SHARED_ATOMIC: "spread the addresses over banks (or privatise per warp)",
    FindingKind.LOCAL_ARRAY: "index the array with compile-time constants (unrolled loops) so it stays in registers",
    FindingKind.SPILL: "lower register pressure: fewer live values, smaller tiles, or a looser __launch_bounds__",
    FindingKind.UNCOALESCED: "make consecutive lanes read consecutive addresses (stage through shared memory)",
    FindingKind.HEADROOM_DRAM: "move fewer bytes through DRAM: reuse data on chip (tiles in shared memory), narrower"
    " types, or fuse with the kernel that reads its output",
    FindingKind.HEADROOM_FLOPS: "do the arithmetic on the tensor cores or in a narrower type, or do less of it",
}
CHUNK_KINDS = ("ldmatrix", "stmatrix", "cp.async", "tensor-core")


def fix(kind: FindingKind, library: Library | None = None) -> str:
    """The fix of a finding in one sentence; a library's kernel: what its user controls instead."""
    if kind is FindingKind.LIBRARY or library is not None:
        return library.advice if library is not None else "change the call: its code is not yours"
    return FIXES[kind]


def shared_kind(figures: KindTotals) -> FindingKind:
    """Which fix a conflicting shared-memory kind takes: an atomic's, a 16-byte access's (served a quarter-warp
    or one 8x8 matrix at a time: the chunk is what to swizzle), or a row's pad."""
    if figures.kind.side is Side.ATOM:
        return FindingKind.SHARED_ATOMIC
    wide = figures.phase is not None and "16-byte" in figures.phase
    if wide or any(figures.kind.name.startswith(name) for name in CHUNK_KINDS):
        return FindingKind.CHUNK_CONFLICT
    return FindingKind.SHARED_CONFLICT


def line_kind(line: LineRecord, causes: Sequence[str] = ()) -> tuple[FindingKind, str] | None:
    """A line's finding: its kind and what happens, in one sentence ("ldmatrix loads 4-way, 3.15 M excess
    wavefronts"); `causes`, the kernel's local-memory causes (instruction_table.local_memory_causes), tell a
    spill from an array. None: nothing on the line to fix."""
    conflicting = [k for k in line.kinds if k.kind.space is Space.SHARED and k.excess]
    if conflicting:
        worst = max(conflicting, key=lambda k: k.excess)
        ways = f" {worst.ways:.3g}-way" if worst.ways else ""
        what = f"{worst.kind.name}{ways}, {counted(compact_count(worst.excess), 'excess wavefront')}"
        return shared_kind(worst), what
    if line.local_executions:
        spill = SPILL in causes and (RUNTIME_ARRAY not in causes or any(".LU" in o for o in line.opcodes))
        ld, st = (compact_count(v or 0.0) for v in (line.local_ld_executions, line.local_st_executions))
        what = f"local memory: {ld} loads and {st} stores a warp" + (" (a register spill)" if spill else "")
        return (FindingKind.SPILL if spill else FindingKind.LOCAL_ARRAY), what
    scattered = [
        k for k in line.kinds if k.kind.space is Space.GLOBAL and k.sectors_over_ideal and k.sectors_over_ideal > 1
    ]
    if scattered:
        worst = max(scattered, key=lambda k: (k.sectors or 0.0) - (k.sectors_ideal or 0.0))
        per = worst.sectors_per_access or 0.0
        what = f"{worst.kind.name} uncoalesced: {per:.3g} sectors an access, {worst.sectors_over_ideal:.3g}x the ideal"
        return FindingKind.UNCOALESCED, what
    return None


def stake_text(fraction: float, duration_ns: float) -> str:
    """ "≤ 15% of 80.0 µs": the share of its kernel's duration a finding can cost at most."""
    percent = fraction * 100
    share = f"{percent:.2g}%" if percent < 10 else f"{percent:.0f}%"
    return f"≤ {share} of {format_duration(duration_ns)}"


def ranked(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """The findings, most time at stake first (seconds: a fraction of a long kernel before the same of a short
    one); ties keep their order."""
    return tuple(sorted(findings, key=lambda f: -f.seconds))
