"""Helpers to put the fake ncu on a test's PATH."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
REPO = SUPPORT.parent.parent
CPU_SUITE = SUPPORT / "cpu_suite.py"


def install_fake_ncu(folder: Path, monkeypatch, **env: str) -> Path:
    """Write an executable `ncu` into folder, first on PATH, replaying what `env` names."""
    folder.mkdir(parents=True, exist_ok=True)
    ncu = folder / "ncu"
    ncu.write_text(f"#!{sys.executable}\nimport runpy, sys\nsys.path.insert(0, {str(REPO)!r})\n"
                   f"runpy.run_path({str(SUPPORT / 'fake_ncu.py')!r}, run_name='__main__')\n")  # fmt: skip
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return ncu
