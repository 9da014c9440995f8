"""The run directory's one home: its names, the latest pointer, and provenance as one record that
profile and bench share (and that results written by earlier versions still load into)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import fields

import pytest

from memlens import __version__
from memlens.bench.results import BenchInfo
from memlens.collect.run_dir import Machine, new_run_dir, point_latest, shell_command, take_provenance
from memlens.model.ncu_settings import NcuSettings
from memlens.model.results import RunInfo, load_results
from memlens.model.run_layout import BENCH, LATEST, NCU_REPORT, RESULTS, Provenance, report_file
from memlens.readers import find_report
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
SHARED = {
    "gpu_name",
    "host",
    "driver_version",
    "memlens_command",
    "started_at",
    "wall_seconds",
    "suite",
    "suite_commit",
    "memlens_version",
}


def test_the_layout_names(tmp_path):
    assert (NCU_REPORT, RESULTS, BENCH, LATEST) == ("profile.ncu-rep", "results.json", "bench.json", "latest")
    # the readers find a run's results by that name, and a folder of runs by its latest link
    run = new_run_dir(tmp_path)
    (run / RESULTS).write_text("{}")
    assert point_latest(tmp_path, run) is None
    assert find_report(tmp_path) == tmp_path / LATEST / RESULTS
    assert report_file(REPO / "runs" / "x", "md") == REPO / "runs" / "x" / "report.md"


def test_profile_and_bench_share_one_provenance_record():
    assert {f.name for f in fields(Provenance)} == SHARED
    assert issubclass(RunInfo, Provenance) and issubclass(BenchInfo, Provenance)


def test_provenance_is_taken_in_one_place():
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=3)
    taken = take_provenance(
        Machine("580.159.04", "abc123 (modified)"),
        REPO / "kernels",
        shell_command(["bench", "-k", "a b"]),
        started,
        gpu_name="NVIDIA H200",
    )
    assert set(taken) == SHARED
    assert taken["memlens_command"] == "memlens bench -k 'a b'"
    assert taken["started_at"] == started.isoformat(timespec="seconds")
    assert 3 <= taken["wall_seconds"] < 60
    assert (taken["driver_version"], taken["suite_commit"]) == ("580.159.04", "abc123 (modified)")
    assert (taken["suite"], taken["memlens_version"]) == (str(REPO / "kernels"), __version__)
    run = RunInfo(**taken, ncu_version="2025.3.1", ncu_settings=NcuSettings(fast=True))
    bench = BenchInfo(**taken, l2_bytes=1 << 20, repeats=50)
    assert run.gpu_name == bench.gpu_name == "NVIDIA H200" and run.ncu_settings.fast and bench.repeats == 50


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("**/results.json")), ids=lambda p: p.parent.name)
def test_results_written_by_earlier_versions_still_load_and_write_back_flat(path):
    written = json.loads(path.read_text())
    results = load_results(path)
    assert results.info.started_at == written["info"].get("started_at")
    assert results.info.suite_commit == written["info"].get("suite_commit")
    again = results.to_json()["info"]
    renamed = {"clock_control", "cache_control", "fast"}  # schema 2's, in ncu_settings since schema 3
    assert {k: v for k, v in again.items() if k in written["info"]} == {
        k: v for k, v in written["info"].items() if k not in renamed | {"command"}
    }
    assert again["memlens_command"] == written["info"].get("command", written["info"].get("memlens_command"))
    settings = again.get("ncu_settings") or {}
    assert {k: settings.get(k) for k in renamed & set(written["info"])} == {
        k: v for k, v in written["info"].items() if k in renamed
    }


def test_new_run_directories_and_the_latest_pointer(tmp_path):
    first, second = new_run_dir(tmp_path / "runs"), new_run_dir(tmp_path / "runs")
    assert first != second and first.parent == second.parent == tmp_path / "runs"
    assert point_latest(tmp_path / "runs", second) is None
    assert (tmp_path / "runs" / LATEST).resolve() == second.resolve()
    blocked = tmp_path / "file"
    blocked.write_text("")
    error = point_latest(blocked, second)
    assert error is not None and f"results in {second}" in str(error)


def test_a_program_runs_passes_over_named_ranges_write_files_of_their_own(tmp_path):
    from memlens.model.run_layout import profile_files

    first, second = profile_files(tmp_path, ranges=1), profile_files(tmp_path, ranges=2)
    assert (first.report.name, first.log.name, first.tag) == ("profile.ranges.ncu-rep", "ncu.ranges.log", "ranges")
    assert (second.report.name, second.command.name) == ("profile.ranges2.ncu-rep", "ncu-command.ranges2.txt")
    assert profile_files(tmp_path).report.name == "profile.ncu-rep"
