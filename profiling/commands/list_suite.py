"""List a suite's families and variants, with what each demonstrates, what memlens expects, the exact
excess wavefronts each declares on paper (at the default size), and the GPU a family needs."""

from __future__ import annotations

import argparse

from rich.table import Table

from memlens.commands.common import add_suite_arguments
from memlens.io.terminal import console
from memlens.suite import Variant, select_variants


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)


def run(args: argparse.Namespace) -> int:
    selection = select_variants(args.suite, args.pattern)
    suite = selection.suite
    table = Table(title=f"suite {suite.path}", show_lines=False)
    for column in ("family", "variant", "demonstrates", "expect", "on paper"):
        table.add_column(column, overflow="fold")
    for variant in selection.variants:
        name = variant.name + (" (baseline)" if variant is variant.family.baseline else "")
        table.add_row(variant.family.name, name, variant.demonstrates, variant.expect.describe(), _paper(variant))
    console().print(table)
    families = {v.family.name: v.family for v in selection.variants}
    for family in families.values():
        if family.min_compute_capability:
            console().print(f"{family.name}: {family.requirement()}; profile and bench skip it on an older GPU",
                            markup=False, highlight=False, soft_wrap=True)  # fmt: skip
    return 0


def _paper(variant: Variant) -> str:
    """The exact excess wavefronts the variant declares on paper, at the family's default size."""
    try:
        figure = variant.expect.at_size(variant.family.size()).excess_wavefronts
    except Exception as exc:  # noqa: BLE001 - the suite's function: said in the cell, the list goes on
        return f"not computed: {type(exc).__name__}: {exc}"
    return "-" if figure is None else f"{figure:,} excess wavefronts"
