"""Issue 45 on a GPU: `memlens profile` of tests/fixtures/programs/library_kernels_app.py, then `metrics`,
`lines` and the report on its run: each library's kernel named, none told to compile with line info, Inductor's
kept as the program's own with its lines in the file Inductor generated. Needs ncu, PyTorch and Triton (CuPy
optional). The same assertions on the recorded run: tests/model/test_libraries.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.gpu
APP = REPO / "tests" / "fixtures" / "programs" / "library_kernels_app.py"
# the range -> the library of its kernels (any of them; a sort also launches ATen's own kernels)
EXPECTED = {
    "lib/bf16_gemm": "cuBLAS",
    "lib/fp32_gemm": "cuBLAS",
    "lib/gemv": "cuBLAS",
    "lib/conv": "cuDNN",
    "lib/sdpa_cudnn": "cuDNN",
    "lib/sdpa_flash": "FlashAttention",
    "lib/sdpa_mem_efficient": "xFormers",
    "lib/softmax": "PyTorch",
    "lib/sort": "CUB",
    "lib/inductor": "Inductor",
    "lib/cupy_multiply": "CuPy",
    "lib/cupy_rowsum": "CUB",
}


def _memlens(*argv: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memlens", *argv], capture_output=True, text=True, env=env, cwd=REPO, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    pytest.importorskip("torch")
    work = tmp_path_factory.mktemp("libraries")
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor"),
    }
    _memlens(
        "profile",
        "--out",
        str(work / "runs"),
        "--clock-control",
        os.environ.get("MEMLENS_CLOCK_CONTROL", "none"),
        "--roofline",
        "--timeout",
        "900",
        "--",
        sys.executable,
        str(APP),
        env=env,
    )
    return (work / "runs" / "latest").resolve(), env


def test_every_librarys_kernel_is_named(run):
    path, env = run
    kernels = json.loads(_memlens("metrics", str(path), "--json", env=env))["kernels"]
    found: dict[str, set[str | None]] = {}
    for kernel in kernels:
        # the label without " (process 1)": torch.compile's workers are processes of the program too
        found.setdefault(re.sub(r" \(process \d+\)$", "", kernel["label"]), set()).add(kernel["library"])
    for label, library in EXPECTED.items():
        if label in found:  # a backend this GPU or this PyTorch lacks is left out of the program
            assert library in found[label], (label, found[label])
    assert {"lib/bf16_gemm", "lib/softmax", "lib/inductor"} <= set(found)


def test_no_library_kernel_is_told_to_compile_with_line_info(run):
    path, env = run
    kernels = json.loads(_memlens("lines", str(path), "--json", "--top", "0", env=env))["kernels"]
    libraries = [k for k in kernels if k["library"] and k["library"] != "Inductor"]
    assert libraries and all(k["hint"] is None for k in libraries)
    assert all(k["notes"][0].startswith(f"{k['library']}") for k in libraries)
    inductor = [k for k in kernels if k["library"] == "Inductor"]
    assert inductor and all(k["line_info"] for k in inductor if k["lines"])  # Triton's line info, Inductor's file
    files = {line["file"] for k in inductor for line in k["lines"] if line["file"]}
    assert all("inductor" in file for file in files), files  # the module Inductor generated, in its cache
    assert "compile with -lineinfo" not in _memlens("lines", str(path), "-k", "gemm|sdpa|conv", env=env)
