"""Gate a run with a rules file: exit 0 when every check passes (warnings allowed), 1 when one fails.

RUN is a run directory, results.json, .ncu-rep or ncu CSV, or the JSON of `memlens check --json`.
Relative rules (`max_regression`) compare with --baseline FILE (`memlens baseline save`); without
one they are skipped and say so. --baseline-dir FOLDER picks FOLDER/<gpu>.json for the run's GPU
model (e.g. kernels/baselines/nvidia_h200.json); no file for it is a usage error (exit 2). A baseline
from another GPU model is refused unless --allow-mismatch. --junit, --summary (GitHub Markdown) and
--json are written even when the gate fails, so CI can publish them; two of them on one file are
refused before any is written (exit 2), FOLDER/ writes gate.xml, gate.md or gate.json into FOLDER, and
`-` prints that document on standard output instead of the table. --sarif FILE writes the failed and
warning checks as SARIF 2.1.0 (a line rule's at its line), --format github prints them as GitHub
workflow commands instead of the table; --format json, md, junit or sarif prints that document instead
of the table, as `--json -`, `--summary -`, `--junit -` or `--sarif -` do."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from memlens.commands.ci_outputs import SARIF_NAME, add_ci_arguments, check_stdout, with_root
from memlens.errors import GateFailed
from memlens.gate.baseline import baseline_for, compatibility, load_baseline
from memlens.gate.evaluate import GateResult, evaluate, read_measurements
from memlens.gate.rules import format_help, load_rules
from memlens.io.files import Output, resolve_outputs, write_output
from memlens.model.run_layout import input_files, resolve_run
from memlens.output import render_text, renderer

# the file each output gets in a folder named with a trailing / (`--junit build/`)
JUNIT_NAME, SUMMARY_NAME, JSON_NAME = "gate.xml", "gate.md", "gate.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # the format's example keeps its lines
    parser.epilog = format_help()
    parser.add_argument("source", metavar="RUN", help="run directory, results.json, .ncu-rep, ncu CSV or check JSON")
    parser.add_argument("--rules", required=True, type=Path, help="rules file (TOML; its format is below)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--baseline", type=Path, help="baseline JSON for max_regression rules")
    which.add_argument(
        "--baseline-dir",
        type=Path,
        metavar="FOLDER",
        help="pick FOLDER/<gpu model>.json for the run's GPU, e.g. kernels/baselines",
    )
    parser.add_argument(
        "--allow-mismatch", action="store_true", help="compare with a baseline from another GPU model or target anyway"
    )
    parser.add_argument(
        "--junit",
        metavar="FILE",
        help=f"write JUnit XML, one testcase per check ({JUNIT_NAME} in a FOLDER/; - prints it instead of the table)",
    )
    parser.add_argument(
        "--summary",
        metavar="FILE",
        help=f"write a GitHub-flavoured Markdown summary ({SUMMARY_NAME} in a FOLDER/; -: stdout)",
    )
    parser.add_argument(
        "--json", metavar="FILE", help=f"write the verdicts as JSON ({JSON_NAME} in a FOLDER/; -: stdout)"
    )
    add_ci_arguments(parser, "gate", ("table", "github", "json", "md", "junit", "sarif"))


def run(args: argparse.Namespace) -> int:
    if args.format != "table":  # two of the files on standard output: resolve_outputs says so
        check_stdout(args, [(f"--{name} -", getattr(args, name) == "-") for name in ("junit", "summary", "json")])
    rules = load_rules(args.rules)
    measurements = read_measurements(args.source, lines=rules.needs_lines)
    notes: list[str] = []
    baseline = None
    path = args.baseline
    if args.baseline_dir is not None:
        path = baseline_for(args.baseline_dir, measurements.environment)
        notes.append(f"baseline {path} (for {measurements.environment.gpu_name})")
    if path is not None:
        baseline = load_baseline(path)
        notes += compatibility(baseline, measurements, args.allow_mismatch)
    result = with_root("gate", evaluate(rules, measurements, baseline, notes), args)
    inputs = [*input_files(resolve_run(Path(args.source))), args.rules, args.baseline]
    written = write_outputs(result, args.junit, args.summary, args.json, inputs, args.sarif)
    if args.format != "table":  # --format json: as --json -
        renderer(args.format, "gate")(result, sys.stdout)
    elif not any(output.kind == "stdout" for output in written):
        show(result)  # with `--json -` (or --junit, --summary), that document is standard output
    if not result.passed:
        raise GateFailed(f"gate {result.summary()}")
    return 0


def write_outputs(
    result: GateResult,
    junit: str | Path | None,
    summary: str | Path | None,
    json_path: str | Path | None,
    inputs: Sequence[Path | None] = (),
    sarif: str | Path | None = None,
) -> list[Output]:
    """Each file asked for, what was written; a write error is OutputError (exit 2), never a gate
    failure (exit 1). Two of them on one file are refused before any is written."""
    outputs = resolve_outputs(
        [
            ("--junit", junit, JUNIT_NAME),
            ("--summary", summary, SUMMARY_NAME),
            ("--json", json_path, JSON_NAME),
            ("--sarif", sarif, SARIF_NAME),
        ]
    )
    written = []
    for output, fmt in zip(outputs, ("junit", "md", "json", "sarif"), strict=True):
        if output is not None:
            written.append(write_output(output, render_text(fmt, "gate", result), inputs))
    return written


def show(result: GateResult) -> None:
    renderer("table", "gate")(result, sys.stdout)
