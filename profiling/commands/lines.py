"""The hottest source lines of each kernel: where its bank conflicts and local-memory accesses are.

PATH is a run directory, its results.json or any .ncu-rep, also one made by plain ncu with the
per-instruction metrics (see the README). Each line shows file:line and its code, the exact excess
shared-memory wavefronts of its loads and of its stores with their n-way (wavefronts over the ideal
of the very accesses, so a conflict-free 16-byte access reads 1-way) and the warp-level executions
of its local loads and stores. Without line info, each SASS instruction stands for its line."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len, set_cell_size

from ..errors import ConfigError, InputError
from ..kernel_names import ELLIPSIS, elide_middle, short_kernel
from ..nvtx_names import compile_filter
from ..readers import RESULTS_FILE, find_report, read_report, report_kind
from ..results import KernelResult, RunResults
from ..source_lines import LINE_INFO_HINT, LineRecord, SideFigures, SourceMap, has_line_info, roll_up
from ..units import format_count

DEFAULT_TOP = 5
NO_INSTRUCTIONS = (
    "no per-instruction values: the report lacks memory_l1_wavefronts_shared per instruction "
    "(profile without --fast, or run ncu with --metrics memory_l1_wavefronts_shared,"
    "memory_l1_wavefronts_shared_ideal,inst_executed or --section SourceCounters)"
)


@dataclass(frozen=True)
class KernelLines:
    """One kernel launch and its lines, hottest first."""

    kernel: KernelResult
    lines: tuple[LineRecord, ...]
    line_info: bool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="run directory, results.json or .ncu-rep")
    parser.add_argument("-k", dest="pattern", help="only kernels whose label or name matches this regex")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N",
                        help=f"lines shown per kernel (default {DEFAULT_TOP}; 0 for all)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="every kernel's lines as JSON")


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise ConfigError(f"--top must be 0 or more, not {args.top}")
    results = read_lines(Path(args.path))
    regex = compile_filter(args.pattern)
    kernels = [k for k in results.kernels if regex is None or regex.search(k.label) or regex.search(k.kernel)]
    if not kernels:
        raise ConfigError(f"no kernel in {args.path} matches -k {args.pattern!r}")
    found = kernel_lines(results, kernels)
    if args.json:
        print(json.dumps(to_json(found, args.top), indent=2))
    else:
        print("\n".join(render_text(found, args.top, terminal_width())))
    return 0


def read_lines(path: Path) -> RunResults:
    """The run at `path` with its kernels' instructions: from results.json where it holds them,
    else from the run's .ncu-rep. A CSV cannot carry them (InputError)."""
    report = find_report(path)
    kind = report_kind(report)
    if kind == "csv":
        raise InputError(f"{report}: a CSV cannot carry per-instruction data; give the .ncu-rep or the run directory")
    if kind == "ncu-rep":
        results = read_report(report, instructions=True)
    else:
        results = read_report(report)
        raw = report.with_name("profile.ncu-rep") if report.name == RESULTS_FILE else None
        if not any(k.instructions for k in results.kernels) and raw is not None and raw.is_file():
            measured = {k.launch_id: k for k in read_report(raw, instructions=True).kernels}
            kernels = tuple(measured.get(k.launch_id, k) for k in results.kernels)
            results = RunResults(results.info, kernels, results.outcomes, results.complete)
    if not any(k.instructions for k in results.kernels):
        raise InputError(f"{report}: {NO_INSTRUCTIONS}")
    return results


def kernel_lines(results: RunResults, kernels: list[KernelResult], root: Path | None = None) -> list[KernelLines]:
    """Each kernel's lines, with file names shown relative to `root` (default: the working
    directory) and CuPy's temporary copies mapped to the files the suite declared."""
    root = (root or Path.cwd()).resolve()
    declared = {(o.family, o.variant): o.sources for o in results.outcomes}
    found = []
    for kernel in kernels:
        sources = SourceMap(root, results.embedded_sources, declared.get((kernel.family, kernel.variant), ()),
                            results.written_at)
        lines = roll_up(kernel.instructions, sources, kernel.kernel)
        found.append(KernelLines(kernel, tuple(lines), has_line_info(kernel.instructions)))
    return found


# --- output ---------------------------------------------------------------------------------------


def describe(line: LineRecord) -> str:
    """The figures of a line in words: "32-way loads, 65,011,712 excess wavefronts; ..."."""
    parts = [_side("loads", line.shared_ld), _side("stores", line.shared_st)]
    if line.local_ld_executions:
        parts.append(f"local loads {format_count(line.local_ld_executions)} executions")
    if line.local_st_executions:
        parts.append(f"local stores {format_count(line.local_st_executions)} executions")
    return "; ".join(p for p in parts if p) or "no shared or local access"


def _side(name: str, figures: SideFigures) -> str:
    ways = figures.ways
    if ways is None:
        return ""
    if figures.excess == 0:
        return f"{name} conflict-free (1-way)"
    return f"{ways:.3g}-way {name}, {format_count(figures.excess)} excess wavefronts"


def _wrapped(text: str, width: int | None, indent: str) -> list[str]:
    if width is None:
        return [indent + text]
    return textwrap.wrap(text, max(20, width), initial_indent=indent, subsequent_indent=indent + "  ")


def stale_words(line: LineRecord) -> str:
    return (f"{line.file} changed after the report was written: its code is not shown (a memlens run keeps "
            "its sources; plain ncu: --import-source yes)")


def terminal_width() -> int | None:
    """The terminal's width, or COLUMNS where set; None in a pipe or a file (lines printed whole)."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _fit(text: str, width: int | None) -> str:
    if width is None or cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + ELLIPSIS


def render_text(found: list[KernelLines], top: int, width: int | None = None) -> list[str]:
    """The lines of each kernel in words; with `width` (a terminal's), no line longer than it: kernel
    names shortened to what a person wrote (the full name is in --json), long code cut with "…"."""
    out: list[str] = []
    for entry in found:
        kernel = entry.kernel
        name = short_kernel(kernel.kernel)  # the full name is in --json
        launch = f"  [launch {kernel.launch_id}]"
        title = kernel.label if kernel.label in (kernel.kernel, name) else f"{kernel.label}  ({name})"
        if width is not None and cell_len(title + launch) > width:
            title = elide_middle(title, max(8, width - cell_len(launch)))
        out.append(_fit(title + launch, width))
        shown = entry.lines if top == 0 else entry.lines[:top]
        if not shown:
            out.append("  no shared- or local-memory instructions")
        for line in shown:
            temporary = "  (a temporary file of the compiler, gone now)" if line.temporary else ""
            out.append(_fit(f"  {line.location}  {describe(line)}  [{' '.join(line.opcodes)}]{temporary}", width))
            if line.source:
                out.append(_fit(f"      {line.source}", width))
            elif line.stale:
                out.extend(_wrapped(f"({stale_words(line)})", width, "      "))
        if len(entry.lines) > len(shown):
            out.append(f"  ... {len(entry.lines) - len(shown)} more lines (--top 0 shows all)")
        if entry.lines and not entry.line_info:
            out.extend(_wrapped(f"hint: {LINE_INFO_HINT}", width, "  "))
        out.append("")
    return out[:-1] if out else out


def to_json(found: list[KernelLines], top: int) -> dict[str, object]:
    return {
        "kernels": [
            {
                "label": entry.kernel.label, "kernel": entry.kernel.kernel, "family": entry.kernel.family,
                "variant": entry.kernel.variant, "launch_id": entry.kernel.launch_id,
                "line_info": entry.line_info, "hint": None if entry.line_info else LINE_INFO_HINT,
                "lines": [line.to_json() for line in (entry.lines if top == 0 else entry.lines[:top])],
            }  # fmt: skip
            for entry in found
        ]
    }
