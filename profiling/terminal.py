"""Terminal output: rich tables and progress on a terminal, plain lines elsewhere (CI, pipes)."""

from __future__ import annotations

import os
import sys

from rich.console import Console


def interactive() -> bool:
    """True on a terminal outside CI: live progress is shown only then."""
    return sys.stderr.isatty() and not os.environ.get("CI")


def console(stderr: bool = False) -> Console:
    # markup and highlighting off: kernel names like `f<[a]>` must print as they are.
    return Console(stderr=stderr, markup=False, highlight=False, soft_wrap=False)
