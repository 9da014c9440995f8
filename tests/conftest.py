"""Test tiers: the CPU tier runs everywhere; tests marked `gpu` run only where a GPU and ncu are.

Under pytest-xdist (`make test`: -n with --dist loadgroup) the GPU tier keeps to one worker, one test at a
time on the GPU as without -n. The fuzzers' hypothesis profile is MEMLENS_FUZZ's (tests/support/fuzz.py)."""

from __future__ import annotations

import os
import pickle
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fuzz import register_profiles

register_profiles()

# tests/benchmarks: scripts, not tests (their README), test_time.py among them
collect_ignore = ["benchmarks"]

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def _gpu_present() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# A pytest-xdist worker has COLUMNS=80 and LINES=24 in its environment before any conftest runs, where neither
# the run nor its controller set them, and memlens wraps its output to COLUMNS. Each worker gets the
# controller's values back, so a test sees what it sees without -n.
TERMINAL_SIZE = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # pytest-xdist's hook, in the controller
    node.workerinput["memlens_terminal_size"] = {name: os.environ.get(name) for name in TERMINAL_SIZE}


def pytest_configure(config: pytest.Config) -> None:
    sizes = getattr(config, "workerinput", {}).get("memlens_terminal_size", {})
    for name, value in sizes.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _gpu_present():
        one_worker = pytest.mark.xdist_group("gpu")  # a marker that means nothing without pytest-xdist
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(one_worker)
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (nvidia-smi found none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# --- each distinct chart drawn once a test process --------------------------------------------------------
# matplotlib's charts were a third of the tests' own CPU time (56 of 172 s), and a chart is a function of its
# data, salt and width (reports/charts.py; test_rendering_is_deterministic, which draws afresh, says so): a
# chart drawn again from the same data, pickled, is answered from this memo. Charts whose data does not
# pickle are always drawn. Only where a test before imported the charts: the memo imports nothing itself.

_DRAWN: dict[bytes, tuple[str, str] | None] = {}


@pytest.fixture(autouse=True)
def _charts_drawn_once(request, monkeypatch):
    chart_processes = sys.modules.get("memlens.reports.chart_processes")
    if chart_processes is None or "charts_drawn_afresh" in request.fixturenames:
        return
    draw_both = chart_processes._both

    def drawn_once(salt, draw):
        try:
            key = pickle.dumps((draw.func.__module__, draw.func.__qualname__, draw.args, draw.keywords, salt))
        except (AttributeError, TypeError, pickle.PicklingError):
            return draw_both(salt, draw)
        if key not in _DRAWN:
            _DRAWN[key] = draw_both(salt, draw)
        return _DRAWN[key]

    monkeypatch.setattr(chart_processes, "_both", drawn_once)


@pytest.fixture
def charts_drawn_afresh() -> None:
    """A test that takes this fixture has every chart drawn by matplotlib, none from the memo above."""


# --- the wheel, built once a session (tests/test_packaging.py, tests/test_architecture.py) ----------------


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # from a copy of what the build reads: a checkout's build/ folder may hold modules moved since
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", *(p.name for p in REPO.glob("LICENSE*"))):
        shutil.copy2(REPO / name, source / name)
    for folder in ("profiling", "reports", "kernels"):
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    # without isolation: the setuptools of the test extra builds it, so [build-system] must admit it and it
    # must build the metadata pyproject declares (an SPDX license string needs setuptools 77 or later)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return next(out.glob("memlens-*.whl"))


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The wheel installed into a folder of its own, and the environment that imports memlens from there
    (with this interpreter's dependencies): run with `python -S` from a directory outside the checkout."""
    target = tmp_path_factory.mktemp("installed") / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # -S: the dependencies from this interpreter's site-packages, but not its .pth files, whose
    # editable-install finder would give the checkout's memlens
    path = os.pathsep.join([str(target), *site.getsitepackages()])
    return target, {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}
