"""The roofline of each family in PMPP's terms (chapter 5): verdicts, the global-load cut of tiling,
and the records of its log-log chart with the GPU's own ceilings and a point per variant at each memory
level (drawn by charts.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from memlens.io.units import format_count, significant
from memlens.model.over_launches import aggregate
from memlens.model.results import KernelResult, RunResults
from memlens.model.roofline import LEVELS, PRECISIONS, Bound, TensorRoof, bound, ceilings_of
from memlens.reports.model import Cell, FamilyRoofline, FamilySection, RooflinePoint, Row, VerdictSentence

if TYPE_CHECKING:
    from memlens.bench.results import BenchResults

COMPUTE_BOUND_COPY = "compute-bound: judged by its roofline bound (the verdict), not by copy bandwidth"


def flop_rate_text(value: float) -> str:
    for scale, name in ((1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s")):
        if value >= scale:
            return f"{significant(value / scale)} {name}"
    return f"{significant(value)} FLOP/s"


def intensity_text(value: float) -> str:
    return f"{significant(value)} FLOP/B"


def verdict(kernel: KernelResult, where: Bound | None, copy_bandwidth: float | None = None) -> VerdictSentence | None:
    """The roofline sentence of one variant; None where its FLOPs were not measured (a run recorded
    before memlens counted them, or a plain ncu report without the counters: nothing to say). With
    `copy_bandwidth` (memlens bench's copy, bytes/s) a memory-bound variant's practical bound too."""
    if where is not None and where.roof is not None:
        return tensor_verdict(where, where.roof)
    flops = kernel.metric("flops")
    if flops.value is None:
        return None
    if flops.value == 0 and kernel.value("shared_mma_executions"):
        return VerdictSentence(
            "roofline",
            "unknown",
            "roofline: not placed: its floating-point work runs on tensor cores "
            "(wgmma), which memlens's FLOP counters do not count",
        )
    if flops.value == 0:
        return VerdictSentence(
            "roofline", "ok", "roofline: no floating-point work (moves data only): no intensity figure"
        )
    if where is None:
        missing = next(
            (m for m in (kernel.metric("arithmetic_intensity"), kernel.metric("flop_rate")) if not m.available), None
        )
        why = missing.missing_reason if missing else "the GPU's ceilings are not in the run"
        return VerdictSentence("roofline", "unknown", f"roofline: not placed ({why})")
    kind = "memory-bound" if where.memory_bound else "compute-bound"
    limit = "DRAM roof" if where.memory_bound else f"{where.precision} peak"
    text = (
        f"{kind} at {intensity_text(where.intensity)} (DRAM; ridge {intensity_text(where.ridge)}):"
        f" at most {flop_rate_text(where.limit)} on this GPU ({limit}), achieved {flop_rate_text(where.achieved)}"
        f" ({significant(where.pct_of_limit)}% of that bound)"
    )
    if where.memory_bound and copy_bandwidth:
        practical = min(where.intensity * copy_bandwidth, where.peak_flops)
        text += (
            f", {significant(100 * where.achieved / practical)}% of {flop_rate_text(practical)}"
            " at the measured copy bandwidth"
        )
    l1 = kernel.metric("arithmetic_intensity_l1").value
    more = f"{intensity_text(l1)} of global loads and stores at L1" if l1 is not None else ""
    return VerdictSentence("roofline", "ok", text, more=more)


def tensor_verdict(where: Bound, roof: TensorRoof) -> VerdictSentence:
    """The roofline sentence of a variant placed on a tensor-core roof (where.roof)."""
    name, share = f"{roof.path.name} ({roof.density} peak)", significant(where.pct_of_limit)
    place = f"{intensity_text(where.intensity)} (DRAM; ridge {intensity_text(where.ridge)})"
    if where.memory_bound:
        text = (
            f"memory-bound at {place}, tensor cores: at most {flop_rate_text(where.limit)} on this GPU"
            f" (DRAM roof; {name} {flop_rate_text(where.peak_flops)}), achieved {flop_rate_text(where.achieved)}"
            f" ({share}% of that bound)"
        )
    else:
        text = (
            f"tensor-core bound at {flop_rate_text(where.peak_flops)} {name}, achieved"
            f" {flop_rate_text(where.achieved)} ({share}%) at {place}"
        )
    return VerdictSentence("roofline", "ok", text)


def load_cut_note(family: str, points: Sequence[tuple[Row, KernelResult]]) -> str:
    """Global load sectors of each variant against the baseline's, measured: tiling's cut of traffic."""
    base = next(((row, k) for row, k in points if row.baseline), None)
    base_sectors = base[1].metric("global_load_sectors").value if base else None
    if base is None or not base_sectors:
        return ""
    parts = []
    for row, kernel in points:
        sectors = kernel.metric("global_load_sectors").value
        if row.baseline or sectors is None:
            continue
        cut = _cut(base_sectors, sectors)
        parts.append(f"{row.name} {format_count(sectors)} ({cut})")
    if not parts:
        return ""
    return f"global load sectors at L1, against {base[0].name}'s {format_count(base_sectors)}: " + "; ".join(parts)


def _cut(before: float, after: float) -> str:
    if not after:
        return "no global loads"
    ratio = before / after
    if abs(ratio - 1) < 0.005:
        return "the same"
    return f"{significant(ratio)}x fewer" if ratio > 1 else f"{significant(1 / ratio)}x more"


def add_roofline(
    families: Sequence[FamilySection],
    results: RunResults,
    bench: BenchResults | None = None,
) -> list[FamilySection]:
    """Each family with its roofline and each variant with its roofline verdict; a compute-bound
    family's "% of copy" cells become n/a (its verdicts give the % of its roofline bound)."""
    ceilings = ceilings_of(results)
    launches: dict[tuple[str | None, str | None], list[KernelResult]] = {}
    for kernel in results.kernels:
        launches.setdefault((kernel.family, kernel.variant), []).append(kernel)
    copy = bench.copy.gb_per_s * 1e9 if bench is not None else None
    out = []
    for family in families:
        rows, judged = [], []
        for row in family.rows:
            kernels = launches.get((family.name, row.name))
            if not row.valid or not kernels:
                rows.append(row)
                continue
            kernel = aggregate(kernels)
            where = bound(kernel, ceilings)
            judged.append((row, kernel, where))
            finding = verdict(kernel, where, copy)
            rows.append(replace(row, verdict=(*row.verdict, finding)) if finding else row)
        out.append(_with_roofline(family, tuple(rows), judged, ceilings, copy))
    return out


def _with_roofline(
    family: FamilySection,
    rows: tuple[Row, ...],
    judged: list[tuple[Row, KernelResult, Bound | None]],
    ceilings: Mapping[str, float | None],
    copy: float | None,
) -> FamilySection:
    points = []
    precisions = set()
    tensor_roofs: dict[str, float] = {}  # label -> FLOP/s: the run's ceiling, else the kernel's own
    for row, kernel, where in judged:
        achieved = where.achieved if where and where.roof else kernel.metric("flop_rate").value
        if not achieved:
            continue
        intensities = tuple((level, kernel.metric(key).value) for level, key in LEVELS)
        if where and where.roof:
            tensor_roofs.setdefault(where.roof.label, ceilings.get(where.roof.key) or where.peak_flops)
        else:
            precisions.add(where.precision if where else "fp32")
        points.append(
            RooflinePoint(
                row.name,
                row.baseline,
                achieved,
                intensities,
                where.memory_bound if where else None,
                where.pct_of_limit if where else None,
            )
        )
    if not points:
        return _without_flops(family, rows, judged, ceilings, copy)
    verdicts = [p.memory_bound for p in points if p.memory_bound is not None]
    compute_bound = bool(verdicts) and not any(verdicts)
    if compute_bound:
        rows = tuple(_without_copy_pct(r) for r in rows)
    peaks = tuple((p, peak) for p in PRECISIONS if p in precisions and (peak := ceilings.get(f"peak_flops_{p}")))
    peaks += tuple(sorted(tensor_roofs.items(), key=lambda pair: -pair[1]))
    note = load_cut_note(family.name, [(r, k) for r, k, _ in judged])
    roofline = FamilyRoofline(
        peaks, ceilings.get("peak_dram_bandwidth"), copy, tuple(points), (note,) if note else (), compute_bound
    )
    return replace(family, rows=rows, roofline=roofline)


def others_roofline(
    rows: Sequence[Row],
    results: RunResults,
    bench: BenchResults | None = None,
) -> tuple[list[Row], FamilyRoofline | None]:
    """The kernels outside families (a program's, a plain report's) with their roofline verdicts, and
    one roofline of those that do floating-point work, each point named by its label (None: none)."""
    ceilings = ceilings_of(results)
    launches: dict[tuple[str, str], list[KernelResult]] = {}
    for kernel in results.kernels:
        if not (kernel.family and kernel.variant):
            launches.setdefault((kernel.label, kernel.kernel), []).append(kernel)
    copy = bench.copy.gb_per_s * 1e9 if bench is not None else None
    out, judged = [], []
    for row in rows:
        kernels = launches.get((row.label, row.kernels[0])) if row.kernels else None
        if not row.valid or not kernels:
            out.append(row)
            continue
        kernel = aggregate(kernels)
        where = bound(kernel, ceilings)
        judged.append((replace(row, name=row.label, baseline=False), kernel, where))
        finding = verdict(kernel, where, copy)
        out.append(replace(row, verdict=(*row.verdict, finding)) if finding else row)
    section = _with_roofline(FamilySection("kernels", None, tuple(out)), tuple(out), judged, ceilings, copy)
    roof = section.roofline
    return list(section.rows), roof if roof is not None and roof.points else None


NO_FLOPS_WORDS = "no floating-point work: arithmetic intensity n/a, memory-bound by definition"


def _without_flops(
    family: FamilySection,
    rows: tuple[Row, ...],
    judged: list[tuple[Row, KernelResult, Bound | None]],
    ceilings: Mapping[str, float | None],
    copy: float | None,
) -> FamilySection:
    """A family whose every variant was measured at 0 FLOPs: the GPU's ceilings with no point, and its
    achieved DRAM bandwidth against the peak; unchanged where FLOPs were not measured (no --roofline)."""
    if not judged or any(kernel.metric("flops").value != 0 for _, kernel, _ in judged):
        return replace(family, rows=rows)
    achieved = tuple((row.name, value) for row, kernel, _ in judged if (value := kernel.metric("dram_bandwidth").value))
    peak = ceilings.get("peak_dram_bandwidth")
    note = NO_FLOPS_WORDS
    if achieved:
        best = max(achieved, key=lambda pair: pair[1])
        low = min(value for _, value in achieved)
        span = bandwidth_text(best[1]) if low == best[1] else f"{bandwidth_text(low)} to {bandwidth_text(best[1])}"
        note += f"; achieved DRAM bandwidth {span} (best: {best[0]})"
        if peak:
            note += f" of the {bandwidth_text(peak)} peak ({significant(100 * best[1] / peak)}% at best)"
    peaks = (("fp32", value),) if (value := ceilings.get("peak_flops_fp32")) else ()
    roofline = FamilyRoofline(peaks, peak, copy, (), (note,), no_flops=True, dram_achieved=achieved)
    return replace(family, rows=rows, roofline=roofline)


def bandwidth_text(value: float) -> str:
    """Bytes per second in TB/s or GB/s."""
    return f"{significant(value / 1e12)} TB/s" if value >= 1e12 else f"{significant(value / 1e9)} GB/s"


def _without_copy_pct(row: Row) -> Row:
    cell = row.cells.get("bench_pct_of_copy")
    if cell is None or cell.value is None:
        return row
    judged = Cell(cell.key, None, cell.unit, "n/a", missing_reason=COMPUTE_BOUND_COPY)
    return replace(row, cells={**row.cells, cell.key: judged})
