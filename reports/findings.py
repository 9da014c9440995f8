"""The run's findings, ranked: what the report's first screen lists. Each finding is one thing at one place
(a source line's bank conflicts, local memory or uncoalesced accesses; a kernel's headroom to its floor; a
library's kernel), with the time it puts at stake (model/time_at_stake.py: an upper bound, a fraction of its
kernel's duration), what happens in one sentence and the fix in one sentence."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

from memlens.model.instruction_kinds import Side, Space
from memlens.model.instruction_table import SPILL, InstructionRecord, KindTotals
from memlens.model.libraries import Library
from memlens.model.results import KernelResult
from memlens.model.source_lines import LineRecord, local_cause
from memlens.model.time_at_stake import (
    DramCeiling,
    Stake,
    is_finding,
    kernel_floor,
    kernel_stake,
    line_stake,
    percent,
)
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
    HEADROOM_LATENCY = "kernel far from both floors"  # neither its bytes nor its FLOPs come near its time
    LIBRARY = "a library's kernel"


FIXES = {
    FindingKind.SHARED_CONFLICT: "pad each row (e.g. [32][33]) or XOR-swizzle the column with the row",
    FindingKind.CHUNK_CONFLICT: "swizzle the 16-byte chunk index with the row (chunk ^ row % 8)",
    FindingKind.SHARED_ATOMIC: "spread the addresses over banks (or privatise per warp)",
    FindingKind.LOCAL_ARRAY: "index the array with compile-time constants (unrolled loops) so it stays in registers",
    FindingKind.SPILL: "lower register pressure: fewer live values, smaller tiles, or a looser __launch_bounds__",
    FindingKind.UNCOALESCED: "make consecutive lanes read consecutive addresses (stage through shared memory)",
    FindingKind.HEADROOM_DRAM: "keep more bytes in flight to reach DRAM's peak (wider loads, more resident warps,"
    " cp.async or TMA pipelining), or move fewer bytes (reuse tiles on chip, narrower types)",
    FindingKind.HEADROOM_FLOPS: "keep the math units busy: more independent work a thread, tensor-core instructions,"
    " fewer stalls on memory",
    FindingKind.HEADROOM_LATENCY: "neither DRAM nor arithmetic limits it: look for what it waits on (atomics,"
    " barriers, dependent loads, too few warps)",
}
FAR_FROM_FLOORS = 0.05  # a floor under this share of the kernel's duration: the kernel is limited by neither
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


def line_kind(line: LineRecord, records: Sequence[InstructionRecord] = ()) -> tuple[FindingKind, str] | None:
    """A line's finding (time_at_stake.is_finding: what `lines` and SARIF call one too): its kind and what
    happens, in one sentence ("ldmatrix loads 4-way, 3.15 M excess wavefronts"); `records`, the kernel's
    instructions, tell a spill from an array (source_lines.local_cause). None: nothing on the line to fix."""
    found = [k for k in line.kinds if is_finding(k)]
    conflicting = [k for k in found if k.kind.space is Space.SHARED]
    if conflicting:
        worst = max(conflicting, key=lambda k: k.excess)
        ways = f" {worst.ways:.3g}-way" if worst.ways else ""
        what = f"{worst.kind.name}{ways}, {counted(compact_count(worst.excess), 'excess wavefront')}"
        return shared_kind(worst), what
    if any(k.kind.space is Space.LOCAL for k in found):
        spill = local_cause(records, line) == SPILL
        sides = [
            counted(compact_count(v), f"local {side}")
            for v, side in ((line.local_ld_executions, "load"), (line.local_st_executions, "store"))
            if v
        ]
        what = " and ".join(sides) + " (warp-level)" + (", a register spill" if spill else "")
        return (FindingKind.SPILL if spill else FindingKind.LOCAL_ARRAY), what
    scattered = [k for k in found if k.kind.space is Space.GLOBAL]
    if scattered:
        worst = max(scattered, key=lambda k: (k.sectors or 0.0) - (k.sectors_ideal or 0.0))
        per = worst.sectors_per_access or 0.0
        what = f"{worst.kind.name} uncoalesced: {per:.3g} sectors an access, {worst.sectors_over_ideal:.3g}x the ideal"
        return FindingKind.UNCOALESCED, what
    return None


def stake_text(fraction: float, duration_ns: float) -> str:
    """ "≤ 15% of 80.0 µs": the share of its kernel's duration a finding can cost at most."""
    return f"≤ {percent(fraction)} of {format_duration(duration_ns)}"


def ranked(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """The findings, most time at stake first (seconds: a fraction of a long kernel before the same of a short
    one); ties keep their order."""
    return tuple(sorted(findings, key=lambda f: -f.seconds))


UNKNOWN_STAKE = "not known: a figure its bound needs is missing"
NO_STAKE = Stake(0.0, 0.0, UNKNOWN_STAKE)


def row_findings(
    label: str,
    anchor: str,
    lines_anchor: str,
    kernel: KernelResult,
    lines: Sequence[LineRecord],
    library: Library | None = None,
    compute_capability: str | None = None,
    ceiling: DramCeiling | None = None,
) -> tuple[Finding, ...]:
    """The findings of one row (`kernel`: all its launches as one): each line with something to fix, or else
    the kernel's own headroom to its floor, each with its time at stake and the id of its details (`anchor`:
    the row's, `lines_anchor`: its hot lines'); `library`: whose kernel it is (its advice is the fix where the
    code is not the user's); `ceiling`: the run's measured DRAM ceiling the stakes take (None: the peak)."""
    duration = kernel.value("duration")
    if not duration:
        return ()
    advice = library if library is not None and not library.generated else None
    found = []
    for line in lines:
        kind = line_kind(line, kernel.instructions)
        if kind is None:
            continue
        stake = line_stake(kernel, line, compute_capability, ceiling)
        found.append(_finding(label, lines_anchor, line.location, kind, stake or NO_STAKE, duration, advice))
    if not found:  # a kernel with lines to fix: they are its findings (its headroom bounds each of them)
        found.extend(_headroom(label, anchor, kernel, duration, library, ceiling))
    return tuple(found)


def _headroom(
    label: str,
    anchor: str,
    kernel: KernelResult,
    duration: float,
    library: Library | None,
    ceiling: DramCeiling | None = None,
) -> tuple[Finding, ...]:
    """The kernel's own finding: how far it runs from its floor, and which floor (DRAM, FLOPs, or neither near)."""
    headroom = kernel_stake(kernel, ceiling)
    limits = kernel_floor(kernel, ceiling)
    floor = limits.seconds()
    if headroom is None or headroom.fraction <= 0 or floor is None:
        return ()
    by_flops = floor[1].startswith("FLOPs")
    dram = "peak bandwidth" if limits.dram_at == "peak" else limits.dram_at
    what = (
        f"runs {format_duration(duration)}, its floor {format_duration(floor[0] * 1e9)}"
        f" ({'its FLOPs at its roof' if by_flops else f'its DRAM bytes at {dram}'})"
    )
    kind = FindingKind.HEADROOM_FLOPS if by_flops else FindingKind.HEADROOM_DRAM
    if floor[0] * 1e9 < FAR_FROM_FLOORS * duration:
        kind = FindingKind.HEADROOM_LATENCY
    return (_finding(label, anchor, "kernel", (kind, what), headroom, duration, library),)


def _finding(
    label: str,
    anchor: str,
    where: str,
    kind: tuple[FindingKind, str],
    stake: Stake,
    duration: float,
    library: Library | None,
) -> Finding:
    text = stake_text(stake.fraction, duration) if stake.by != UNKNOWN_STAKE else "unknown"
    return Finding(
        kernel=label,
        anchor=anchor,
        where=where,
        kind=kind[0].value,
        what=kind[1],
        fraction=stake.fraction,
        seconds=stake.seconds,
        stake=text,
        bound=stake.by,
        fix=fix(kind[0], library),
    )
