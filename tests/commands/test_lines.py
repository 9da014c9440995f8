"""profiling/commands/lines.py (`memlens lines`) on library kernels: named beside the kernel, told what the
user controls, never told to compile with line info (issue 45); the user's own kernels keep the hint.
(The lines themselves: tests/model/test_source_lines.py.)"""

from __future__ import annotations

import json

from memlens.cli import main
from memlens.model.instruction_table import InstructionRecord
from memlens.model.kernel_lines import KernelLines
from memlens.model.results import KernelResult
from memlens.model.source_lines import SourceMap, roll_up
from memlens.output.findings import LinesFindings, findings
from tests.conftest import FIXTURES
from tests.support.packed import unpacked

TORCH = unpacked(
    FIXTURES / "nvidia_h100_80gb_hbm3" / "programs" / "torch_triton.ncu-rep.xz"
)  # no line info, cuBLAS and ATen
CUBLAS_ADVICE = (
    "cuBLAS's kernel: its code is not yours; what you control is the call -- shapes, dtype, layout, batching"
)


def _lines(capsys, *argv: str) -> str:
    assert main(["lines", *argv]) == 0
    return capsys.readouterr().out


def test_a_cublas_kernel_is_named_and_never_told_to_compile_with_line_info(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    out = _lines(capsys, str(TORCH), "-k", "bf16_matmul")
    assert out.startswith("torchapp@bf16_matmul  (nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT)  [cuBLAS]  [launch 1]\n")
    assert "stmatrix stores conflict-free (1-way)" in out  # its figures stay
    assert f"  note: {CUBLAS_ADVICE}\n" in out
    assert "hint:" not in out and "-lineinfo" not in out


def test_no_library_kernel_of_a_recording_is_hinted_at_line_info(capsys):
    data = json.loads(_lines(capsys, str(TORCH), "--json", "--top", "0"))
    libraries = {kernel["label"]: kernel["library"] for kernel in data["kernels"]}
    assert libraries == {
        "torchapp@triton_add": None,
        "torchapp@bf16_matmul": "cuBLAS",
        "torchapp@softmax": "PyTorch",
        "torchapp@transpose_copy": "PyTorch",
        "add/torch": "PyTorch",
        "add/triton": None,
    }
    for kernel in data["kernels"]:
        if kernel["library"]:
            assert kernel["hint"] is None, kernel["label"]
            assert kernel["notes"][0].startswith(f"{kernel['library']}'s kernel: its code is not yours")
        else:  # the program's own Triton kernels, in a report without line info
            assert kernel["hint"].startswith("no line info in this report: compile with -lineinfo")
    matmul = next(kernel for kernel in data["kernels"] if kernel["library"] == "cuBLAS")
    assert matmul["line_info"] is False and matmul["notes"][0] == CUBLAS_ADVICE and matmul["lines"]


def test_the_users_kernel_without_line_info_keeps_the_hint(capsys):
    data = json.loads(_lines(capsys, str(FIXTURES / "probe" / "probe.ncu-rep"), "-k", "transpose/conflict$", "--json"))
    (kernel,) = data["kernels"]
    assert kernel["library"] is None
    assert kernel["hint"].startswith("no line info in this report: compile with -lineinfo")


def _conflicting(name: str) -> KernelLines:
    record = InstructionRecord(
        0x40, "LDS R4, [R2]", "LDS", "shared", "ld", 32, executions=8.0, wavefronts=256.0, ideal=8.0
    )
    kernel = KernelResult(name, instructions=(record,))
    return KernelLines(kernel, tuple(roll_up(kernel.instructions, SourceMap(FIXTURES), name)), False)


def test_the_sarif_and_github_findings_of_a_library_kernel_say_whose_it_is():
    library, mine = _conflicting("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT"), _conflicting("my_kernel(float *)")
    found = findings("lines", LinesFindings((library, mine), source="run"))
    assert [f.properties.get("library") for f in found] == ["cuBLAS", None]
    assert found[0].message.endswith(f"248 excess wavefronts (100% of the kernel's); {CUBLAS_ADVICE}")
    assert "not yours" not in found[1].message
