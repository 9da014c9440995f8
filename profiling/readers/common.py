"""What both report readers share: NVTX range names, unit conversion and missing-metric reasons."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from ..catalogue import PER_INSTRUCTION_METRICS, RAW_METRICS, Metric
from ..nvtx_names import NVTX_DOMAIN
from ..results import KernelResult, printable
from ..units import UnitError, conversion_factor

_NAME = r"[A-Za-z][A-Za-z0-9_]*"
# A memlens push/pop range "family.variant"; ncu's CSV may append ":none:none:..." attribute fields.
RANGE_PATTERN = re.compile(rf"^({_NAME})\.({_NAME})(?::|$)")

NOT_IN_REPORT = "not in the report"
ROOFLINE_SKIPPED = "not collected: profile with --roofline (the FLOP and L1 global-sector counters cost replay passes)"
FAST_SKIPPED = "not collected: run without --fast (--fast skips the instrumented pass)"
CSV_NO_INSTRUCTIONS = "a CSV cannot carry per-instruction values: read the .ncu-rep"
INSTRUMENTED_ABSENT = "not in the report (an instrumented metric: ncu collects it only when asked by name)"

# units.to_base without working the factor out again for each cell: a report repeats a few units.
# (A unit that cannot be converted raises each time: lru_cache keeps no exceptions.)
_factor = lru_cache(maxsize=1024)(conversion_factor)


@dataclass(frozen=True)
class Cell:
    """One metric as a report holds it: a value (None for "n/a") and ncu's unit for it."""

    value: float | None
    unit: str


def suite_range(ranges: Iterable[str]) -> tuple[str, str] | None:
    """(family, variant) of the innermost memlens range among `ranges` (outermost first)."""
    for name in reversed(list(ranges)):
        match = RANGE_PATTERN.match(name.strip())
        if match:
            return match.group(1), match.group(2)
    return None


def is_memlens_domain(name: str) -> bool:
    return name.strip() == NVTX_DOMAIN


def absent_reason(metric: Metric, from_memlens: bool) -> str:
    """Why a catalogue metric a report lacks is missing."""
    if metric.roofline and from_memlens:
        return ROOFLINE_SKIPPED
    if not metric.instrumented:
        return NOT_IN_REPORT
    return FAST_SKIPPED if from_memlens else INSTRUMENTED_ABSENT


# The raw catalogue metrics a report can hold (those with an ncu name), in catalogue order.
NCU_METRICS: tuple[Metric, ...] = tuple(m for m in RAW_METRICS if m.ncu is not None)


def raw_values(
    lookup: Callable[[str], Cell | None], from_memlens: bool
) -> tuple[dict[str, float | None], dict[str, str]]:
    """Every raw catalogue metric in its base unit, and the reason for each one missing."""
    raw: dict[str, float | None] = {}
    missing: dict[str, str] = {}
    for metric in NCU_METRICS:
        cell = next((c for name in metric.ncu_names if (c := lookup(name)) is not None), None)
        if cell is None:
            value, reason = None, absent_reason(metric, from_memlens)
        else:
            value, reason = convert(metric, cell.value, cell.unit)
        raw[metric.key] = value
        if reason is not None:
            missing[metric.key] = reason
    return raw, missing


def convert(metric: Metric, value: float | None, unit: str) -> tuple[float | None, str | None]:
    """A value the report holds (None for "n/a") in ncu's `unit` -> (value in the catalogue's
    unit, None), or (None, why it has no value)."""
    if value is None:
        return None, "n/a in the report"
    if not math.isfinite(value):
        return None, f"not a finite number in the report ({value})"
    try:
        return value * _factor(unit, metric.unit), None
    except UnitError as exc:
        return None, f"{exc} (expected {metric.unit})"


def make_kernel(
    kernel: str,
    launch_id: int,
    ranges: tuple[str, str] | None,
    lookup: Callable[[str], Cell | None],
    from_memlens: bool,
) -> KernelResult:
    raw, missing = raw_values(lookup, from_memlens)
    for metric in PER_INSTRUCTION_METRICS:  # a CSV has one value a metric, not one an instruction
        raw[metric.key] = None
        missing[metric.key] = missing.get("shared_wavefronts") or CSV_NO_INSTRUCTIONS
    family, variant = ranges if ranges else (None, None)
    return KernelResult(printable(kernel), family, variant, launch_id, raw, missing)


def compute_capability(major: float | None, minor: float | None) -> str | None:
    if major is None or minor is None or not (math.isfinite(major) and math.isfinite(minor)):
        return None
    return f"{int(major)}.{int(minor)}"
