"""Print per-kernel metrics from a run directory (default: the latest run), its results.json, or any
.ncu-rep or ncu CSV, including ones made with plain ncu and no memlens ranges.

A metric that is missing prints "n/a"; why it is missing is said once below the table.
--json and --csv print every catalogue metric of every kernel, with its unit."""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len  # a few ms; the rest of rich is imported where a table is drawn

from ..catalogue import CATALOGUE
from ..errors import ConfigError, InputError
from ..labels import compile_filter
from ..readers import read_report
from ..results import KernelResult, RunResults
from ..terminal import console
from ..units import format_bytes, format_count, format_duration, format_percent

if TYPE_CHECKING:  # imported where a table is drawn: --json and --csv do without them
    from rich.box import Box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

LATEST_RUN = Path("runs") / "latest"
NA = "n/a"
PIPE_WIDTH = 240  # rich's 80 columns would fold the table when stdout is a file or a pipe
# On a terminal, tables up to this many kernels are drawn by rich itself; larger ones, and any table
# written to a file or a pipe, by the fast printer (the same text: rich's column widths, box and
# wrapping, without rich's cost per cell, seconds for 1,000 kernels).
RICH_MAX_ROWS = 200


def _table_box() -> Box:
    from rich import box

    return box.HEAVY_HEAD  # rich's Table default


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", help=f"run directory, results.json, .ncu-rep or ncu CSV (default: {LATEST_RUN})"
    )
    parser.add_argument("-k", dest="pattern", help="only kernels whose label or name matches this regex")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="every metric of every kernel as JSON")
    output.add_argument("--csv", action="store_true", help="every metric of every kernel as CSV, one row a kernel")


def run(args: argparse.Namespace) -> int:
    results = _read(args.path)
    render(results, _select(results, args.pattern), "json" if args.json else "csv" if args.csv else "table")
    return 0


def render(results: RunResults, kernels: list[KernelResult], output: str = "table") -> None:
    """Print `kernels` of `results` on stdout as "table", "json" or "csv"."""
    if output == "json":
        print(dumps_indented(to_json(results, kernels)))
    elif output == "csv":
        write_csv(kernels, sys.stdout)
    elif output == "table":
        print_table(results, kernels)
    else:
        raise ValueError(f"unknown output {output!r}")


def _read(path: str | None) -> RunResults:
    if path is None and not LATEST_RUN.exists():
        raise InputError(
            f"{LATEST_RUN}: no run yet; run `memlens profile` or name a run directory, results.json, "
            ".ncu-rep or ncu CSV"
        )
    return read_report(path if path is not None else LATEST_RUN)


def _select(results: RunResults, pattern: str | None) -> list[KernelResult]:
    regex = compile_filter(pattern)
    kernels = [k for k in results.kernels if regex is None or regex.search(k.label) or regex.search(k.kernel)]
    if not kernels and results.kernels:
        raise ConfigError(f"no kernel in {results.info.source or 'the report'} matches -k {pattern!r}")
    return kernels


# --- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str  # names the column in notes: "exact excess wavefronts: n/a — ..."
    header: str  # the table's header, on two lines where long
    keys: tuple[str, ...]  # catalogue keys the cell shows; a missing one prints n/a
    render: Callable[[KernelResult], str]


def _value(kernel: KernelResult, key: str) -> float | None:
    return kernel.metric(key).value


def _show(kernel: KernelResult, key: str, form: Callable[[float], str]) -> str:
    value = _value(kernel, key)
    return NA if value is None else form(value)


def _gb_per_s(value: float) -> str:
    return f"{value / 1e9:,.1f}"


def _ways(kernel: KernelResult) -> str:
    if _value(kernel, "shared_ld_instructions") == 0:
        return "-"  # no shared-memory loads: the ratio has no meaning
    return _show(kernel, "shared_ld_ways", lambda v: f"{v:.2f}")


def _excess(kernel: KernelResult) -> str:
    total = _show(kernel, "exact_excess_wavefronts", format_count)
    per_load = _value(kernel, "excess_wavefronts_per_shared_ld")
    return total if per_load is None else f"{total} ({per_load:.3g}/ld)"


def _local(kernel: KernelResult) -> str:
    loads = _show(kernel, "local_ld_bytes", format_bytes)
    stores = _show(kernel, "local_st_bytes", format_bytes)
    return f"{loads} / {stores}"


def _launch(kernel: KernelResult) -> str:
    return f"{_show(kernel, 'grid_size', format_count)} x {_show(kernel, 'block_size', format_count)}"


def _static_shared(kernel: KernelResult) -> str:
    return _show(kernel, "static_shared_per_block", lambda v: format_bytes(v, binary=True))


def _kernel_label(kernel: KernelResult) -> str:
    """The label; for a kernel a program's NVTX range labels, the kernel's name on the line below."""
    if kernel.nvtx is not None and kernel.kernel != kernel.label:
        return f"{kernel.label}\n  {kernel.kernel}"
    return kernel.label


KERNEL_MIN_WIDTH = 28  # characters of a kernel label kept on one line however narrow the terminal

COLUMNS = (
    Column("kernel", "kernel", (), lambda k: _kernel_label(k)),
    Column("duration", "duration", ("duration",), lambda k: _show(k, "duration", format_duration)),
    Column("DRAM GB/s", "DRAM\nGB/s", ("dram_bandwidth",), lambda k: _show(k, "dram_bandwidth", _gb_per_s)),
    Column("DRAM % of peak", "DRAM %\nof peak", ("dram_pct_of_peak",),
           lambda k: _show(k, "dram_pct_of_peak", format_percent)),
    Column("shared ld n-way", "shared ld\nn-way", ("shared_ld_ways",), _ways),
    Column("exact excess wavefronts", "exact excess\nwavefronts", ("exact_excess_wavefronts",), _excess),
    Column("HW conflict counter", "HW conflict\ncounter", ("hw_bank_conflicts",),
           lambda k: _show(k, "hw_bank_conflicts", format_count)),
    Column("local ld / st", "local\nld / st", ("local_ld_bytes", "local_st_bytes"), _local),
    Column("registers", "regs", ("registers_per_thread",), lambda k: _show(k, "registers_per_thread", format_count)),
    Column("static shared/block", "static\nshared/block", ("static_shared_per_block",), _static_shared),
    Column("grid x block", "grid x\nblock", ("grid_size", "block_size"), _launch),
)


def print_table(results: RunResults, kernels: list[KernelResult], fast: bool | None = None) -> None:
    """The title, one row a kernel and the notes. `fast` picks the printer (default: by the output
    and the number of kernels); both print the same text."""
    out = console()
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, PIPE_WIDTH)
    if fast is None:
        fast = not out.is_terminal or len(kernels) > RICH_MAX_ROWS
    rows = [[column.render(kernel) for column in COLUMNS] for kernel in kernels]
    # never squeeze a figure: on a narrow terminal the table is wider than the screen, not truncated
    out.width = max(out.width, _narrowest_table(rows))
    out.print(_title(results))
    text = fast_table(out, rows) if fast else None
    if text is None:
        out.print(_rich_table(rows))
    else:
        out.print(text, soft_wrap=True)  # every line already fits the width
    for line in notes(kernels):
        out.print(line)


def _narrowest_table(rows: list[list[str]]) -> int:
    """The width under which a figure would be cut: every numeric column whole, the kernel column
    at its minimum, one space of padding a side, and the borders."""
    def widest(texts: list[str]) -> int:
        return max((cell_len(line) for text in texts for line in text.split("\n")), default=0)

    label_width = min(widest([row[0] for row in rows]), KERNEL_MIN_WIDTH)
    numeric = [widest([column.header] + [row[index] for row in rows]) for index, column in enumerate(COLUMNS)][1:]
    return label_width + sum(numeric) + 2 * len(COLUMNS) + len(COLUMNS) + 1


def _rich_table(rows: list[list[str]]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=_table_box())
    # the kernel column keeps room for a label (up to KERNEL_MIN_WIDTH) on a narrow terminal
    label_width = min(max((cell_len(row[0]) for row in rows), default=0), KERNEL_MIN_WIDTH) + 2
    for column in COLUMNS:
        numeric = column.name != "kernel"
        table.add_column(column.header, justify="right" if numeric else "left", overflow="fold", no_wrap=numeric,
                         min_width=None if numeric else label_width)  # fmt: skip
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # Text: kernel names print as they are (no emoji codes)
    return table


def fast_table(out: Console, rows: list[list[str]]) -> Text | None:
    """The table `_rich_table(rows)` draws on `out`, made without rich's renderer per cell: rich sizes
    the columns (from a table of the few cells that decide their widths) and draws only the cells that
    do not fit on one line or are not plain text. None where the widths cannot be had."""
    from rich.text import Text

    widths = _column_widths(out, rows)
    if widths is None:
        return None
    edges = _table_box().substitute(out.options, safe=out.safe_box)
    header_style = out.get_style("table.header")
    text = Text(edges.get_top(widths) + "\n")
    layout = list(zip(COLUMNS, widths, strict=True))
    header = [_cell_lines(out, column.header, width, column, header=True) for column, width in layout]
    height = max(len(lines) for lines in header)
    header = [[" " * width] * (height - len(lines)) + lines for lines, width in zip(header, widths, strict=True)]
    for line_no in range(height):  # header cells are aligned to the bottom, each styled as rich styles it
        text.append(edges.head_left)
        for index, lines in enumerate(header):
            if index:
                text.append(edges.head_vertical)
            text.append(lines[line_no], header_style)
        text.append(edges.head_right + "\n")
    body = [edges.get_row(widths, "head", edge=True)]
    for number, row in enumerate(rows, 1):
        left, divider, right = (
            (edges.foot_left, edges.foot_vertical, edges.foot_right) if number == len(rows)
            else (edges.mid_left, edges.mid_vertical, edges.mid_right)
        )  # fmt: skip
        cells = [_cell_lines(out, cell, width, column) for cell, (column, width) in zip(row, layout, strict=True)]
        height = max(len(lines) for lines in cells)
        if height == 1:
            body.append(left + divider.join(lines[0] for lines in cells) + right)
            continue
        cells = [lines + [" " * width] * (height - len(lines)) for lines, width in zip(cells, widths, strict=True)]
        body.extend(left + divider.join(lines[line_no] for lines in cells) + right for line_no in range(height))
    body.append(edges.get_bottom(widths))
    text.append("\n".join(body))
    return text


def _column_widths(out: Console, rows: list[list[str]]) -> list[int] | None:
    """Each column's width (padding included) as rich sets it for `rows`. rich sizes a column from the
    largest minimum (longest word) and the largest maximum (longest line) of its cells, so a table of
    the cells that hold those, and of any cell that is not plain text, gets the same widths."""
    deciding: list[list[str]] = []
    for index in range(len(COLUMNS)):
        plain: list[str] = []
        picked: list[str] = []  # every cell that is not plain text, and three plain ones
        for row in rows:
            (plain if _plain(row[index]) else picked).append(row[index])
        # the longest cell, the longest of one word, and the one of several with the longest word
        for candidates, key in ((plain, cell_len), ([cell for cell in plain if " " not in cell], cell_len),
                                ([cell for cell in plain if " " in cell], _longest_word)):  # fmt: skip
            if candidates:
                picked.append(max(candidates, key=key))
        deciding.append(picked)
    proxy = _rich_table([[cells[r] if r < len(cells) else "" for cells in deciding]
                         for r in range(max(map(len, deciding)))])  # fmt: skip
    lines = out.render_lines(proxy, out.options, pad=False)
    top = "".join(segment.text for segment in lines[0]) if lines else ""
    edges = _table_box().substitute(out.options, safe=out.safe_box)
    if len(top) < 2 or not (top[0] == edges.top_left and top[-1] == edges.top_right):
        return None
    widths = [len(part) for part in top[1:-1].split(edges.top_divider)]
    return widths if len(widths) == len(COLUMNS) and all(widths) else None


def _longest_word(cell: str) -> int:
    return max(map(cell_len, cell.split()), default=0)


def _plain(cell: str) -> bool:
    """One line of printable text with no space at either end: drawn by padding it alone."""
    return cell.isprintable() and cell == cell.strip()


def _cell_lines(out: Console, cell: str, width: int, column: Column, header: bool = False) -> list[str]:
    """The lines of one cell padded to `width` as rich draws it in `column` (a header is a str to rich,
    a body cell a Text)."""
    numeric = column.name != "kernel"
    if _plain(cell) and (room := width - 2 - cell_len(cell)) >= 0:
        return [f" {' ' * room}{cell} " if numeric else f" {cell}{' ' * room} "]
    from rich.padding import Padding
    from rich.text import Text

    renderable = cell if header else Text(cell)
    options = out.options.update(width=width, justify="right" if numeric else "left", no_wrap=numeric,
                                 overflow="fold", height=None, highlight=False)  # fmt: skip
    lines = out.render_lines(Padding(renderable, (0, 1)), options, pad=True)
    return ["".join(segment.text for segment in line) for line in lines] or [" " * width]  # a row is 1 line or more


def _title(results: RunResults) -> str:
    info = results.info
    where = ", ".join(p for p in (info.gpu_name, info.compute_capability and f"cc {info.compute_capability}") if p)
    return f"{info.source or 'results'}" + (f" ({where})" if where else "")


def notes(kernels: list[KernelResult]) -> list[str]:
    """One line per distinct (column, reason) of a missing metric, naming the kernels when not all."""
    seen: dict[tuple[str, str], list[str]] = {}
    for kernel in kernels:
        for column in COLUMNS:
            for key in column.keys:
                metric = kernel.metric(key)
                if metric.value is None and not (key == "shared_ld_ways" and _ways(kernel) == "-"):
                    labels = seen.setdefault((column.name, metric.missing_reason or "missing"), [])
                    if kernel.label not in labels:
                        labels.append(kernel.label)
    lines = []
    for (title, reason), labels in seen.items():
        which = "" if len(labels) == len(kernels) else f" ({', '.join(labels)})"
        lines.append(f"{title}: {NA} — {reason}{which}")
    if any(_ways(k) == "-" for k in kernels):
        lines.append("shared ld n-way: - where a kernel has no shared-memory loads")
    return lines


# --- machine-readable output ---------------------------------------------------------------------


def _metrics_json(kernel: KernelResult) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key in CATALOGUE:
        metric = kernel.metric(key)
        if metric.value is None:
            out[key] = {"value": None, "unit": metric.unit, "reason": metric.missing_reason}
        else:
            out[key] = {"value": metric.value, "unit": metric.unit}
    return out


def to_json(results: RunResults, kernels: list[KernelResult]) -> dict[str, Any]:
    return {
        "info": asdict(results.info),
        "kernels": [
            {
                "label": k.label,
                "kernel": k.kernel,
                "family": k.family,
                "variant": k.variant,
                "nvtx": k.nvtx,
                "launch_id": k.launch_id,
                "metrics": _metrics_json(k),
            }
            for k in kernels
        ],
    }


def dumps_indented(data: Any) -> str:
    """The text of `json.dumps(data, indent=2)`, made several times faster for a large report (the
    standard library encodes indented JSON in pure Python, one generator per level). Anything but
    dicts with str keys, lists, tuples, str, int, float, bool and None goes to json.dumps."""
    parts: list[str] = []
    try:
        _encode(data, parts, "\n")
    except _NotPlain:
        return json.dumps(data, indent=2)
    return "".join(parts)


class _NotPlain(Exception):
    pass


_STRING = json.encoder.encode_basestring_ascii  # json.dumps's (ensure_ascii)


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _STRING(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if value != value:
            return "NaN"
        if value in (math.inf, -math.inf):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise _NotPlain


def _encode(value: Any, parts: list[str], newline: str) -> None:
    kind = type(value)
    if kind is dict:
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        opening = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            item_kind = type(item)
            if item_kind is str:  # the common leaves inline, the rest through _scalar and _encode
                parts.append(f"{opening}{_STRING(key)}: {_STRING(item)}")
            elif item_kind is float and math.isfinite(item):
                parts.append(f"{opening}{_STRING(key)}: {float.__repr__(item)}")
            elif item_kind is dict or item_kind is list or item_kind is tuple:
                parts.append(f"{opening}{_STRING(key)}: ")
                _encode(item, parts, inner)
            else:
                parts.append(f"{opening}{_STRING(key)}: {_scalar(item)}")
            opening = "," + inner
        parts.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        opening = "[" + inner
        for item in value:
            parts.append(opening)
            _encode(item, parts, inner)
            opening = "," + inner
        parts.append(newline + "]")
    else:
        parts.append(_scalar(value))


CSV_IDENTITY = ("label", "kernel", "family", "variant", "launch_id")


def csv_header() -> list[str]:
    """Identity columns, then every catalogue metric as "key (unit)"."""
    return [*CSV_IDENTITY, *(f"{key} ({metric.unit})" for key, metric in CATALOGUE.items())]


def write_csv(kernels: list[KernelResult], stream: Any) -> None:
    """One row a kernel; a missing metric is an empty cell (--json says why)."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(csv_header())
    for k in kernels:
        values = [_csv_number(k.metric(key).value) for key in CATALOGUE]
        writer.writerow([k.label, k.kernel, k.family or "", k.variant or "", k.launch_id, *values])


def _csv_number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if value.is_integer() else repr(value)
