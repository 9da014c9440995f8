"""Print per-kernel metrics from a run directory (default: the latest run), its results.json, or any
.ncu-rep or ncu CSV, including ones made with plain ncu and no memlens ranges.

A metric that is missing prints "n/a"; why it is missing is said once below the table.
--json and --csv print every catalogue metric of every kernel, with its unit. Kernels with
local-memory traffic get its cause below the table, once a label (and as "local_memory_cause" in
--json): register spill, an array indexed at run time or one too large for registers where the run
directory holds `memlens check --into RUN`'s check.json, else "cause unknown". Variants that declare
their exact excess wavefronts on paper (Expect(excess_wavefronts=...)) get "as on paper" below the
table, or both figures where they differ (--json: "paper_excess_wavefronts" and "as_on_paper")."""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.cells import cell_len  # a few ms; the rest of rich is imported where a table is drawn

from .. import paper
from ..catalogue import CATALOGUE
from ..errors import ConfigError
from ..kernel_names import NAME_WIDTH, elide_middle
from ..launch_sampling import sampling_lines
from ..nvtx_names import compile_filter
from ..readers import read_report
from ..results import KernelResult, RunResults
from ..run_dir import LATEST_RUN
from ..tables import LABEL_MIN_WIDTH, TableColumn, fast_table, print_drawn, rich_table, write_indented
from ..terminal import console, table_console
from ..units import format_bytes, format_count, format_duration, format_percent

NA = "n/a"
PIPE_WIDTH = 240  # rich's 80 columns would fold the table when stdout is a file or a pipe
# On a terminal, tables up to this many kernels are drawn by rich itself; larger ones, and any table
# written to a file or a pipe, by the fast printer (the same text: rich's column widths, box and
# wrapping, without rich's cost per cell, seconds for 1,000 kernels).
RICH_MAX_ROWS = 200


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
    kernels = _select(results, args.pattern, args.path or str(LATEST_RUN))
    output = "json" if args.json else "csv" if args.csv else "table"
    causes = local_memory_causes(Path(args.path or LATEST_RUN), kernels)
    render(results, kernels, output, causes, title=args.path or str(LATEST_RUN))
    return 0


def render(results: RunResults, kernels: list[KernelResult], output: str = "table",
           local: dict[int, str] | None = None, title: str | None = None) -> None:  # fmt: skip
    """Print `kernels` of `results` on stdout as "table", "json" or "csv"; `local` gives the cause
    of local memory of kernels (by position in `kernels`) that have local traffic; the table's title
    names `title` (the path the user gave), else the run's source."""
    local = local or {}
    on_paper = paper.checks(results)
    if output == "json":
        data = to_json(results, kernels)
        for index, text in local.items():
            data["kernels"][index]["local_memory_cause"] = text
        for entry, kernel in zip(data["kernels"], kernels, strict=True):
            found = on_paper.get(kernel.label)
            entry["paper_excess_wavefronts"] = found.paper if found else None
            entry["as_on_paper"] = found.as_on_paper if found else None
        write_indented(data, sys.stdout)
    elif output == "csv":
        write_csv(kernels, sys.stdout)
    elif output == "table":
        print_table(results, kernels, title=title)
        for line in dict.fromkeys(f"{kernels[i].label}: local memory: {text}" for i, text in local.items()):
            console().print(line, markup=False, highlight=False, soft_wrap=True)
        for line in paper.lines(on_paper, (k.label for k in kernels)):
            console().print(line, markup=False, highlight=False, soft_wrap=True)
    else:
        raise ValueError(f"unknown output {output!r}")


def local_memory_causes(path: Path, kernels: list[KernelResult]) -> dict[int, str]:
    """The cause of local memory of each kernel with local traffic, from the static check's figures
    where the run directory of `path` has a check.json (see `memlens check --into`)."""
    from memlens.reports.verdicts import local_memory, local_memory_cause_text  # the report's wording, one home

    from ..static_check import find_static

    static = find_static(path if path.is_dir() else path.parent)
    found = {}
    for index, kernel in enumerate(kernels):
        figures = static.for_kernel(kernel.label, kernel.kernel) if static is not None else ()
        if local_memory(kernel, figures)[0]:
            found[index] = local_memory_cause_text(figures)
    return found


def _read(path: str | None) -> RunResults:
    return read_report(path if path is not None else LATEST_RUN)  # runs/latest missing: "no run yet"


def _select(results: RunResults, pattern: str | None, named: str | None = None) -> list[KernelResult]:
    """The kernels `pattern` matches; ConfigError naming `named` (the path the user gave) when none does."""
    regex = compile_filter(pattern)
    kernels = [k for k in results.kernels if regex is None or regex.search(k.label) or regex.search(k.kernel)]
    if not kernels and results.kernels:
        raise ConfigError(f"no kernel in {named or results.info.source or 'the report'} matches -k {pattern!r}")
    return kernels


# --- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str  # names the column in notes: "exact excess wavefronts: n/a — ..."
    header: str  # the table's header, on two lines where long
    keys: tuple[str, ...]  # catalogue keys the cell shows; a missing one prints n/a
    render: Callable[[KernelResult], str]


def _value(kernel: KernelResult, key: str) -> float | None:
    return kernel.value(key)


def _show(kernel: KernelResult, key: str, form: Callable[[float], str]) -> str:
    value = _value(kernel, key)
    return NA if value is None else form(value)


def _gb_per_s(value: float) -> str:
    return f"{value / 1e9:,.1f}"


def _ways(kernel: KernelResult) -> str:
    """Wavefronts over the ideal of the loads themselves where the report has per-instruction
    values (a conflict-free 16-byte load reads 1.00), else the hardware's wavefronts per load."""
    if _value(kernel, "shared_ld_instructions") == 0:
        return "-"  # no shared-memory loads: the ratio has no meaning
    if _value(kernel, "exact_shared_ld_ways") is not None:
        return _show(kernel, "exact_shared_ld_ways", lambda v: f"{v:.2f}")
    return _show(kernel, "shared_ld_ways", lambda v: f"{v:.2f}")


def _excess(kernel: KernelResult) -> str:
    """The exact excess, and per instruction of the side(s) it comes from: "(31/ld)" only where
    the loads conflict (a .ncu-rep or results.json splits it; a CSV cannot)."""
    total = _show(kernel, "exact_excess_wavefronts", format_count)
    per_access = [
        f"{per_instruction:.3g}/{side}"
        for side in ("ld", "st")
        if _value(kernel, f"exact_excess_wavefronts_{side}")
        and (per_instruction := _value(kernel, f"excess_wavefronts_per_shared_{side}")) is not None
    ]
    return f"{total} ({', '.join(per_access)})" if per_access else total


def _local(kernel: KernelResult) -> str:
    loads = _show(kernel, "local_ld_bytes", format_bytes)
    stores = _show(kernel, "local_st_bytes", format_bytes)
    return f"{loads} / {stores}"


def _launch(kernel: KernelResult) -> str:
    return f"{_show(kernel, 'grid_size', format_count)} x {_show(kernel, 'block_size', format_count)}"


def _static_shared(kernel: KernelResult) -> str:
    return _show(kernel, "static_shared_per_block", format_bytes)


def _kernel_label(kernel: KernelResult) -> str:
    """The label; for a kernel a program's NVTX range labels, the kernel's name on the line below."""
    label = elide_middle(kernel.label, NAME_WIDTH)
    if kernel.nvtx is not None and kernel.kernel != kernel.label:
        return f"{label}\n  {elide_middle(kernel.kernel, NAME_WIDTH)}"
    return label


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


def print_table(
    results: RunResults, kernels: list[KernelResult], fast: bool | None = None, title: str | None = None
) -> None:
    """The title, one row a kernel and the notes. `fast` picks the printer (default: by the output
    and the number of kernels); both print the same text."""
    out = table_console(PIPE_WIDTH)
    if fast is None:
        fast = not out.is_terminal or len(kernels) > RICH_MAX_ROWS
    rows = [[column.render(kernel) for column in COLUMNS] for kernel in kernels]
    # never squeeze a figure: on a narrow terminal the table is wider than the screen, not truncated
    out.width = max(out.width, _narrowest_table(rows))
    out.print(_title(results, title))
    columns = [TableColumn(column.header, numeric=column.name != "kernel") for column in COLUMNS]
    text = fast_table(out, columns, rows) if fast else None
    if text is None:
        out.print(rich_table(columns, rows))
    else:
        print_drawn(out, text)  # every line already fits the width
    for line in notes(kernels):
        out.print(line)
    for line in sampling_lines(results.info.launches, results.info.warm_up, kernels):
        out.print(line)


def _narrowest_table(rows: list[list[str]]) -> int:
    """The width under which a figure would be cut: every numeric column whole, the kernel column
    at its minimum, one space of padding a side, and the borders."""
    def widest(texts: list[str]) -> int:
        return max((cell_len(line) for text in texts for line in text.split("\n")), default=0)

    label_width = min(widest([row[0] for row in rows]), LABEL_MIN_WIDTH)
    numeric = [widest([column.header] + [row[index] for row in rows]) for index, column in enumerate(COLUMNS)][1:]
    return label_width + sum(numeric) + 2 * len(COLUMNS) + len(COLUMNS) + 1


def _title(results: RunResults, named: str | None = None) -> str:
    """The file the user named (not the report a results.json was made from), GPU and cc."""
    info = results.info
    where = ", ".join(p for p in (info.gpu_name, info.compute_capability and f"cc {info.compute_capability}") if p)
    return f"{named or info.source or 'results'}" + (f" ({where})" if where else "")


def notes(kernels: list[KernelResult]) -> list[str]:
    """One line per distinct (column, reason) of a missing metric, naming the kernels when not all."""
    seen: dict[tuple[str, str], dict[str, None]] = {}  # the labels of each, in order, each once
    for kernel in kernels:
        for column in COLUMNS:
            for key in column.keys:
                if kernel.value(key) is None and not (key == "shared_ld_ways" and _ways(kernel) == "-"):
                    seen.setdefault((column.name, kernel.missing_reason(key) or "missing"), {})[kernel.label] = None
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
                "label": k.label,
                "kernel": k.kernel,
                "family": k.family,
                "variant": k.variant,
                "nvtx": k.nvtx,
                "launch_id": k.launch_id,
                "range_runs": k.range_runs,  # runs of its memlens.range (--launches first); null: unknown
                "metrics": _metrics_json(k),
            }
            for k in kernels
        ],
    }


CSV_IDENTITY = ("label", "kernel", "family", "variant", "launch_id")


def csv_header() -> list[str]:
    """Identity columns, then every catalogue metric as "key (unit)"."""
    return [*CSV_IDENTITY, *(f"{key} ({metric.unit})" for key, metric in CATALOGUE.items())]


def write_csv(kernels: list[KernelResult], stream: Any) -> None:
    """One row a kernel; a missing metric is an empty cell (--json says why)."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(csv_header())
    for k in kernels:
        values = [_csv_number(k.value(key)) for key in CATALOGUE]
        writer.writerow([k.label, k.kernel, k.family or "", k.variant or "", k.launch_id, *values])


def _csv_number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if value.is_integer() else repr(value)
