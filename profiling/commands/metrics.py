"""Print per-kernel metrics from a run directory (default: the latest run), its results.json, or any
.ncu-rep or ncu CSV, including ones made with plain ncu and no memlens ranges.

A metric that is missing prints "n/a"; why it is missing is said once below the table.
--format json and --format csv (older spellings: --json, --csv) print every catalogue metric of every
kernel, with its unit. Kernels with
local-memory traffic get its cause below the table, once a label (and as "local_memory_cause" in
--json): register spill, an array indexed at run time or one too large for registers where the run
directory holds `memlens check --into RUN`'s check.json, else "cause unknown". Variants that declare
their exact excess wavefronts on paper (Expect(excess_wavefronts=...)) get "as on paper" below the
table, or both figures where they differ (--json: "paper_excess_wavefronts" and "as_on_paper")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlens.commands.shared_arguments import FORMAT_WORDS, add_format_argument, chosen_format, older_spelling
from memlens.errors import ConfigError
from memlens.model.nvtx_names import kernels_matching
from memlens.model.results import KernelResult, RunResults
from memlens.model.run_layout import LATEST_RUN
from memlens.output import renderer
from memlens.output.kernel_metrics import KernelMetrics
from memlens.readers import read_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", help=f"run directory, results.json, .ncu-rep or ncu CSV (default: {LATEST_RUN})"
    )
    parser.add_argument("-k", dest="pattern", help="only kernels whose label or name matches this regex")
    add_format_argument(parser, ("table", "json", "csv"), FORMAT_WORDS)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help=older_spelling("json", "every metric of every kernel"))
    output.add_argument("--csv", action="store_true", help=older_spelling("csv", "every metric of every kernel"))
    parser.add_argument(
        "--wide",
        action="store_true",
        help="every column of the table, however wide the terminal (default: the columns that fit)",
    )


def run(args: argparse.Namespace) -> int:
    output = chosen_format(args, {"json": args.json, "csv": args.csv})
    results = _read(args.path)
    kernels = _select(results, args.pattern, args.path or str(LATEST_RUN))
    from memlens.reports.verdicts import local_memory_causes  # the report's wording, imported once needed

    causes = local_memory_causes(Path(args.path or LATEST_RUN), kernels)
    render(results, kernels, output, causes, title=args.path or str(LATEST_RUN), wide=args.wide)
    return 0


def render(
    results: RunResults,
    kernels: list[KernelResult],
    output: str = "table",
    local: dict[int, str] | None = None,
    title: str | None = None,
    wide: bool = False,
) -> None:
    """Print `kernels` of `results` on stdout in the output format `output` ("table", "json", "csv"; see
    memlens.output and output/kernel_metrics.KernelMetrics for the rest)."""
    renderer(output, "metrics")(KernelMetrics(results, kernels, local or {}, title, wide), sys.stdout)


def _read(path: str | None) -> RunResults:
    return read_report(path if path is not None else LATEST_RUN)  # runs/latest missing: "no run yet"


def _select(results: RunResults, pattern: str | None, named: str | None = None) -> list[KernelResult]:
    """The kernels `pattern` matches; ConfigError naming `named` (the path the user gave) when none does."""
    kernels = kernels_matching(results.kernels, pattern)
    if not kernels and results.kernels:
        raise ConfigError(f"no kernel in {named or results.info.source or 'the report'} matches -k {pattern!r}")
    return kernels
