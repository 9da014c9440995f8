"""Time at stake: the most of its kernel's time a finding can cost, from the counters -- an upper bound,
made as tight as the counters allow, and said to be one.

- A line's shared-memory bank conflicts: each wavefront holds its SM's shared-memory data pipe one cycle
  (128 bytes a cycle). E excess wavefronts over a grid of g blocks on n SMs put E / g x ceil(g / n) on the
  busiest SM (its blocks, each an equal share): at most that many of the kernel's cycles (duration x SM clock).
- Every finding is capped by the kernel's floor, what it would still need with the finding gone: its DRAM
  bytes at the GPU's DRAM ceiling (less those the finding's own traffic can account for), and its
  FLOPs (CUDA and tensor cores) at its roof; it can save at most 1 - floor / duration. The ceiling is
  ncu's theoretical peak, or where the run's GPU was measured (a `DramCeiling`: a device-wide copy's,
  bench.json) that measured bandwidth, never below what a kernel of the run reached, never above the peak.
- A line's local memory and its uncoalesced global accesses have no pipe of their own to count (their
  cost is latency as much as bandwidth): the cap bounds them, with the kernel's local traffic taken out of
  its DRAM bytes for local memory, and a global line's excess sectors' share of the kernel's global sectors
  bounds it further (its excess sectors are not taken out of the DRAM bytes: they are mostly cache hits,
  in L1 or L2).
- A fix that changes several lines is bounded by their bounds together (`lines_stake`).
- The kernel itself: how far it runs from its floor (1 - floor / duration), its headroom at the same work.

Where the counters a bound needs are missing, the stake is None (unknown), never a guess. The checks against
measured fixes: tests/benchmarks/RESULTS.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from memlens.model.catalogue import SECTOR_BYTES
from memlens.model.instruction_kinds import Space
from memlens.model.instruction_table import KindTotals, coalescing_words
from memlens.model.results import KernelResult
from memlens.model.roofline import bound
from memlens.model.source_lines import LineRecord

# FP32 FMA lanes per SM by compute capability (the CUDA C++ Programming Guide's table of arithmetic
# instruction throughput): the SM count of a results.json written before memlens read
# device__attribute_multiprocessor_count is the GPU's peak FFMA rate over these.
FP32_LANES_PER_SM = {(7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64}
FP32_LANES_NEWER = 128  # compute capability 8.6 and later


@dataclass(frozen=True)
class Stake:
    """An upper bound on the share of a kernel's duration one finding can cost."""

    fraction: float  # 0 to 1
    seconds: float  # fraction x the kernel's duration (one launch)
    by: str  # what bounds it, in words


@dataclass(frozen=True)
class DramCeiling:
    """The most DRAM bandwidth a run's GPU was measured to reach (bytes a second), below ncu's theoretical peak:
    a kernel's floor takes its DRAM bytes at it (at the peak where the peak is lower)."""

    bytes_per_second: float
    what: str  # "the measured copy bandwidth", or what raised it: "the fastest kernel's DRAM throughput"

    @property
    def gb_per_s(self) -> float:
        return self.bytes_per_second / 1e9


MEASURED_COPY = "the measured copy bandwidth"
FASTEST_KERNEL = "the run's fastest kernel's DRAM throughput"


def dram_ceiling(copy_bytes_per_second: float | None, kernels: Iterable[KernelResult]) -> DramCeiling | None:
    """The DRAM ceiling of a run whose GPU's device-wide copy moved `copy_bytes_per_second` (None: not
    measured, no ceiling but the peak): the copy's, raised to the highest DRAM throughput a kernel of the run
    reached (its DRAM bytes over its duration), so that no kernel's floor is above its own time."""
    if copy_bytes_per_second is None or not math.isfinite(copy_bytes_per_second) or copy_bytes_per_second <= 0:
        return None
    fastest = max((_dram_throughput(k) or 0.0 for k in kernels), default=0.0)
    if fastest > copy_bytes_per_second:
        return DramCeiling(fastest, FASTEST_KERNEL)
    return DramCeiling(copy_bytes_per_second, MEASURED_COPY)


def _dram_throughput(kernel: KernelResult) -> float | None:
    duration, dram_bytes = _duration(kernel), kernel.value("dram_bytes")
    return dram_bytes / duration if duration and dram_bytes else None


@dataclass(frozen=True)
class Floor:
    """What a kernel needs at least: its DRAM bytes at its DRAM ceiling, its FLOPs at its roof (seconds)."""

    flop_seconds: float | None
    dram_bytes: float | None
    dram_bandwidth: float | None
    dram_at: str = "peak"  # `dram_bandwidth` in words: "peak", "the measured copy bandwidth, 4,244 GB/s"

    def seconds(self, less_dram_bytes: float = 0.0) -> tuple[float, str] | None:
        """The floor with `less_dram_bytes` of DRAM traffic gone, and what sets it; None where neither
        limit was measured."""
        dram = None
        if self.dram_bytes is not None and self.dram_bandwidth:
            dram = max(self.dram_bytes - less_dram_bytes, 0.0) / self.dram_bandwidth
        limits = ((dram, f"DRAM bytes at {self.dram_at}"), (self.flop_seconds, "FLOPs at its roof"))
        known = [(s, what) for s, what in limits if s is not None]
        return max(known) if known else None


def sm_count(kernel: KernelResult, compute_capability: str | None = None) -> float | None:
    """The GPU's SM count: as ncu recorded it, else the peak FFMA rate over the FP32 lanes of an SM."""
    recorded = kernel.value("sm_count")
    if recorded:
        return recorded
    peak, cc = kernel.value("peak_ffma_per_cycle"), _capability(compute_capability)
    if not peak or cc is None:
        return None
    return peak / FP32_LANES_PER_SM.get(cc, FP32_LANES_NEWER)


def _capability(text: str | None) -> tuple[int, int] | None:
    major, _, minor = (text or "").partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def kernel_floor(kernel: KernelResult, ceiling: DramCeiling | None = None) -> Floor:
    """The kernel's floor: its FLOPs at the roof it is placed on, its DRAM bytes at its GPU's peak, or at
    `ceiling` (the run's measured DRAM ceiling) where that is lower."""
    dram_bytes = kernel.value("dram_bytes")
    peak = kernel.value("peak_dram_bandwidth")
    where = bound(kernel, {**_own_ceilings(kernel), "peak_dram_bandwidth": peak})
    flop_seconds = where.work / where.peak_flops if where is not None and where.work else None
    if ceiling is not None and peak and ceiling.bytes_per_second < peak:
        return Floor(
            flop_seconds, dram_bytes, ceiling.bytes_per_second, f"{ceiling.what}, {ceiling.gb_per_s:,.0f} GB/s"
        )
    return Floor(flop_seconds, dram_bytes, peak)


def _own_ceilings(kernel: KernelResult) -> dict[str, float | None]:
    return {f"peak_flops_{p}": kernel.value(f"peak_flops_{p}") for p in ("fp32", "fp64", "fp16")}


def _duration(kernel: KernelResult) -> float | None:
    duration = kernel.value("duration")
    return duration * 1e-9 if duration else None


def _capped(
    share: float | None, by: str, kernel: KernelResult, ceiling: DramCeiling | None, less_dram_bytes: float = 0.0
) -> Stake | None:
    """`share` (None: no bound of its own) capped by the kernel's floor with `less_dram_bytes` gone."""
    duration = _duration(kernel)
    if duration is None:
        return None
    floor = kernel_floor(kernel, ceiling).seconds(less_dram_bytes)
    cap = None if floor is None else max(1.0 - floor[0] / duration, 0.0)
    if share is None and cap is None:
        return None
    if cap is not None and (share is None or cap < share):
        assert floor is not None
        share, by = cap, f"the kernel's floor ({floor[1]}: {_micro(floor[0])} of {_micro(duration)})"
    assert share is not None
    fraction = min(max(share, 0.0), 1.0)
    return Stake(fraction, fraction * duration, by)


def _micro(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs"


def line_stake(
    kernel: KernelResult,
    line: LineRecord,
    compute_capability: str | None = None,
    ceiling: DramCeiling | None = None,
) -> Stake | None:
    """The most of `kernel`'s time `line`'s findings can cost together; 0 for a line with none, None where
    a figure the bound needs is missing; `ceiling`: the run's measured DRAM ceiling (None: the peak)."""
    return lines_stake(kernel, (line,), compute_capability, ceiling)


def lines_stake(
    kernel: KernelResult,
    lines: Iterable[LineRecord],
    compute_capability: str | None = None,
    ceiling: DramCeiling | None = None,
) -> Stake | None:
    """The most of `kernel`'s time the findings of `lines` can cost together (a fix that changes them all)."""
    parts = [k for line in lines for k in line.kinds if is_finding(k)]
    if not parts:
        return Stake(0.0, 0.0, "no finding") if _duration(kernel) else None
    excess = sum(k.excess for k in parts if k.kind.space == "shared")
    local = any(k.kind.space == "local" for k in parts)
    global_excess = sum(_excess_sectors(k) for k in parts if k.kind.space == "global")
    share: float | None = 0.0
    by = []
    if excess:
        share = pipe_share(kernel, excess, compute_capability)
        by.append("its excess wavefronts' cycles in the busiest SM's shared-memory pipe")
    if global_excess and share is not None:
        sectors = _global_sectors(kernel)
        share = None if not sectors else share + global_excess / sectors
        by.append("its excess sectors' share of the kernel's global sectors")
    if local:
        share = None  # no bound of its own: the floor bounds it
    return _capped(share, "; ".join(by), kernel, ceiling, _local_bytes(kernel) if local else 0.0)


def kernel_stake(kernel: KernelResult, ceiling: DramCeiling | None = None) -> Stake | None:
    """How far the kernel runs from its floor: the most any change that keeps its work could save."""
    return _capped(None, "", kernel, ceiling)


def pipe_share(kernel: KernelResult, wavefronts: float, compute_capability: str | None = None) -> float | None:
    """`wavefronts`, one a cycle, on the busiest SM (the grid's blocks dealt out evenly, each an equal share),
    as a share of the kernel's cycles."""
    duration, clock, sms = _duration(kernel), kernel.value("sm_clock"), sm_count(kernel, compute_capability)
    grid = kernel.value("grid_size")
    if not duration or not clock or not sms:
        return None
    busiest = wavefronts / sms if not grid else wavefronts / grid * math.ceil(grid / sms)
    return busiest / (duration * clock)


def is_finding(kind: KindTotals) -> bool:
    """A kind of instruction of a line that is a finding: conflicting, local, or uncoalesced."""
    space = kind.kind.space
    if space == "shared":
        return kind.excess > 0
    if space == "local":
        return bool(kind.executions)
    if space == "global":
        return coalescing_words(kind.sectors_over_ideal) is not None
    return False


def _excess_sectors(kind: KindTotals) -> float:
    return max((kind.sectors or 0.0) - (kind.sectors_ideal or 0.0), 0.0)


def _local_bytes(kernel: KernelResult) -> float:
    sectors = [kernel.value("local_ld_sectors"), kernel.value("local_st_sectors")]
    return sum(s for s in sectors if s) * SECTOR_BYTES


def _global_sectors(kernel: KernelResult) -> float:
    """The kernel's global sectors as its per-instruction records count them (the lines' own measure)."""
    return sum(r.global_sectors or 0.0 for r in kernel.instructions if r.space == Space.GLOBAL)


def stake_words(stake: Stake | None) -> str:
    """A line's time at stake in words, where it has a finding: "at most 83% of the kernel's time"."""
    if stake is None or stake.fraction <= 0:
        return ""
    return f"at most {percent(stake.fraction)} of the kernel's time at stake"


def percent(fraction: float) -> str:
    """A share as the report and `lines` print it: "7.1%", "15%"."""
    return f"{100 * fraction:.2g}%" if fraction < 0.1 else f"{100 * fraction:.0f}%"
