"""Test tiers: the CPU tier runs everywhere; tests marked `gpu` run only where a GPU and ncu are."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def _gpu_present() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (nvidia-smi found none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
