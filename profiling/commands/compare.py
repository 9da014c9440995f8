"""Compare two builds, kernel by kernel and source line by source line: which line got better or worse.

BASE and HEAD are each a run directory, results.json or .ncu-rep. Kernels are matched by label; each
kernel's figures are shown with their change (as `memlens report BASE HEAD` compares them). Its source
lines are matched across edits by file and code text, so a line moved by a line inserted above it is
the same line (the code of a report recorded with ncu --import-source yes, else of the files on disk;
where there is no text of each build's own, lines are matched by number and a note says so). A figure
that varies between runs (a duration, a bandwidth) is better or worse only beyond its noise band, else
"same (within noise: ±X%)": the two runs' `memlens bench` p10-p90 where both run directories have a
bench.json, else a stated floor (3%, and at least 300 ns of the kernel's duration: model/noise.py);
counts are compared exactly. Each line is new, gone, worse (a figure grew), better or same, with its
code and both figures: excess
shared-memory wavefronts of its loads and of its stores, local loads and stores executed. The terminal
lists the changed lines (all with --all); --format json every line; --format md a table of the changed lines
for a pull-request comment, within GitHub's comment size (--json and --md: their older spellings). The exit
code is 0: gate lines with `memlens gate` (metric line_excess_wavefronts or line_local_accesses).
--sarif FILE writes the lines that got worse (or are new with conflicts or local accesses) as SARIF 2.1.0,
--format github as GitHub workflow commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memlens.commands.ci_outputs import add_ci_arguments, check_stdout, with_root, write_ci
from memlens.commands.report import bench_of
from memlens.commands.shared_arguments import chosen_format, older_spelling
from memlens.errors import ConfigError
from memlens.model.line_compare import KernelLineChanges, has_line_data
from memlens.model.nvtx_names import compile_filter, kernels_matching
from memlens.model.run_layout import input_files, resolve_run
from memlens.output import renderer
from memlens.output.findings import Compared, CompareFindings
from memlens.readers import read_with_instructions

if TYPE_CHECKING:
    from memlens.model.results import RunResults
    from memlens.reports.model import Comparison


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", metavar="BASE", help="run directory, results.json or .ncu-rep of the old build")
    parser.add_argument("head", metavar="HEAD", help="run directory, results.json or .ncu-rep of the new build")
    parser.add_argument("-k", dest="pattern", help="only kernels whose label or name matches this regex")
    parser.add_argument("--all", action="store_true", help="also the lines and figures that did not change")
    parser.add_argument(
        "--wide",
        action="store_true",
        help="one line each, however wide the terminal (default: wrapped between words to the terminal)",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help=older_spelling("json", "every kernel and every line as JSON"))
    out.add_argument("--md", action="store_true", help=older_spelling("md", "the changed lines' Markdown table"))
    add_ci_arguments(parser, "compare", ("table", "json", "md", "github", "sarif"))


def run(args: argparse.Namespace) -> int:
    compile_filter(args.pattern)  # a bad pattern is said before the runs are read
    check_stdout(args, [("--json", args.json), ("--md", args.md)])
    base, head = read_with_instructions(args.base), read_with_instructions(args.head)
    # jinja2 only for this command, and after reading (NumPy's threads would stop the reader forking its helpers)
    from memlens.reports.build import build_report

    wanted = {k.label for k in kernels_matching(base.kernels + head.kernels, args.pattern)}
    if not wanted:
        raise ConfigError(f"no kernel in {args.base} or {args.head} matches -k {args.pattern!r}")
    check_in_common(args, base, head, wanted)
    report = build_report([(args.base, base), (args.head, head)], [bench_of(args.base), bench_of(args.head)])
    no_lines = [name for name, run in ((args.base, base), (args.head, head)) if not has_line_data(run)]
    compared = [_compared(c) for c in report.comparisons if c.label in wanted and (c.lines or no_lines)]
    found = CompareFindings(
        args.base,
        args.head,
        tuple(compared),
        tuple(no_lines),
        show_all=args.all,
        wide=args.wide,
        notes=tuple(gpu_notes(base, head)),
    )
    found = with_root("compare", found, args)
    inputs = [*input_files(resolve_run(Path(args.base))), *input_files(resolve_run(Path(args.head)))]
    if write_ci("compare", found, args, inputs):
        return 0
    renderer(chosen_format(args, {"json": args.json, "md": args.md}), "compare")(found, sys.stdout)
    return 0


def check_in_common(args: argparse.Namespace, base: RunResults, head: RunResults, wanted: set[str]) -> None:
    """ConfigError naming each run's kernels where BASE and HEAD (of those -k selects) share none: two runs of
    different programs, not two builds of one."""
    labels = [
        [label for label in dict.fromkeys(k.label for k in run.kernels) if label in wanted] for run in (base, head)
    ]
    if set(labels[0]) & set(labels[1]):
        return

    def listed(found: list[str]) -> str:
        shown = ", ".join(found[:3]) + (f", and {len(found) - 3} more" if len(found) > 3 else "")
        return f"{len(found)} ({shown})" if found else "none"

    raise ConfigError(
        f"{args.base} and {args.head} have no kernel in common: BASE has {listed(labels[0])}, "
        f"HEAD has {listed(labels[1])}; compare two builds of one program"
    )


def gpu_notes(base: RunResults, head: RunResults) -> list[str]:
    """A note where BASE and HEAD ran on two GPU models."""
    models = [run.info.gpu_name for run in (base, head)]
    if None in models or models[0] == models[1]:
        return []
    return [
        f"BASE ran on {models[0]}, HEAD on {models[1]}: two GPU models, so a figure may differ by the GPU "
        "as well as by the code"
    ]


def _compared(comparison: Comparison) -> Compared:
    figures: list[dict[str, object]] = []
    for metric in comparison.metrics:
        old, new = metric.cells[0], metric.cells[1]
        figures.append(
            {
                "key": metric.key,
                "header": metric.header,
                "base": old.value,
                "head": new.value,
                "base_text": old.text,
                "head_text": new.text,
                "change": new.change_text or None,
                "direction": new.direction,
                "noise": None if new.noise is None else new.noise.to_json(),
            }
        )
    if comparison.lines:
        return Compared(comparison.label, comparison.statuses, tuple(figures), comparison.lines[0].changes)
    in_base, in_head = (status != "absent" for status in comparison.statuses[:2])  # lines not compared: none
    return Compared(
        comparison.label,
        comparison.statuses,
        tuple(figures),
        KernelLineChanges(comparison.label, (), in_base=in_base, in_head=in_head),
    )
