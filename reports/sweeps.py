"""A swept family (`--sweep FAMILY.NAME=V1,V2,...`) against its size: each figure of the family chart
(duration, excess wavefronts, local-memory bytes, DRAM bandwidth) as a line per variant over the
swept values (drawn by charts.py), so a user sees how conflicts and local traffic grow with the work.
Its rows are named "variant@NAME=VALUE" (memlens.model.nvtx_names.swept_name); the roofline places
each of them as a point."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlens.model.nvtx_names import parse_swept, swept_name
from memlens.reports.model import FamilySection, Row

DECADE_SPAN = 10.0  # values spanning at least this ratio are drawn on a log axis


@dataclass(frozen=True)
class FamilySweep:
    """A swept family: the size's name, its values in increasing order, and its variants (name,
    whether it is the baseline) in the family's order."""

    size: str
    values: tuple[int, ...]
    variants: tuple[tuple[str, bool], ...]


def family_sweep(family: FamilySection) -> FamilySweep | None:
    """The sweep a family's rows were run over; None for a family not swept."""
    swept = [(row, parse_swept(row.name)) for row in family.rows]
    if not swept or any(s is None for _, s in swept) or len({s[1] for _, s in swept if s}) != 1:
        return None
    named = [(row, s) for row, s in swept if s is not None]
    variants: dict[str, bool] = {}
    for row, (variant, _, _) in named:
        variants[variant] = variants.get(variant, False) or row.baseline
    return FamilySweep(named[0][1][1], tuple(sorted({s[2] for _, s in named})), tuple(variants.items()))


def same_size_baseline(row: Row, rows: Sequence[Row], baseline: Row) -> Row:
    """The row a swept row's speedup is against: the baseline variant at the same size of the sweep."""
    swept, base = parse_swept(row.name), parse_swept(baseline.name)
    if swept is None or base is None:
        return baseline
    name = swept_name(base[0], swept[1], swept[2])
    return next((r for r in rows if r.name == name), baseline)


def log_scale(values: Sequence[float]) -> bool:
    """Whether positive `values` span decades (a log axis reads them better)."""
    positive = [v for v in values if v and v > 0]
    return len(positive) > 1 and max(positive) / min(positive) >= DECADE_SPAN
