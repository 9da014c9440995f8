"""All launches of a variant as one kernel: each figure combined over its launches as the catalogue
says its metric combines (`Metric.over_launches`: a sum, a maximum, or weighted by duration)."""

from __future__ import annotations

import math

from memlens.model.catalogue import CATALOGUE
from memlens.model.results import KernelResult


def aggregate(kernels: list[KernelResult]) -> KernelResult:
    """All launches of a variant as one kernel: sums, maxima for per-launch settings, and the
    percentage of peak weighted by duration. A figure missing in any launch is missing."""
    if len(kernels) == 1:
        return kernels[0]
    raw: dict[str, float | None] = {}
    missing: dict[str, str] = {}
    keys = dict.fromkeys(key for k in kernels for key in k.raw)
    for key in keys:
        if getattr(CATALOGUE.get(key), "derive", None) is not None:
            continue  # a ratio an older results.json stored: derived from the sums, never summed
        values = [k.raw.get(key) for k in kernels]
        if any(v is None for v in values):
            raw[key] = None
            broken = next(k for k in kernels if k.raw.get(key) is None)
            missing[key] = broken.missing_reason(key)
            continue
        raw[key] = combine(key, [float(v) for v in values], kernels)  # type: ignore[arg-type]
    first = kernels[0]
    instructions = tuple(record for k in kernels for record in k.instructions)  # the table sums over launches
    return KernelResult(first.kernel, first.family, first.variant, first.launch_id, raw, missing, instructions)


def combine(key: str, values: list[float], kernels: list[KernelResult]) -> float | None:
    """One figure of a variant's launches, as the catalogue says its metric combines."""
    how = CATALOGUE[key].over_launches
    if how == "max":
        return max(values)
    if how == "duration_weighted":
        weights = [k.raw.get("duration") for k in kernels]
        known = [w for w in weights if w is not None]
        if len(known) < len(weights) or not sum(known):
            return None
        return sum(v * w for v, w in zip(values, known, strict=True)) / sum(known)
    return math.fsum(values)
