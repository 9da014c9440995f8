"""The options `gate`, `lines` and `compare` share for CI: `--sarif FILE` (SARIF 2.1.0 for code
scanning), `--format github` (workflow commands on the pull request's lines; `--format sarif` prints the
SARIF instead of the table) and `--source-root DIR` (what their paths are relative to). Both are output
formats (memlens/output/formats/sarif.py, github.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from memlens.commands.shared_arguments import DEFAULT_FORMAT, FORMAT_WORDS, add_format_argument
from memlens.errors import ConfigError
from memlens.io.files import STDOUT, Output, resolve_output, write_output
from memlens.output import render_text, renderer
from memlens.output.findings import findings, place, resolve_root

SARIF_NAME = "memlens.sarif"  # in a FOLDER/


def add_ci_arguments(
    parser: argparse.ArgumentParser, subject: str, formats: Sequence[str] = ("table", "github")
) -> None:
    """--sarif FILE, --format NAME (`formats`, the first the default) and --source-root DIR."""
    parser.add_argument(
        "--sarif",
        metavar="FILE",
        help=f"write the findings as SARIF 2.1.0 for code scanning ({SARIF_NAME} in a FOLDER/; -: standard output)",
    )
    add_format_argument(parser, formats, FORMAT_WORDS)
    parser.add_argument(
        "--source-root",
        metavar="DIR",
        help="paths of the findings relative to DIR, a folder (default: the git top level of the "
        "working directory; a folder of another machine where the findings' files lie under "
        "it); paths outside it stay absolute",
    )


def with_root(subject: str, found: Any, args: argparse.Namespace) -> Any:
    """The findings with the command line's --source-root: an existing folder, or one (of the machine that
    built the code) that a finding's file lies under; else one ConfigError line."""
    if args.source_root is None:
        return found
    named = args.source_root
    if not named:
        raise ConfigError("--source-root '': empty; name the folder the findings' paths are relative to")
    root = Path(named)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--source-root {named}: not a folder")
    rooted = replace(found, source_root=root)
    if not root.exists():
        resolved = resolve_root(root)
        placed = (place(finding.file, resolved) for finding in findings(subject, rooted))
        if not any(where is not None and where.inside for where in placed):
            raise ConfigError(f"--source-root {named}: no such folder, and no finding's file lies under it")
    return rooted


def check_stdout(args: argparse.Namespace, others: Iterable[tuple[str, bool]] = ()) -> None:
    """Refuse two documents on standard output (`--sarif -` beside --format github, --json, --md; --json
    beside --format md). An older flag beside the --format it spells (`--json --format json`) is one."""
    on_stdout = [name for name, used in others if used]
    if args.format != DEFAULT_FORMAT and f"--{args.format}" not in on_stdout:
        on_stdout.append(f"--format {args.format}")
    if getattr(args, "sarif", None) == STDOUT:
        on_stdout.append("--sarif -")
    if len(on_stdout) > 1:
        raise ConfigError(f"{' and '.join(on_stdout)} would both write standard output; write one to a file")


def sarif_output(args: argparse.Namespace) -> Output | None:
    return None if args.sarif is None else resolve_output(args.sarif, SARIF_NAME)


def write_ci(subject: str, found: Any, args: argparse.Namespace, inputs: Iterable[str | Path | None]) -> bool:
    """The SARIF file and the workflow commands asked for; whether either took standard output."""
    stdout = False
    output = sarif_output(args)
    if output is not None:
        stdout = write_output(output, render_text("sarif", subject, found), inputs).kind == "stdout"
    if args.format in ("github", "sarif"):  # --format sarif: as --sarif -
        renderer(args.format, subject)(found, sys.stdout)
        stdout = True
    return stdout
