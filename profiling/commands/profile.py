"""Profile every selected variant of a suite in one process under one ncu invocation.

Clock control defaults to ncu's own (base: clocks locked to base, what most users want on
their own machine); set MEMLENS_CLOCK_CONTROL=none on machines whose clocks must be left alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..gpus import chosen_gpus
from ..ncu import CACHE_CONTROLS, CLOCK_CONTROLS
from ..profile_run import ProfileOptions, profile
from ..run_dir import DEFAULT_OUT, shell_command
from ..shards import profile_on_gpus
from ..terminal import Progress, interactive
from .common import add_size_arguments, add_suite_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"folder for run directories (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--clock-control", choices=CLOCK_CONTROLS, default=os.environ.get("MEMLENS_CLOCK_CONTROL", "base"),
        help="ncu clock control (default: base, or $MEMLENS_CLOCK_CONTROL)",
    )  # fmt: skip
    parser.add_argument(
        "--cache-control", choices=CACHE_CONTROLS, default="all", help="flush caches between passes (default: all)"
    )
    parser.add_argument("--fast", action="store_true", help="skip the instrumented pass: no exact bank-conflict count")
    parser.add_argument("--roofline", action="store_true",
                        help="also collect the FLOP counters and L1's global sectors (roofline, arithmetic intensity, "
                        "coalescing): 2 more replay passes a kernel on an H200")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before ncu is stopped (default 1800)")
    parser.add_argument("--ncu", help="path of the ncu executable (default: $MEMLENS_NCU or PATH)")
    parser.add_argument(
        "--gpus", metavar="all|0,1,...",
        help="share the variants out over these GPUs (nvidia-smi's indices), one ncu per GPU at once, "
             "into one run directory (default: the one GPU CUDA picks)",
    )  # fmt: skip
    add_size_arguments(parser)


def run(args: argparse.Namespace) -> int:
    options = ProfileOptions(
        suite=args.suite,
        pattern=args.pattern,
        out_dir=Path(args.out),
        clock_control=args.clock_control,
        cache_control=args.cache_control,
        fast=args.fast,
        roofline=args.roofline,
        timeout=args.timeout if args.timeout > 0 else None,
        ncu=args.ncu,
        sizes=tuple(args.size),
        small=args.small,
        command=shell_command(sys.argv[1:]),
    )
    gpus = chosen_gpus(args.gpus)
    with Progress(enabled=interactive()) as progress:
        if gpus is None:
            run_dir, results = profile(options, on_event=progress.update)
        else:
            run_dir, results = profile_on_gpus(options, gpus, on_event=progress.update)
    print(f"{len(results.kernels)} kernels from {len(results.outcomes)} variants profiled: {run_dir}")
    return 0
