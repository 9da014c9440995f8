"""Charts for the HTML report, drawn by matplotlib (Agg) as SVG text to embed inline: every matplotlib
call of the report (the family, bench, comparison, sweep and roofline charts).

Output is deterministic: a fixed `svg.hashsalt` per chart (so ids never collide between charts
of one page), no Date metadata, text kept as <text> (escaped by matplotlib), and the XML
prologue, metadata block and namespace declarations (URLs) stripped for inline HTML use.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import LogFormatterSciNotation, NullLocator  # noqa: E402

from memlens.io.safe_text import neutral  # noqa: E402
from memlens.io.units import significant  # noqa: E402
from memlens.model.kernel_names import elide_middle, short_kernel  # noqa: E402
from memlens.model.nvtx_names import parse_swept  # noqa: E402
from memlens.reports.formatting import format_value  # noqa: E402
from memlens.reports.model import Comparison, FamilyRoofline, FamilySection, Row  # noqa: E402
from memlens.reports.roofline import bandwidth_text, flop_rate_text  # noqa: E402
from memlens.reports.sweeps import family_sweep, log_scale  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

BLUE, GREY, RED, AMBER, INK, FAINT = "#3b6ea8", "#9aa9b8", "#c0392b", "#d69e2e", "#1f2933", "#52606d"
RUN_COLOURS = ("#3b6ea8", "#e08e2b", "#3f9b6b", "#8a5bb5", "#c0392b", "#6b7b8c")
LABEL_CHARS = 30  # characters of a bar's label that fit the left margin at 9 pt (0.2 of 11 in)
COMPARISON_LABEL_CHARS = 38  # the comparison chart's wider margin (0.26 of 11 in)
STYLE: dict[RcKeyType, Any] = {  # matplotlib's rc_context types each key's value
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.edgecolor": "#cbd2d9",
    "axes.labelcolor": INK,
    "xtick.color": FAINT,
    "ytick.color": INK,
}


# A log axis's labels as matplotlib chooses them (10³, 2×10¹), written as plain text: its own mathtext labels
# took a third of a report's chart time (1.1 of 3.6 s for the suite's 22 charts).
SUPERSCRIPTS = str.maketrans("-−0123456789", "⁻⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
MATHTEXT_LABEL = re.compile(r"\$\\mathdefault\{(.*)\}\$")


class PlainLogFormatter(LogFormatterSciNotation):
    """matplotlib's own choice of labels for a log axis, each as plain_power writes it."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return plain_power(super().__call__(x, pos))


def plain_power(label: str) -> str:
    """`$\\mathdefault{2\\times10^{-1}}$` as `2×10⁻¹`; any other label as it is."""
    whole = MATHTEXT_LABEL.fullmatch(label)
    if whole is None:
        return label
    body = whole[1].replace("\\times", "×")
    body = re.sub(r"\^\{(-?\d+)\}", lambda power: power[1].translate(SUPERSCRIPTS), body)
    return body if re.fullmatch(r"[0-9.×⁻⁰¹²³⁴⁵⁶⁷⁸⁹]*", body) else label


def log_axes(ax: Any, x: bool = False, y: bool = False) -> None:
    """The chosen axes of `ax` on a log scale, labelled in plain text."""
    for chosen, axis, scale in ((x, ax.xaxis, ax.set_xscale), (y, ax.yaxis, ax.set_yscale)):
        if chosen:
            scale("log")
            axis.set_major_formatter(PlainLogFormatter())
            axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))


@dataclass(frozen=True)
class Panel:
    title: str
    key: str  # a cell key of the rows
    bad_above_zero: bool = False
    colour: str = BLUE


PANELS = (
    Panel("duration", "duration"),
    Panel("excess wavefronts (exact)", "exact_excess_wavefronts", bad_above_zero=True),
    Panel("local-memory bytes (ld + st)", "local_bytes", bad_above_zero=True),
    Panel("DRAM bandwidth", "dram_bandwidth"),
)
# amber, not red: the hardware counter counts cycles that are not address conflicts (catalogue.HW_COUNTS)
HW_PANEL = Panel("HW conflicts (shared ld + st)", "hw_bank_conflicts", colour=AMBER)


def short(label: str, suffix: str = "", width: int = LABEL_CHARS) -> str:
    """A bar's label that fits the margin: a long kernel name elided in the middle (its start, the
    kernel's name, is kept), bidirectional controls neutralised; `suffix` kept whole."""
    return elide_middle(neutral(label), max(8, width - len(suffix))) + suffix


CHART_ROWS = 25  # rows a chart draws at most: the longest by duration
WIDE = 11.0  # inches: a chart on a screen
# inches: a chart on a phone, drawn apart (report.html.j2 shows one or the other): shown 400 px wide, its
# smallest text (7.5 pt) stays 8 px or more, where the wide chart shrunk to the page would be 3 to 4 px
NARROW = 5.0
NARROW_LABEL_CHARS = 18  # characters of a bar's label in a narrow chart's margin


def _duration(row: Row) -> float:
    cell = row.cells.get("duration")
    return cell.value if cell is not None and cell.value is not None else -1.0


def family_chart(rows: Sequence[Row], salt: str, exact: bool, width: float = WIDE) -> str | None:
    """Four panels of horizontal bars, one bar per valid variant (a row of four; `width` NARROW: two rows of
    two); None when nothing to draw."""
    rows = [r for r in rows if r.valid and r.cells]
    if len(rows) > CHART_ROWS:  # many kernels: the longest (and the baseline), not ten thousand bars
        longest = {id(r) for r in sorted(rows, key=_duration, reverse=True)[:CHART_ROWS]}
        rows = [r for r in rows if r.baseline or id(r) in longest][: CHART_ROWS + 1]
    if not rows:
        return None
    panels = PANELS if exact else (PANELS[0], HW_PANEL, *PANELS[2:])
    narrow = width < WIDE
    band = 0.9 + 0.32 * len(rows)
    height = 2 * band if narrow else band
    with plt.rc_context({**STYLE, "svg.hashsalt": salt}):
        figure = Figure(figsize=(width, height))
        grid = figure.subplots(2, 2, sharey=True) if narrow else figure.subplots(1, len(panels), sharey=True)
        axes = list(grid.flat)
        chars = NARROW_LABEL_CHARS if narrow else LABEL_CHARS
        names = [short(r.name, " (baseline)" if r.baseline else "", chars) for r in rows]
        for ax, panel in zip(axes, panels, strict=True):
            _bars(ax, panel, rows, names)
        axes[0].invert_yaxis()  # the y axis is shared: the first variant on top in every panel
        if narrow:
            figure.subplots_adjust(left=0.3, right=0.97, top=1 - 0.42 / height, bottom=0.12 / height, hspace=0.5)
        else:
            figure.subplots_adjust(left=0.2, right=0.98, top=1 - 0.42 / height, bottom=0.12 / height, wspace=0.32)
        return to_svg(figure, salt)


def _bars(ax, panel: Panel, rows: Sequence[Row], names: list[str]) -> None:
    shown = [_panel_value(row, panel.key) for row in rows]
    heights = [value or 0.0 for value, _ in shown]
    positions = list(range(len(rows)))
    colours = [_colour(panel, row, value) for row, (value, _) in zip(rows, shown, strict=True)]
    ax.barh(positions, heights, color=colours, height=0.62)
    top = max(heights) or 1.0
    for y, value, (_, text) in zip(positions, heights, shown, strict=True):
        inside = value > 0.6 * top  # a long bar holds its label, a short one has it after its end
        x, align, colour = (value - 0.02 * top, "right", "white") if inside else (value, "left", INK)
        ax.text(x, y, text if inside else f" {text}", va="center", ha=align, fontsize=8, color=colour)
    ax.set_title(panel.title, fontsize=9, loc="left", color=INK)
    ax.set_xlim(0, top * 1.05)
    ax.set_yticks(positions, names)
    ax.set_xticks([])
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)


def _panel_value(row: Row, key: str) -> tuple[float | None, str]:
    if key == "local_bytes":
        ld, st = row.cells["local_ld_bytes"], row.cells["local_st_bytes"]
        if ld.value is None or st.value is None:
            return None, "n/a"
        total = ld.value + st.value
        return total, format_value(total, "bytes")
    cell = row.cells[key]
    return cell.value, cell.text


def _colour(panel: Panel, row: Row, value: float | None) -> str:
    if panel.bad_above_zero and value:
        return RED
    return GREY if row.baseline and panel.key == "duration" else panel.colour


def bench_chart(rows: Sequence[Row], salt: str, copy_text: str, width: float = WIDE) -> str | None:
    """The % of copy bandwidth of every valid variant timed by memlens bench, with the copy at 100%
    marked; None when no variant has the figure (no bench, or no family min_bytes)."""
    rows = [r for r in rows if r.valid and "bench_pct_of_copy" in r.cells]
    values = [r.cells["bench_pct_of_copy"].value for r in rows]
    if not any(v is not None for v in values):
        return None
    height = 0.9 + 0.32 * len(rows)
    top = max(100.0, *(v for v in values if v is not None))
    with plt.rc_context({**STYLE, "svg.hashsalt": salt}):
        figure = Figure(figsize=(width, height))
        ax = figure.subplots()
        positions = list(range(len(rows)))
        colours = [GREY if r.baseline else BLUE for r in rows]
        ax.barh(positions, [v or 0.0 for v in values], color=colours, height=0.62)
        ax.axvline(100.0, color=FAINT, linestyle="--", linewidth=1, zorder=1)
        ax.text(100.0, -0.5, " copy", va="bottom", ha="left", fontsize=8, color=FAINT)
        for y, row, value in zip(positions, rows, values, strict=True):
            cells = row.cells
            text = cells["bench_pct_of_copy"].text
            if value is not None:
                text += f"  ({cells['bench_bandwidth'].text}, median {cells['bench_median'].text})"
            if value is not None and value > 0.6 * top:  # a long bar holds its label
                ax.text(value - 0.01 * top, y, text, va="center", ha="right", fontsize=8, color="white", zorder=3)
            else:  # after the bar's end, over the copy line
                box = {"boxstyle": "square,pad=0.15", "facecolor": "white", "edgecolor": "none"}
                ax.text(value or 0.0, y, f" {text}", va="center", ha="left", fontsize=8, color=INK, bbox=box, zorder=3)
        ax.set_title(f"% of copy bandwidth (memlens bench; copy {copy_text})", fontsize=9, loc="left", color=INK)
        ax.set_xlim(0, top * 1.3)
        ax.set_ylim(len(rows) - 0.5, -0.9)  # the first variant on top; room for the copy label
        ax.set_yticks(positions, [short(r.name, " (baseline)" if r.baseline else "") for r in rows])
        ax.set_xticks([])
        ax.tick_params(axis="y", length=0)
        for side in ("top", "right", "bottom"):
            ax.spines[side].set_visible(False)
        figure.subplots_adjust(left=0.2, right=0.98, top=1 - 0.42 / height, bottom=0.12 / height)
        return to_svg(figure, salt)


def comparison_chart(comparisons: Sequence[Comparison], salt: str, width: float = WIDE) -> str | None:
    """Duration of every kernel, one bar per run, grouped by kernel, on a log scale: a 0.12 ms
    kernel stays visible beside a 17.6 ms one."""
    durations = [next(m for m in c.metrics if m.key == "duration") for c in comparisons]
    positive = [cell.value for m in durations for cell in m.cells if cell.value and cell.value > 0]
    if not positive:
        return None
    floor = min(positive) / 4  # bars start here: a log axis has no zero
    count = len(comparisons[0].statuses)
    height = 0.9 + 0.22 * count * len(comparisons) + 0.12 * len(comparisons)
    with plt.rc_context({**STYLE, "svg.hashsalt": salt}):
        figure = Figure(figsize=(width, height))
        ax = figure.subplots()
        bar = 0.8 / count
        top = max(positive)
        log_axes(ax, x=True)
        for index in range(count):
            ys = [k + index * bar for k in range(len(comparisons))]
            values = [max(m.cells[index].value or 0, floor) for m in durations]
            ax.barh(
                ys,
                [v - floor for v in values],
                left=floor,
                height=bar * 0.9,
                color=RUN_COLOURS[index % len(RUN_COLOURS)],
                label=f"run {index + 1}",
            )
            for y, value, cell in zip(ys, values, (m.cells[index] for m in durations), strict=True):
                note = f" {cell.text}" + (f" ({cell.change_text})" if cell.change_text else "")
                ax.text(value, y, note, va="center", ha="left", fontsize=7.5, color=INK)
        ax.set_yticks(
            [k + 0.4 - bar / 2 for k in range(len(comparisons))],
            [short(short_kernel(c.label), width=COMPARISON_LABEL_CHARS) for c in comparisons],
        )
        ax.invert_yaxis()
        ax.set_xlim(floor, top * 6)  # room for the figures after the longest bar
        ax.set_xticks([])
        ax.minorticks_off()
        ax.set_title("duration per kernel, by run (log scale)", fontsize=9, loc="right", color=INK)
        for side in ("top", "right", "bottom"):
            ax.spines[side].set_visible(False)
        ax.tick_params(axis="y", length=0)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=count, fontsize=8, frameon=False)
        figure.subplots_adjust(left=0.26, right=0.98, top=1 - 0.55 / height, bottom=0.1 / height)
        return to_svg(figure, salt)


# --- a swept family ---------------------------------------------------------------------------


def sweep_values(family: FamilySection, key: str) -> dict[str, tuple[tuple[int, float | None], ...]]:
    """Each variant's figure `key` (a row cell, or "local_bytes": loads plus stores) by swept value."""
    out: dict[str, list[tuple[int, float | None]]] = {}
    for row in family.rows:
        swept = parse_swept(row.name)
        if swept is None:
            continue
        value = _panel_value(row, key)[0] if row.valid and row.cells else None
        out.setdefault(swept[0], []).append((swept[2], value))
    return {variant: tuple(sorted(points)) for variant, points in out.items()}


def sweep_chart(family: FamilySection, salt: str, exact: bool, width: float = WIDE) -> str | None:
    """A panel per figure of the family chart, each a line per variant against the swept size (log axes
    where the values span decades); None for a family not swept."""
    sweep = family_sweep(family)
    if sweep is None:
        return None

    panels = PANELS if exact else (PANELS[0], HW_PANEL, *PANELS[2:])
    with plt.rc_context({**STYLE, "svg.hashsalt": salt}):
        figure = Figure(figsize=(width, 3.2))
        axes = figure.subplots(1, len(panels))
        handles = []
        for ax, panel in zip(axes, panels, strict=True):
            series = sweep_values(family, panel.key)
            for index, (variant, baseline) in enumerate(sweep.variants):
                points = [(x, y) for x, y in series.get(variant, ()) if y is not None]
                name = short(variant, " (baseline)" if baseline else "")
                drawn = ax.plot(
                    [x for x, _ in points],
                    [y for _, y in points],
                    marker="o",
                    markersize=4,
                    linewidth=1.2,
                    color=RUN_COLOURS[index % len(RUN_COLOURS)],
                    label=name,
                )
                if panel is panels[0]:
                    handles.extend(drawn)
            log_axes(
                ax,
                x=log_scale(sweep.values),
                y=log_scale([y for points in series.values() for _, y in points if y is not None]),
            )
            ax.set_title(panel.title, fontsize=9, loc="left", color=INK)
            ax.set_xlabel(sweep.size)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        figure.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(0.0, 0.99),
            ncol=min(6, len(handles)),
            fontsize=8,
            frameon=False,
        )
        figure.suptitle(
            f"{family.name} against {sweep.size} ({', '.join(map(str, sweep.values))})",
            fontsize=9,
            x=0.99,
            ha="right",
            color=INK,
        )
        figure.subplots_adjust(left=0.06, right=0.99, top=0.78, bottom=0.16, wspace=0.3)
        return to_svg(figure, salt)


# --- the roofline --------------------------------------------------------------------------------

LEVEL_MARKERS = {"DRAM": "o", "L2": "s", "L1": "^"}
# two roofs closer than this factor would print their labels over each other (8 pt text on a log axis of
# 4.2 inches spanning a few decades): the lower one's label goes under its line
CLOSE_ROOFS = 1.6


def peak_labels(peaks: Sequence[tuple[str, float]]) -> list[tuple[str, float, str]]:
    """(label, FLOP/s, vertical alignment) of each roof, highest first: roofs of one value share one label,
    and a roof close under the one above it puts its label below its line ("top"), not over the other's."""
    merged: dict[float, list[str]] = {}
    for name, value in sorted(peaks, key=lambda p: -p[1]):
        same = next((v for v in merged if abs(v - value) <= 0.01 * v), value)
        merged.setdefault(same, []).append(name)
    labels: list[tuple[str, float, str]] = []
    for value, names in merged.items():
        above = labels[-1] if labels else None
        close = above is not None and above[2] == "bottom" and above[1] / value < CLOSE_ROOFS
        labels.append((f"{', '.join(names)} peak {flop_rate_text(value)} ", value, "top" if close else "bottom"))
    return labels


def roofline_chart(family: FamilySection, salt: str, width: float = WIDE) -> str | None:
    """Log-log roofline of a family: FLOP/s against FLOP/byte, the GPU's labelled ceilings, and a
    point per variant at each memory level (marker shape) joined at its achieved FLOP/s; the legend
    beside the axes, or (`width` NARROW) under them."""
    roof = family.roofline
    if roof is None or not (roof.points or roof.no_flops):
        return None

    xs = [x for p in roof.points for _, x in p.intensities if x]
    ys = [p.achieved for p in roof.points] or [0.1 / 4 * min([b for _, b in roof.dram_achieved] or [1e9])]
    peaks = [value for _, value in roof.peak_flops]
    low_x, high_x = min([*xs, 0.1]) / 4, max([*xs, 100.0]) * 4
    with plt.rc_context({**STYLE, "svg.hashsalt": salt}):
        narrow = width < WIDE
        figure = Figure(figsize=(width, 6.4 if narrow else 4.2))
        ax = figure.subplots()
        log_axes(ax, x=True, y=True)
        grid = [low_x * (high_x / low_x) ** (i / 200) for i in range(201)]
        top = max(peaks) if peaks else max(ys) * 10
        for text, peak, place in peak_labels(roof.peak_flops):
            ax.axhline(peak, color=INK, linewidth=1.2)
            ax.text(high_x, peak, text, ha="right", va=place, fontsize=8)
        # the peak's label over its line, the copy's (a little below the peak) under its own: never on each other
        for label, bandwidth, style, place in (
            ("DRAM peak", roof.dram_bandwidth, "-", "bottom"),
            ("copy (memlens bench)", roof.copy_bandwidth, "--", "top"),
        ):
            if not bandwidth:
                continue
            line = [min(x * bandwidth, top) for x in grid]
            ax.plot(grid, line, color=FAINT, linestyle=style, linewidth=1.2)
            x_text = low_x * 1.5
            ax.text(
                x_text,
                x_text * bandwidth * (1.15 if place == "bottom" else 1 / 1.15),
                f"{label} {significant(bandwidth / 1e12)} TB/s",
                fontsize=8,
                color=FAINT,
                rotation=0,
                ha="left",
                va=place,
            )
        handles = _achieved_bandwidths(ax, roof, grid, top, low_x, 7.5 if narrow else 9)
        for index, point in enumerate(roof.points):
            colour = RUN_COLOURS[index % len(RUN_COLOURS)]
            shown = [(level, x) for level, x in point.intensities if x]
            if len(shown) > 1:
                ax.plot([x for _, x in shown], [point.achieved] * len(shown), color=colour, linewidth=0.8, alpha=0.6)
            for level, x in shown:
                ax.plot([x], [point.achieved], marker=LEVEL_MARKERS[level], color=colour, markersize=7, linestyle="")
            name = short(point.name) + (" (baseline)" if point.baseline else "")
            if point.pct_of_limit is not None:
                name += f": {significant(point.pct_of_limit)}% of its bound"
            handles.append(Line2D([], [], color=colour, marker="o", linestyle="", label=name))
        if roof.points:
            handles += [
                Line2D([], [], color=INK, marker=m, linestyle="", label=f"{lvl} intensity", markerfacecolor="none")
                for lvl, m in LEVEL_MARKERS.items()
            ]
        anchor = (0.0, -0.14) if narrow else (1.01, 1.0)  # under the axes, or beside them
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=anchor, fontsize=8, frameon=False)
        ax.set_xlim(low_x, high_x)
        ax.set_ylim(min(ys) / 10, top * 3)
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("FLOP/s")
        about = "" if narrow else " (achieved FLOP/s; ceilings measured by ncu on this GPU)"
        ax.set_title(f"roofline of {family.name}{about}", fontsize=9, loc="left", color=INK)
        if narrow:
            figure.subplots_adjust(left=0.15, right=0.97, top=0.95, bottom=0.4)
        else:
            figure.subplots_adjust(left=0.07, right=0.68, top=0.92, bottom=0.12)
        return to_svg(figure, salt)


def _achieved_bandwidths(
    ax, roof: FamilyRoofline, grid: list[float], top: float, low_x: float, size: float = 9
) -> list:
    """A family without FLOPs: no point to place, so each variant's achieved DRAM bandwidth as a dotted
    roof under the peak's, and the reason in words on the chart. Returns the legend's handles."""
    if not roof.no_flops:
        return []

    handles = []
    for index, (name, bandwidth) in enumerate(roof.dram_achieved):
        colour = RUN_COLOURS[index % len(RUN_COLOURS)]
        ax.plot(grid, [min(x * bandwidth, top) for x in grid], color=colour, linestyle=":", linewidth=1.2)
        label = f"{short(name)}: DRAM {bandwidth_text(bandwidth)} achieved"
        handles.append(Line2D([], [], color=colour, linestyle=":", label=label))
    ax.text(
        0.98,
        0.04,
        "no floating-point work: intensity n/a, memory-bound by definition\n"
        "(dotted: each variant's achieved DRAM bandwidth, under the DRAM peak)",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=size,
        color=INK,
    )
    return handles


_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_NAMESPACES = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_IDS = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')


def to_svg(figure: Figure, salt: str) -> str:
    """The figure as an inline <svg> element: deterministic, with ids unique to this chart
    (matplotlib numbers its ids per figure: figure_1, axes_1, ...), and with no URL in it."""
    _thin_minor_ticks(figure)
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = _PROLOGUE.sub("", buffer.getvalue(), count=1)
    text = _METADATA.sub("", text, count=1)
    text = _NAMESPACES.sub("", text)
    prefix = "c" + hashlib.sha256(salt.encode("utf-8")).hexdigest()[:8]
    return _IDS.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", text)


MINOR_TICKS_DECADES = 3  # a log axis spanning this many decades or more draws no minor ticks


def _thin_minor_ticks(figure: Figure) -> None:
    """A log axis over MINOR_TICKS_DECADES or more keeps its labelled decades, not the unlabelled minor marks
    between them (matplotlib labels none past a decade): drawing them took a third of the charts' time."""
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            if axis.get_scale() == "log" and low > 0 and high / low >= 10**MINOR_TICKS_DECADES:
                axis.set_minor_locator(NullLocator())
