"""Noise: how far a figure moves between two runs of the same input, so that a change inside it reads
"same (within noise)" and only one beyond it better or worse (`memlens compare`, the report of several
runs, the gate's baseline rules say whether a change is inside it).

A deterministic figure (a count: wavefronts, sectors, instructions, local bytes, FLOPs, registers;
`Metric.deterministic`) has no band: any change is a change. A counter that varies (DRAM bytes, hit
rates, the hardware bank-conflict counter) has a band of `Metric.noise`, a fraction of its value. A
timed figure (`Metric.timed`: a duration, or a rate, clock or % of peak that moves with one) has the
runs' timing band:

- where both runs have `memlens bench` timings of the kernel (bench.json), half the sum of their p10-p90
  spreads (the two runs' p10-p90 ranges stop overlapping where the medians move further apart): the
  band of the bench median itself; ncu's own single-launch figures take the wider of it and the floor;
- otherwise TIMING_FLOOR: 3% of the figure, and never less than TIMING_FLOOR_NS of its duration.

The floor, from the repository's recordings (H100 and H200, ncu 2025.3.1, clocks not locked): 91 pairs
of launches of the same binaries in two ncu runs on one GPU (the suite and suite_fast recordings, the
three memory_kinds and two triton_attention recordings of tests/fixtures/<gpu>/kinds, compare_v2 and
compare_v2.plain: one build recorded twice; tests/model/test_noise.py checks every pair against the
floor). Kernels of 20 us or more moved at most 1.7% (median 0.5%; the H200's two tensor_app recordings'
five large kernels at most 0.9%); kernels under 10 us moved by up to 256 ns (6.2% of a 3.1 us kernel),
a fixed cost of a launch more than a share of it. A change of 3%, and of at least 300 ns, is above both;
the README's "Which line changed" says the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memlens.model.metric import Better, Metric

TIMING_FLOOR = 0.03  # a fraction of the figure
TIMING_FLOOR_NS = 300.0  # of the kernel's duration, for short kernels

Judgement = Literal["better", "worse", "same", "n/a"]
BandSource = Literal["floor", "bench", "counter"]


@dataclass(frozen=True)
class Spread:
    """One run's `memlens bench` timing of a kernel: its median and p10-p90, in the same unit."""

    median: float
    p10: float
    p90: float

    @property
    def fraction(self) -> float:
        return (self.p90 - self.p10) / self.median if self.median > 0 else 0.0


@dataclass(frozen=True)
class Band:
    """A change within `fraction` of the base figure (either way) is noise; `source` says where it came from."""

    fraction: float
    source: BandSource

    @property
    def text(self) -> str:
        return f"±{self.fraction * 100:.1f}%"

    def to_json(self) -> dict[str, object]:
        return {"fraction": self.fraction, "source": self.source}


def floor_band(duration_ns: float | None) -> Band:
    """The stated floor for a kernel of `duration_ns` (None: unknown, the relative floor alone)."""
    fraction = TIMING_FLOOR
    if duration_ns is not None and duration_ns > 0:
        fraction = max(fraction, TIMING_FLOOR_NS / duration_ns)
    return Band(fraction, "floor")


def bench_band(spreads: Sequence[Spread | None]) -> Band | None:
    """Half the sum of the runs' p10-p90 spreads, as fractions of their medians; None unless every run has one."""
    if not spreads or any(s is None for s in spreads):
        return None
    return Band(sum(s.fraction for s in spreads if s is not None) / 2, "bench")


def band_of(
    metric: Metric, duration_ns: float | None = None, spreads: Sequence[Spread | None] = (), bench_figure: bool = False
) -> Band | None:
    """The noise band of `metric` between two runs: None for a deterministic figure (compared exactly).
    `duration_ns` is the base run's duration of the kernel, `spreads` each run's bench timing of it;
    `bench_figure` marks a figure the bench measured itself (its median), whose band is the bench's alone."""
    if metric.variation == "exact":
        return None
    if metric.variation == "counter":
        return Band(metric.noise, "counter")
    bench = bench_band(spreads)
    if bench_figure and bench is not None:
        return bench
    floor = floor_band(duration_ns)
    return bench if bench is not None and bench.fraction > floor.fraction else floor


def judge(base: float, head: float, better: Better, band: Band | None) -> Judgement:
    """better, worse or same: a change inside the band is the same; `n/a` for a figure with no direction."""
    if base == head:
        return "same"
    if band is not None and base != 0 and abs(head - base) <= band.fraction * abs(base) * (1 + 1e-9):
        return "same"
    if better is None:
        return "n/a"
    return "better" if (head > base) == (better == "higher") else "worse"
