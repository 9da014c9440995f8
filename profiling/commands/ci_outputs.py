"""The options `gate`, `lines` and `compare` share for CI: `--sarif FILE` (SARIF 2.1.0 for code
scanning), `--format github` (workflow commands on the pull request's lines) and `--source-root DIR`
(what their paths are relative to). Both are output formats (memlens/output/formats/sarif.py, github.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from memlens.errors import ConfigError
from memlens.io.files import STDOUT, Output, resolve_output, write_output
from memlens.output import render_text, renderer

SARIF_NAME = "memlens.sarif"  # in a FOLDER/


def add_ci_arguments(parser: argparse.ArgumentParser, subject: str) -> None:
    parser.add_argument("--sarif", metavar="FILE", help=f"write the findings as SARIF 2.1.0 for code scanning "
                        f"({SARIF_NAME} in a FOLDER/; -: standard output)")  # fmt: skip
    parser.add_argument("--format", choices=("table", "github"), default="table",
                        help="github: GitHub Actions workflow commands (an annotation a finding on its line) "
                             "instead of the table")  # fmt: skip
    parser.add_argument("--source-root", type=Path, metavar="DIR",
                        help="paths of the findings relative to DIR (default: the git top level of the working "
                             "directory); paths outside it stay absolute")  # fmt: skip


def with_root(found: Any, args: argparse.Namespace) -> Any:
    """The findings with the command line's --source-root."""
    return replace(found, source_root=args.source_root) if args.source_root is not None else found


def check_stdout(args: argparse.Namespace, others: Iterable[tuple[str, bool]] = ()) -> None:
    """Refuse two documents on standard output (`--sarif -` beside --format github, --json, --md)."""
    on_stdout = [name for name, used in others if used]
    if args.format == "github":
        on_stdout.append("--format github")
    if args.sarif == STDOUT:
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
    if args.format == "github":
        renderer("github", subject)(found, sys.stdout)
        stdout = True
    return stdout
