"""A metric of the catalogue (model/catalogue.py): its key, unit, meaning, ncu name or formula, and the
arithmetic its derived figures share (a missing input gives a missing figure, never a zero)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Better = Literal["lower", "higher"] | None
# How the launches of one variant add up: counts and times sum, per-launch settings (registers,
# shared memory, grid and block) take the largest, a percentage of peak is weighted by duration.
OverLaunches = Literal["sum", "max", "duration_weighted"]
Values = Mapping[str, "float | None"]
Variation = Literal["exact", "timed", "counter"]

SECTOR_BYTES = 32  # an L1TEX sector is 32 bytes
SECTION_CYCLES = "smsp__cycles_elapsed.avg"  # the cycles a `.sum.per_cycle_elapsed` of an smsp__ counter is over


@dataclass(frozen=True)
class Metric:
    key: str
    unit: str
    meaning: str
    ncu: str | None = None  # the ncu metric name; None for a derived figure
    better: Better = None  # which direction is an improvement, for gates and speedups
    instrumented: bool = False  # needs ncu's instrumented replay pass (skipped by --fast)
    formula: str = ""  # for derived figures, in words over catalogue keys
    derive: Callable[[Values], float | None] | None = None
    deterministic: bool = False  # a count that does not vary between runs of one input: compared exactly
    # A figure that does vary between runs reads better or worse only beyond its noise band (model/noise.py):
    # a timed one (a duration, or a rate, clock or % of peak that moves with one) the run's timing band
    # (the bench's p10-p90 where the runs have one, else noise.TIMING_FLOOR); another this fraction of it.
    timed: bool = False
    noise: float = 0.05
    over_launches: OverLaunches = "sum"  # how a variant's launches combine into one figure
    problem_above_zero: bool = False  # any value above zero marks a problem (excess wavefronts, local traffic)
    # why a derived figure has no value although its inputs are there (None: "an input is zero or missing")
    na_reason: Callable[[Values], str | None] | None = None
    aliases: tuple[str, ...] = ()  # other ncu names of the same counter, read where `ncu` is absent
    # collected only with `memlens profile --roofline`: on an H200 the FLOP counters cost a replay pass
    # together and L1's global sector counters another (tests/benchmarks/ncu_passes.py)
    roofline: bool = False
    # False: never in memlens's ncu metric list, read where a plain report holds it (ncu's own sections' names)
    asked: bool = True
    # ncu's rate of this count per elapsed SM sub-partition cycle, as ncu's roofline sections hold it: read
    # where a report lacks the count, which is the rate times SECTION_CYCLES (`--set full` or `--set roofline`)
    per_cycle: str | None = None

    @property
    def ncu_names(self) -> tuple[str, ...]:
        """The names a report may hold this metric under: the one memlens asks for, then its aliases."""
        return (self.ncu, *self.aliases) if self.ncu else self.aliases

    @property
    def column(self) -> str:
        """Its column in a table of figures (`metrics --csv`, the DataFrame): `duration (ns)`."""
        return f"{self.key} ({self.unit})"

    @property
    def variation(self) -> Variation:
        """How the figure moves between runs of one input: `exact` (a count), `timed` or `counter`."""
        return "exact" if self.deterministic else "timed" if self.timed else "counter"


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return num / den


def _sum(*parts: float | None) -> float | None:
    if any(p is None for p in parts):
        return None
    return float(sum(parts))  # type: ignore[arg-type]


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _scale(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
