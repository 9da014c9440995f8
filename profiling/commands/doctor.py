"""Check what profiling needs: ncu and its version, the GPU, permission to read counters, the
Python packages. Says what to fix; exit code 3 when something required is missing."""

from __future__ import annotations

import argparse

from rich.table import Table

from memlens.doctor import run_checks
from memlens.errors import EXIT_PROFILER
from memlens.io.tables import longest_word
from memlens.io.terminal import console


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ncu", help="path of the ncu executable")
    parser.add_argument("--probe", action="store_true", help="also profile a tiny kernel to prove counters can be read")


def run(args: argparse.Namespace) -> int:
    checks = run_checks(args.ncu, args.probe)
    table = Table(title="memlens doctor", expand=True)
    table.add_column("check", overflow="fold")
    table.add_column("status", overflow="fold")
    # detail holds paths and versions that must read whole; the fix column's advice wraps well
    table.add_column("detail", overflow="fold", ratio=3)
    # a fix such as `pip install 'memlens[cuda13]'` breaks between words, never inside one
    fix_width = longest_word([check.fix for check in checks])  # a ratio column's `width` is its minimum
    table.add_column("fix", overflow="fold", ratio=2, width=fix_width)
    for check in checks:
        status = "ok" if check.ok else ("MISSING" if check.required else "warning")
        table.add_row(check.name, status, check.detail, check.fix)
    console().print(table)
    return EXIT_PROFILER if any(c.required and not c.ok for c in checks) else 0
