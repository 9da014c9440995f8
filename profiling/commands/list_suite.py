"""List a suite's families and variants, with what each demonstrates, what memlens expects, the exact
excess wavefronts each declares on paper (at the default size), and the GPU a family needs."""

from __future__ import annotations

import argparse
import sys

from memlens.commands.shared_arguments import add_suite_arguments
from memlens.output import renderer
from memlens.output.command_tables import SuiteListing
from memlens.selection import select_variants
from memlens.suite import Variant


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)
    parser.add_argument(
        "--wide",
        action="store_true",
        help="the table however wide the terminal (default: one block a variant where the table would break words)",
    )


def run(args: argparse.Namespace) -> int:
    selection = select_variants(args.suite, args.pattern)
    suite = selection.suite
    rows = []
    for variant in selection.variants:
        name = variant.name + (" (baseline)" if variant is variant.family.baseline else "")
        rows.append((variant.family.name, name, variant.demonstrates, variant.expect.describe(), _paper(variant)))
    needing = {v.family.name: v.family for v in selection.variants}
    requirements = tuple(
        f"{needs.name}: {needs.requirement()}; profile and bench skip it on an older GPU"
        for needs in needing.values()
        if needs.min_compute_capability
    )
    listing = SuiteListing(str(suite.path), tuple(rows), requirements, wide=args.wide)
    renderer("table", "suite")(listing, sys.stdout)
    return 0


def _paper(variant: Variant) -> str:
    """The exact excess wavefronts the variant declares on paper, at the family's default size."""
    try:
        figure = variant.expect.at_size(variant.family.size()).excess_wavefronts
    except Exception as exc:  # noqa: BLE001 - the suite's function: said in the cell, the list goes on
        return f"not computed: {type(exc).__name__}: {exc}"
    return "-" if figure is None else f"{figure:,} excess wavefronts"
