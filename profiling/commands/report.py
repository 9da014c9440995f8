"""Render a report of one or more runs: per family, each variant's duration and speedup over the
baseline, DRAM bandwidth, bank conflicts (exact, and the over-counting hardware counter beside
it), local-memory traffic, the declared expectation against what was measured, and a verdict in
words. Several runs add a comparison of every kernel across them, the first run the reference.

RUN is a run directory, a results.json, a .ncu-rep or an ncu CSV. Where the run directory (the
folder of a file given) holds a bench.json from `memlens bench --into RUN`, the family tables add
its median times, bandwidths and % of the measured copy bandwidth, with a chart per family, and
the header the copy bandwidth; a damaged bench.json is an error. Where it holds a check.json from
`memlens check --into RUN`, verdicts name the cause of local-memory traffic (register spill, an
array indexed at run time, an array too large for registers). The report is written
atomically: to RUN/report.<ext> for one run directory (beside the file for a file), to
./memlens-report.<ext> for several; `-o -` prints it. HTML is one self-contained file;
`--format md` suits a CI job summary; `--format json` is the same content for machines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlens.reports import FORMATS

from ..bench_results import BENCH_FILE, BenchResults, find_bench
from ..errors import InputError
from ..fileio import write_text_atomic
from ..readers import find_report, read_report
from ..run_dir import report_file
from ..static_check import find_static

STDOUT = "-"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory, results.json, .ncu-rep or ncu CSV")
    parser.add_argument("-o", "--output", help="file to write (default: RUN/report.<ext>, or ./memlens-report.<ext>)")
    parser.add_argument("--format", choices=FORMATS, default="html", help="html (default), md or json")


def run(args: argparse.Namespace) -> int:
    from memlens.reports.render import build_report, render  # jinja2 and matplotlib only for this command

    runs = [(path, read_report(path, instructions=True)) for path in args.runs]
    benches = [bench_of(path) for path in args.runs]
    statics = [find_static(run_directory(path)) for path in args.runs]
    text = render(build_report(runs, benches, statics), args.format)
    if args.output == STDOUT:
        sys.stdout.write(text)
        return 0
    target = Path(args.output) if args.output else default_output(args.runs, args.format)
    write_report(target, text, inputs=[find_report(Path(path)) for path in args.runs])
    print(target)
    return 0


def run_directory(path: str | Path) -> Path:
    """The run directory of a RUN argument: the directory itself, or the folder of a file
    (a results.json, or a profiler report saved in its run directory)."""
    path = Path(path)
    return path if path.is_dir() else path.parent


def bench_of(path: str | Path) -> tuple[str, BenchResults] | None:
    """(the bench.json read, its results) of RUN's run directory; None where it has none.
    InputError naming the file where it is damaged."""
    directory = run_directory(path)
    bench = find_bench(directory)
    return None if bench is None else (str(directory / BENCH_FILE), bench)


def default_output(runs: list[str], fmt: str) -> Path:
    if len(runs) == 1:
        path = Path(runs[0])
        return report_file(path if path.is_dir() else path.parent, fmt)
    return Path(f"memlens-report.{fmt}")


def write_report(target: Path, text: str, inputs: list[Path]) -> None:
    """Write atomically (temp file + rename): a reader sees the old file or the whole new one.
    Never over a file the report was read from (a results.json, a raw profiler report)."""
    if target.is_dir():
        raise InputError(f"{target}: is a directory; name a file with -o")
    if any(target.resolve() == path.resolve() for path in inputs):
        raise InputError(f"{target}: is an input of this report; name another file with -o")
    try:
        write_text_atomic(target, text)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None
