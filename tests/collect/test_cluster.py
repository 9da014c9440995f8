"""`memlens profile --cluster` on the CPU: a real Dask cluster (two worker processes, each declaring
GPU=1 and given a GPU of its own by CUDA_VISIBLE_DEVICES), the fake nvidia-smi naming those GPUs and
the fake ncu replaying a recording, as in tests/collect/test_gpus.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.collect.claims import UNITS
from memlens.collect.cluster_worker import Shipped, worker_gpu
from memlens.collect.gpus import Gpu
from memlens.collect.profile_run import ProfileOptions
from memlens.collect.scheduler import Plan, Where, plan_jobs
from memlens.errors import ConfigError, ProfilerError
from memlens.selection import select_variants
from tests.conftest import FIXTURES
from tests.support.dask_cluster import external_cluster, kill_worker_of, kill_worker_twice, scheduler_killed_once
from tests.support.fake import (
    CPU_SUITE,
    IN_THE_PROBE,
    MARKER,
    PROBE_SELECTION,
    REPO,
    fake_ncu_env,
    install_fake_ncu,
    interrupt_when,
    marked_processes,
    recorded,
)
from tests.support.hold import HOLD, go_on_after, go_on_when, programs_took_units

pytest.importorskip("distributed")

PROBE = FIXTURES / "probe"
H200 = (
    Gpu(0, "NVIDIA H200", "GPU-aaaaaaaa-0000-0000-0000-000000000000", "00000000:19:00.0"),
    Gpu(1, "NVIDIA H200", "GPU-bbbbbbbb-1111-1111-1111-111111111111", "00000000:3B:00.0"),
)
MIXED = (
    Gpu(0, "NVIDIA H100 80GB HBM3", "GPU-cccccccc-0000-0000-0000-000000000000", "00000000:19:00.0"),
    Gpu(1, "NVIDIA H200", "GPU-dddddddd-1111-1111-1111-111111111111", "00000000:3B:00.0"),
)
LABELS = ["transpose/conflict", "transpose/padded", "transpose/swizzled", "running_mean/register", "running_mean/local"]
SHARE = {
    0: ["transpose/swizzled", "running_mean/register", "running_mean/local"],
    1: ["transpose/conflict", "transpose/padded"],
}


def fake_smi(folder: Path, gpus: tuple[Gpu, ...]) -> None:
    """An nvidia-smi that lists `gpus` (and a driver version), first on PATH with the fake ncu."""
    lines = " ".join(f"'{g.index}, {g.name}, {g.uuid}, {g.pci_bus_id}'" for g in gpus)
    smi = folder / "nvidia-smi"
    smi.write_text(
        f"#!/bin/sh\ncase \"$*\" in\n  *pci.bus_id*) printf '%s\\n' {lines} ;;\n  *) echo 580.159.04 ;;\nesac\n"
    )
    smi.chmod(0o755)


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    """The fake ncu (recording each run) and a fake nvidia-smi of two H200s, on PATH for the workers too."""
    record = tmp_path / "ncu-runs.jsonl"
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
        FAKE_NCU_RECORD=str(record),
    )
    fake_smi(tmp_path / "bin", H200)
    return record


def profile_cli(out: Path, *extra: str) -> int:
    return main(["profile", str(CPU_SUITE), "--out", str(out), "--clock-control", "none", *extra])


def results(out: Path) -> dict:
    return json.loads((out / "latest" / "results.json").read_text())


def test_a_sweep_spreads_over_the_workers_and_merges_as_the_local_backend_does(fakes, tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    scratch = _workers_scratch(tmp_path, monkeypatch)
    sweep = ("--sweep", "transpose.m=8,16")
    both_take_units(tmp_path / "local", tmp_path / "go-on-local", monkeypatch)
    assert profile_cli(tmp_path / "local", "--gpus", "all", *sweep) == 3  # the probe holds no swept kernel
    both_take_units(scratch, tmp_path / "go-on-cluster", monkeypatch)
    assert profile_cli(tmp_path / "cluster", "--cluster", "local", *sweep) == 3
    local, cluster = results(tmp_path / "local"), results(tmp_path / "cluster")
    # each case once, in suite order, the same figures; which GPU ran which job is the scheduler's choice
    assert [unplaced(o) for o in cluster["outcomes"]] == [unplaced(o) for o in local["outcomes"]]
    assert [unplaced(k) for k in cluster["kernels"]] == [unplaced(k) for k in local["kernels"]]
    assert_placed_consistently(cluster, H200)
    assert {o["gpu_index"] for o in cluster["outcomes"]} == {0, 1}
    assert {o["gpu_uuid"] for o in cluster["outcomes"]} == {g.uuid for g in H200}
    first = cluster["outcomes"][0]
    assert (first["driver_version"], first["ncu_version"]) == ("580.159.04", "2025.3.1.0")
    assert first["host"] == local["outcomes"][0]["host"] and first["host"]
    assert sorted(r["CUDA_VISIBLE_DEVICES"] for r in recorded(fakes)) == sorted(2 * [g.uuid for g in H200])
    # the environment a local run gives its program: not the one thread a Dask worker sets for itself
    assert [r["OMP_NUM_THREADS"] for r in recorded(fakes)] == [None] * 4
    run = (tmp_path / "cluster" / "latest").resolve()
    assert sorted(p.name for p in run.iterdir()) == [
        "events.job0.jsonl",
        "events.job1.jsonl",
        "ncu-command.job0.txt",
        "ncu-command.job1.txt",
        "ncu.job0.log",
        "ncu.job1.log",
        "profile.job0.ncu-rep",
        "profile.job1.ncu-rep",
        "results.json",
    ]
    assert (run / "profile.job0.ncu-rep").read_bytes() == (PROBE / "probe.ncu-rep").read_bytes()


def both_take_units(programs: Path, go_on: Path, monkeypatch) -> None:
    """Every launch of the run about to start waits until both its programs (their events files under
    `programs`) took a unit: each GPU takes some."""
    monkeypatch.setenv(HOLD, str(go_on))
    go_on_when(go_on, programs_took_units(programs, 2))


def unplaced(record: dict) -> dict:
    """An outcome or kernel without where it ran."""
    return {k: v for k, v in record.items() if k not in ("gpu_index", "gpu_name", "gpu_uuid")}


def assert_placed_consistently(data: dict, gpus: tuple[Gpu, ...]) -> None:
    """Each case names one of `gpus` whole, and each kernel the GPU its case ran on (a unit's cases may run on
    two: the last ones taken over by a GPU done with every other unit)."""
    ran = {}
    for outcome in data["outcomes"]:
        gpu = gpus[outcome["gpu_index"]]
        assert (outcome["gpu_name"], outcome["gpu_uuid"]) == (gpu.name, gpu.uuid)
        ran[f"{outcome['family']}/{outcome['variant'].partition('@')[0]}"] = gpu.index
    for kernel in data["kernels"]:
        assert kernel["gpu_index"] == ran[f"{kernel['family']}/{kernel['variant']}"]
        assert kernel["gpu_uuid"] == gpus[kernel["gpu_index"]].uuid


def test_two_gpu_models_side_by_side(fakes, tmp_path, capsys, monkeypatch):
    both_take_units(_workers_scratch(tmp_path, monkeypatch), tmp_path / "go-on", monkeypatch)
    fake_smi(tmp_path / "bin", MIXED)
    assert profile_cli(tmp_path / "runs", "--cluster", "local", *PROBE_SELECTION) == 0
    data = results(tmp_path / "runs")
    assert_placed_consistently(data, MIXED)
    ran = {f"{o['family']}/{o['variant']}": o["gpu_index"] for o in data["outcomes"]}
    assert set(ran.values()) == {0, 1}
    assert data["info"]["gpu_name"] == "NVIDIA H100 80GB HBM3 + NVIDIA H200" and data["complete"] is True
    capsys.readouterr()
    assert main(["report", str(tmp_path / "runs"), "--format", "md", "-o", "-"]) == 0
    out = capsys.readouterr().out
    counts = {gpu: sum(1 for g in ran.values() if g == gpu) for gpu in (0, 1)}
    said = {gpu: f"{n} variant{'s' if n != 1 else ''}" for gpu, n in counts.items()}
    assert f"GPU 0 (NVIDIA H100 80GB HBM3): {said[0]}; GPU 1 (NVIDIA H200): {said[1]}" in out


def program_tag(ncu_run: dict) -> str:
    """The profiled program's --tag in an ncu run's argv: which job it is."""
    argv = ncu_run["argv"]
    return argv[argv.index("--tag") + 1]


def _workers_scratch(tmp_path: Path, monkeypatch) -> Path:
    """A TMPDIR of the test's own for the workers (their job folders) and for memlens's units folder."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile reads TMPDIR again
    return scratch


def _wait_until_it_took_a_unit(scratch: Path, tag: str, earlier: Path | None = None, deadline_s: float = 60) -> Path:
    """The events file of job `tag`'s program (not `earlier`'s: a retry's) in its worker's job folder, once
    that program took a unit."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for events in scratch.glob(f"memlens-{tag}-*/events.{tag}.jsonl"):
            if events != earlier and '"claimed"' in _text(events):
                return events
        time.sleep(0.05)
    raise AssertionError(f"{tag}'s program took no unit in {deadline_s:g} s")


def took_a_unit(scratch: Path) -> Callable[[dict], Path]:
    """A kill's `ready`: waits until the ncu run's program (its job's --tag) took a unit, a retry's program
    not the events file an earlier wait returned."""
    seen: list[Path] = []

    def ready(ncu_run: dict) -> Path:
        seen.append(_wait_until_it_took_a_unit(scratch, program_tag(ncu_run), seen[-1] if seen else None))
        return seen[-1]

    return ready


def test_a_worker_killed_mid_job_has_its_job_retried_and_nothing_is_lost(fakes, tmp_path, monkeypatch):
    go_on = tmp_path / "go-on"  # every launch waits until the worker is killed: no job ends before
    monkeypatch.setenv(HOLD, str(go_on))
    scratch = _workers_scratch(tmp_path, monkeypatch)
    ready = took_a_unit(scratch)  # its units are then given back, and the job retried
    killer = go_on_after(go_on, lambda: kill_worker_of(lambda: recorded(fakes), 0, ready=ready))
    assert profile_cli(tmp_path / "runs", "--cluster", "local", *PROBE_SELECTION) == 0
    killer.join()
    runs = recorded(fakes)
    assert len(runs) == 3  # the killed job ran again
    data = results(tmp_path / "runs")
    outcomes = [(f"{o['family']}/{o['variant']}", o["status"]) for o in data["outcomes"]]
    assert outcomes == [(x, "ok") for x in IN_THE_PROBE]
    assert data["complete"] is True and len(data["kernels"]) == 3


def test_a_job_whose_workers_die_twice_is_failed_with_its_log(fakes, tmp_path, monkeypatch, capsys):
    go_on = tmp_path / "go-on"  # the other job holds its first case until the retry died: the retry gets units
    monkeypatch.setenv(HOLD, str(go_on))
    killed: list[dict] = []  # the retry: a later ncu run with the killed one's --tag
    scratch = _workers_scratch(tmp_path, monkeypatch)
    ready = took_a_unit(scratch)  # the retry's units are then failed, with the log
    killer = go_on_after(go_on, lambda: kill_worker_twice(lambda: recorded(fakes), program_tag, killed, ready))
    assert profile_cli(tmp_path / "runs", "--cluster", "local", *PROBE_SELECTION) == 3
    killer.join()
    assert len(killed) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("memlens: error: job ") and "its worker tcp://" in err and "died while running it" in err
    run = (tmp_path / "runs" / "latest").resolve()
    (log,) = run.glob("job*.failed.txt")
    lines = log.read_text().splitlines()
    assert lines[1].startswith("attempt 1: its worker tcp://") and lines[2].startswith("attempt 2: its worker tcp://")
    data = results(tmp_path / "runs")
    failed = [o for o in data["outcomes"] if o["status"] == "failed"]
    assert failed and all(log.name in o["message"] for o in failed) and data["complete"] is False
    assert {o["status"] for o in data["outcomes"]} == {"ok", "failed"}  # the other job's cases kept


# --- an external scheduler: the scheduler gone ----------------------------------------------------


def test_the_scheduler_gone_ends_the_run_with_what_finished(tmp_path, monkeypatch, capsys):
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
    )
    fake_smi(tmp_path / "bin", H200)
    tag = uuid.uuid4().hex
    env = {
        **fake_ncu_env(tmp_path / "bin"),
        MARKER: tag,
        "FAKE_NCU_REPORT": str(PROBE / "probe.ncu-rep"),
        "FAKE_NCU_LOG": str(PROBE / "probe.log"),
    }
    out = tmp_path / "runs"
    workers = [
        {"CUDA_VISIBLE_DEVICES": gpu.uuid, "MEMLENS_TEST_SLEEP": sleep}
        for gpu, sleep in zip(H200, ("0", "60"), strict=True)
    ]  # GPU 1's job hangs
    with (
        external_cluster(tmp_path, env, workers) as (address, processes),  # both workers in: 2 jobs
        scheduler_killed_once(processes[0], out, "*/profile.job*.ncu-rep"),
    ):
        assert profile_cli(out, "--cluster", address) == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("memlens: error: the scheduler went away: 1 of 2 jobs finished; partial results in ")
    data = results(out)
    assert data["complete"] is False
    status = {f"{o['family']}/{o['variant']}": o["status"] for o in data["outcomes"]}
    # which share the fast worker took is the scheduler's choice: one share finished, the other did not run
    finished = next(share for share in SHARE.values() if status[share[0]] == "ok")
    left = next(share for share in SHARE.values() if share is not finished)
    assert status == {**dict.fromkeys(finished, "ok"), **dict.fromkeys(left, "not_run")}
    # the finished job's kernels only (the probe report holds conflict and local of the first share)
    assert {f"{k['family']}/{k['variant']}" for k in data["kernels"]} <= set(finished)
    for pid in marked_processes(tag):  # the hung job's ncu and program, left by its worker
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# --- Ctrl-C ---------------------------------------------------------------------------------------


def test_ctrl_c_stops_the_jobs_and_keeps_what_they_did(tmp_path):
    tag = uuid.uuid4().hex
    record = tmp_path / "ncu-runs.jsonl"
    env = fake_ncu_env(
        tmp_path / "bin",
        MEMLENS_TEST_SLEEP="60",
        FAKE_NCU_RECORD=str(record),
        **{MARKER: tag},
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
    )
    fake_smi(tmp_path / "bin", H200)
    scratch = tmp_path / "scratch"  # the workers' job folders
    scratch.mkdir()
    env["TMPDIR"] = str(scratch)
    runs = tmp_path / "runs"
    argv = [
        sys.executable,
        "-m",
        "memlens",
        "profile",
        str(CPU_SUITE),
        "--out",
        str(runs),
        "--cluster",
        "local",
        "--clock-control",
        "none",
    ]

    def both_started() -> bool:
        started = [p for p in scratch.glob("memlens-job*/events.job*.jsonl") if '"start"' in _text(p)]
        return len(recorded(record)) == 2 and len(started) >= 2

    done = interrupt_when(argv, tmp_path, env, both_started, wait=20)
    err = done.err
    assert done.returncode == 3 and "Traceback" not in err, err
    assert err.splitlines()[-1] == (
        "memlens: interrupted 0 of 2 jobs finished, 2 stopped with what they had profiled; "
        f"partial results in {(runs / 'latest').resolve()}"
    )
    data = json.loads((runs / "latest" / "results.json").read_text())
    assert data["complete"] is False
    # each job stopped in the first case of its share (transpose goes out variant by variant: conflict and
    # padded, swizzled and running_mean); nobody took the others
    assert [(o["variant"], o["status"]) for o in data["outcomes"]] == [
        ("conflict", "failed"),
        ("padded", "not_run"),
        ("swizzled", "failed"),
        ("register", "not_run"),
        ("local", "not_run"),
    ]
    assert all("interrupted" in o["message"] for o in data["outcomes"] if o["status"] == "failed")
    run = (runs / "latest").resolve()
    assert {p.name for p in run.glob("ncu.job*.log")} == {"ncu.job0.log", "ncu.job1.log"}  # each job's, shipped
    assert {p.name for p in run.glob("profile.job*.ncu-rep")} == {"profile.job0.ncu-rep", "profile.job1.ncu-rep"}
    assert done.left == [] and not list(scratch.glob("memlens-job*"))  # no ncu or program left, no scratch


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


# --- the parts on their own -----------------------------------------------------------------------


def test_a_worker_finds_its_gpu_by_uuid_or_index():
    assert worker_gpu(f"{H200[1].uuid},{H200[0].uuid}", H200) == H200[1]
    assert worker_gpu("0", H200) == H200[0] and worker_gpu(None, H200[:1]) == H200[0]
    with pytest.raises(ProfilerError, match="CUDA_VISIBLE_DEVICES is not set and the host has 2 GPUs"):
        worker_gpu("", H200)
    with pytest.raises(ProfilerError, match="CUDA_VISIBLE_DEVICES=GPU-zz is none of nvidia-smi's GPUs"):
        worker_gpu("GPU-zz", H200)


def test_a_shipped_error_keeps_its_kind():
    where = Where("node1", H200[0])
    assert isinstance(Shipped(where, b"", ("ConfigError", "bad")).raised(), ConfigError)
    assert isinstance(Shipped(where, b"", ("KeyboardInterrupt", "x")).raised(), KeyboardInterrupt)
    assert type(Shipped(where, b"", ("NcuTimeout", "late")).raised()) is ProfilerError
    assert Shipped(where, b"", None).raised() is None


def test_cluster_usage_errors(fakes, tmp_path, capsys, monkeypatch):
    assert profile_cli(tmp_path / "runs", "--cluster", "local", "--gpus", "all") == 2
    assert "--gpus and --cluster both share the cases out" in capsys.readouterr().err
    assert profile_cli(tmp_path / "runs", "--cluster", "nonsense") == 2
    assert "expected a scheduler address (tcp://HOST:8786) or 'local'" in capsys.readouterr().err
    monkeypatch.setattr("memlens.collect.cluster.CONNECT_TIMEOUT_S", 1.0)
    assert profile_cli(tmp_path / "runs", "--cluster", "tcp://127.0.0.1:9") == 3
    assert capsys.readouterr().err.startswith("memlens: error: --cluster tcp://127.0.0.1:9: no scheduler answers")
    assert not (tmp_path / "runs").exists()


def test_without_distributed_the_cluster_extra_is_named(fakes, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert profile_cli(tmp_path / "runs", "--cluster", "local") == 3
    assert 'pip install "memlens[cluster]"' in capsys.readouterr().err


def test_a_wrong_selection_is_said_before_anything_of_the_cluster(fakes, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("memlens.collect.cluster.CONNECT_TIMEOUT_S", 1.0)
    assert profile_cli(tmp_path / "runs", "--cluster", "tcp://127.0.0.1:9", "-k", "no_such_variant") == 2
    assert "no_such_variant" in capsys.readouterr().err  # not "no scheduler answers"
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert profile_cli(tmp_path / "runs", "--cluster", "local", "-k", "no_such_variant") == 2
    err = capsys.readouterr().err
    assert "no_such_variant" in err and "memlens[cluster]" not in err
    assert not (tmp_path / "runs").exists()


def test_a_local_cluster_without_ncu_is_one_line_and_nothing_written(fakes, tmp_path, capsys, monkeypatch):
    """`--cluster local` finds ncu in the client, once for its workers, which then look nothing up."""
    monkeypatch.setenv("MEMLENS_NCU", str(tmp_path / "no-ncu"))
    assert profile_cli(tmp_path / "runs", "--cluster", "local") == 3
    assert capsys.readouterr().err == f"memlens: error: ncu not found at {tmp_path / 'no-ncu'}\n"
    assert not (tmp_path / "runs").exists()


def test_a_local_cluster_without_gpus_names_its_option(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    assert profile_cli(tmp_path / "runs", "--cluster", "local") == 3
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: --cluster local: cannot list this machine's GPUs (cannot start nvidia-smi")
    assert main(["bench", str(CPU_SUITE), "--out", str(tmp_path / "runs"), "--cluster", "local"]) == 3
    assert capsys.readouterr().err.startswith("memlens: error: --cluster local: cannot list this machine's GPUs")
    assert not (tmp_path / "runs").exists()


def _start_method_after(setup: str, folder: Path) -> str:
    """start_method() in a new Python process that first runs `setup` (with `folder` as its name)."""
    code = f"folder = {str(folder)!r}\n{setup}\nfrom memlens.collect.cluster import start_method\nprint(start_method())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_local_workers_are_forked_only_where_that_is_safe(tmp_path):
    assert _start_method_after("import distributed, numpy", tmp_path) == "fork"  # NumPy's BLAS threads: no obstacle
    assert _start_method_after("import ncu_report", tmp_path) == "spawn"  # its disassembler runs a thread
    wait = "import threading; threading.Thread(target=threading.Event().wait, daemon=True).start()"
    assert _start_method_after(wait, tmp_path) == "spawn"  # a lock it holds would stay held in the worker
    # a library named as the CUDA driver is (any will do: loading is what start_method sees)
    cuda = (
        "import ctypes, shutil, _json; driver = folder + '/libcuda.so.1'; shutil.copy(_json.__file__, driver); "
        "ctypes.CDLL(driver)"
    )
    assert _start_method_after(cuda, tmp_path) == "spawn"


PLAN_ASIDE = """
import sys
from pathlib import Path
from memlens.collect.cluster import plan_aside, start_method
from memlens.collect.profile_run import ProfileOptions
from memlens.errors import ConfigError

suite, claims = sys.argv[1], Path(sys.argv[2])
options = ProfileOptions(suite=suite, sweeps=("transpose.m=8,16",))
with plan_aside(options, 2, claims) as planned:
    plan = planned()
print(start_method(), any(name.startswith("memlens_suite_") for name in sys.modules))  # the suite imported here?
print(repr(plan))
with plan_aside(ProfileOptions(suite=suite, pattern="no_such_variant"), 2, claims) as planned:
    try:
        planned()
    except ConfigError as exc:
        print("ConfigError", exc)
"""


def test_the_plan_is_made_in_a_forked_process_while_dask_starts(tmp_path):
    """--cluster local: the suite is imported in a process forked from memlens, which meanwhile imports Dask
    and forks its workers (a suite that loads the CUDA driver would make them spawn); the plan is the one
    memlens would make itself, and a wrong selection is its error."""
    (tmp_path / "aside").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PLAN_ASIDE, str(CPU_SUITE), str(tmp_path / "aside")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    where, plan, error = done.stdout.splitlines()
    assert where == "fork False"  # forked, and the suite not imported in memlens
    (tmp_path / "here").mkdir()
    options = ProfileOptions(suite=str(CPU_SUITE), sweeps=("transpose.m=8,16",))
    selection = select_variants(CPU_SUITE, None, (), options.sweeps, False)
    expected = Plan(plan_jobs(options, selection, 2, tmp_path / "here"), [c.label for c in selection.cases()])
    assert plan == repr(replace(expected, jobs=[replace(j, claims=str(tmp_path / "aside")) for j in expected.jobs]))
    assert (tmp_path / "aside" / UNITS).read_text() == (tmp_path / "here" / UNITS).read_text()
    assert error.startswith("ConfigError ") and "no_such_variant" in error


def test_memlens_imports_no_dask_without_cluster():
    code = (
        "import sys; from memlens.cli import main; from memlens.commands import profile; "
        "import memlens.collect.scheduler; print(any(m.split('.')[0] in ('dask', 'distributed') "
        "for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "False"


def test_the_report_header_names_each_host_of_a_cluster_run():
    from memlens.model.results import RunInfo, RunResults, VariantOutcome
    from memlens.reports.build import gpus_header

    h100, h200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    outcomes = (
        VariantOutcome("transpose", "conflict", "ok", gpu_index=0, gpu_name=h100, host="a"),
        VariantOutcome("transpose", "padded", "ok", gpu_index=0, gpu_name=h200, host="b"),
        VariantOutcome("transpose", "swizzled", "ok", gpu_index=0, gpu_name=h200, host="b"),
    )
    (item,) = gpus_header(RunResults(RunInfo(host="a"), (), outcomes))
    assert item.text == "a GPU 0 (NVIDIA H100 80GB HBM3): 1 variant; b GPU 0 (NVIDIA H200): 2 variants"
