"""profiling/api.py, `import memlens`: one name per module, the range marker, load(), the suite contract,
the one export list."""

from __future__ import annotations

import subprocess
import sys

import pytest

import memlens
from memlens.errors import ConfigError
from tests.conftest import FIXTURES, REPO

CUDA_APP_CSV = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.csv"


@pytest.mark.parametrize(
    ("folder", "package"), [("profiling", "memlens"), ("reports", "memlens.reports"), ("kernels", "memlens.kernels")]
)
def test_each_module_has_one_name(folder, package):
    """The checkout's folders are the package `memlens` (pyproject's package-dir, an editable install):
    imported by its folder name, a folder refuses, so no class can be loaded twice."""
    import memlens.reports.build

    assert memlens.reports.build.__name__ == "memlens.reports.build"
    done = subprocess.run(
        [sys.executable, "-c", f"import {folder}"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert f"ImportError: this folder is the package {package}, not {folder}" in done.stderr


def test_suite_contract_importable_from_memlens():
    from memlens import CudaKernel, Expect, Family, Launch, NumbaKernel, suite

    assert (Family, Launch, Expect, CudaKernel, NumbaKernel) == (
        suite.Family,
        suite.Launch,
        suite.Expect,
        suite.CudaKernel,
        suite.NumbaKernel,
    )


class _Recorder:
    """Stands in for the nvtx package's range functions, recording each call."""

    def __init__(self, events, monkeypatch):
        import nvtx

        self.events = events
        self.next_id = 0
        monkeypatch.setattr(nvtx, "push_range", self.push_range)
        monkeypatch.setattr(nvtx, "pop_range", self.pop_range)
        monkeypatch.setattr(nvtx, "start_range", self.start_range)
        monkeypatch.setattr(nvtx, "end_range", self.end_range)

    def push_range(self, message, color=None, domain="unset"):
        self.events.append(("push", message, domain))

    def pop_range(self, domain="unset"):
        self.events.append(("pop", domain))

    def start_range(self, message, color=None, domain="unset"):
        self.next_id += 1
        self.events.append(("start", message, domain, self.next_id))
        return self.next_id

    def end_range(self, range_id):
        self.events.append(("end", range_id))


def test_range_is_a_context_manager_and_a_decorator_in_the_default_domain(monkeypatch):
    events: list[tuple] = []
    _Recorder(events, monkeypatch)
    with memlens.range("mine/v1"):
        events.append(("body",))

    @memlens.range("mine/v2")
    def step(x):
        events.append(("call", x))
        return x * 2

    assert step(21) == 42
    # a start/end range (the process's: it covers every thread's kernels) and a push/pop range (the
    # thread's: it nests), both in NVTX's default domain (None), ended in the reverse order
    assert events == [
        ("start", "mine/v1", None, 1),
        ("push", "mine/v1", None),
        ("body",),
        ("pop", None),
        ("end", 1),
        ("start", "mine/v2", None, 2),
        ("push", "mine/v2", None),
        ("call", 21),
        ("pop", None),
        ("end", 2),
    ]


def test_range_counts_its_runs_per_path_when_memlens_profiles(monkeypatch, tmp_path):
    import threading

    from memlens import api
    from memlens.collect.launch_sampling import RANGE_COUNTS_ENV, read_range_counts

    _Recorder([], monkeypatch)
    counts = api._RangeCounts()
    monkeypatch.setattr(api, "_COUNTS", counts)
    target = tmp_path / "ranges.json"
    monkeypatch.setenv(RANGE_COUNTS_ENV, str(target))
    step = memlens.range("step")
    for _ in range(5):
        with step, memlens.range("forward"):
            pass
        with step:  # the same range object, entered again
            pass

    def loader():
        with memlens.range("load"):
            pass

    workers = [threading.Thread(target=loader) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    counts.write(str(target))
    assert read_range_counts(target) == {"step": 10, "step > forward": 5, "load": 3}


def test_range_counts_nothing_outside_memlens_profile(monkeypatch):
    from memlens import api
    from memlens.collect.launch_sampling import RANGE_COUNTS_ENV

    _Recorder([], monkeypatch)
    counts = api._RangeCounts()
    monkeypatch.setattr(api, "_COUNTS", counts)
    monkeypatch.delenv(RANGE_COUNTS_ENV, raising=False)
    with memlens.range("step"):
        pass
    assert counts.counts == {} and not counts.registered


def test_range_with_the_real_nvtx_package_runs_without_a_profiler():
    with memlens.range("mine/v1"):
        pass
    assert memlens.range("mine/v2")(lambda: 7)() == 7


@pytest.mark.parametrize("name", ["", "  ", "mine/v1/", "app@mine/v1", "a > b", 3])
def test_range_refuses_names_that_mean_something_else(name):
    with pytest.raises(ConfigError):
        memlens.range(name)


def test_load_returns_typed_results_labelled_by_ranges():
    results = memlens.load(CUDA_APP_CSV)
    assert isinstance(results, memlens.RunResults)
    assert [k.label for k in results.kernels][:2] == ["transpose/conflict", "transpose/padded"]


def test_one_export_list_with_the_errors_load_raises(tmp_path):
    import memlens.api

    assert memlens.__all__ == ["__version__", *memlens.api.__all__]
    assert all(getattr(memlens, name) is getattr(memlens.api, name) for name in memlens.api.__all__)
    with pytest.raises(memlens.InputError, match="no such file"):
        memlens.load(tmp_path / "missing.json")
    assert issubclass(memlens.InputError, memlens.MemlensError) and memlens.MemlensError is ConfigError.__base__
    assert memlens.SetupError.exit_code == 3 and "SetupError" in memlens.__all__


LOADS = "memlens.load reads a run directory, a results.json, a .ncu-rep or an ncu CSV export"


@pytest.mark.parametrize(
    ("path", "said"),
    [
        (None, "memlens.load(None): name a run (a path, not NoneType)"),
        (3, "memlens.load(3): name a run (a path, not int)"),
        ("", "memlens.load(''): an empty path names no run"),
        (REPO / "kernels" / "gates.toml", "gates.toml: a rules file, not a run"),
    ],
)
def test_load_of_what_is_no_run_is_one_memlens_error_saying_what_it_reads(path, said, monkeypatch, tmp_path):
    """issue 46 (9): load(None) raised TypeError, load('') read the current folder, load('rules.toml') said "no ncu
    CSV header"."""
    monkeypatch.chdir(tmp_path)  # load('') read the working directory: one with no run
    with pytest.raises(memlens.MemlensError) as raised:
        memlens.load(path)
    message = str(raised.value)
    assert said in message and LOADS in message and "\n" not in message, message


def test_an_input_error_of_load_says_what_it_reads(tmp_path):
    with pytest.raises(memlens.InputError) as raised:
        memlens.load(tmp_path / "missing.json")
    assert "no such file" in str(raised.value) and LOADS in str(raised.value)
