"""What `memlens metrics` shows, as typed findings (`KernelMetrics`) and the pieces its formats
share: the table's columns and notes (terminal), the JSON of every metric (json) and the CSV (csv).
The formats that render it are memlens/output/formats/{table,json,csv}.py."""

from __future__ import annotations

import csv
import functools
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from rich.cells import cell_len  # a few ms; the rest of rich is imported where a table is drawn

from memlens.collect.launch_sampling import sampling_lines
from memlens.io.tables import LABEL_MIN_WIDTH, Column, fast_table, label_width, print_drawn, rich_table
from memlens.io.terminal import console, table_console
from memlens.io.units import format_bytes, format_count, format_duration, format_percent
from memlens.model import shared_figures
from memlens.model.catalogue import CATALOGUE, KIND_KEYS
from memlens.model.instruction_kinds import SharedKind, Side
from memlens.model.kernel_names import NAME_WIDTH, elide_middle, short_kernel
from memlens.model.per_instruction import LOCAL_EXECUTIONS
from memlens.model.results import IDENTITY, KernelResult, RunResults
from memlens.output.tensor_lines import tensor_lines
from memlens.theory import paper_figures

NA = "n/a"
FALLBACK_MARK = "*"  # a figure of the hardware counters, where the report has no exact one
PIPE_WIDTH = 240  # rich's 80 columns would fold the table when stdout is a file or a pipe
# On a terminal, tables up to this many kernels are drawn by rich itself; larger ones, and any table
# written to a file or a pipe, by the fast printer (the same text: rich's column widths, box and
# wrapping, without rich's cost per cell, seconds for 1,000 kernels).
RICH_MAX_ROWS = 200


@dataclass(frozen=True)
class KernelMetrics:
    """The kernels `memlens metrics` shows, of `results`: `local` gives the cause of local memory of
    kernels (by position in `kernels`) that have local traffic; the table's title names `title` (the
    path the user gave), else the run's source; `wide`: every column, however wide the terminal."""

    results: RunResults
    kernels: list[KernelResult]
    local: dict[int, str] = field(default_factory=dict)
    title: str | None = None
    wide: bool = False

    def to_json(self) -> dict[str, Any]:
        """Every catalogue metric of every kernel with its unit, the cause of its local memory and
        its exact excess wavefronts on paper."""
        on_paper = paper_figures.checks(self.results)
        data = to_json(self.results, self.kernels)
        for index, text in self.local.items():
            data["kernels"][index]["local_memory_cause"] = text
        for entry, kernel in zip(data["kernels"], self.kernels, strict=True):
            found = on_paper.get(kernel.label)
            entry["paper_excess_wavefronts"] = found.paper if found else None
            entry["as_on_paper"] = found.as_on_paper if found else None
        return data


def print_metrics(table: KernelMetrics, out: TextIO | None = None) -> None:
    """The table, its notes, each kernel's cause of local memory and the figures on paper."""
    kernels = table.kernels
    print_table(table.results, kernels, title=table.title, wide=table.wide, file=out)
    where = console(file=out)
    fit = not table.wide and (where.is_terminal or "COLUMNS" in os.environ)  # wrapped to the terminal, as the table
    for line in dict.fromkeys(f"{kernels[i].label}: local memory: {text}" for i, text in table.local.items()):
        where.print(line, markup=False, highlight=False, soft_wrap=not fit)
    for line in paper_figures.lines(paper_figures.checks(table.results), (k.label for k in kernels)):
        where.print(line, markup=False, highlight=False, soft_wrap=not fit)
    for line in tensor_lines(table.results, kernels):
        where.print(line, markup=False, highlight=False, soft_wrap=not fit)


# --- the table ------------------------------------------------------------------------------------


def _value(kernel: KernelResult, key: str) -> float | None:
    return kernel.value(key)


def _show(kernel: KernelResult, key: str, form: Callable[[float], str]) -> str:
    value = _value(kernel, key)
    return NA if value is None else form(value)


def _gb_per_s(value: float) -> str:
    return f"{value / 1e9:,.1f}"


def _ways(kernel: KernelResult) -> str:
    """The shared loads' (LDS) wavefronts over their own ideal (a conflict-free 16-byte load reads 1.00);
    without per-instruction values, the hardware's wavefronts per load, marked "*"."""
    return _kind_ways(kernel, SharedKind.LOADS)


def _kind_ways(kernel: KernelResult, kind: SharedKind) -> str:
    """One kind's wavefronts over its own ideal; "-" where the kernel has no such access."""
    figure = shared_figures.kind_n_way(kernel, kind)
    if figure.value is None:
        side = {SharedKind.LOADS: Side.LD, SharedKind.STORES: Side.ST}.get(kind)
        counted_none = side is not None and shared_figures.no_such_access(kernel, side, figure)
        return "-" if figure.exact or counted_none else NA
    return f"{figure.value:.2f}" + ("" if figure.exact else FALLBACK_MARK)


def _has_kind(kernel: KernelResult, kind: SharedKind) -> bool:
    return bool(kernel.value(KIND_KEYS[kind].ideal) or kernel.value(KIND_KEYS[kind].wavefronts))


def _excess(kernel: KernelResult) -> str:
    """The exact excess, and per execution of the side(s) it comes from: "(31/ld)" only where
    that side conflicts (a .ncu-rep or results.json splits it; a CSV cannot)."""
    total = _show(kernel, "exact_excess_wavefronts", format_count)
    per_access = []
    for side in shared_figures.conflicting_sides(kernel):
        figure = shared_figures.excess_per_access(kernel, side)
        if figure.value is not None:
            per_access.append(f"{figure.value:.3g}/{side}" + ("" if figure.exact else FALLBACK_MARK))
    return f"{total} ({', '.join(per_access)})" if per_access else total


NO_SUCH_ACCESS = "the kernel has no access of that kind"


def _loads_dash(kernel: KernelResult) -> str:
    """Why the shared loads' n-way is "-": no shared loads (LDS), or the hardware counted none."""
    figure = shared_figures.kind_n_way(kernel, SharedKind.LOADS)
    return NO_SUCH_ACCESS if figure.exact else figure.note or NA


def _local(kernel: KernelResult) -> str:
    """Local bytes loaded / stored (the sector counters); where the report has none of those but its
    per-instruction table (a plain --section SourceCounters report), the local instructions executed."""
    executions = _local_executions(kernel)
    if executions is not None:
        return f"{format_count(executions[0])} / {format_count(executions[1])}{EXECUTIONS_UNIT}"
    loads = _show(kernel, "local_ld_bytes", format_bytes)
    stores = _show(kernel, "local_st_bytes", format_bytes)
    return f"{loads} / {stores}"


EXECUTIONS_UNIT = " inst"
EXECUTIONS_NOTE = (
    "warp-level local load / store instructions executed, from the report's per-instruction table (it "
    "has no local sector counters, so no bytes)"
)


def _local_executions(kernel: KernelResult) -> tuple[float, float] | None:
    """The local loads and stores executed, where the kernel has them and no local byte figure."""
    if kernel.value("local_ld_bytes") is not None or kernel.value("local_st_bytes") is not None:
        return None
    ld, st = (kernel.value(LOCAL_EXECUTIONS[side]) for side in (Side.LD, Side.ST))
    return None if ld is None or st is None else (ld, st)


def _launch(kernel: KernelResult) -> str:
    return f"{_show(kernel, 'grid_size', format_count)} x {_show(kernel, 'block_size', format_count)}"


def _static_shared(kernel: KernelResult) -> str:
    return _show(kernel, "static_shared_per_block", format_bytes)


def _kernel_label(kernel: KernelResult) -> str:
    """The label; for a kernel a program's NVTX range labels, the kernel's name on the line below; a
    library's kernel, its library in brackets before that name ("[cuBLAS] nvjet_..."), or below the label."""
    label = elide_middle(kernel.label, NAME_WIDTH)
    if kernel.nvtx is not None and kernel.kernel != kernel.label:
        return f"{label}\n  {elide_middle(_library_mark(kernel) + kernel.kernel, NAME_WIDTH)}"
    return label + (f"\n  {_library_mark(kernel)}".rstrip() if kernel.library else "")


def _library_mark(kernel: KernelResult) -> str:
    return f"[{kernel.library.name}] " if kernel.library else ""


# The kinds of shared access other than plain loads, each its own n-way column where a run has it
KIND_HEADERS = {
    SharedKind.LDMATRIX: "ldmatrix",
    SharedKind.STORES: "shared st",
    SharedKind.STMATRIX: "stmatrix",
    SharedKind.CP_ASYNC: "cp.async",
    SharedKind.ATOMICS: "shared atom",
    SharedKind.TENSOR_CORE: "tensor-core",
}
KIND_COLUMNS = {f"{header} n-way": kind for kind, header in KIND_HEADERS.items()}
# Each column's `key` names it in notes ("exact excess wavefronts: n/a — ..."); `keys`: the catalogue
# keys its cell shows (a missing one prints n/a); CELLS: each column's cell of a kernel, by its key.
COLUMNS = (
    Column("kernel", "kernel"),
    Column("duration", "duration", ("duration",)),
    Column("DRAM\nGB/s", "DRAM GB/s", ("dram_bandwidth",)),
    Column("DRAM %\nof peak", "DRAM % of peak", ("dram_pct_of_peak",)),
    Column("shared ld\nn-way", "shared ld n-way", ("shared_ld_ways",)),  # its fallback's key: n/a says why
    *(Column(f"{header}\nn-way", f"{header} n-way", (KIND_KEYS[kind].ways,)) for kind, header in KIND_HEADERS.items()),
    Column("exact excess\nwavefronts", "exact excess wavefronts", ("exact_excess_wavefronts",)),
    Column("HW ld + st\nconflicts", "HW ld + st conflicts", ("hw_bank_conflicts",)),  # catalogue.HW_COUNTS
    Column("local\nld / st", "local ld / st", ("local_ld_bytes", "local_st_bytes")),
    Column("regs", "registers", ("registers_per_thread",)),
    Column("static\nshared/block", "static shared/block", ("static_shared_per_block",)),
    Column("grid x\nblock", "grid x block", ("grid_size", "block_size")),
)
CELLS: dict[str, Callable[[KernelResult], str]] = {
    "kernel": _kernel_label,
    "duration": lambda k: _show(k, "duration", format_duration),
    "DRAM GB/s": lambda k: _show(k, "dram_bandwidth", _gb_per_s),
    "DRAM % of peak": lambda k: _show(k, "dram_pct_of_peak", format_percent),
    "shared ld n-way": _ways,
    **{key: functools.partial(_kind_ways, kind=kind) for key, kind in KIND_COLUMNS.items()},
    "exact excess wavefronts": _excess,
    "HW ld + st conflicts": lambda k: _show(k, "hw_bank_conflicts", format_count),
    "local ld / st": _local,
    "registers": lambda k: _show(k, "registers_per_thread", format_count),
    "static shared/block": _static_shared,
    "grid x block": _launch,
}


def print_table(
    results: RunResults,
    kernels: list[KernelResult],
    fast: bool | None = None,
    title: str | None = None,
    wide: bool = False,
    file: TextIO | None = None,
) -> None:
    """The title, one row a kernel and the notes. `fast` picks the printer (default: by the output
    and the number of kernels); both print the same text. On a terminal (or where COLUMNS sets the
    width) the table fits it: the most telling columns that fit (FIT_ORDER), kernel names shortened,
    and a line naming the columns left out; `wide`, or a pipe without COLUMNS, every column."""
    out = table_console(PIPE_WIDTH, file=file)
    if fast is None:
        fast = not out.is_terminal or len(kernels) > RICH_MAX_ROWS
    fit = not wide and (out.is_terminal or "COLUMNS" in os.environ)
    present = shown_columns(kernels)
    chosen = list(present)
    if fit:
        label = max(LABEL_MIN_WIDTH, min(NAME_WIDTH, out.width // 2))
        rows = [
            [_fitted_label(kernel, label), *(CELLS[column.key](kernel) for column in present[1:])] for kernel in kernels
        ]
        chosen = _columns_that_fit(rows, out.width, present)
        narrower = _label_for_local(kernels, rows, out.width, present, chosen)
        if narrower is not None:  # kernels with local memory: names shortened so that its column fits
            rows = [[_fitted_label(kernel, narrower), *row[1:]] for kernel, row in zip(kernels, rows, strict=True)]
            chosen = _columns_that_fit(rows, out.width, present)
        keep = [present.index(column) for column in chosen]
        rows = [[row[index] for index in keep] for row in rows]
    else:
        rows = [[CELLS[column.key](kernel) for column in present] for kernel in kernels]
    # never squeeze a figure: on a narrow terminal the table is wider than the screen, not truncated
    out.width = max(out.width, _narrowest_table(rows, chosen))
    out.print(_title(results, title))
    labels = [row[0] for row in rows]  # the kernel column, always kept, first
    columns = [
        Column(column.header, min_width=label_width(labels))
        if column.key == "kernel"
        else Column(column.header, numeric=True, wrap=False)
        for column in chosen
    ]
    text = fast_table(out, columns, rows) if fast else None
    if text is None:
        out.print(rich_table(columns, rows))
    else:
        print_drawn(out, text)  # every line already fits the width
    left_out = [column.key for column in present if column not in chosen]
    if left_out:
        out.print(f"left out to fit {out.width} columns: {', '.join(left_out)} (--wide shows all; --json every figure)")
    for line in notes(kernels, chosen):
        out.print(line)
    for line in sampling_lines(results.info, kernels):
        out.print(line)


def shown_columns(kernels: list[KernelResult]) -> list[Column]:
    """COLUMNS less the n-way columns of kinds no kernel has: the shared loads' column stays where a kernel has
    such loads or where no kernel has the kinds' figures (its hardware fallback, or n/a, as before them)."""
    exact = any(kernel.value(KIND_KEYS[SharedKind.LOADS].wavefronts) is not None for kernel in kernels)
    has = {kind for kind in SharedKind if any(_has_kind(kernel, kind) for kernel in kernels)}
    return [
        column
        for column in COLUMNS
        if (column.key not in KIND_COLUMNS or KIND_COLUMNS[column.key] in has)
        and (column.key != "shared ld n-way" or not exact or SharedKind.LOADS in has)
    ]


# The columns a narrow terminal keeps, most telling first; the table shows them in COLUMNS' order.
FIT_ORDER = (
    "kernel",
    "duration",
    "exact excess wavefronts",
    "local ld / st",
    "shared ld n-way",
    *KIND_COLUMNS,
    "DRAM GB/s",
    "DRAM % of peak",
    "HW ld + st conflicts",
    "registers",
    "static shared/block",
    "grid x block",
)


def _fitted_label(kernel: KernelResult, width: int) -> str:
    """The label, and a program's kernel below it, shortened to what a person wrote and to `width`."""
    label = elide_middle(kernel.label, width)
    if kernel.nvtx is not None and kernel.kernel != kernel.label:
        return f"{label}\n  {elide_middle(_library_mark(kernel) + short_kernel(kernel.kernel), width - 2)}"
    return label + (f"\n  {_library_mark(kernel)}".rstrip() if kernel.library else "")


LOCAL_LABEL_MIN = 20  # characters of a kernel's name kept where names are shortened to show local memory
MUST_SHOW_LOCAL = ("duration", "exact excess wavefronts", "local ld / st")  # where a kernel has local traffic


def _label_for_local(
    kernels: list[KernelResult], rows: list[list[str]], width: int, present: list[Column], chosen: list[Column]
) -> int | None:
    """Where a kernel has local traffic and its column was left out to fit `width`, the width of the kernel
    column (at least LOCAL_LABEL_MIN) at which it fits beside duration and exact excess wavefronts; None
    where it was kept, no kernel has local traffic, or names would have to be shorter."""
    keys = [column.key for column in present]
    if (
        "local ld / st" not in keys
        or any(c.key == "local ld / st" for c in chosen)
        or not any(map(_has_local, kernels))
    ):
        return None
    widths = _widths(rows, present)
    room = width - 4 - sum(widths[keys.index(key)] + 3 for key in MUST_SHOW_LOCAL if key in keys)
    return room if LOCAL_LABEL_MIN <= room < widths[0] else None


def _has_local(kernel: KernelResult) -> bool:
    """Whether the kernel loads or stores local memory (bytes, or instructions where it has no bytes)."""
    executions = _local_executions(kernel)
    return any(executions or ()) or any(kernel.value(key) for key in ("local_ld_bytes", "local_st_bytes"))


def _columns_that_fit(rows: list[list[str]], width: int, columns: list[Column]) -> list[Column]:
    """The columns of FIT_ORDER among `columns`, in their order, that fit `width` with the kernel column whole."""
    widths = _widths(rows, columns)
    used = widths[0] + 3 + 1  # the kernel column, its padding and borders
    chosen = {"kernel"}
    for name in FIT_ORDER[1:]:
        index = next((i for i, column in enumerate(columns) if column.key == name), None)
        if index is not None and used + widths[index] + 3 <= width:
            used += widths[index] + 3
            chosen.add(name)
    return [column for column in columns if column.key in chosen]


def _widths(rows: list[list[str]], columns: list[Column]) -> list[int]:
    def widest(texts: list[str]) -> int:
        return max((cell_len(line) for text in texts for line in text.split("\n")), default=0)

    return [widest([column.header] + [row[index] for row in rows]) for index, column in enumerate(columns)]


def _narrowest_table(rows: list[list[str]], columns: list[Column] | None = None) -> int:
    """The width under which a figure would be cut: every numeric column whole, the kernel column
    at its minimum, one space of padding a side, and the borders."""
    columns = columns or list(COLUMNS)
    widths = _widths(rows, columns)
    label_width = min(widths[0], LABEL_MIN_WIDTH) if rows else 0
    return label_width + sum(widths[1:]) + 2 * len(columns) + len(columns) + 1


def _title(results: RunResults, named: str | None = None) -> str:
    """The file the user named (not the report a results.json was made from), GPU and cc."""
    info = results.info
    where = ", ".join(p for p in (info.gpu_name, info.compute_capability and f"cc {info.compute_capability}") if p)
    return f"{named or info.source or 'results'}" + (f" ({where})" if where else "")


def notes(kernels: list[KernelResult], columns: list[Column] | None = None) -> list[str]:
    """One line per distinct (column, reason) of a missing metric, naming the kernels when not all."""
    seen: dict[tuple[str, str], dict[str, None]] = {}  # the labels of each, in order, each once
    for kernel in kernels:
        for column in columns or COLUMNS:
            for key in column.keys:
                if key in ("local_ld_bytes", "local_st_bytes") and _local_executions(kernel) is not None:
                    continue  # the instructions executed stand in, with their note
                if kernel.value(key) is None and CELLS[column.key](kernel) == NA:
                    seen.setdefault((column.key, kernel.missing_reason(key) or "missing"), {})[kernel.label] = None
    lines = []
    for (title, reason), labels in seen.items():
        which = "" if len(labels) == len(kernels) else f" ({', '.join(labels)})"
        lines.append(f"{title}: {NA} — {reason}{which}")
    shown = {column.key for column in columns or COLUMNS}  # a note for a column left out would explain nothing
    none_of = [
        key for key, kind in KIND_COLUMNS.items() if key in shown and any(_kind_ways(k, kind) == "-" for k in kernels)
    ]
    if "shared ld n-way" in shown:
        dashes = {_loads_dash(k): None for k in kernels if _ways(k) == "-"}
        if NO_SUCH_ACCESS in dashes:
            del dashes[NO_SUCH_ACCESS]
            none_of.insert(0, "shared ld n-way")
        fallbacks = {
            shared_figures.kind_n_way(k, SharedKind.LOADS).note: None for k in kernels if FALLBACK_MARK in _ways(k)
        }
        lines += [f"shared ld n-way: - — {reason}" for reason in dashes]
        lines += [f"shared ld n-way: {FALLBACK_MARK} {reason}" for reason in fallbacks]
    if none_of:
        lines.append(f"{', '.join(none_of)}: - — {NO_SUCH_ACCESS}")
    if "local ld / st" in shown and any(_local_executions(k) is not None for k in kernels):
        lines.append(f"local ld / st:{EXECUTIONS_UNIT} — {EXECUTIONS_NOTE}")
    if "exact excess wavefronts" in shown and any(FALLBACK_MARK in _excess(k) for k in kernels):
        lines.append(f"exact excess wavefronts: {FALLBACK_MARK} per instruction of {shared_figures.FALLBACK}")
    return lines


# --- machine-readable output ---------------------------------------------------------------------


def _metrics_json(kernel: KernelResult) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, unit in _UNITS:
        value = kernel.value(key)
        if value is None:
            out[key] = {"value": None, "unit": unit, "reason": kernel.missing_reason(key)}
        else:
            out[key] = {"value": value, "unit": unit}
    return out


_UNITS = tuple((key, metric.unit) for key, metric in CATALOGUE.items())


def to_json(results: RunResults, kernels: list[KernelResult]) -> dict[str, Any]:
    return {
        "info": asdict(results.info),
        "kernels": [
            {
                **k.identity(),
                "library": k.library.name if k.library else None,  # whose kernel: null for the user's own
                "range_runs": k.range_runs,  # runs of its memlens.range (--launches first); null: unknown
                "metrics": _metrics_json(k),
            }
            for k in kernels
        ],
    }


def csv_header() -> list[str]:
    """Identity columns (results.IDENTITY), then every catalogue metric as "key (unit)"."""
    return [*IDENTITY, *(metric.column for metric in CATALOGUE.values())]


def write_csv(kernels: list[KernelResult], stream: Any) -> None:
    """One row a kernel; a missing metric is an empty cell (--json says why)."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(csv_header())
    for k in kernels:
        values = [_csv_number(k.value(key)) for key in CATALOGUE]
        identity = ["" if value is None else value for value in k.identity().values()]
        writer.writerow([*identity, *values])


def _csv_number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if value.is_integer() else repr(value)
