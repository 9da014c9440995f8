"""Readers: a run directory, results.json, .ncu-rep or ncu CSV -> typed RunResults.

`read_report(path)` is the one entry point; it decides what the path is and raises InputError
(a one-line message naming the file) for anything it cannot read.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memlens.errors import InputError, MemlensError
from memlens.io.cuda_tools import find_nvdisasm
from memlens.io.files import missing_reason, note_input
from memlens.model.instruction_table import Placement
from memlens.model.results import RunResults, load_results
from memlens.model.run_layout import LATEST, NCU_REPORT, NO_RUN_YET, RESULTS, no_run_yet, resolve_run, runs_in
from memlens.readers.ncu_csv import parse_csv, read_csv
from memlens.readers.ncu_rep import REPORT_MAGIC, read_ncu_rep

__all__ = ["read_report", "read_with_instructions", "read_lines", "parse_csv", "find_report", "report_kind"]

REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz")
CSV_SUFFIXES = (".csv", ".txt", ".log")
SNIFF_BYTES = 64 * 1024
NO_INSTRUCTIONS = (
    "no per-instruction values: the report lacks memory_l1_wavefronts_shared per instruction "
    "(profile without --fast, or run ncu with --metrics memory_l1_wavefronts_shared,"
    "memory_l1_wavefronts_shared_ideal,inst_executed or --section SourceCounters)"
)


def read_report(path: str | Path, instructions: bool = False) -> RunResults:
    """Kernels and run information from a run directory (its results.json, else its one
    .ncu-rep or ncu CSV), a results.json, a .ncu-rep, or an ncu CSV export. `instructions`: read
    a .ncu-rep's per-instruction records too (results.json holds them where its run did)."""
    return _read_file(find_report(Path(path)), instructions)


def read_with_instructions(path: str | Path) -> RunResults:
    """`read_report` with each kernel's per-instruction records: from results.json where it holds
    them, else from its run's profile.ncu-rep beside it (results.json of an older memlens; launch by
    launch, results.json's figures kept), else from the .ncu-rep itself. The profile.ncu-rep is read
    again too where results.json has inlined library code on the nearest line and the binary's inline
    chains would place it on its caller's (_placed_again). A CSV, a report without them, or a
    profile.ncu-rep that cannot be read gives kernels without instructions."""
    report = find_report(Path(path))
    results = _read_file(report, instructions=True)
    raw = report.with_name(NCU_REPORT)
    if report.name != RESULTS or not raw.is_file():
        return results
    if any(k.instructions for k in results.kernels) and not _placed_again(results):
        return results
    try:
        measured = {k.launch_id: k for k in read_ncu_rep(note_input(raw), instructions=True).kernels}
    except MemlensError:
        return results  # its figures are in results.json: the lines are what is missing
    kernels = tuple(
        replace(k, instructions=measured[k.launch_id].instructions)
        if k.launch_id in measured and measured[k.launch_id].kernel == k.kernel
        else k
        for k in results.kernels
    )
    return replace(results, kernels=kernels)


def _placed_again(results: RunResults) -> bool:
    """Whether the run's profile.ncu-rep, read again, would put inlined library code on its callers' lines
    where results.json has it on the nearest line: a results.json of a memlens that did not read the
    binary's inline chains, or one written where nvdisasm was missing, which is found now."""
    nearest = {r.placed_by for k in results.kernels for r in k.instructions if r.inlined_from}
    return None in nearest or (Placement.NO_NVDISASM in nearest and find_nvdisasm() is not None)


def read_lines(path: str | Path) -> RunResults:
    """`read_with_instructions` where the lines are what is asked for (`memlens lines`): InputError
    for a CSV, which cannot carry them, or a report that holds none."""
    report = find_report(Path(path))
    if report_kind(report) == "csv":
        raise InputError(f"{report}: a CSV cannot carry per-instruction data; give the .ncu-rep or the run directory")
    results = read_with_instructions(report)
    if not any(k.instructions for k in results.kernels):
        raise InputError(f"{report}: {NO_INSTRUCTIONS}")
    return results


def find_report(path: Path) -> Path:
    """The file `read_report` reads for `path`: the path itself, or the report in a run directory."""
    if path.is_dir():
        return _in_directory(resolve_run(path))
    if not path.exists():
        raise InputError(NO_RUN_YET if no_run_yet(path) else f"{path}: {missing_reason(path)}")
    if not path.is_file():
        raise InputError(f"{path}: not a regular file")
    return path


def _in_directory(directory: Path) -> Path:
    results = directory / RESULTS
    if results.is_file():
        return results
    for suffixes in (REPORT_SUFFIXES, (".csv",)):
        found = sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(suffixes))
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(p.name for p in found)
            raise InputError(f"{directory}: no {RESULTS} and several reports ({names}): name one")
    raise InputError(f"{directory}: {_nothing_here(directory)}")


def _nothing_here(directory: Path) -> str:
    """Why a directory holds nothing to read, and what would work."""
    runs = runs_in(directory)
    if runs:
        link = directory / LATEST
        broken = f"its {LATEST} link points at no run" if link.is_symlink() or link.exists() else f"no {LATEST} link"
        return f"a folder of {len(runs)} runs with {broken}: name one, e.g. {runs[-1]} (or its {RESULTS})"
    return (
        f"no {RESULTS}, .ncu-rep or ncu CSV in this directory: give a run directory "
        f"(runs/<time>-<pid>, or runs for its {LATEST} run), a results.json, a .ncu-rep or an ncu CSV"
    )


def report_kind(path: Path) -> str:
    """ "json", "csv" or "ncu-rep": what `read_report` reads `path` (a file) as."""
    return _kind(path)


def _read_file(path: Path, instructions: bool = False) -> RunResults:
    note_input(path)
    kind = _kind(path)
    if kind == "json":
        results = load_results(path)
    elif kind == "csv":
        results = read_csv(path)
    else:
        results = read_ncu_rep(path, instructions)
    try:
        return replace(results, written_at=path.stat().st_mtime)
    except OSError:
        return results


def _kind(path: Path) -> str:
    """ "json", "csv" or "ncu-rep": by suffix, else by a look at the first bytes."""
    name = path.name.lower()
    if name.endswith(".json"):
        return "json"
    if name.endswith(REPORT_SUFFIXES):
        return "ncu-rep"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    try:
        with path.open("rb") as stream:
            head = stream.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if not head.strip():
        raise InputError(f"{path}: empty file")
    if head.lstrip().startswith(b"{"):
        return "json"
    return "ncu-rep" if head.startswith(REPORT_MAGIC) or b"\x00" in head else "csv"
