"""Check what profiling needs: ncu and its version, the GPU, permission to read counters, the
Python packages. Says what to fix; exit code 3 when something required is missing."""

from __future__ import annotations

import argparse
import sys

from memlens.doctor import run_checks
from memlens.errors import EXIT_PROFILER
from memlens.output import renderer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ncu", help="path of the ncu executable")
    parser.add_argument("--probe", action="store_true", help="also profile a tiny kernel to prove counters can be read")


def run(args: argparse.Namespace) -> int:
    checks = run_checks(args.ncu, args.probe)
    renderer("table", "doctor")(checks, sys.stdout)
    return EXIT_PROFILER if any(c.required and not c.ok for c in checks) else 0
