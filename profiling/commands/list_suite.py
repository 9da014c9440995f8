"""List a suite's families and variants, with what each demonstrates, what memlens expects, the exact
excess wavefronts each declares on paper (at the default size), and the GPU a family needs."""

from __future__ import annotations

import argparse
import textwrap

from rich.cells import cell_len
from rich.table import Table

from memlens.commands.common import add_suite_arguments
from memlens.io.tables import longest_word
from memlens.io.terminal import table_console
from memlens.suite import Variant, select_variants

HEADERS = ("family", "variant", "demonstrates", "expect", "on paper")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)
    parser.add_argument("--wide", action="store_true",
                        help="the table however wide the terminal (default: one block a variant where the "
                             "table would break words)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    selection = select_variants(args.suite, args.pattern)
    suite = selection.suite
    rows = []
    for variant in selection.variants:
        name = variant.name + (" (baseline)" if variant is variant.family.baseline else "")
        rows.append((variant.family.name, name, variant.demonstrates, variant.expect.describe(), _paper(variant)))
    out = table_console()
    # the table where each column can be as wide as its longest word (lines break between words)
    widest = [longest_word([header, *(row[index] for row in rows)]) for index, header in enumerate(HEADERS)]
    if args.wide or sum(widest) + 3 * len(HEADERS) + 1 <= out.width:
        if args.wide:  # every cell on one line
            longest = [max(cell_len(cell) for cell in (header, *(row[i] for row in rows))) for i, header in
                       enumerate(HEADERS)]  # fmt: skip
            out.width = max(out.width, sum(longest) + 3 * len(HEADERS) + 1)
        table = Table(title=f"suite {suite.path}", show_lines=False)
        for header, width in zip(HEADERS, widest, strict=True):
            table.add_column(header, overflow="fold", min_width=width)
        for row in rows:
            table.add_row(*row)
        out.print(table)
    else:  # one block a variant: its name, then each field on lines of its own, wrapped between words
        out.print(f"suite {suite.path}")
        for family, name, *fields in rows:
            out.print(f"\n{family} / {name}")
            for header, text in zip(HEADERS[2:], fields, strict=True):
                out.print(textwrap.fill(f"{header}: {text}", out.width, initial_indent="  ", subsequent_indent="  ",
                                        break_long_words=False, break_on_hyphens=False), soft_wrap=True)  # fmt: skip
    needing = {v.family.name: v.family for v in selection.variants}
    for needs in needing.values():
        if needs.min_compute_capability:
            out.print(f"{needs.name}: {needs.requirement()}; profile and bench skip it on an older GPU")
    return 0


def _paper(variant: Variant) -> str:
    """The exact excess wavefronts the variant declares on paper, at the family's default size."""
    try:
        figure = variant.expect.at_size(variant.family.size()).excess_wavefronts
    except Exception as exc:  # noqa: BLE001 - the suite's function: said in the cell, the list goes on
        return f"not computed: {type(exc).__name__}: {exc}"
    return "-" if figure is None else f"{figure:,} excess wavefronts"
