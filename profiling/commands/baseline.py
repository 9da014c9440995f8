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
import sys
from pathlib import Path

from memlens.errors import InputError
from memlens.gate.baseline import from_measurements, load_baseline, save_baseline
from memlens.gate.evaluate import read_measurements
from memlens.io.units import plural
from memlens.model.run_layout import input_files, resolve_run
from memlens.output import renderer
from memlens.output.command_tables import BaselineView


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    save = actions.add_parser("save", help="write a baseline from a run")
    save.add_argument("source", metavar="RUN", help="run directory, results.json, .ncu-rep, ncu CSV or check JSON")
    save.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="baseline JSON to write; FOLDER/ for FOLDER/<gpu model>.json; - for stdout",
    )
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
    renderer("table", "baseline")(BaselineView(args.file, load_baseline(args.file)), sys.stdout)
    return 0
