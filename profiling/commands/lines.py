"""The hottest source lines of each kernel: where its bank conflicts and local-memory accesses are.

PATH is a run directory, its results.json or any .ncu-rep, also one made by plain ncu with the
per-instruction metrics (see the README). Each line shows file:line and its code, and each kind of
instruction on it in words (shared loads and stores, ldmatrix, stmatrix, cp.async, shared atomics,
tensor-core operand reads, local loads and stores, TMA transfers) with its exact excess wavefronts and
n-way (wavefronts over the ideal of the very accesses, so a conflict-free 16-byte access reads 1-way)
or its warp-level executions. In a run directory that holds a banks.json (`memlens profile --banks`), a
conflicting line shows the bank map of its instruction's recorded warp and the fix proved on the recorded
addresses (`bank_map` of the line in --json), the instruction matched to ncu's by kernel and function-relative
PC (theory/bank_matching.py). Without line info, each SASS instruction stands for its line. A library's
kernel (cuBLAS, cuDNN, CUTLASS, PyTorch's ATen, CUB, ...) keeps its figures, is named beside it and
told what the user controls, never to compile with line info. Each finding's time at stake takes the kernel's
DRAM bytes at the GPU's peak, or, where the run directory holds a bench.json of the same GPU (`memlens bench
--into RUN`), at its measured copy bandwidth (docs/time-at-stake.md). --sarif FILE
writes every conflicting, local-memory and uncoalesced line (not only the --top shown) as SARIF 2.1.0,
--format github as GitHub workflow commands instead of the text. --format json (or --json, its older
spelling) gives every kernel's lines as JSON, --format sarif the SARIF on standard output."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from memlens.bench.results import bench_beside, copy_ceiling
from memlens.commands.ci_outputs import add_ci_arguments, check_stdout, with_root, write_ci
from memlens.commands.shared_arguments import chosen_format, older_spelling
from memlens.errors import ConfigError
from memlens.model.kernel_lines import kernel_lines
from memlens.model.nvtx_names import kernels_matching
from memlens.model.results import KernelResult, RunResults
from memlens.model.run_layout import input_files, resolve_run, run_directory
from memlens.model.time_at_stake import DramCeiling
from memlens.output import renderer
from memlens.output.findings import LinesFindings
from memlens.readers import read_lines
from memlens.theory.bank_analysis import analyse_run
from memlens.theory.bank_matching import MatchedInstruction, match_instructions

DEFAULT_TOP = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="run directory, results.json or .ncu-rep")
    parser.add_argument("-k", dest="pattern", help="only kernels whose label or name matches this regex")
    parser.add_argument(
        "--top",
        type=int,
        default=DEFAULT_TOP,
        metavar="N",
        help=f"lines shown per kernel (default {DEFAULT_TOP}; 0 for all)",
    )
    parser.add_argument("--json", action="store_true", help=older_spelling("json", "every kernel's lines as JSON"))
    add_ci_arguments(parser, "lines", ("table", "json", "github", "sarif"))


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise ConfigError(f"--top must be 0 or more, not {args.top}")
    check_stdout(args, [("--json", args.json)])
    results = read_lines(args.path)
    kernels = kernels_matching(results.kernels, args.pattern)
    if not kernels:
        raise ConfigError(f"no kernel in {args.path} matches -k {args.pattern!r}")
    found = LinesFindings(
        tuple(kernel_lines(results, kernels, ceiling=measured_ceiling(Path(args.path), results))),
        source=args.path,
        top=args.top,
        width=terminal_width(),
        bank_maps=bank_maps(Path(args.path), kernels),
    )
    found = with_root("lines", found, args)
    if write_ci("lines", found, args, input_files(resolve_run(Path(args.path)))):
        return 0
    renderer(chosen_format(args, {"json": args.json}), "lines")(found, sys.stdout)
    return 0


def terminal_width() -> int | None:
    """The terminal's width, or COLUMNS where set; None in a pipe or a file (lines printed whole)."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def measured_ceiling(path: Path, results: RunResults) -> DramCeiling | None:
    """The DRAM ceiling of the run directory's bench.json (`memlens bench --into RUN`): its GPU's measured copy,
    which the time at stake takes DRAM bytes at; None (the peak) where it has none, a damaged one, or one of
    another GPU."""
    return copy_ceiling(bench_beside(run_directory(path)), results)


def bank_maps(path: Path, kernels: list[KernelResult]) -> tuple[MatchedInstruction, ...]:
    """The instructions of the run directory's banks.json (`memlens profile --banks`) matched to the
    profile's; none where it holds none. A damaged banks.json is an InputError naming it."""
    analysis = analyse_run(run_directory(path))
    return () if analysis is None else match_instructions(kernels, analysis)
