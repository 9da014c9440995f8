"""`memlens bench --cluster` on the CPU: a real local Dask cluster (one worker process per GPU the fake
nvidia-smi lists, as tests/collect/test_cluster.py makes it), each share's `memlens bench` child timing
the NumPy suite on a stand-in device named after its GPU (tests/support/fake_bench.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from memlens.bench.cluster import STOP_GRACE_S
from memlens.cli import main
from memlens.collect.gpus import Gpu
from tests.collect.test_cluster import H200, MIXED, fake_smi
from tests.support.dask_cluster import external_cluster, kill_worker_of, kill_worker_twice, scheduler_killed_once
from tests.support.fake import CPU_SUITE, MARKER, REPO, interrupt_when, marked_processes, recorded
from tests.support.fake_bench import fake_bench_env
from tests.support.hold import go_on_after

pytest.importorskip("distributed")

LABELS = ["transpose/conflict", "transpose/padded", "transpose/swizzled", "running_mean/register", "running_mean/local"]


def use_gpus(tmp_path: Path, monkeypatch, gpus: tuple[Gpu, ...], benched: tuple[Gpu, ...]) -> None:
    """nvidia-smi lists `gpus`; a bench child on one of `benched` times, on any other it finds no GPU."""
    (tmp_path / "bin").mkdir(exist_ok=True)
    fake_smi(tmp_path / "bin", gpus)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    for name, value in fake_bench_env(tmp_path / "site", {g.uuid: g.name for g in benched}).items():
        monkeypatch.setenv(name, value)


def bench_cli(out: Path, *extra: str) -> int:
    return main(["bench", str(CPU_SUITE), "--out", str(out), "--repeats", "20", *extra])


def only_run(out: Path) -> Path:
    (run,) = out.iterdir()
    return run


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_bench_cluster_merges_each_share_as_bench_gpus_does(tmp_path, monkeypatch, capsys):
    use_gpus(tmp_path, monkeypatch, MIXED, MIXED)
    assert bench_cli(tmp_path / "gpus", "--gpus", "all") == 0
    assert bench_cli(tmp_path / "cluster", "--cluster", "local") == 0
    gpus, cluster = only_run(tmp_path / "gpus"), only_run(tmp_path / "cluster")
    assert sorted(p.name for p in cluster.iterdir()) == [
        "bench.job0.json",
        "bench.job0.log",
        "bench.job1.json",
        "bench.job1.log",
        "bench.json",
    ]
    merged, local = load(cluster / "bench.json"), load(gpus / "bench.json")
    assert [f"{v['family']}/{v['variant']}" for v in merged["variants"]] == LABELS and merged["failures"] == []
    assert merged["variants"] == local["variants"]  # the same timings, each with its own copy
    assert merged["copy"] == local["copy"]
    # the GPU models joined; which worker ran which share is the scheduler's choice
    models = [g.name for g in MIXED]
    assert sorted(merged["info"]["gpu_name"].split(" + ")) == sorted(local["info"]["gpu_name"].split(" + ")) == models
    shares = [load(cluster / f"bench.job{n}.json") for n in (0, 1)]
    assert sorted(s["info"]["gpu_name"] for s in shares) == models
    assert sorted(len(s["variants"]) for s in shares) == [2, 3]
    assert merged["info"]["suite"] == str(CPU_SUITE) and merged["info"]["repeats"] == 20


def test_a_share_whose_child_fails_names_its_gpu_and_log(tmp_path, monkeypatch, capsys):
    use_gpus(tmp_path, monkeypatch, H200, H200[:1])  # GPU 1's child finds no GPU
    assert bench_cli(tmp_path / "runs", "--cluster", "local") == 3
    run = only_run(tmp_path / "runs")
    merged = load(run / "bench.json")
    failed = [f"{f['family']}/{f['variant']}" for f in merged["failures"]]
    timed = [f"{v['family']}/{v['variant']}" for v in merged["variants"]]
    assert sorted(failed + timed) == sorted(LABELS) and failed and timed
    messages = {f["message"] for f in merged["failures"]}
    assert len(messages) == 1
    (message,) = messages
    where, _, log = message.rpartition("; see ")
    why = f"memlens: error: no usable CUDA GPU: {H200[1].uuid} is none of the fake bench's GPUs"
    assert where.startswith("GPU 1 (NVIDIA H200) on ") and where.endswith(f": {why}")
    assert log in ("bench.job0.log", "bench.job1.log") and (run / log).is_file()
    assert not (run / log.replace(".log", ".json")).exists()
    assert (run / log).read_text().strip().splitlines()[-1] == why
    err = capsys.readouterr().err
    assert f"{len(failed)} of 5 variants were not timed, first {failed[0]}: failed: GPU 1 (NVIDIA H200) on " in err


def test_cluster_and_gpus_are_one_or_the_other(tmp_path, capsys):
    assert bench_cli(tmp_path / "runs", "--cluster", "local", "--gpus", "all") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "memlens: error: --gpus and --cluster both share the variants out: give one (--cluster local "
        "uses this host's GPUs)"
    ]
    assert not (tmp_path / "runs").exists()


def test_without_distributed_the_cluster_extra_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert bench_cli(tmp_path / "runs", "--cluster", "local") == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith('pip install "memlens[cluster]"')
    assert not (tmp_path / "runs").exists()


def test_bad_options_are_refused_before_a_cluster_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("memlens.bench.cluster.connect", lambda address: pytest.fail("a cluster was started"))
    assert bench_cli(tmp_path / "runs", "--cluster", "local", "-k", "nothing") == 2
    assert "matches -k 'nothing'" in capsys.readouterr().err and not (tmp_path / "runs").exists()


def test_bench_imports_no_dask_until_cluster_is_given():
    code = (
        "import sys; import memlens.commands.bench, memlens.bench.cluster, memlens.bench.cluster_worker; "
        "print(any(m.split('.')[0] in ('dask', 'distributed') for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "False"


# --- faults: a worker killed mid-share, Ctrl-C --------------------------------------------------------


def test_a_worker_killed_mid_share_has_its_share_retried_and_nothing_is_lost(tmp_path, monkeypatch):
    use_gpus(tmp_path, monkeypatch, H200, H200)
    record = tmp_path / "children.jsonl"
    monkeypatch.setenv("FAKE_BENCH_RECORD", str(record))
    go_on = tmp_path / "go-on"  # every child waits until the worker is killed: no share ends before
    monkeypatch.setenv("FAKE_BENCH_HOLD", str(go_on))
    killer = go_on_after(go_on, lambda: kill_worker_of(lambda: recorded(record), 0))
    assert bench_cli(tmp_path / "runs", "--cluster", "local") == 0
    killer.join()
    assert len(recorded(record)) == 3  # the killed share ran again
    run = only_run(tmp_path / "runs")
    merged = load(run / "bench.json")
    assert [f"{v['family']}/{v['variant']}" for v in merged["variants"]] == LABELS and merged["failures"] == []
    assert sorted(p.name for p in run.glob("bench.job*")) == [
        "bench.job0.json",
        "bench.job0.log",
        "bench.job1.json",
        "bench.job1.log",
    ]


def test_a_share_whose_workers_die_twice_fails_saying_so_and_the_other_is_kept(tmp_path, monkeypatch, capsys):
    use_gpus(tmp_path, monkeypatch, H200, H200)
    record = tmp_path / "children.jsonl"
    monkeypatch.setenv("FAKE_BENCH_RECORD", str(record))
    go_on = tmp_path / "go-on"  # every child waits until the retry's worker is killed too
    monkeypatch.setenv("FAKE_BENCH_HOLD", str(go_on))
    killed: list[dict] = []  # the retry: a later child with the killed one's -k
    killer = go_on_after(go_on, lambda: kill_worker_twice(lambda: recorded(record), lambda c: c["k"], killed))
    assert bench_cli(tmp_path / "runs", "--cluster", "local") == 3
    killer.join()
    assert len(killed) == 2
    merged = load(only_run(tmp_path / "runs") / "bench.json")
    failed = {f"{f['family']}/{f['variant']}": f["message"] for f in merged["failures"]}
    timed = [f"{v['family']}/{v['variant']}" for v in merged["variants"]]
    assert sorted([*timed, *failed]) == sorted(LABELS) and timed  # the other share's timings kept
    assert sorted(failed) == sorted(re.sub(r"[\\^$()?:]", "", killed[0]["k"]).split("|"))
    (message,) = set(failed.values())
    assert re.fullmatch(
        r"job \d failed: attempt 1: its worker tcp://\S+ died while running it; "
        r"attempt 2: its worker tcp://\S+ died while running it",
        message,
    ), message


def test_ctrl_c_ends_every_child_and_writes_no_bench_json(tmp_path):
    tag = uuid.uuid4().hex
    record = tmp_path / "children.jsonl"
    (tmp_path / "bin").mkdir()
    fake_smi(tmp_path / "bin", H200)
    scratch = tmp_path / "scratch"  # the workers' share folders
    scratch.mkdir()
    env = {
        **os.environ,
        **fake_bench_env(tmp_path / "site", {g.uuid: g.name for g in H200}),
        MARKER: tag,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "FAKE_BENCH_RECORD": str(record),
        "FAKE_BENCH_SLEEP": "60",
        "TMPDIR": str(scratch),
    }
    runs = tmp_path / "runs"
    argv = [sys.executable, "-m", "memlens", "bench", str(CPU_SUITE), "--out", str(runs), "--cluster", "local"]
    done = interrupt_when(argv, tmp_path, env, lambda: len(recorded(record)) >= 2)
    err, took = done.err, done.seconds
    assert done.returncode == 3 and "Traceback" not in err, err
    assert took < STOP_GRACE_S  # the stop event ended the children: no share was waited for to the end
    run = only_run(runs)
    assert err.splitlines()[-1] == (
        f"memlens: interrupted 0 of 2 shares had finished (their bench.job files are in {run}); no bench.json written"
    )
    assert list(run.iterdir()) == []
    assert done.left == [] and not list(scratch.glob("memlens-bench-share-*"))  # no child, no scratch


def test_an_earlier_bench_clusters_files_are_never_written_over(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("memlens.bench.cluster.connect", lambda address: pytest.fail("a cluster was started"))
    run = tmp_path / "run"
    run.mkdir()
    (run / "bench.job0.json").write_text("earlier")
    assert main(["bench", str(CPU_SUITE), "--cluster", "local", "--into", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"memlens: error: {run / 'bench.job0.json'}: exists (from an earlier bench --cluster); bench into another run"
    ]
    assert sorted(p.name for p in run.iterdir()) == ["bench.job0.json"]
    assert (run / "bench.job0.json").read_text() == "earlier"


def test_the_scheduler_gone_keeps_what_finished(tmp_path, monkeypatch, capsys):
    use_gpus(tmp_path, monkeypatch, H200, H200)
    tag = uuid.uuid4().hex
    env = {**os.environ, MARKER: tag}
    out = tmp_path / "runs"
    workers = [
        {"CUDA_VISIBLE_DEVICES": gpu.uuid, "FAKE_BENCH_SLEEP": sleep}
        for gpu, sleep in zip(H200, ("0", "60"), strict=True)
    ]  # GPU 1's share hangs
    try:
        with (
            external_cluster(tmp_path, env, workers) as (address, processes),  # both workers in: 2 shares
            scheduler_killed_once(processes[0], out, "*/bench.job*.json"),
        ):
            assert bench_cli(out, "--cluster", address) == 3
    finally:
        for pid in marked_processes(tag):  # the hung share's bench child, should its worker have left it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    run = only_run(out)
    merged = load(run / "bench.json")
    timed = [f"{v['family']}/{v['variant']}" for v in merged["variants"]]
    failed = {f"{f['family']}/{f['variant']}": f["message"] for f in merged["failures"]}
    assert sorted([*timed, *failed]) == sorted(LABELS) and timed and failed
    (back,) = run.glob("bench.job*.json")  # the share that came back; the other's job number is in its message
    lost = 1 - int(back.name.removeprefix("bench.job").removesuffix(".json"))
    assert set(failed.values()) == {f"job {lost} failed: attempt 1: the scheduler went away"}
    assert merged["info"]["gpu_name"] == "NVIDIA H200"
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"memlens: error: {len(failed)} of 5 variants were not timed, first ")


def test_a_share_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    use_gpus(tmp_path, monkeypatch, H200, H200)

    def disk_full(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("memlens.bench.cluster.write_new_bytes", disk_full)
    assert bench_cli(tmp_path / "runs", "--cluster", "local") == 2
    err = capsys.readouterr().err.strip().splitlines()
    run = only_run(tmp_path / "runs")
    assert len(err) == 1 and re.fullmatch(
        rf"memlens: error: {re.escape(str(run))}/bench\.job\d\.log: cannot write it \(No space left on device\)", err[0]
    ), err
    assert list(run.iterdir()) == []
