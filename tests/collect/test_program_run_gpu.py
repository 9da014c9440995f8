"""GPU tier: `memlens profile -- COMMAND` on programs that are not suites (tests/fixtures/programs/):
the CUDA C++ binary built with nvcc, and the PyTorch + Triton script. Checks the labels their NVTX
ranges give and the figures the kernels are written to show. Needs ncu, nvcc, PyTorch and Triton."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.family_runs import memlens_profile

pytestmark = pytest.mark.gpu
PROGRAMS = REPO / "tests" / "fixtures" / "programs"
CUDA_APP_LABELS = {
    "transpose/conflict",
    "transpose/padded",
    "transpose/store_conflict",
    "copy/float2_shared",
    "local/running_sum",
    "cudaapp@spill/capped",
}


def kernels(run_dir: Path) -> dict[str, dict]:
    data = json.loads((run_dir / "results.json").read_text())
    return {f"{k['family']}/{k['variant']}" if k["family"] else k["nvtx"]: k for k in data["kernels"]}


@pytest.fixture(scope="module")
def cuda_app(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    work = tmp_path_factory.mktemp("cuda_app")
    binary = work / "cuda_app"
    subprocess.run(
        ["nvcc", "-lineinfo", "-arch=sm_90", "-o", str(binary), str(PROGRAMS / "cuda_app.cu")], check=True, timeout=300
    )
    return binary


def test_cuda_binary_kernels_are_labelled_and_measured(cuda_app, tmp_path):
    done = memlens_profile(
        tmp_path, "--nvtx-include", "regex:.*/", "--nvtx-include", "regex:cudaapp@.*/", "--", str(cuda_app)
    )
    assert done.returncode == 0, done.stderr
    found = kernels((tmp_path / "latest").resolve())
    assert set(found) == CUDA_APP_LABELS
    assert found["transpose/conflict"]["nvtx"] == "iteration > transpose/conflict"
    raw = {label: k["raw"] for label, k in found.items()}
    conflict, padded = raw["transpose/conflict"], raw["transpose/padded"]
    assert conflict["shared_wavefronts"] - conflict["shared_wavefronts_ideal"] > 0
    assert padded["shared_wavefronts"] == padded["shared_wavefronts_ideal"]
    assert raw["local/running_sum"]["local_ld_sectors"] > 0
    assert raw["cudaapp@spill/capped"]["local_st_sectors"] > 0
    report = tmp_path / "report.md"
    assert (
        subprocess.run(
            [sys.executable, "-m", "memlens", "report", str(tmp_path / "latest"), "--format", "md", "-o", str(report)],
            cwd=REPO,
            timeout=120,
        ).returncode
        == 0
    )
    # a program's ranges are not a suite's variants: no baseline, no speedups (issue 48)
    assert "### ranges `transpose/…` (a program's ranges: no speedups between them)" in report.read_text()


def test_cuda_binary_default_filters_take_every_domain(cuda_app, tmp_path):
    done = memlens_profile(tmp_path, "--", str(cuda_app))
    assert done.returncode == 0, done.stderr
    assert set(kernels((tmp_path / "latest").resolve())) == CUDA_APP_LABELS


def test_cuda_binary_exclude_drops_a_domain(cuda_app, tmp_path):
    done = memlens_profile(tmp_path, "--nvtx-exclude", "regex:cudaapp@.*/", "--", str(cuda_app))
    assert done.returncode == 0, done.stderr
    assert set(kernels((tmp_path / "latest").resolve())) == CUDA_APP_LABELS - {"cudaapp@spill/capped"}


TORCH_APP_RANGES = ("triton_add", "bf16_matmul", "softmax", "transpose_copy")  # its "torchapp" domain's


def torch_app(tmp_path: Path, *options: str) -> list[dict]:
    """The kernels of torch_triton_app.py profiled with `options`; its "torchapp" domain needs the nvtx package."""
    for module in ("torch", "triton", "nvtx"):
        pytest.importorskip(module)
    done = memlens_profile(tmp_path, *options, "--", sys.executable, str(PROGRAMS / "torch_triton_app.py"))
    assert done.returncode == 0, done.stderr
    return json.loads(((tmp_path / "latest").resolve() / "results.json").read_text())["kernels"]


def in_range(found: list[dict], label: str) -> list[dict]:
    return [k for k in found if k["nvtx"] and label in k["nvtx"].split(" > ")]


def test_torch_triton_default_filters_take_the_default_and_the_own_domain(tmp_path):
    # no filter option: the default filters; every launch, for add_kernel runs with one grid in two ranges
    found = torch_app(tmp_path, "--launches", "all")
    # the default domain: "step" > "add/torch", "add/triton", grouped as family "add"
    variants = {k["variant"]: k for k in found if k["family"] == "add"}
    assert set(variants) == {"torch", "triton"}
    assert variants["triton"]["kernel"] == "add_kernel"
    assert variants["triton"]["nvtx"] == "step > add/triton"
    assert variants["torch"]["raw"]["duration"] > 0
    # the program's own domain, labelled with it
    for name in TORCH_APP_RANGES:
        assert in_range(found, f"torchapp@{name}"), f"no kernel labelled torchapp@{name}: {[k['nvtx'] for k in found]}"
    assert [k["kernel"] for k in in_range(found, "torchapp@triton_add")] == ["add_kernel"]


def test_torch_triton_exclude_drops_one_range(tmp_path):
    found = torch_app(tmp_path, "--launches", "all", "--nvtx-exclude", "torchapp@softmax/")
    assert not in_range(found, "torchapp@softmax")
    for name in ("triton_add", "bf16_matmul", "transpose_copy"):
        assert in_range(found, f"torchapp@{name}")
    assert {k["variant"] for k in found if k["family"] == "add"} == {"torch", "triton"}


def test_torch_triton_default_launches_profile_a_kernel_and_shape_once(tmp_path):
    """ncu keys a launch by function and shape, not range: with the default `--launches first`, the
    Triton add launched with one grid in two ranges is profiled in the first only (docs/which-launches.md)."""
    found = torch_app(tmp_path)
    assert [k["nvtx"] for k in found if k["kernel"] == "add_kernel"] == ["torchapp@triton_add"]
    for name in TORCH_APP_RANGES:
        assert in_range(found, f"torchapp@{name}")


def test_failing_program_exit_3(tmp_path):
    done = memlens_profile(tmp_path, "--", sys.executable, "-c", "import sys; sys.exit('boom')")
    assert done.returncode == 3
    assert "exited with status 1: boom" in done.stderr


GEMM_WORDS = ("gemm", "cutlass", "xmma", "matmul")


def test_push_pop_step_ranges_get_the_backward_kernels(tmp_path):
    """Issue 34: a PyTorch loop with a plain torch.cuda.nvtx.range_push/range_pop around each step, default
    options: backward runs on PyTorch's autograd thread, and --nvtx-push-pop-scope process (memlens's
    default) puts its kernels inside the step's range: the Triton activation's backward and more than the
    forward's GEMM are profiled, labelled by the step."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    loop = REPO / "tests" / "benchmarks" / "train_loop.py"
    done = memlens_profile(tmp_path, "--", sys.executable, str(loop), "--steps", "5", "--ranges", "push-pop")
    assert done.returncode == 0, done.stderr
    data = json.loads(((tmp_path / "latest").resolve() / "results.json").read_text())
    assert data["info"]["push_pop_scope"] == "process"
    names = [k["kernel"] for k in data["kernels"]]
    assert any("act_backward" in name for name in names), names
    gemms = {
        (k["kernel"], k["raw"].get("grid_size"))
        for k in data["kernels"]
        if any(word in k["kernel"].lower() for word in GEMM_WORDS)
    }
    # forward: one GEMM shape a layer; backward adds the weight gradient's (width x width) and the input's
    assert len(gemms) >= 2, gemms
    backward = next(k for k in data["kernels"] if "act_backward" in k["kernel"])
    # selected through the process-wide range, but ncu records push/pop ranges per thread: the autograd
    # thread's launch carries no range of its own (seen on the H100, ncu 2025.3.1)
    assert backward["nvtx"] is None, backward["nvtx"]


def test_cupy_reduction_is_profiled_in_the_program_range_not_its_warm_up(tmp_path):
    """Issue 34: the warm-up of cupy.sum(x, axis=1) runs inside CUB's own CCCL range only; the default
    selects the program's own ranges, so the launch inside memlens.range("cupy/rowsum") is the one profiled."""
    pytest.importorskip("cupy")
    pytest.importorskip("nvtx")
    done = memlens_profile(tmp_path, "--", sys.executable, str(PROGRAMS / "cupy_rowsum_app.py"))
    assert done.returncode == 0, done.stderr
    data = json.loads(((tmp_path / "latest").resolve() / "results.json").read_text())
    labels = [(k["family"], k["variant"], k["nvtx"]) for k in data["kernels"]]
    assert labels and all((family, variant) == ("cupy", "rowsum") for family, variant, _ in labels), labels
    assert any("CCCL@" in nvtx for _, _, nvtx in labels), labels  # CUB's range adds to the label
    assert data["info"]["ranges_not_profiled"] is None
    assert "the program's own ranges" in data["info"]["ranges_selected"]


def test_a_kernel_in_two_named_ranges_is_profiled_in_each(tmp_path):
    """Issue 45: the same copy kernel, grid and block, in copy/aligned and copy/misaligned (memlens.range), then
    scale three times in step. The first pass profiles the copy once (ncu keys a kernel without its range); the
    counted range copy/misaligned held no profiled launch, so a second pass selects it by name and profiles it."""
    pytest.importorskip("cupy")
    pytest.importorskip("nvtx")
    done = memlens_profile(tmp_path, "--", sys.executable, str(PROGRAMS / "two_ranges_app.py"))
    assert done.returncode == 0, done.stderr
    assert "running the program once more selecting them" in done.stderr
    run = (tmp_path / "latest").resolve()
    data = json.loads((run / "results.json").read_text())
    profiled = sorted((k["kernel"].split("(")[0], k["nvtx"]) for k in data["kernels"])
    assert profiled == [("copy", "copy/aligned"), ("copy", "copy/misaligned"), ("scale", "step")], profiled
    assert data["info"]["ranges_not_profiled"] is None
    assert data["info"]["ranges_second_pass"] == "--nvtx-include 'regex:^copy.misaligned$/'"
    assert data["info"]["source"] == "profile.ncu-rep, profile.ranges.ncu-rep"
    # misaligned by 4 bytes: 5 sectors a warp's request instead of 4 (the file's note on paper)
    by_range = {k["nvtx"]: k["raw"] for k in data["kernels"]}
    aligned, misaligned = by_range["copy/aligned"], by_range["copy/misaligned"]
    assert aligned["exact_global_ld_sectors"] == aligned["exact_global_ld_sectors_ideal"]
    assert misaligned["exact_global_ld_sectors"] == 1.25 * misaligned["exact_global_ld_sectors_ideal"]


def test_each_range_profiles_a_kernel_in_two_plain_nvtx_ranges(tmp_path):
    """Issue 45, plain NVTX ranges (two_ranges.cu: nvtxRangePushA, nothing counts them): --each-range runs the
    program again leaving out by name the ranges profiled so far; pass 2 finds copy in copy/misaligned, pass 3
    nothing."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    binary = tmp_path / "two_ranges"
    subprocess.run(
        ["nvcc", "-lineinfo", "-arch=sm_90", "-o", str(binary), str(PROGRAMS / "two_ranges.cu"), "-ldl"],
        check=True,
        timeout=300,
    )
    done = memlens_profile(tmp_path / "default", "--", str(binary))
    assert done.returncode == 0, done.stderr
    data = json.loads(((tmp_path / "default" / "latest").resolve() / "results.json").read_text())
    profiled = sorted((k["kernel"].split("(")[0], k["nvtx"]) for k in data["kernels"])
    assert profiled == [("copy", "copy/aligned"), ("scale", "step")], profiled
    done = memlens_profile(tmp_path / "each", "--each-range", "--", str(binary))
    assert done.returncode == 0, done.stderr
    data = json.loads(((tmp_path / "each" / "latest").resolve() / "results.json").read_text())
    profiled = sorted((k["kernel"].split("(")[0], k["nvtx"]) for k in data["kernels"])
    assert profiled == [("copy", "copy/aligned"), ("copy", "copy/misaligned"), ("scale", "step")], profiled
    assert data["info"]["ranges_second_pass"].startswith("--each-range: 2 more passes")
