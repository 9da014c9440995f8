"""Gate a run with a rules file: exit 0 when every check passes (warnings allowed), 1 when one fails.

RUN is a run directory, results.json, .ncu-rep or ncu CSV, or the JSON of `memlens check --json`.
Relative rules (`max_regression`) compare with --baseline FILE (`memlens baseline save`); without
one they are skipped and say so. --baseline-dir FOLDER picks FOLDER/<gpu>.json for the run's GPU
model (e.g. kernels/baselines/nvidia_h200.json); no file for it is a usage error (exit 2). A baseline
from another GPU model is refused unless --allow-mismatch. --junit, --summary (GitHub Markdown) and
--json are written even when the gate fails, so CI can publish them."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..baseline import baseline_for, compatibility, load_baseline
from ..errors import GateFailed
from ..fileio import input_files, write_output
from ..gate import GateResult, evaluate, read_measurements, to_json_text, to_junit, to_markdown, to_table
from ..rules import format_help, load_rules
from ..run_dir import resolve_run
from ..terminal import table_console


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # the format's example keeps its lines
    parser.epilog = format_help()
    parser.add_argument("source", metavar="RUN", help="run directory, results.json, .ncu-rep, ncu CSV or check JSON")
    parser.add_argument("--rules", required=True, type=Path, help="rules file (TOML; its format is below)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--baseline", type=Path, help="baseline JSON for max_regression rules")
    which.add_argument("--baseline-dir", type=Path, metavar="FOLDER",
                       help="pick FOLDER/<gpu model>.json for the run's GPU, e.g. kernels/baselines")  # fmt: skip
    parser.add_argument("--allow-mismatch", action="store_true",
                        help="compare with a baseline from another GPU model or target anyway")  # fmt: skip
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML, one testcase per check")
    parser.add_argument("--summary", type=Path, metavar="FILE", help="write a GitHub-flavoured Markdown summary")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the verdicts as JSON")


def run(args: argparse.Namespace) -> int:
    rules = load_rules(args.rules)
    measurements = read_measurements(args.source)
    notes: list[str] = []
    baseline = None
    path = args.baseline
    if args.baseline_dir is not None:
        path = baseline_for(args.baseline_dir, measurements.environment)
        notes.append(f"baseline {path} (for {measurements.environment.gpu_name})")
    if path is not None:
        baseline = load_baseline(path)
        notes += compatibility(baseline, measurements, args.allow_mismatch)
    result = evaluate(rules, measurements, baseline, notes)
    inputs = [*input_files(resolve_run(Path(args.source))), args.rules, args.baseline]
    write_outputs(result, args.junit, args.summary, args.json, inputs)
    show(result)
    if not result.passed:
        raise GateFailed(f"gate {result.summary()}")
    return 0


def write_outputs(result: GateResult, junit: Path | None, summary: Path | None, json_path: Path | None,
                  inputs: Sequence[Path | None] = ()) -> None:  # fmt: skip
    """Each file asked for; a write error is OutputError (exit 2), never a gate failure (exit 1)."""
    for path, render in ((junit, to_junit), (summary, to_markdown), (json_path, to_json_text)):
        if path is not None:
            write_output(path, render(result), inputs)


def show(result: GateResult) -> None:
    out = table_console()
    for note in result.notes:
        out.print(f"note: {note}")
    out.print(to_table(result))
