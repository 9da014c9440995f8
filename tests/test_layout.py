"""The shape of the code (issue 15): modules stay small, every subprocess goes through a wrapper,
the profiled program and bench's timing code stay out of the modules that do not need them, and no
path of someone's machine is written into code, docs or tests."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

SOURCES = sorted(p for folder in ("profiling", "reports", "kernels") for p in (REPO / folder).rglob("*.py"))
MAX_LINES = 500
SUBPROCESS_WRAPPERS = {"profiling/io/processes.py", "profiling/collect/ncu.py"}
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|Users|tmp)/\w")
# recordings (what a tool printed on the machine that made them) keep the paths they printed
RECORDINGS = ("tests/fixtures/", "tests/benchmarks/results/")


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _imports(path: Path) -> set[str]:
    """Modules `path` imports, as absolute names (profiling.x, reports.y)."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_every_module_is_at_most_500_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_every_subprocess_goes_through_a_wrapper():
    calls = {
        _name(path)
        for path in SOURCES
        if re.search(r"subprocess\.(run|Popen|call|check_call|check_output)\(", path.read_text(encoding="utf-8"))
    }
    assert calls <= SUBPROCESS_WRAPPERS
    assert not any("shell=True" in path.read_text(encoding="utf-8") for path in SOURCES)


@pytest.mark.parametrize(
    ("importer", "forbidden"),
    [
        ("profiling/bench/timing.py", {"memlens.collect.profiled_program", "memlens.collect.profile_run"}),
        ("profiling/collect/profile_run.py", {"memlens.collect.profiled_program", "memlens.bench.timing"}),
        ("profiling/bench/results.py", {"memlens.bench.timing"}),
        ("reports/build.py", {"memlens.bench.timing"}),
        ("reports/render.py", {"memlens.bench.timing"}),
        ("profiling/commands/report.py", {"memlens.bench.timing"}),
    ],
)
def test_siblings_do_not_borrow_from_each_other(importer, forbidden):
    assert not _imports(REPO / importer) & forbidden


def test_no_machine_paths_in_code_docs_or_tests():
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "*.py", "*.md", "*.sh", "*.toml", "Makefile"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
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
