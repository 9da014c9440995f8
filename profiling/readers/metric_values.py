"""What both report readers share: NVTX range names, unit conversion and missing-metric reasons.

A program's own NVTX push/pop ranges label its kernels (`program_label`), the same from CSV and
.ncu-rep: the ranges open at the launch, outermost first, joined by " > "; a domain other than the
default one is named once before its ranges, as ncu's filters write it ("cudaapp@spill/capped").
The innermost range shaped "family/variant" makes the kernel part of that family, as in a suite run;
its family carries the domain where that is not the default ("cudaapp@spill").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from memlens.io.units import UnitError, conversion_factor
from memlens.model.catalogue import PER_INSTRUCTION_METRICS, RAW_METRICS, SECTION_CYCLES, Metric
from memlens.model.nvtx_names import NVTX_DOMAIN, RANGE_JOINER, is_library_domain, parse_swept
from memlens.model.results import KernelResult, printable

_NAME = r"[A-Za-z][A-Za-z0-9_]*"
# A memlens push/pop range "family.variant", or "family.variant@NAME=VALUE" for one size of a sweep;
# ncu's CSV may append ":none:none:..." attribute fields.
RANGE_PATTERN = re.compile(rf"^({_NAME})\.({_NAME}(?:@{_NAME}=[0-9]+)?)(?::|$)")

# A program's range shaped "family/variant" (one slash, names with no spaces) groups into a family.
FAMILY_RANGE_PATTERN = re.compile(r"^([^/\s@>]+)/([^/\s@>]+)$")
DEFAULT_DOMAIN = "<default domain>"  # ncu's name for NVTX's default domain, in CSV and .ncu-rep alike

NOT_IN_REPORT = "not in the report"
ROOFLINE_SKIPPED = "not collected: profile with --roofline (the FLOP and L1 global-sector counters cost replay passes)"
FAST_SKIPPED = "not collected: run without --fast (--fast skips the instrumented pass)"
CSV_NO_INSTRUCTIONS = "a CSV cannot carry per-instruction values: read the .ncu-rep"
INSTRUMENTED_ABSENT = "not in the report (an instrumented metric: ncu collects it only when asked by name)"

# units.to_base without working the factor out again for each cell: a report repeats a few units.
# (A unit that cannot be converted raises each time: lru_cache keeps no exceptions.)
_factor = lru_cache(maxsize=1024)(conversion_factor)


@dataclass(frozen=True)
class ReportedValue:
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


@dataclass(frozen=True)
class ProgramLabel:
    """What a program's NVTX ranges say about a launch: the range path, and its family/variant."""

    nvtx: str
    family: str | None = None
    variant: str | None = None


def program_label(ranges: Iterable[tuple[str, str]]) -> ProgramLabel | None:
    """The label of a launch from its open push/pop ranges, (domain, name) pairs in report order
    (each domain's ranges outermost first); None where no range is open. A library's ranges
    (nvtx_names.LIBRARY_DOMAINS: CCCL, NCCL) come after the program's own and never make the family:
    inside a range of the program's they only add to the label ("cupy/rowsum > CCCL@cub::...")."""
    parts: list[str] = []
    named: set[str] = set()
    family: tuple[str, str] | None = None
    ordered = sorted(ranges, key=lambda pair: is_library_domain(pair[0]))  # stable: report order otherwise
    for domain, name in ordered:
        domain, name = domain.strip(), name.strip()
        if not name:
            continue
        prefix = f"{domain}@" if domain and domain != DEFAULT_DOMAIN else ""
        parts.append(name if not prefix or domain in named else prefix + name)
        named.add(domain)
        match = None if is_library_domain(domain) else FAMILY_RANGE_PATTERN.match(name)
        if match:
            family = (prefix + match.group(1), match.group(2))
    if not parts:
        return None
    path = printable(RANGE_JOINER.join(parts))
    if family is None:
        return ProgramLabel(path)
    return ProgramLabel(path, printable(family[0]), printable(family[1]))


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
    lookup: Callable[[str], ReportedValue | None], from_memlens: bool
) -> tuple[dict[str, float | None], dict[str, str]]:
    """Every raw catalogue metric in its base unit, and the reason for each one missing."""
    raw: dict[str, float | None] = {}
    missing: dict[str, str] = {}
    reason: str | None
    for metric in NCU_METRICS:
        cell = next((c for name in metric.ncu_names if (c := lookup(name)) is not None), None)
        if cell is None and metric.per_cycle is not None:
            cell = section_count(metric, lookup)
        if cell is None:
            value, reason = None, absent_reason(metric, from_memlens)
        else:
            value, reason = convert(metric, cell.value, cell.unit)
        raw[metric.key] = value
        if reason is not None:
            missing[metric.key] = reason
    return raw, missing


def section_count(metric: Metric, lookup: Callable[[str], ReportedValue | None]) -> ReportedValue | None:
    """A count ncu's roofline sections hold only as a rate a cycle (Metric.per_cycle), times the cycles
    (an integer: 37,748,736 FFMA of the softmax in tests/fixtures/nvidia_h200/tensor, to the last bit);
    None where the report has not both."""
    rate = lookup(metric.per_cycle) if metric.per_cycle else None
    cycles = lookup(SECTION_CYCLES) if rate is not None else None
    if rate is None or cycles is None:
        return None
    if rate.value is None or cycles.value is None:
        return ReportedValue(None, metric.unit)
    return ReportedValue(float(round(rate.value * cycles.value)), metric.unit)


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
    lookup: Callable[[str], ReportedValue | None],
    from_memlens: bool,
    program: ProgramLabel | None = None,
) -> KernelResult:
    raw, missing = raw_values(lookup, from_memlens)
    for metric in PER_INSTRUCTION_METRICS:  # a CSV has one value a metric, not one an instruction
        raw[metric.key] = None
        missing[metric.key] = missing.get("shared_wavefronts") or CSV_NO_INSTRUCTIONS
    return with_label(KernelResult(printable(kernel), None, None, launch_id, raw, missing), ranges, program)


def with_label(kernel: KernelResult, suite: tuple[str, str] | None, program: ProgramLabel | None) -> KernelResult:
    """The kernel with its suite range (family, variant, and the size a sweep ran it at), or else its
    program's NVTX label."""
    if suite is not None:
        swept = parse_swept(suite[1])
        if swept is not None:
            return replace(kernel, family=suite[0], variant=suite[1], sweep_size=swept[1], sweep_value=swept[2])
        return replace(kernel, family=suite[0], variant=suite[1])
    if program is not None:
        return replace(kernel, family=program.family, variant=program.variant, nvtx=program.nvtx)
    return kernel


def compute_capability(major: float | None, minor: float | None) -> str | None:
    if major is None or minor is None or not (math.isfinite(major) and math.isfinite(minor)):
        return None
    return f"{int(major)}.{int(minor)}"
