"""GPU tier, two GPUs or more: `memlens profile --cluster local` (a Dask cluster of this host's GPUs)
gives the run `--gpus all` gives: every case once, the same deterministic counters, each case with the
GPU that ran it (`pytest -s -m gpu tests/collect/test_cluster_gpu.py`; needs memlens[cluster])."""

from __future__ import annotations

import json

import pytest

from tests.collect.test_gpus_gpu import gpus, memlens_profile

pytestmark = pytest.mark.gpu
pytest.importorskip("distributed")
DETERMINISTIC = (
    "exact_excess_wavefronts_ld",
    "exact_excess_wavefronts_st",
    "local_ld_instructions",
    "local_st_instructions",
)


def figures(run) -> dict[str, dict]:
    data = json.loads((run / "results.json").read_text())
    assert {o["status"] for o in data["outcomes"]} == {"ok"} and data["complete"] is True
    return {
        f"{k['family']}/{k['variant']}/{k['kernel']}": {key: k["raw"].get(key) for key in DETERMINISTIC}
        for k in data["kernels"]
    }


def test_cluster_local_equals_gpus_all(tmp_path):
    available = gpus()
    if len(available) < 2:
        pytest.skip(f"needs 2 or more GPUs; this machine has {len(available)}")
    local, seconds_local = memlens_profile(tmp_path / "gpus", "--gpus", "all")
    assert local.returncode == 0, local.stderr
    cluster, seconds_cluster = memlens_profile(tmp_path / "cluster", "--cluster", "local")
    assert cluster.returncode == 0, cluster.stderr
    print(f"\n--gpus all {seconds_local:.1f} s, --cluster local {seconds_cluster:.1f} s on {len(available)} GPUs")
    gpus_run, cluster_run = (tmp_path / "gpus" / "latest").resolve(), (tmp_path / "cluster" / "latest").resolve()
    assert figures(cluster_run) == figures(gpus_run)
    data = json.loads((cluster_run / "results.json").read_text())
    by_uuid = {g.uuid: g for g in available}
    assert len({o["gpu_uuid"] for o in data["outcomes"]}) >= 2
    for outcome in data["outcomes"]:
        assert by_uuid[outcome["gpu_uuid"]].name == outcome["gpu_name"] and outcome["ncu_version"]
    assert sorted(p.name for p in cluster_run.glob("profile.job*.ncu-rep")) == [
        f"profile.job{n}.ncu-rep" for n in range(len(list(cluster_run.glob("profile.job*.ncu-rep"))))
    ]
