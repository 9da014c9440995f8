"""The GPU tier's run of one built-in family: `memlens profile kernels -k '^FAMILY/' --small` in a process of
its own (clocks as MEMLENS_CLOCK_CONTROL says, none by default), its kernels by label."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memlens.model.results import KernelResult
from memlens.readers import read_report
from tests.conftest import REPO


def profile_family_small(out: Path, family: str) -> dict[str, KernelResult]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memlens",
            "profile",
            str(REPO / "kernels"),
            "-k",
            f"^{family}/",
            "--small",
            "--out",
            str(out),
            "--clock-control",
            os.environ.get("MEMLENS_CLOCK_CONTROL", "none"),
            "--timeout",
            "600",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=700,
    )
    assert done.returncode == 0, done.stderr
    return {k.label: k for k in read_report((out / "latest").resolve() / "results.json").kernels}
