"""PMPP's verdicts on global memory (Programming Massively Parallel Processors, chapters 5 and 6):
whether a kernel's global loads and stores are coalesced, and whether its memory traffic is bound by
DRAM or served from L2. Local memory has its own verdict (verdicts.local_memory).

Coalescing is judged on sectors per request, the kernel's 32-byte sectors over its warp-level load
(or store) instructions: a warp whose 32 threads read 32 consecutive 4-byte values touches 4 sectors,
8-byte values 8, 16-byte values 16. The counters do not carry the access width, so a figure above 16
is uncoalesced whatever the width, and one between 4 and 16 is coalesced only for the width it names.
Each function returns None where the run lacks the figures (no --roofline, a plain report without
them): nothing is said that the figures do not support.
"""

from __future__ import annotations

from memlens.io.units import counted, significant
from memlens.model.catalogue import GLOBAL_KEYS
from memlens.model.instruction_kinds import Side, Space
from memlens.model.instruction_table import coalescing_words
from memlens.model.results import KernelResult
from memlens.model.source_lines import TEMPORARY_SOURCE
from memlens.reports.model import VerdictSentence

SECTOR_BYTES = 32
COALESCED_4_BYTE = 4.0  # sectors a warp request of 32 consecutive 4-byte values touches
WIDEST_COALESCED = 16.0  # ... of 16-byte values, the widest access a thread makes
COALESCED_WIDTHS = (4.0, 8.0, 16.0)  # sectors a coalesced warp request touches, by bytes a thread
SLACK = 1.1  # partial warps and unaligned edges move a coalesced figure a little
DRAM_BOUND_PCT = 60.0  # DRAM at this share of its peak or more: the kernel is DRAM-bound
L2_OVER_DRAM = 2.0  # L1-L2 traffic this many times the DRAM bytes or more: data reread through L2


PMPP_COALESCING = "uncoalesced global accesses (PMPP 6.1): have consecutive threads use consecutive addresses"
L2_REREAD = "traffic served from L2: the kernel rereads its data through L2, which serves it faster than DRAM"


def pmpp_findings(kernel: KernelResult) -> tuple[VerdictSentence, ...]:
    """The verdicts the kernel's figures support, in order: coalescing of loads, of stores, then the
    memory level its traffic is bound by."""
    found = (coalescing(kernel, "load"), coalescing(kernel, "store"), memory_level(kernel))
    return tuple(finding for finding in found if finding is not None)


def coalescing(kernel: KernelResult, side: str) -> VerdictSentence | None:
    """ "global loads uncoalesced: 32 sectors per access, 8x the ideal 4 of the same accesses (line ...)"
    from the per-instruction table where the report has it; else from the hardware counters, labelled;
    None where the accesses are coalesced, or nothing is measured."""
    short = {"load": Side.LD, "store": Side.ST}[side]
    if kernel.value(GLOBAL_KEYS[short].sectors) is None:  # no per-instruction sectors in this report
        return _hardware_coalescing(kernel, side)
    return _exact_coalescing(kernel, side, short)


def _exact_coalescing(kernel: KernelResult, side: str, short: Side) -> VerdictSentence | None:
    """The verdict of the per-instruction figures; None where the accesses are coalesced."""
    keys = GLOBAL_KEYS[short]
    ratio = kernel.value(keys.coalescing)
    words = coalescing_words(ratio)
    if ratio is None or words is None:
        return None
    per = kernel.value(keys.per_access) or 0.0
    ideal = kernel.value(keys.ideal_per_access) or 0.0
    worst = _worst_line(kernel, short)
    where = f"; worst at {worst}" if worst else ""
    return VerdictSentence(
        "global",
        "bad" if words == "uncoalesced" else "unknown",
        (
            f"global {side}s {words}: {counted(significant(per), 'sector')} per access, {significant(ratio)}x the ideal"
            f" {significant(ideal)} of the same accesses{where}"
        ),
        (PMPP_COALESCING,),
    )


def _worst_line(kernel: KernelResult, side: Side) -> str | None:
    """file:line of the global accesses of `side` with the most sectors beyond their ideal."""
    excess: dict[str, float] = {}
    for record in kernel.instructions:
        if record.global_sectors is None or record.global_side is not side or not record.file:
            continue
        name = record.file.rsplit("/", 1)[-1]
        # a compiler's temporary copy (CuPy's <sha1>.cubin.cu) means nothing to a reader: its line alone
        where = f"line {record.line}" if TEMPORARY_SOURCE.search(record.file) else f"{name}:{record.line}"
        excess[where] = excess.get(where, 0.0) + record.global_sectors - (record.global_sectors_ideal or 0.0)
    if not excess:
        return None
    where, amount = max(excess.items(), key=lambda item: item[1])
    return where if amount > 0 else None


def _hardware_coalescing(kernel: KernelResult, side: str) -> VerdictSentence | None:
    """Sectors per request of the hardware counters, where no per-instruction figures exist: labelled, since
    they count cp.async's global reads among the sectors but not among the load instructions."""
    keys = GLOBAL_KEYS[{"load": Side.LD, "store": Side.ST}[side]]
    per_request = kernel.value(keys.hw_per_request or "")
    requests = kernel.value(keys.hw_requests or "")
    if per_request is None or not requests:
        return None
    if any(width / SLACK <= per_request <= width * SLACK for width in COALESCED_WIDTHS) or per_request < 4:
        return None  # a coalesced warp of 4-, 8- or 16-byte values (or a partial one): nothing to say
    figure = (
        f"{counted(significant(per_request), 'sector')} per request (hardware counters; no per-instruction figures)"
    )
    times = significant(per_request / COALESCED_4_BYTE)
    if per_request > WIDEST_COALESCED * SLACK:
        return VerdictSentence(
            "global",
            "bad",
            (
                f"global {side}s uncoalesced: {figure}, {times}x the {COALESCED_4_BYTE:g} of a warp's 32 consecutive"
                f" 4-byte values (16 for 16-byte values): each warp {side} touches scattered sectors"
            ),
            (PMPP_COALESCING,),
            "a strided or column-wise access",
        )
    return VerdictSentence(
        "global",
        "unknown",
        (
            f"global {side}s partly uncoalesced: {figure}, {times}x the {COALESCED_4_BYTE:g} of a warp's 32 consecutive"
            " 4-byte values and no coalesced width's (8 for 8-byte values, 16 for 16-byte): misaligned or partly"
            " scattered accesses"
        ),
    )


def _reads_global(kernel: KernelResult) -> bool | None:
    """Whether the kernel read global memory: its global loads' sectors (the per-instruction table's, else the
    hardware counter's), or its executed TMA transfers (which no load sector counts); None where not measured."""
    sectors = kernel.value(GLOBAL_KEYS[Side.LD].sectors)
    if sectors is None:
        sectors = kernel.value("global_load_sectors")
    if sectors or any(r.space is Space.TMA and r.executions for r in kernel.instructions):
        return True
    return None if sectors is None else False


def memory_level(kernel: KernelResult) -> VerdictSentence | None:
    """DRAM-bound (DRAM near its peak), or traffic reread through L2 (L1-L2 bytes a multiple of DRAM's, of a
    kernel that read global memory: a kernel that only writes or updates it rereads nothing)."""
    pct = kernel.value("dram_pct_of_peak")
    dram = kernel.value("dram_bytes")
    l2 = kernel.value("l2_bytes")
    if pct is None or not dram or l2 is None:
        return None
    ratio = l2 / dram
    if pct >= DRAM_BOUND_PCT:
        return VerdictSentence(
            "memory",
            "ok",
            f"DRAM-bound: DRAM at {significant(pct)}% of its peak",
            more=f"L1-L2 traffic {significant(ratio)}x the DRAM bytes",
        )
    if ratio >= L2_OVER_DRAM and _reads_global(kernel) is not False:  # its L1-L2 traffic is no reread data
        hit = kernel.value("l2_hit_rate")
        hits = f", L2 hit rate {significant(hit)}%" if hit is not None else ""
        return VerdictSentence(
            "memory",
            "ok",
            f"memory traffic served from L2, not DRAM: L1-L2 traffic {significant(ratio)}x the DRAM bytes",
            (L2_REREAD,),
            f"DRAM at {significant(pct)}% of its peak{hits}",
        )
    return None
