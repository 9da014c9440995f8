"""profiling/collect/pipeline.py: the RunInfo, results and saving that suite and program runs share."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from memlens.collect.pipeline import read_results, run_info, save_run
from memlens.collect.run_dir import Machine
from memlens.errors import OutputError, ProfilerError
from memlens.model.ncu_settings import NcuSettings
from memlens.model.results import RunInfo, RunResults

APP = Path(__file__).parents[1] / "fixtures" / "programs" / "nvidia_h100_80gb_hbm3"
REPORT = APP / "cuda_app.ncu-rep"


def test_run_info_takes_provenance_and_how_ncu_ran():
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=3)
    settings = NcuSettings("none", "all", fast=True)
    info = run_info(
        settings,
        "2025.3.1.0",
        Machine("580.1", "abc"),
        Path("suite.py"),
        "memlens profile",
        started,
        launches="first",
        warm_up=2,
    )
    assert (info.ncu_version, info.ncu_settings) == ("2025.3.1.0", settings)
    assert (info.driver_version, info.suite_commit, info.suite, info.memlens_command) == (
        "580.1",
        "abc",
        "suite.py",
        "memlens profile",
    )
    assert (info.launches, info.warm_up) == ("first", 2)
    assert info.host and info.wall_seconds >= 3  # provenance taken now, as a suite run's is


def test_read_results_keeps_the_kernels_asked_for_with_gpu_and_sources():
    pytest.importorskip("ncu_report")
    everything, error = read_results(REPORT, RunInfo(memlens_command="x"))
    assert error is None and len(everything.kernels) == 6
    assert everything.info.gpu_name == "NVIDIA H100 80GB HBM3" and everything.info.source == "cuda_app.ncu-rep"
    assert everything.embedded_sources  # the file the lines name, kept
    conflict, _ = read_results(REPORT, RunInfo(memlens_command="x"), keep=lambda k: k.label == "transpose/conflict")
    assert [k.label for k in conflict.kernels] == ["transpose/conflict"]


def test_read_results_of_a_run_without_report_or_with_a_broken_one(tmp_path):
    missing, error = read_results(tmp_path / "profile.ncu-rep", RunInfo(memlens_command="x"), complete=False)
    assert error is None and missing.kernels == () and missing.complete is False
    broken = tmp_path / "broken.ncu-rep"
    broken.write_bytes(b"not a report")
    unread, error = read_results(broken, RunInfo(memlens_command="x"))
    assert error is not None and unread.kernels == ()


def test_save_run_writes_results_and_latest_then_raises_the_runs_error(tmp_path):
    run_dir = tmp_path / "runs" / "one"
    run_dir.mkdir(parents=True)
    results = RunResults(RunInfo(memlens_command="x"), (), complete=False)
    with pytest.raises(ProfilerError, match="the program failed"):
        save_run(tmp_path / "runs", run_dir, results, ProfilerError("the program failed"))
    assert json.loads((run_dir / "results.json").read_text())["complete"] is False
    assert (tmp_path / "runs" / "latest").resolve() == run_dir.resolve()  # a failed run is the latest too


def test_save_run_names_a_latest_it_cannot_point(tmp_path):
    run_dir = tmp_path / "runs" / "one"
    run_dir.mkdir(parents=True)
    (tmp_path / "runs" / "latest").mkdir()  # a folder where the link goes
    (tmp_path / "runs" / "latest" / "x").touch()
    with pytest.raises(ProfilerError, match="cannot point .*latest at one"):
        save_run(tmp_path / "runs", run_dir, RunResults(RunInfo(memlens_command="x"), ()), None)
    assert (run_dir / "results.json").is_file()


def test_save_run_that_cannot_write_results_is_an_output_error(tmp_path):
    not_a_folder = tmp_path / "run"
    not_a_folder.write_text("a file")
    with pytest.raises(OutputError):
        save_run(tmp_path, not_a_folder, RunResults(RunInfo(memlens_command="x"), ()), None)
    assert not (tmp_path / "latest").exists()  # nothing to point at
