"""GPU tier: a training loop of 10 steps (tests/benchmarks/train_loop.py: an MLP with a
Triton activation, AdamW, each step in memlens.range "train/step") profiled with no option (the
default, `--launches first`): each distinct kernel (function, grid, block, shared memory) once, the backward
kernels among them (PyTorch launches them from its autograd thread: the range's start/end half covers
them), the last step's smaller batch profiled once more, and the step range's 10 runs reported.
Needs ncu, PyTorch and Triton."""

from __future__ import annotations

import json
import sys
from collections import Counter

import pytest

from tests.collect.test_program_run_gpu import memlens_profile
from tests.conftest import REPO

pytestmark = pytest.mark.gpu
LOOP = REPO / "tests" / "benchmarks" / "train_loop.py"
STEPS, LAYERS = 10, 3


@pytest.fixture(scope="module")
def loop_run(tmp_path_factory):
    for module in ("torch", "triton"):
        pytest.importorskip(module)
    out = tmp_path_factory.mktemp("train-loop")
    done = memlens_profile(
        out,
        "--",
        sys.executable,
        str(LOOP),
        "--steps",
        str(STEPS),
        "--layers",
        str(LAYERS),
        "--batch",
        "256",
        "--width",
        "512",
        "--last-batch",
        "64",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = (out / "latest").resolve()
    return json.loads((run / "results.json").read_text()), done.stdout


def key(kernel: dict) -> tuple:
    raw = kernel["raw"]
    return kernel["kernel"], raw.get("grid_size"), raw.get("block_size"), raw.get("dynamic_shared_per_block")


def test_each_distinct_kernel_is_profiled_once(loop_run):
    data, stdout = loop_run
    keys = Counter(key(k) for k in data["kernels"])
    assert keys and max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]
    # far fewer than the loop's launches (about 30 a step with 3 layers)
    assert len(data["kernels"]) < 10 * STEPS
    assert data["info"]["launches"] == "first" and data["info"]["warm_up"] == 0
    assert "of each distinct kernel (function, grid, block, shared memory)" in stdout


def test_forward_and_backward_kernels_are_profiled(loop_run):
    data, _ = loop_run
    names = [k["kernel"] for k in data["kernels"]]
    assert any("act_forward" in name for name in names)
    assert any("act_backward" in name for name in names), names  # launched from the autograd thread
    for kernel in data["kernels"]:
        if "act_backward" in kernel["kernel"]:
            assert kernel["nvtx"] == "train/step"  # labelled by the step's start/end range


def test_the_smaller_last_batch_is_profiled_once_more(loop_run):
    data, _ = loop_run
    grids = {k["raw"]["grid_size"] for k in data["kernels"] if "act_forward" in k["kernel"]}
    assert len(grids) == 2  # 256 and 64 rows of 512: two grids of the one Triton kernel


def test_the_step_range_runs_are_reported(loop_run):
    data, _ = loop_run
    assert {k.get("range_runs") for k in data["kernels"] if k["nvtx"] == "train/step"} == {STEPS}
