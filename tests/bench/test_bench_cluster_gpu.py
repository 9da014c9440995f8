"""GPU tier: `memlens bench --small --cluster local` (a Dask cluster of this host's GPUs, one worker a GPU)
times the variants `--gpus all` times, each share's bench.json kept as bench.job<n>.json, the GPU models
joined (`pytest -s -m gpu tests/bench/test_bench_cluster_gpu.py`; needs memlens[cluster]; one GPU will do)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlens.suite import load_suite
from tests.collect.test_gpus_gpu import gpus
from tests.conftest import REPO

pytestmark = pytest.mark.gpu
pytest.importorskip("distributed")
SUITE = REPO / "kernels"


def memlens_bench(out: Path, *extra: str) -> tuple[dict, float]:
    """The bench's merged bench.json (and its wall time), from a process of its own (--gpus with one GPU
    benches in its own process, and sets CUDA_VISIBLE_DEVICES there)."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    started = time.monotonic()
    argv = [sys.executable, "-m", "memlens", "bench", str(SUITE), "--small", "--repeats", "20", "--out", str(out)]
    done = subprocess.run([*argv, *extra], capture_output=True, text=True, env=env, timeout=900)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    (run,) = out.iterdir()
    return json.loads((run / "bench.json").read_text()) | {"run": str(run)}, seconds


def test_bench_cluster_local_times_what_gpus_all_times(tmp_path):
    available = gpus()
    if not available:
        pytest.skip("nvidia-smi lists no GPU")
    local, seconds_local = memlens_bench(tmp_path / "gpus", "--gpus", "all")
    cluster, seconds_cluster = memlens_bench(tmp_path / "cluster", "--cluster", "local")
    print(
        f"\nbench --small --gpus all {seconds_local:.1f} s, --cluster local {seconds_cluster:.1f} s "
        f"on {len(available)} GPUs"
    )
    labels = [v.label for v in load_suite(SUITE).variants()]
    for data in (local, cluster):
        assert [f"{v['family']}/{v['variant']}" for v in data["variants"]] == labels
        assert data["failures"] == []
        assert all(v["times"]["median_ms"] > 0 for v in data["variants"])
    assert [v["size"] for v in cluster["variants"]] == [v["size"] for v in local["variants"]]
    assert [v["min_bytes"] for v in cluster["variants"]] == [v["min_bytes"] for v in local["variants"]]
    assert sorted(cluster["info"]["gpu_name"].split(" + ")) == sorted(local["info"]["gpu_name"].split(" + "))
    jobs = min(len(available), len(labels))
    run = Path(cluster["run"])
    assert sorted(p.name for p in run.glob("bench.job*.json")) == [f"bench.job{n}.json" for n in range(jobs)]
    shares = [json.loads((run / f"bench.job{n}.json").read_text()) for n in range(jobs)]
    assert sorted(f"{v['family']}/{v['variant']}" for s in shares for v in s["variants"]) == sorted(labels)
    assert {s["info"]["gpu_name"] for s in shares} == {g.name for g in available}
