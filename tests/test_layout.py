"""The shape of the code: small modules, subprocesses through wrappers, no machine paths."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

# Import rules: tests/test_architecture.py.

SOURCES = sorted(p for folder in ("profiling", "reports", "kernels") for p in (REPO / folder).rglob("*.py"))
MAX_LINES = 500
SUBPROCESS_WRAPPERS = {"profiling/io/processes.py", "profiling/collect/ncu.py"}
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|Users|tmp)/\w")
# recordings (what a tool printed on the machine that made them) keep the paths they printed
RECORDINGS = ("tests/fixtures/", "tests/benchmarks/results/")


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_every_module_is_at_most_500_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_every_subprocess_goes_through_a_wrapper():
    assert len(SOURCES) > 50, REPO  # a wrong REPO would check nothing
    calls = {
        _name(path)
        for path in SOURCES
        if re.search(r"subprocess\.(run|Popen|call|check_call|check_output)\(", path.read_text(encoding="utf-8"))
    }
    assert calls <= SUBPROCESS_WRAPPERS
    assert not any("shell=True" in path.read_text(encoding="utf-8") for path in SOURCES)


def test_no_machine_paths_in_code_docs_or_tests():
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "*.py", "*.md", "*.sh", "*.toml", "Makefile"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    offenders = []
    for name in tracked.stdout.splitlines():
        if name.startswith(RECORDINGS) or not (REPO / name).is_file():
            continue
        for number, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1):
            if MACHINE_PATH.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []
