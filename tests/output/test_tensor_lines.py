"""profiling/output/tensor_lines.py and `memlens metrics`' tensor figures on the H200 tensor fixture (issue 45)."""

from __future__ import annotations

import json
from pathlib import Path

from memlens.cli import main
from memlens.model.results import KernelResult, RunInfo, RunResults
from memlens.output.tensor_lines import tensor_lines
from memlens.readers import read_report
from tests.support.packed import unpacked

REPORT = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_h200" / "tensor" / "tensor_full.ncu-rep.xz"


def test_a_line_a_kernel_with_tensor_work_naming_its_roof() -> None:
    results = read_report(unpacked(REPORT))
    lines = tensor_lines(results, results.kernels)
    assert lines[0] == (
        "gemm/cublas_bf16: tensor cores: 137,438,953,472 FLOPs, 775 TFLOP/s;"
        " on the bf16 tensor (dense) roof: 775 TFLOP/s of 858 TFLOP/s (90.3%)"
    )
    assert (
        lines[2].startswith("sdpa/flash: tensor cores: 137,438,953,472 FLOPs")
        and "fp16 HMMA tensor (dense)" in lines[2]
    )
    assert len(lines) == 4  # softmax: none


def test_no_line_where_tensor_work_was_not_measured() -> None:
    kernel = KernelResult("k", raw={"duration": 1000.0, "fp32_ffma_inst": 10.0})
    assert tensor_lines(RunResults(RunInfo(), (kernel,)), [kernel]) == []


def test_metrics_json_carries_tensor_figures(capsys) -> None:
    assert main(["metrics", str(unpacked(REPORT)), "--json"]) == 0
    kernels = {k["label"]: k["metrics"] for k in json.loads(capsys.readouterr().out)["kernels"]}
    gemm = kernels["gemm/cublas_bf16"]
    assert gemm["tensor_flops"] == {"value": 137438953472.0, "unit": "FLOP"}
    assert gemm["tensor_ops_hgmma_bf16"]["value"] == 2 * 4096**3
    assert gemm["peak_tensor_hgmma_bf16_per_cycle"] == {"value": 540672.0, "unit": "FLOP/cycle"}
    assert kernels["softmax/aten"]["tensor_flop_rate"]["value"] == 0
