"""Render a report of one or more runs: per family, each variant's duration and speedup over the
baseline, DRAM bandwidth, bank conflicts (exact, and the hardware counter of shared loads' and stores'
conflict cycles beside it), local-memory traffic, the declared expectation against what was measured, and a verdict in
words. Several runs add a comparison of every kernel across them, the first run the reference.

RUN is a run directory, a results.json, a .ncu-rep or an ncu CSV. Where a memlens run directory
(one with a results.json; the folder of a file given) holds a bench.json from `memlens bench
--into RUN`, the family tables add its median times, bandwidths and % of the measured copy
bandwidth, with a chart per family, and the header the copy bandwidth; a damaged bench.json is an
error. Where it holds a check.json from `memlens check --into RUN`, verdicts name the cause of
local-memory traffic (register spill, an array indexed at run time, an array too large for
registers). Where it holds a banks.json (`memlens profile --banks`), each hot line's conflicting
instructions that the trace recorded are drawn bank by bank beside the line, with the fix proved on
their addresses. The report is written atomically, never over an input: to RUN/report.<ext> for one
memlens run directory you may write (given as the directory or its results.json); for any other
single input to ./STEM.report.<ext> in the current directory, named after the input
(a/seed.ncu-rep -> ./seed.report.html), never into the data's folder; to ./memlens-report.<ext>
for several; `-o -` prints it, `-o FOLDER/` writes that name into FOLDER, and a device, FIFO or
/dev/stdout is written in place. HTML is one self-contained file; `--format md` suits a CI job
summary; `--format json` is the same content for machines."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memlens.bench.results import BENCH_FILE, BenchResults, find_bench
from memlens.io.files import write_output
from memlens.model.results import RunResults
from memlens.model.run_layout import RESULTS, input_files, report_file, run_directory
from memlens.output import format_names, render_text
from memlens.readers import read_with_instructions
from memlens.static.check import find_static
from memlens.theory.bank_analysis import BanksAnalysis, analyse_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory, results.json, .ncu-rep or ncu CSV")
    parser.add_argument(
        "-o",
        "--output",
        help="file to write, - for stdout, FOLDER/ for the default name in FOLDER "
        "(default: RUN/report.<ext> for a writable memlens run directory, else ./STEM.report.<ext> "
        "named after the input, or ./memlens-report.<ext> for several runs)",
    )
    parser.add_argument(
        "--format",
        choices=format_names("report"),
        default="html",
        help=f"{', '.join(format_names('report'))} (default: html)",
    )


def run(args: argparse.Namespace) -> int:
    runs = [(path, read_with_instructions(path)) for path in args.runs]
    # the report's modules only for this command, and after reading (jinja2 and matplotlib come with the
    # format that draws them): NumPy's threads would stop the reader forking its helpers (readers/reader_processes.py)
    from memlens.reports.bank_maps import with_bank_maps
    from memlens.reports.build import build_report

    benches = [bench_of(path) for path in args.runs]
    statics = [find_static(run_directory(path)) for path in args.runs]
    report = with_bank_maps(build_report(runs, benches, statics), [banks_of(path, results) for path, results in runs])
    text = render_text(args.format, "report", report)
    default = default_output(args.runs, args.format)
    # what it read is noted as read (io.files.note_input); a run directory's records besides
    inputs = [file for path in args.runs for file in input_files(run_directory(path))]
    written = write_output(args.output or default, text, inputs, default_name=default.name)
    if written.kind == "file":
        print(written.named)
    return 0


def is_memlens_run(directory: Path) -> bool:
    return (directory / RESULTS).is_file()


def bench_of(path: str | Path) -> tuple[str, BenchResults] | None:
    """(the bench.json read, its results) of RUN's memlens run directory; None where it has none,
    or where RUN is not in one (a bench.json beside a plain ncu file is not memlens's).
    InputError naming the file where it is damaged."""
    directory = run_directory(path)
    if not is_memlens_run(directory):
        return None
    bench = find_bench(directory)
    return None if bench is None else (str(directory / BENCH_FILE), bench)


def banks_of(path: str | Path, results: RunResults) -> tuple[RunResults, BanksAnalysis] | None:
    """RUN's results and its memlens run directory's banks.json analysed (`memlens profile --banks`), for the
    report's bank maps; None where it holds none. InputError naming the file where it is damaged."""
    directory = run_directory(path)
    analysis = analyse_run(directory) if is_memlens_run(directory) else None
    return None if analysis is None else (results, analysis)


def default_output(runs: list[str], fmt: str) -> Path:
    """RUN/report.<ext> for a memlens run directory this user may write; else a file in the
    current directory named after the input, so two inputs of one folder keep two reports."""
    if len(runs) != 1:
        return Path(f"memlens-report.{fmt}")
    path = Path(runs[0])
    directory = run_directory(path)
    own_run = path.is_dir() or path.name == RESULTS
    if own_run and is_memlens_run(directory) and os.access(directory, os.W_OK | os.X_OK):
        return report_file(directory, fmt)
    stem = directory.resolve().name if own_run else path.name
    for suffix in (".ncu-repz", ".ncu-rep", ".csv", ".json"):
        stem = stem.removesuffix(suffix)
    return Path(f"{stem or 'memlens'}.report.{fmt}")
