"""Where a suite is: the directory or .py file named, else ./kernels, else the built-in suite; found and
checked without importing anything, nor the suite contract (suite.py, which imports NumPy): a suite run
builds ncu's command with it, and the suite is imported once ncu has started (tests/benchmarks/start_time.py).
"""

from __future__ import annotations

from pathlib import Path

from memlens.errors import ConfigError
from memlens.io.files import missing_reason


def default_suite_path() -> Path:
    """./kernels if it exists, else the built-in suite: inside the installed package
    (memlens/kernels), or beside this folder in a source checkout."""
    here = Path("kernels")
    if here.is_dir():
        return here
    package = Path(__file__).resolve().parent
    installed = package / "kernels"
    return installed if installed.is_dir() else package.parent / "kernels"


def suite_root(path: str | Path | None = None) -> Path:
    """The suite's directory or .py file, checked without importing anything."""
    root = Path(path) if path is not None else default_suite_path()
    if not root.exists():
        raise ConfigError(f"suite {root}: {missing_reason(root)}")
    if not (root.is_dir() or (root.is_file() and root.suffix == ".py")):
        raise ConfigError(f"suite {root} is neither a directory nor a .py file")
    return root
