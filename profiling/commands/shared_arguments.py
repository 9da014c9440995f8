"""Options several commands share: which suite, which variants, which problem sizes, where they run
(`--gpus`, `--cluster`); how a command's output is chosen.

One convention for choosing an output: `--format NAME` picks what a command prints on standard output
(`table`, the terminal's, unless named; `memlens report` writes a file, `-o -` prints it). An option
named after a format that takes a FILE (`--sarif FILE`; gate's `--json`, `--junit`, `--summary FILE`;
check's `--json FILE`) writes that document to FILE besides, `-` standard output instead of the table
(`gate --format json` is `gate --json -`, `check --format json` is `check --json -`).
The flags `--json`, `--md` and `--csv` of `metrics`, `lines`, `compare` and `banks` are the older
spellings of `--format json|md|csv`, kept."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memlens.errors import ConfigError

if TYPE_CHECKING:
    from memlens.collect.gpus import Gpu

Outcome = TypeVar("Outcome")


def add_suite_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite", nargs="?", help="suite directory or .py file (default: ./kernels)")
    parser.add_argument("-k", dest="pattern", help="only variants whose family/variant matches this regex")


def add_size_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="[FAMILY.]NAME=N",
        help="override a problem size: n=1024 in every family with an n, matmul.n=1024 in one",
    )
    parser.add_argument("--small", action="store_true", help="use each family's small test sizes")
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="FAMILY.NAME=V1,V2,...",
        help="run a family at each of these values of one size, in this one run (one per family): "
        "transpose.rows=1024,4096; each value's kernels are labelled variant@NAME=VALUE",
    )


def skipped_lines(outcomes: Iterable[Any]) -> list[str]:
    """One line a family whose variants were skipped (its GPU requirement), from profile outcomes or
    bench failures (each with family, variant, status, message)."""
    from memlens.suite import SKIPPED  # here, not above: the suite module imports NumPy, which parsing needs not

    by_family: dict[str, list[Any]] = {}
    for outcome in outcomes:
        if outcome.status == SKIPPED:
            by_family.setdefault(outcome.family, []).append(outcome)
    return [
        f"{family}: {len(items)} variant{'s' if len(items) > 1 else ''} skipped: {items[0].message}"
        for family, items in by_family.items()
    ]


def chosen_place(args: argparse.Namespace, what: str, alone: str | None = None) -> tuple[Gpu, ...] | None:
    """`--gpus` or `--cluster` (one of them), checked before anything starts (exit 2): the GPUs --gpus names,
    None without it. `what` is what they share out; `alone`, where given, refuses both (why, in words)."""
    from memlens.collect.gpus import chosen_gpus

    if args.cluster is not None and args.gpus is not None:
        raise ConfigError(
            f"--gpus and --cluster both share the {what} out: give one (--cluster local uses this host's GPUs)"
        )
    if alone is not None and (args.cluster is not None or args.gpus is not None):
        raise ConfigError(alone)
    return chosen_gpus(args.gpus)


def run_in_place(
    cluster: str | None,
    gpus: tuple[Gpu, ...] | None,
    here: Callable[[], Outcome],
    on_gpus: Callable[[tuple[Gpu, ...]], Outcome],
    on_cluster: Callable[[str], Outcome],
) -> Outcome:
    """The run where chosen_place says: on the cluster, over this host's GPUs, or here on one GPU."""
    if cluster is not None:
        return on_cluster(cluster)
    if gpus is None:
        return here()
    return on_gpus(gpus)


DEFAULT_FORMAT = "table"
# what each --format NAME prints, in --help
FORMAT_WORDS = {
    "table": "the terminal's text (the default)",
    "json": "JSON",
    "csv": "CSV, one row a kernel",
    "md": "GitHub-flavoured Markdown",
    "junit": "JUnit XML, one testcase a check",
    "github": "GitHub Actions workflow commands, an annotation a finding on its line",
    "sarif": "SARIF 2.1.0, as --sarif -",
}


def add_format_argument(parser: argparse.ArgumentParser, formats: Sequence[str], words: dict[str, str]) -> None:
    """`--format NAME`, one of `formats` (the first the default), each said in --help in `words`."""
    said = "; ".join(f"{name}: {words[name]}" for name in formats)
    parser.add_argument(
        "--format",
        choices=formats,
        default=formats[0],
        metavar="NAME",
        help=f"what to print on standard output ({said})",
    )


def older_spelling(name: str, what: str) -> str:
    """The --help of a flag kept for --format NAME (`--json`)."""
    return f"the older spelling of --format {name}: {what}"


def chosen_format(args: argparse.Namespace, older: dict[str, bool]) -> str:
    """The format asked for: --format NAME, else the one an older flag spells (`--json`: json); ConfigError
    where the two name different formats."""
    used = [name for name, given in older.items() if given]
    if args.format != DEFAULT_FORMAT and any(name != args.format for name in used):
        raise ConfigError(f"--{used[0]} is --format {used[0]}: give one of --{used[0]} and --format {args.format}")
    return used[0] if used else args.format
