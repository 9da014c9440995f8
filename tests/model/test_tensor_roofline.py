"""model/tensor_paths.py, model/roofline.py's tensor roofs, the readers' section figures, the report's words (issue 45).

Fixtures: tests/fixtures/nvidia_h200/tensor/tensor_{full,roofline}.ncu-rep.xz, plain `ncu --set full` and
`ncu --set roofline` reports of tests/fixtures/programs/tensor_app.py on an H200 (tests/fixtures/record_tensor.sh).

FLOPs on paper, each checked against the recorded `sm__ops_path_tensor_op_*.sum` before these tests were written:
- cuBLAS bf16 GEMM, M = N = K = 4096: 2*M*N*K = 137,438,953,472 (HGMMA bf16, dense)
- SDPA without a mask, B = 8, H = 16, S = 2048, D = 64: 4*B*H*S^2*D = 137,438,953,472, by cuDNN (HGMMA fp16)
  and by FlashAttention 2 (HMMA fp16 -> fp32, mma.sync)
- Triton fp16 tl.dot matmul, 2048^3: 2*2048^3 = 17,179,869,184 (HGMMA fp16)
- ATen softmax: no tensor-core work.
The shares of peak below are those ncu's own SpeedOfLight_HierarchicalTensorRooflineChart section shows for the
same launches (`<op>.sum.pct_of_peak_sustained_elapsed` in the report, read with ncu_report when written down).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memlens.model.catalogue import CATALOGUE, ncu_metric_names
from memlens.model.results import KernelResult, RunResults, load_results
from memlens.model.roofline import bound, ceilings_of, tensor_ceilings, tensor_work, timed_share
from memlens.model.tensor_paths import TENSOR_PATHS
from memlens.readers import read_report
from memlens.reports.roofline import verdict
from tests.support.packed import unpacked

TENSOR = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_h200" / "tensor"
GEMM = 2 * 4096**3
ATTENTION = 4 * 8 * 16 * 2048**2 * 64
TRITON = 2 * 2048**3
# label -> (path key, tensor FLOPs on paper, ncu's section: % of the path's dense peak in the full report)
ON_PAPER = {
    "gemm/cublas_bf16": ("hgmma_bf16", GEMM, 90.2723718659447),
    "sdpa/cudnn": ("hgmma_fp16", ATTENTION, 47.86993514887124),
    "sdpa/flash": ("hmma_fp16", ATTENTION, 45.421557634252004),
    "gemm/triton_fp16": ("hgmma_fp16", TRITON, 64.424892072319),
}
# the same from the `--set roofline` report (other launches of the same program)
SECTION_ROOFLINE = {
    "sdpa/cudnn": 47.871124841389886,
    "sdpa/flash": 45.40291216813231,
    "gemm/triton_fp16": 65.24557563147043,
}


@pytest.fixture(scope="module")
def full() -> RunResults:
    return read_report(unpacked(TENSOR / "tensor_full.ncu-rep.xz"))


@pytest.fixture(scope="module")
def roofline() -> RunResults:
    return read_report(unpacked(TENSOR / "tensor_roofline.ncu-rep.xz"))


def by_label(results: RunResults) -> dict[str, KernelResult]:
    return {k.label: k for k in results.kernels}


def test_paper_figures() -> None:
    assert GEMM == ATTENTION == 137_438_953_472
    assert TRITON == 17_179_869_184


@pytest.mark.parametrize("report", ["full", "roofline"])
def test_tensor_flops_are_exactly_the_paper_figures(report: str, request: pytest.FixtureRequest) -> None:
    kernels = by_label(request.getfixturevalue(report))
    assert sorted(kernels) == sorted([*ON_PAPER, "softmax/aten"])
    for label, (path, flops, _) in ON_PAPER.items():
        kernel = kernels[label]
        assert kernel.value(f"tensor_ops_{path}") == flops, label
        assert kernel.value(f"tensor_ops_{path}_sparse") == 0, label
        assert kernel.value("tensor_flops") == flops, label
        precision = "bf16" if "bf16" in path else "fp16"
        assert kernel.value(f"tensor_flops_{precision}") == flops, label
        assert kernel.value("tensor_int8_ops") == 0, label
    assert kernels["softmax/aten"].value("tensor_flops") == 0


def test_peaks_a_cycle_as_recorded(full: RunResults) -> None:
    """The H200's peaks per path: dense HGMMA bf16 540,672 a cycle, its sparse form twice that; HMMA's two thirds."""
    gemm = by_label(full)["gemm/cublas_bf16"]
    peaks = {path.key: gemm.value(path.peak_key(False)) for path in TENSOR_PATHS}
    assert peaks == {
        "hgmma_bf16": 540672,
        "hgmma_fp16": 540672,
        "hgmma_tf32": 270336,
        "hmma_bf16": 360448,
        "hmma_fp16": 360448,
        "hmma_fp16_acc16": 360448,
        "hmma_tf32": 180224,
        "fp8": 1081344,
        "fp64": 33792,
        "igmma_int8": 1081344,
        "imma_int8": 720896,
    }
    assert gemm.value("peak_tensor_hgmma_bf16_sparse_per_cycle") == 1081344
    assert gemm.value("peak_tensor_hmma_fp16_sparse_per_cycle") == 540672
    assert "peak_tensor_fp64_sparse_per_cycle" not in CATALOGUE  # DMMA has no sparse form


@pytest.mark.parametrize("report", ["full", "roofline"])
def test_each_kernel_stands_on_its_tensor_roof_at_the_sections_share(
    report: str, request: pytest.FixtureRequest
) -> None:
    results = request.getfixturevalue(report)
    kernels, ceilings = by_label(results), ceilings_of(results)
    for label, (path, flops, share) in ON_PAPER.items():
        kernel = kernels[label]
        where = bound(kernel, ceilings)
        assert where is not None and where.roof is not None, label
        assert (where.roof.path.key, where.roof.sparse, where.work) == (path, False, flops), label
        assert not where.memory_bound, label
        clock = kernel.value("sm_clock")
        assert where.peak_flops == kernel.value(f"peak_tensor_{path}_per_cycle") * clock  # type: ignore[operator]
        expected = share if report == "full" else SECTION_ROOFLINE.get(label)
        if expected is not None:
            assert where.pct_of_limit == pytest.approx(expected, abs=0.01), label
    gemm = bound(kernels["gemm/cublas_bf16"], ceilings)
    assert gemm is not None and gemm.roof is not None and gemm.roof.label == "bf16 tensor (dense)"


def test_intensity_counts_tensor_and_cuda_core_flops(full: RunResults) -> None:
    cudnn = by_label(full)["sdpa/cudnn"]
    assert cudnn.value("flops") == 1_965_065_216  # the softmax inside attention, on CUDA cores
    assert cudnn.value("total_flops") == ATTENTION + 1_965_065_216
    assert cudnn.value("arithmetic_intensity") == pytest.approx((ATTENTION + 1_965_065_216) / 126_059_008)


def test_the_cuda_core_kernel_keeps_its_fp32_placement(full: RunResults) -> None:
    softmax = by_label(full)["softmax/aten"]
    assert tensor_work(softmax) is None
    where = bound(softmax, ceilings_of(full))
    assert where is not None and where.roof is None and where.precision == "fp32" and where.memory_bound
    assert softmax.value("flops") == 92_930_048


def test_plain_reports_read_dram_bytes_and_flops_from_ncus_section_metrics(full: RunResults, roofline) -> None:
    """`--set full` holds the bytes read and written; `--set roofline` only dram__bytes.sum.per_second: times the
    duration it gives the same sum (exactly, on the full report's GEMM). FFMA counts from per-cycle rates."""
    gemm_full, gemm_roofline = by_label(full)["gemm/cublas_bf16"], by_label(roofline)["gemm/cublas_bf16"]
    assert gemm_full.value("dram_bytes") == 148_550_400 + 28_008_192
    assert gemm_full.value("dram_throughput") * gemm_full.value("duration") * 1e-9 == pytest.approx(176_558_592)  # type: ignore[operator]
    assert gemm_roofline.value("dram_read_bytes") is None
    assert gemm_roofline.value("dram_bytes") == 176_234_240
    assert gemm_roofline.value("dram_bandwidth") == pytest.approx(1.0024e12, rel=1e-4)
    softmax = by_label(roofline)["softmax/aten"]
    assert softmax.value("fp32_ffma_inst") == 37_748_736
    assert softmax.value("flops") == 92_930_048


def test_run_ceilings_hold_the_tensor_roofs_used(full: RunResults) -> None:
    ceilings = tensor_ceilings(full.kernels)
    assert ceilings is not None and set(ceilings) == {
        "peak_tensor_hgmma_bf16",
        "peak_tensor_hgmma_fp16",
        "peak_tensor_hmma_fp16",
    }
    assert ceilings["peak_tensor_hgmma_bf16"] == pytest.approx(540672 * 1587259397.2736018)


def test_verdicts_name_the_tensor_roof(full: RunResults) -> None:
    kernels, ceilings = by_label(full), ceilings_of(full)
    gemm = verdict(kernels["gemm/cublas_bf16"], bound(kernels["gemm/cublas_bf16"], ceilings))
    assert gemm is not None and gemm.text == (
        "tensor-core bound at 858 TFLOP/s bf16 (dense peak), achieved 775 TFLOP/s (90.3%)"
        " at 778 FLOP/B (DRAM; ridge 178 FLOP/B)"
    )
    flash = verdict(kernels["sdpa/flash"], bound(kernels["sdpa/flash"], ceilings))
    assert flash is not None and "tensor-core bound at 639 TFLOP/s fp16 HMMA (dense peak)" in flash.text
    assert "(45.4%)" in flash.text


def test_timed_share_counts_the_roofs_flops(full: RunResults) -> None:
    gemm = by_label(full)["gemm/cublas_bf16"]
    seconds = gemm.value("duration") * 1e-9  # type: ignore[operator]
    assert timed_share(gemm, ceilings_of(full), seconds) == pytest.approx(90.2723718659447, abs=0.01)


def test_results_json_carries_the_tensor_figures(full: RunResults, tmp_path: Path) -> None:
    from dataclasses import replace

    from tests.support.json_file import write_json

    info = replace(full.info, peak_tensor_flops=tensor_ceilings(full.kernels))
    write_json(tmp_path / "results.json", RunResults(info, full.kernels).to_json())
    again = load_results(tmp_path / "results.json")
    assert again.info.peak_tensor_flops == info.peak_tensor_flops
    assert by_label(again)["sdpa/flash"].value("tensor_ops_hmma_fp16") == ATTENTION
    assert ceilings_of(again)["peak_tensor_hmma_fp16"] == info.peak_tensor_flops["peak_tensor_hmma_fp16"]  # type: ignore[index]


def test_tensor_counters_are_asked_only_with_roofline_and_never_both_totals() -> None:
    default, roofline = set(ncu_metric_names()), set(ncu_metric_names(roofline=True))
    tensor = {name for name in roofline if name.startswith("sm__ops_path_tensor_")}
    assert len(tensor) == 42 and not tensor & default
    # per-op counters, and per-source ones only where sm_90 has no per-op form (fp8, fp64): no op counted twice
    sources = {name.split(".")[0] for name in tensor if "_src_" in name and "_op_" not in name}
    assert sources == {
        "sm__ops_path_tensor_src_fp8_sparsity_off",
        "sm__ops_path_tensor_src_fp8_sparsity_on",
        "sm__ops_path_tensor_src_fp64",
    }
    assert "dram__bytes.sum.per_second" not in roofline  # read from plain reports, never asked


def test_every_tensor_name_is_one_of_ncus_section_on_sm_90() -> None:
    """Each counter and peak is among the metrics ncu's tensor roofline section collected on the H200 (every
    name was also found in `ncu --query-metrics --chip gh100` of ncu 2025.3.1 on the GPU machine)."""
    import ncu_report

    report = ncu_report.load_report(str(unpacked(TENSOR / "tensor_full.ncu-rep.xz")))
    names = set(report.range_by_idx(0).action_by_idx(0).metric_names())
    asked = [m.ncu for m in CATALOGUE.values() if m.ncu and m.ncu.startswith("sm__ops_path_tensor_")]
    assert len(asked) == 42 and all(name in names for name in asked)


MEMLENS_RUN = TENSOR / "tensor_run" / "results.json"  # record_tensor.sh's `memlens` step: profile --roofline


@pytest.mark.skipif(not MEMLENS_RUN.is_file(), reason="needs tensor_run/ recorded by tests/fixtures/record_tensor.sh")
def test_memlens_roofline_run_counts_the_same_tensor_flops_and_roofs() -> None:
    """memlens's own `--roofline` list (ncu_metric_names) collects what the section does: the same exact FLOPs,
    each kernel on the same roof, the roofs in results.json's info."""
    results = load_results(MEMLENS_RUN)
    kernels, ceilings = by_label(results), ceilings_of(results)
    for label, (path, flops, _) in ON_PAPER.items():
        where = bound(kernels[label], ceilings)
        assert where is not None and where.roof is not None and where.roof.path.key == path, label
        assert where.work == flops == kernels[label].value("tensor_flops"), label
    assert results.info.peak_tensor_flops is not None
    assert set(results.info.peak_tensor_flops) == {
        "peak_tensor_hgmma_bf16",
        "peak_tensor_hgmma_fp16",
        "peak_tensor_hmma_fp16",
    }


def test_older_recordings_without_tensor_counters_place_as_before() -> None:
    """The H100 `--set full` suite results (no tensor counters): no tensor roof, no tensor ceiling, fp32 bounds."""
    older = load_results(
        Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_h100_80gb_hbm3" / "suite_full_small.results.json"
    )
    assert all(tensor_work(kernel) is None for kernel in older.kernels)
    assert tensor_ceilings(older.kernels) is None and older.info.peak_tensor_flops is None
    naive = by_label(older)["matmul/naive"]
    where = bound(naive, ceilings_of(older))
    assert where is not None and where.roof is None and where.precision == "fp32"
    assert naive.value("tensor_flops") is None and naive.value("total_flops") is None
    assert naive.value("arithmetic_intensity") == pytest.approx(naive.value("flops") / naive.value("dram_bytes"))  # type: ignore[operator]


@pytest.mark.parametrize("gpu", ["nvidia_h200", "nvidia_h100_80gb_hbm3"])
@pytest.mark.parametrize("name", ["tensor_full", "tensor_roofline"])
def test_each_tensor_kernel_is_at_the_share_ncus_own_section_records(gpu: str, name: str) -> None:
    """On both GPU models, the share of its roof each tensor-core kernel reaches equals the section's own
    `<path>.sum.pct_of_peak_sustained_elapsed`, read here from the report beside memlens's reader."""
    import ncu_report

    path = unpacked(TENSOR.parent.parent / gpu / "tensor" / f"{name}.ncu-rep.xz")
    results = read_report(path)
    ceilings = ceilings_of(results)
    report = ncu_report.load_report(str(path))
    actions = [report.range_by_idx(0).action_by_idx(i) for i in range(report.range_by_idx(0).num_actions())]
    checked = 0
    for kernel in results.kernels:
        where = bound(kernel, ceilings)
        if where is None or where.roof is None:
            continue
        (action,) = [
            a
            for a in actions
            if a.name() in kernel.kernel and a["gpu__time_duration.sum"].as_double() == kernel.value("duration")
        ]
        counter = where.roof.path.sparse if where.roof.sparse else where.roof.path.dense
        assert where.pct_of_limit == pytest.approx(
            action[f"{counter}.sum.pct_of_peak_sustained_elapsed"].as_double(), abs=0.01
        ), kernel.label
        assert where.work == ON_PAPER[kernel.label][1], kernel.label
        checked += 1
    assert checked == len(ON_PAPER)
