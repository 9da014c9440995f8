"""List a suite's families and variants, with what each demonstrates and what memlens expects."""

from __future__ import annotations

import argparse

from rich.table import Table

from ..suite import select_variants
from ..terminal import console
from .common import add_suite_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)


def run(args: argparse.Namespace) -> int:
    selection = select_variants(args.suite, args.pattern)
    suite = selection.suite
    table = Table(title=f"suite {suite.path}", show_lines=False)
    for column in ("family", "variant", "demonstrates", "expect"):
        table.add_column(column, overflow="fold")
    for variant in selection.variants:
        name = variant.name + (" (baseline)" if variant is variant.family.baseline else "")
        table.add_row(variant.family.name, name, variant.demonstrates, variant.expect.describe())
    console().print(table)
    return 0
