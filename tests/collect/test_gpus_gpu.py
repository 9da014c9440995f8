"""GPU tier, two GPUs or more: `memlens profile --gpus all` of the built-in suite (small sizes) writes
one merged run: every variant once, each kernel with the GPU that ran it, each GPU's raw report kept,
the GPUs' runs overlapping in time. Prints the wall time of one GPU and of all, for the closing note
(`pytest -s -m gpu tests/collect/test_gpus_gpu.py`; MEMLENS_GPUS_DEFAULT_SIZES=1 for the suite's default sizes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from memlens.collect.gpus import list_gpus
from memlens.suite import load_suite
from tests.conftest import REPO
from tests.support.family_runs import memlens_profile as profile

pytestmark = pytest.mark.gpu
SIZES = [] if os.environ.get("MEMLENS_GPUS_DEFAULT_SIZES") else ["--small"]


def gpus():
    try:
        return list_gpus()
    except Exception:  # noqa: BLE001 - no nvidia-smi: no GPU to share out over
        return ()


def memlens_profile(out, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = profile(out, str(REPO / "kernels"), *SIZES, *extra, timeout=900)
    return done, time.monotonic() - started


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    available = gpus()
    if len(available) < 2:
        pytest.skip(f"needs 2 or more GPUs; this machine has {len(available)}")
    out = tmp_path_factory.mktemp("runs")
    done, seconds = memlens_profile(out, "--gpus", "all")
    assert done.returncode == 0, done.stderr
    print(f"\nmemlens profile {' '.join(SIZES)} --gpus all on {len(available)} GPUs: {seconds:.1f} s wall")
    return (out / "latest").resolve(), available


def test_every_variant_once_and_each_kernels_gpu(merged):
    run_dir, available = merged
    data = json.loads((run_dir / "results.json").read_text())
    labels = sorted(v.label for v in load_suite(REPO / "kernels").variants())
    assert sorted(f"{o['family']}/{o['variant']}" for o in data["outcomes"]) == labels  # each once
    assert {o["status"] for o in data["outcomes"]} == {"ok"}
    assert sorted(f"{k['family']}/{k['variant']}" for k in data["kernels"]) == labels
    by_index = {gpu.index: gpu for gpu in available}
    ran_on = {f"{o['family']}/{o['variant']}": o["gpu_index"] for o in data["outcomes"]}
    for kernel in data["kernels"]:
        gpu = by_index[kernel["gpu_index"]]
        assert kernel["gpu_index"] == ran_on[f"{kernel['family']}/{kernel['variant']}"]
        assert (kernel["gpu_name"], kernel["gpu_uuid"]) == (gpu.name, gpu.uuid)
    used = sorted(set(ran_on.values()))
    assert used == sorted(by_index)[: len(used)] and len(used) >= 2
    for index in used:
        assert (run_dir / f"profile.gpu{index}.ncu-rep").stat().st_size > 0
        assert (run_dir / f"ncu.gpu{index}.log").is_file()


def test_the_gpus_ran_at_once(merged):
    """Each GPU's events file spans its run: the spans overlap (ncu did not serialize the GPUs)."""
    run_dir, _ = merged
    spans = []
    for path in sorted(run_dir.glob("events.gpu*.jsonl")):
        times = [json.loads(line)["time"] for line in path.read_text().splitlines() if line.strip()]
        spans.append((min(times), max(times)))
    assert len(spans) >= 2
    assert max(start for start, _ in spans) < min(end for _, end in spans), spans


def test_wall_time_of_one_gpu_beside_all(merged, tmp_path):
    """Not pass/fail on speed: prints the single-GPU wall time to set beside the one printed above."""
    done, seconds = memlens_profile(tmp_path / "one")
    assert done.returncode == 0, done.stderr
    print(f"\nmemlens profile {' '.join(SIZES)} on one GPU: {seconds:.1f} s wall")


LATE_NCU = """#!{python}
import json, os, shutil, subprocess, sys, time
from pathlib import Path

argv = sys.argv[1:]
real = {real!r}
if "--claims" in argv and os.environ.get("CUDA_VISIBLE_DEVICES") != {first!r}:
    claims = Path(argv[argv.index("--claims") + 1])  # start once the first GPU's program took every case
    count = sum(len(unit["cases"]) for unit in json.loads((claims / "units.json").read_text()))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(claims.glob("*.claim"))) < count:
        time.sleep(0.05)
    code = subprocess.call([real, *argv])
    Path({record!r}).write_text(str(code))
    sys.exit(code)
os.execv(real, [real, *argv])
"""


def test_a_program_that_finds_every_unit_taken_is_no_error_under_real_ncu(tmp_path):
    """Real ncu over a program that took no unit (the other GPU's took them all): its exit code, and the run."""
    available = gpus()
    if len(available) < 2:
        pytest.skip(f"needs 2 or more GPUs; this machine has {len(available)}")
    real = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    wrapper, record = tmp_path / "late_ncu", tmp_path / "late_ncu.exit"
    wrapper.write_text(LATE_NCU.format(python=sys.executable, real=real, first=available[0].uuid, record=str(record)))
    wrapper.chmod(0o755)
    done, _ = memlens_profile(tmp_path / "runs", "-k", "transpose", "--gpus", "0,1", "--ncu", str(wrapper))
    assert done.returncode == 0, done.stderr
    print(f"\nreal ncu's exit code over a program that took no unit: {record.read_text()}")
    assert record.read_text() == "0"
    run = (tmp_path / "runs" / "latest").resolve()
    data = json.loads((run / "results.json").read_text())
    assert {o["status"] for o in data["outcomes"]} == {"ok"} and data["complete"] is True
    assert {o["gpu_index"] for o in data["outcomes"]} == {available[0].index}
    assert not (run / f"profile.gpu{available[1].index}.ncu-rep").exists()
