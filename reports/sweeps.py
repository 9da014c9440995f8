"""A swept family (`--sweep FAMILY.NAME=V1,V2,...`) against its size: each figure of the family chart
(duration, excess wavefronts, local-memory bytes, DRAM bandwidth) as a line per variant over the
swept values, so a user sees how conflicts and local traffic grow with the work. Its rows are named
"variant@NAME=VALUE" (memlens.model.nvtx_names.swept_name); the roofline places each of them as a point."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlens.model.nvtx_names import parse_swept, swept_name
from memlens.reports.model import FamilySection, Row

DECADE_SPAN = 10.0  # values spanning at least this ratio are drawn on a log axis


@dataclass(frozen=True)
class Sweep:
    """A swept family: the size's name, its values in increasing order, and its variants (name,
    whether it is the baseline) in the family's order."""

    size: str
    values: tuple[int, ...]
    variants: tuple[tuple[str, bool], ...]


def family_sweep(family: FamilySection) -> Sweep | None:
    """The sweep a family's rows were run over; None for a family not swept."""
    swept = [(row, parse_swept(row.name)) for row in family.rows]
    if not swept or any(s is None for _, s in swept) or len({s[1] for _, s in swept if s}) != 1:
        return None
    named = [(row, s) for row, s in swept if s is not None]
    variants: dict[str, bool] = {}
    for row, (variant, _, _) in named:
        variants[variant] = variants.get(variant, False) or row.baseline
    return Sweep(named[0][1][1], tuple(sorted({s[2] for _, s in named})), tuple(variants.items()))


def same_size_baseline(row: Row, rows: Sequence[Row], baseline: Row) -> Row:
    """The row a swept row's speedup is against: the baseline variant at the same size of the sweep."""
    swept, base = parse_swept(row.name), parse_swept(baseline.name)
    if swept is None or base is None:
        return baseline
    name = swept_name(base[0], swept[1], swept[2])
    return next((r for r in rows if r.name == name), baseline)


def sweep_values(family: FamilySection, key: str) -> dict[str, tuple[tuple[int, float | None], ...]]:
    """Each variant's figure `key` (a row cell, or "local_bytes": loads plus stores) by swept value."""
    from memlens.reports.charts import _panel_value

    out: dict[str, list[tuple[int, float | None]]] = {}
    for row in family.rows:
        swept = parse_swept(row.name)
        if swept is None:
            continue
        value = _panel_value(row, key)[0] if row.valid and row.cells else None
        out.setdefault(swept[0], []).append((swept[2], value))
    return {variant: tuple(sorted(points)) for variant, points in out.items()}


def log_scale(values: Sequence[float]) -> bool:
    """Whether positive `values` span decades (a log axis reads them better)."""
    positive = [v for v in values if v and v > 0]
    return len(positive) > 1 and max(positive) / min(positive) >= DECADE_SPAN


def sweep_chart(family: FamilySection, salt: str, exact: bool) -> str | None:
    """A panel per figure of the family chart, each a line per variant against the swept size (log axes
    where the values span decades); None for a family not swept."""
    sweep = family_sweep(family)
    if sweep is None:
        return None
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from memlens.reports.charts import HW_PANEL, INK, PANELS, RUN_COLOURS, STYLE, short, to_svg

    panels = PANELS if exact else (PANELS[0], HW_PANEL, *PANELS[2:])
    with plt.rc_context({**STYLE, "svg.hashsalt": salt}):
        figure = Figure(figsize=(11, 3.2))
        axes = figure.subplots(1, len(panels))
        handles = []
        for ax, panel in zip(axes, panels, strict=True):
            series = sweep_values(family, panel.key)
            for index, (variant, baseline) in enumerate(sweep.variants):
                points = [(x, y) for x, y in series.get(variant, ()) if y is not None]
                name = short(variant, " (baseline)" if baseline else "")
                drawn = ax.plot([x for x, _ in points], [y for _, y in points], marker="o", markersize=4,
                                linewidth=1.2, color=RUN_COLOURS[index % len(RUN_COLOURS)], label=name)  # fmt: skip
                if panel is panels[0]:
                    handles.extend(drawn)
            if log_scale(sweep.values):
                ax.set_xscale("log")
            if log_scale([y for points in series.values() for _, y in points if y is not None]):
                ax.set_yscale("log")
            ax.set_title(panel.title, fontsize=9, loc="left", color=INK)
            ax.set_xlabel(sweep.size)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        figure.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, 0.99), ncol=min(6, len(handles)),
                      fontsize=8, frameon=False)  # fmt: skip
        figure.suptitle(f"{family.name} against {sweep.size} ({', '.join(map(str, sweep.values))})",
                        fontsize=9, x=0.99, ha="right", color=INK)  # fmt: skip
        figure.subplots_adjust(left=0.06, right=0.99, top=0.78, bottom=0.16, wspace=0.3)
        return to_svg(figure, salt)
