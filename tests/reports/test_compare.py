"""Two GPU models side by side: the recorded H100 and H200 runs of the same suite in one report, each
figure also as a share of its own GPU's ceilings (ncu's % of peak DRAM; the bench copy where a run has
bench.json), the columns named by GPU model. CPU only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memlens.cli import main
from memlens.readers import read_report
from memlens.reports.build import build_report
from memlens.reports.compare import MEMORY_BOUND_PCT
from tests.conftest import FIXTURES
from tests.reports.test_report_bench import bench_results

H100 = FIXTURES / "nvidia_h100_80gb_hbm3" / "suite.results.json"
H200 = FIXTURES / "nvidia_h200" / "suite.results.json"
COPY_GB_PER_S = 2 * (1 << 30) / 0.56 / 1e6  # test_report_bench's synthetic bench: 2 GiB copied in 0.56 ms


def recorded(path):
    results = read_report(path)
    return results, {k.label: k for k in results.kernels}


def metrics_of(comparison) -> dict:
    return {m.key: m for m in comparison.metrics}


def test_the_same_variant_of_both_gpus_is_one_row_with_shares_of_each_gpus_peak():
    (h100, h100_kernels), (h200, h200_kernels) = recorded(H100), recorded(H200)
    report = build_report([("h100", h100), ("h200", h200)])
    by_label = {c.label: c for c in report.comparisons}
    # both GPUs recorded the same 19 variants (fp16_transpose 5, matmul 4, running_mean 3, transpose 7)
    assert len(by_label) == 19 and {c.statuses for c in by_label.values()} == {("ok", "ok")}
    spill = metrics_of(by_label["running_mean/spill"])
    assert [c.text for c in spill["dram_pct_of_peak"].cells] == ["32.3%", "23.5%"]
    # memory-bound on the H100 (>= MEMORY_BOUND_PCT of its peak), not on the H200
    pitch = metrics_of(by_label["fp16_transpose/pitch128"])
    assert [c.text for c in pitch["dram_pct_of_peak"].cells] == ["62.6%", "45.5%"]
    assert [c.text for c in pitch["memory_bound"].cells] == ["memory-bound", "not memory-bound"]
    for label, comparison in by_label.items():
        metrics = metrics_of(comparison)
        peaks = [c.value for c in metrics["dram_pct_of_peak"].cells]
        assert peaks == [
            h100_kernels[label].metric("dram_pct_of_peak").value,
            h200_kernels[label].metric("dram_pct_of_peak").value,
        ]
        bound = [c.text for c in metrics["memory_bound"].cells]
        assert bound == ["memory-bound" if p >= MEMORY_BOUND_PCT else "not memory-bound" for p in peaks]
        assert "dram_pct_of_copy" not in metrics  # neither run has bench.json
    padded = metrics_of(by_label["transpose/padded"])
    assert [c.text for c in padded["dram_pct_of_peak"].cells] == ["82.9%", "72.9%"]
    assert [c.text for c in padded["memory_bound"].cells] == ["memory-bound", "memory-bound"]
    conflict = metrics_of(by_label["transpose/conflict"])
    assert [c.text for c in conflict["dram_pct_of_peak"].cells] == ["50.1%", "35.1%"]
    assert [c.text for c in conflict["memory_bound"].cells] == ["not memory-bound", "not memory-bound"]
    assert padded["memory_bound"].cells[1].direction == "n/a" and padded["memory_bound"].cells[1].change_text == ""


def test_a_variant_one_gpu_did_not_run_is_a_row_of_the_other_gpu_alone():
    (h100, _), (h200, _) = recorded(H100), recorded(H200)
    without_spill = replace(
        h100,
        kernels=tuple(k for k in h100.kernels if k.label != "running_mean/spill"),
        outcomes=tuple(o for o in h100.outcomes if (o.family, o.variant) != ("running_mean", "spill")),
    )
    by_label = {c.label: c for c in build_report([("h100", without_spill), ("h200", h200)]).comparisons}
    assert len(by_label) == 19 and by_label["running_mean/spill"].statuses == ("absent", "ok")
    spill = metrics_of(by_label["running_mean/spill"])
    assert [c.text for c in spill["dram_pct_of_peak"].cells] == ["n/a", "23.5%"]
    assert [c.text for c in spill["memory_bound"].cells] == ["n/a", "not memory-bound"]


def test_one_gpu_model_compares_as_before():
    h200, _ = recorded(H200)
    report = build_report([("a", h200), ("b", h200)])
    assert "memory_bound" not in metrics_of(report.comparisons[0])


def test_dram_as_a_share_of_each_runs_own_copy_bandwidth():
    (h100, h100_kernels), (h200, _) = recorded(H100), recorded(H200)
    benches = [("h100/bench.json", bench_results(gpu=h100.info.gpu_name)), None]
    report = build_report([("h100", h100), ("h200", h200)], benches)
    padded = metrics_of(next(c for c in report.comparisons if c.label == "transpose/padded"))
    share = padded["dram_pct_of_copy"].cells
    expected = 100 * h100_kernels["transpose/padded"].metric("dram_bandwidth").value / (COPY_GB_PER_S * 1e9)
    assert share[0].value == pytest.approx(expected) and share[1].value is None  # the H200 run has no bench
    assert share[1].text == "n/a"


def test_the_columns_name_each_runs_gpu_model(capsys):
    assert main(["report", str(H100), str(H200), "--format", "md", "-o", "-"]) == 0
    md = capsys.readouterr().out
    assert f"run 1: `{H100}` (NVIDIA H100 80GB HBM3); run 2: `{H200}` (NVIDIA H200)." in md
    assert "DRAM % of its GPU's peak" in md and "memory-bound → memory-bound" in md
    assert main(["report", str(H100), str(H200), "--format", "html", "-o", "-"]) == 0
    html = capsys.readouterr().out
    assert f'<th title="{H100}">run 1<br>NVIDIA H100 80GB HBM3</th>' in html
    assert f'<th title="{H200}">run 2<br>NVIDIA H200</th>' in html
