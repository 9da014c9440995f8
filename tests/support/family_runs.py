"""The GPU tier's `memlens profile` in a process of its own (clocks as MEMLENS_CLOCK_CONTROL says, none by
default), and its run of one built-in family: `memlens profile kernels -k '^FAMILY/' --small`, its kernels by
label."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memlens.model.results import KernelResult
from memlens.readers import read_report
from tests.conftest import REPO


def memlens_env() -> dict[str, str]:
    """The environment as it is now, with this checkout's memlens first, whatever is installed."""
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def memlens_profile(out: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """`memlens profile --out OUT ... ARGS` under real ncu, ended by memlens after `timeout` seconds (and by the
    test 100 seconds later)."""
    clock = os.environ.get("MEMLENS_CLOCK_CONTROL", "none")
    argv = ["profile", "--out", str(out), "--clock-control", clock, "--timeout", str(timeout), *args]
    return subprocess.run(
        [sys.executable, "-m", "memlens", *argv],
        capture_output=True,
        text=True,
        env=memlens_env(),
        timeout=timeout + 100,
    )


def profile_family_small(out: Path, family: str) -> dict[str, KernelResult]:
    done = memlens_profile(out, str(REPO / "kernels"), "-k", f"^{family}/", "--small")
    assert done.returncode == 0, done.stderr
    return {k.label: k for k in read_report((out / "latest").resolve() / "results.json").kernels}
