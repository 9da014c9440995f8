"""Save a run's figures as a baseline for `memlens gate --baseline`, or show one.

    memlens baseline save RUN -o FILE    RUN: run directory, results.json, .ncu-rep, ncu CSV or check JSON
    memlens baseline show FILE

`-o FOLDER/` writes FOLDER/<gpu model>.json (e.g. nvidia_h200.json), the file `memlens gate
--baseline-dir FOLDER` picks for a run on that GPU (a static check's: <arch>.json); `-o -` prints it.
The baseline records the GPU, compute capability, driver and ncu versions (or the static target and
compiler) and every figure of every kernel, with its source lines and their code where the run has
per-instruction values (for line rules: `line_excess_wavefronts`, `line_local_accesses`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table
from rich.text import Text

from memlens.errors import InputError
from memlens.gate.baseline import from_measurements, load_baseline, save_baseline
from memlens.gate.evaluate import read_measurements
from memlens.gate.rules import ALL_METRICS
from memlens.io.terminal import table_console
from memlens.io.units import format_value, plural
from memlens.model.kernel_names import NAME_WIDTH, elide_middle
from memlens.model.run_layout import input_files, resolve_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    save = actions.add_parser("save", help="write a baseline from a run")
    save.add_argument("source", metavar="RUN", help="run directory, results.json, .ncu-rep, ncu CSV or check JSON")
    save.add_argument("-o", "--output", required=True, metavar="FILE",
                      help="baseline JSON to write; FOLDER/ for FOLDER/<gpu model>.json; - for stdout")  # fmt: skip
    show = actions.add_parser("show", help="print what a baseline holds")
    show.add_argument("file", type=Path, metavar="FILE")


def run(args: argparse.Namespace) -> int:
    if args.action == "save":
        measurements = read_measurements(args.source, lines=True)
        if not measurements.subjects:
            raise InputError(f"{args.source}: no kernels to save as a baseline")
        baseline = from_measurements(measurements)
        written = save_baseline(baseline, args.output, inputs=input_files(resolve_run(Path(args.source))))
        where = baseline.environment.gpu_name or baseline.environment.arch or "unknown GPU"
        if written.kind == "file":  # not where the baseline itself went: standard output, a FIFO...
            kernels = plural(len(baseline.values), "kernel")
            with_lines = f", {len(baseline.lines)} with their source lines" if baseline.lines else ""
            print(f"memlens: baseline of {kernels}{with_lines} ({where}) written to {written.named}")
        return 0
    baseline = load_baseline(args.file)
    environment = ", ".join(f"{k} {v}" for k, v in vars(baseline.environment).items() if v)
    table = Table(title=f"baseline {args.file}: {baseline.measurements}, {environment or 'no environment'}")
    for column in ("kernel", "figures"):
        table.add_column(column, overflow="fold")
    for key, values in baseline.values.items():
        figures = ", ".join(f"{m}={_figure(m, v)}" for m, v in values.items())
        table.add_row(Text(elide_middle(key, NAME_WIDTH)), Text(figures))
    out = table_console()
    out.print(table)
    return 0


def _figure(key: str, value: float) -> str:
    """A figure with its unit ("0.554 ms", "4,224 B"); a count in full."""
    metric = ALL_METRICS.get(key)
    return format_value(value, metric.unit if metric else "")
