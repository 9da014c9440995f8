"""Lay the checkout out as the package it installs as, for tools that read files rather than import.

pyproject's package-dir makes `profiling/` the package `memlens`, `reports/` `memlens.reports` and
`kernels/` `memlens.kernels`; only an install knows that. mypy and import-linter look for `memlens`
on a path, so `python tools/package_tree.py build/lint` writes build/lint/memlens/...: real folders
(import-linter's walk does not enter linked folders) holding one symlink per .py file, each to the
checkout's own file, so the tools read (and report) the files as they are, and an editor that opens
a reported path edits the checkout. The tree is made anew each time: files added or removed show.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent


def package_dirs(pyproject: Path) -> dict[str, Path]:
    """Each package's folder in the checkout (pyproject's [tool.setuptools.package-dir])."""
    mapping = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    return {package: REPO / folder for package, folder in mapping.items()}


def lay_out(into: Path) -> int:
    """Make `into` hold the installed package's tree of .py links; the number of files linked."""
    shutil.rmtree(into, ignore_errors=True)
    linked = 0
    for package, folder in package_dirs(REPO / "pyproject.toml").items():
        for source in sorted(folder.rglob("*.py")):
            if "__pycache__" in source.parts:
                continue
            link = into.joinpath(*package.split("."), source.relative_to(folder))
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(source, link.parent))
            linked += 1
    return linked


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/package_tree.py FOLDER", file=sys.stderr)
        return 2
    lay_out(Path(argv[0]).absolute())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
