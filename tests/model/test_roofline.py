"""profiling/model/roofline.py, reports/roofline.py: FLOPs, intensities, coalescing, ceilings (PMPP ch. 5)."""

# Fixtures:
# - FULL: tests/fixtures/nvidia_h100_80gb_hbm3/suite_full_small.results.json, the suite at its small
#   sizes under `ncu --set full` on an H100, made into results.json by tests/fixtures/full_set_results.py
#   (it holds the FLOP counters as rates, turned into counts there).
# - RECORDED: tests/fixtures/*/suite.results.json at the default sizes, by tests/fixtures/record.sh. The
#   tests on them skip until a recording holds this catalogue's metrics (the lead re-records).

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from memlens.gate.evaluate import evaluate, read_measurements
from memlens.gate.rules import load_rules
from memlens.model.catalogue import NO_FLOPS
from memlens.model.results import KernelResult, RunResults, VariantOutcome, load_results
from memlens.model.roofline import bound, ceilings_of, run_ceilings, timed_share
from memlens.output import render_report as render
from memlens.reports.build import build_report, build_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPO = FIXTURES.parent.parent
FULL = FIXTURES / "nvidia_h100_80gb_hbm3" / "suite_full_small.results.json"
SMALL_MATMUL = {"m": 70, "k": 45, "n": 33}
DEFAULT_MATMUL = {"m": 2048, "k": 2048, "n": 2048}
INTENSITIES = ("arithmetic_intensity", "arithmetic_intensity_l2", "arithmetic_intensity_l1")
ROOFLINE_RULES = {
    "transposes do no floating-point work",
    "fp32 transposes load coalesced",
    "float4 transposes load coalesced",
    "matmul tiles raise global-load intensity",
    "the naive matmul still shows PMPP's low intensity",
}


def by_label(results: RunResults) -> dict[str, KernelResult]:
    return {k.label: k for k in results.kernels}


@pytest.fixture(scope="module")
def full() -> RunResults:
    return load_results(FULL)


@pytest.fixture(scope="module")
def declared(full: RunResults) -> RunResults:
    """The recording as the suite declares it (a plain ncu report of the suite holds no outcomes, and a report
    compares only the variants a suite declares): each variant ok, the first of each family its baseline."""
    keys = list(dict.fromkeys((k.family, k.variant) for k in full.kernels if k.family and k.variant))
    firsts = {family: variant for family, variant in reversed(keys)}
    outcomes = tuple(VariantOutcome(f, v, "ok", baseline=firsts[f] == v) for f, v in keys)
    return replace(full, outcomes=outcomes)


def recorded_with_flops() -> list[Path]:
    """The default-size recordings that hold the FLOP counters (none until re-recorded)."""
    found = []
    for path in sorted(FIXTURES.glob("*/suite.results.json")):
        kernels = json.loads(path.read_text())["kernels"]
        if kernels and "fp32_ffma_inst" in kernels[0]["raw"]:
            found.append(path)
    return found


needs_rerecording = pytest.mark.skipif(
    not recorded_with_flops(),
    reason="needs tests/fixtures/<gpu>/suite.results.json re-recorded by tests/fixtures/record.sh with this catalogue",
)


def value(kernel: KernelResult, key: str) -> float:
    measured = kernel.metric(key)
    assert measured.available, (kernel.label, key, measured.missing_reason)
    return measured.value  # type: ignore[return-value]


# --- FLOPs -----------------------------------------------------------------------------------------


def test_naive_matmul_small_has_2mnk_flops(full: RunResults) -> None:
    naive = by_label(full)["matmul/naive"]
    expected = 2 * SMALL_MATMUL["m"] * SMALL_MATMUL["n"] * SMALL_MATMUL["k"]  # 207,900
    assert value(naive, "flops") == pytest.approx(expected, rel=0.01)
    assert value(naive, "flops_fp32") == value(naive, "flops")  # all FFMA: fp32 only
    assert value(naive, "fp32_ffma_inst") == pytest.approx(expected / 2, rel=1e-6)


def test_tiled_matmul_small_counts_the_zero_padded_tiles(full: RunResults) -> None:
    """At 70 x 45 x 33 the 16-wide tiles overhang: every thread of the 80 x 48 grid runs 48 products."""
    tiled = by_label(full)["matmul/tiled"]
    assert value(tiled, "flops") == pytest.approx(2 * 80 * 48 * 48, rel=1e-6)


@needs_rerecording
@pytest.mark.parametrize("path", recorded_with_flops())
def test_matmul_default_size_has_2mnk_flops(path: Path) -> None:
    """Fixture: a default-size suite.results.json re-recorded with the FLOP counters (m = k = n = 2048:
    no partial tile, so every variant does exactly 2mnk)."""
    kernels = by_label(load_results(path))
    expected = 2 * DEFAULT_MATMUL["m"] * DEFAULT_MATMUL["n"] * DEFAULT_MATMUL["k"]
    for variant in ("naive", "tiled_article", "tiled", "tiled_pmpp"):
        assert value(kernels[f"matmul/{variant}"], "flops") == pytest.approx(expected, rel=0.01), variant


def test_fp16_counter_counts_ptxas_register_moves_and_stays_out_of_flops(full: RunResults) -> None:
    """ptxas zeroes registers with HFMA2.MMA: the HFMA counter sees 'half-precision work' in a transpose."""
    swizzled = by_label(full)["transpose/tile64_swizzled"]
    assert value(swizzled, "flops_fp16") == 4096
    assert value(swizzled, "flops") == 0


# --- intensity -------------------------------------------------------------------------------------


def test_transposes_have_no_flops_and_no_intensity(full: RunResults) -> None:
    transposes = [k for k in full.kernels if k.family == "transpose"]
    assert len(transposes) == 7
    for kernel in transposes:
        assert value(kernel, "flops") == 0
        for key in INTENSITIES:
            measured = kernel.metric(key)
            assert measured.value is None and measured.missing_reason == NO_FLOPS, (kernel.label, key)


def test_intensities_of_the_naive_matmul(full: RunResults) -> None:
    naive = by_label(full)["matmul/naive"]
    flops = value(naive, "flops")
    assert value(naive, "arithmetic_intensity") == pytest.approx(flops / value(naive, "dram_bytes"))
    assert value(naive, "arithmetic_intensity_l2") == pytest.approx(flops / (32 * value(naive, "l2_sectors_from_l1")))
    l1_bytes = 32 * (value(naive, "global_load_sectors") + value(naive, "global_store_sectors"))
    assert value(naive, "arithmetic_intensity_l1") == pytest.approx(flops / l1_bytes)
    # caches in between: the same FLOPs over ever fewer bytes, L1 -> L2 -> DRAM
    assert value(naive, "arithmetic_intensity_l1") < value(naive, "arithmetic_intensity_l2")
    assert value(naive, "arithmetic_intensity_l2") < value(naive, "arithmetic_intensity")


def test_intensity_without_flop_counters_says_which_counter_is_missing() -> None:
    kernel = KernelResult("k", raw={"dram_read_bytes": 64.0, "dram_write_bytes": 64.0})
    reason = kernel.metric("arithmetic_intensity").missing_reason
    assert reason == (
        "needs flops: needs flops_fp32: needs smsp__sass_thread_inst_executed_op_ffma_pred_on.sum: not in the report"
    )


# --- global memory ---------------------------------------------------------------------------------


def test_naive_over_tiled_global_load_sectors_is_at_least_the_tile_width_half(full: RunResults) -> None:
    kernels = by_label(full)
    naive = value(kernels["matmul/naive"], "global_load_sectors")
    for variant in ("tiled", "tiled_pmpp"):
        assert naive / value(kernels[f"matmul/{variant}"], "global_load_sectors") >= 8, variant
    assert naive / value(kernels["matmul/tiled"], "global_load_sectors") == pytest.approx(57815 / 3246)


@needs_rerecording
@pytest.mark.parametrize("path", recorded_with_flops())
def test_default_size_coalescing(path: Path) -> None:
    """Fixture: a default-size re-recording (8192 x 8192 transposes: full tiles, full warps)."""
    kernels = by_label(load_results(path))
    naive, tiled = (value(kernels[f"matmul/{v}"], "global_load_sectors") for v in ("naive", "tiled"))
    assert naive / tiled >= 8
    assert value(kernels["transpose/padded"], "global_load_sectors_per_request") == 4.0
    assert value(kernels["transpose/vec4_padded"], "global_load_sectors_per_request") == 16.0


def test_coalesced_fp32_warp_load_is_4_sectors_per_request() -> None:
    """32 lanes x 4 bytes = 128 bytes = 4 sectors of 32 bytes for each warp-level load."""
    kernel = KernelResult("k", raw={"global_load_sectors": 4.0 * 1000, "global_load_requests": 1000.0})
    assert kernel.metric("global_load_sectors_per_request").value == 4.0


def test_small_transposes_load_coalesced(full: RunResults) -> None:
    """At 67 x 45, warps at the right edge load fewer than 32 elements: fewer than 4 sectors."""
    kernels = by_label(full)
    for variant in ("conflict", "padded", "swizzled", "tile64_padded", "tile64_swizzled"):
        assert value(kernels[f"transpose/{variant}"], "global_load_sectors_per_request") == pytest.approx(493 / 134)
    assert value(kernels["transpose/vec4_padded"], "global_load_sectors_per_request") == pytest.approx(1774 / 152)
    assert value(kernels["matmul/naive"], "l1_hit_rate") == pytest.approx(95.04, abs=0.01)


# --- ceilings ---------------------------------------------------------------------------------------


def test_ceilings_come_from_ncus_device_metrics(full: RunResults) -> None:
    info = full.info
    assert info.peak_flops_fp32 == pytest.approx(70.23e12, rel=1e-3)  # 16,896 FFMA a cycle x 2 x 2.08 GHz
    assert info.peak_flops_fp64 == pytest.approx(info.peak_flops_fp32 / 2)
    assert info.peak_flops_fp16 == pytest.approx(info.peak_flops_fp32 * 2)
    assert info.peak_dram_bandwidth == pytest.approx(3.323e12, rel=1e-3)  # 1,280 B a cycle x 2.60 GHz
    assert run_ceilings(full.kernels) == {
        "peak_flops_fp32": info.peak_flops_fp32,
        "peak_flops_fp64": info.peak_flops_fp64,
        "peak_flops_fp16": info.peak_flops_fp16,
        "peak_dram_bandwidth": info.peak_dram_bandwidth,
    }
    naive = by_label(full)["matmul/naive"]
    assert value(naive, "peak_flops_fp32") == value(naive, "peak_ffma_per_cycle") * 2 * value(naive, "sm_clock")
    assert json.loads(json.dumps(full.to_json()))["info"]["peak_flops_fp32"] == info.peak_flops_fp32


def test_bound_of_the_naive_matmul(full: RunResults) -> None:
    naive = by_label(full)["matmul/naive"]
    where = bound(naive, run_ceilings(full.kernels))
    assert where is not None and where.precision == "fp32"
    assert where.memory_bound and where.limit == pytest.approx(where.intensity * full.info.peak_dram_bandwidth)
    assert where.ridge == pytest.approx(full.info.peak_flops_fp32 / full.info.peak_dram_bandwidth)
    assert where.pct_of_limit == pytest.approx(100 * value(naive, "flop_rate") / where.limit)


# --- report and gate --------------------------------------------------------------------------------


def test_report_verdicts_in_pmpps_terms(declared: RunResults) -> None:
    run = build_run(declared, "h100")
    families = {f.name: f for f in run.families}
    naive = next(r for r in families["matmul"].rows if r.name == "naive")
    assert naive.verdict[-1].text.startswith(
        "memory-bound at 8.20 FLOP/B (DRAM; ridge 21.1 FLOP/B): at most 27.3 TFLOP/s on this GPU (DRAM roof),"
        " achieved 26.8 GFLOP/s (0.0985% of that bound)"
    )
    assert families["matmul"].roofline.notes == (
        "global load sectors at L1, against naive's 57,815: tiled_article 9,674 (5.98x fewer);"
        " tiled 3,246 (17.8x fewer); tiled_pmpp 3,246 (17.8x fewer)",
    )
    transpose = families["transpose"].roofline  # every family gets a roofline: the transposes without points
    assert transpose.no_flops and transpose.points == ()
    assert [name for name, _ in transpose.dram_achieved] == [r.name for r in families["transpose"].rows]
    assert transpose.notes == (
        "no floating-point work: arithmetic intensity n/a, memory-bound by definition; achieved DRAM bandwidth"
        " 5.31 GB/s to 6.18 GB/s (best: vec4_padded) of the 3.32 TB/s peak (0.186% at best)",
    )
    for row in families["transpose"].rows:
        assert row.verdict[-1].text == "roofline: no floating-point work (moves data only): no intensity figure"


def test_compute_bound_family_is_judged_by_its_roofline_bound(full: RunResults) -> None:
    """With a DRAM roof 100x higher the ridge falls below the matmuls' intensity: compute-bound."""
    fast_memory = replace(full, info=replace(full.info, peak_dram_bandwidth=full.info.peak_dram_bandwidth * 100))
    matmul = next(f for f in build_run(fast_memory, "x").families if f.name == "matmul")
    assert matmul.roofline.compute_bound
    assert matmul.rows[0].verdict[-1].text.startswith("compute-bound at 8.20 FLOP/B (DRAM; ridge 0.211 FLOP/B)")
    assert "(fp32 peak)" in matmul.rows[0].verdict[-1].text


def test_html_report_draws_a_roofline_per_family_with_flops(declared: RunResults) -> None:
    html = render(build_report([("h100", declared)]), "html")
    assert html.count('class="chart roofline-chart"') == 3  # matmul, running_mean and transpose (no points)
    for text in (
        "roofline of transpose",
        "no floating-point work: intensity n/a, memory-bound by definition",
        "conflict: DRAM 5.31 GB/s achieved",
    ):
        assert text in html, text
    for text in (
        "roofline of matmul",
        "fp32 peak 70.2 TFLOP/s",
        "DRAM peak 3.32 TB/s",
        "DRAM intensity",
        "L2 intensity",
        "L1 intensity",
        "naive (baseline): 0.0985% of its bound",
    ):
        assert text in html, text
    markdown = render(build_report([("h100", declared)]), "md")
    assert "tiled 3,246 (17.8x fewer)" in markdown


def test_shipped_roofline_rules_pass_on_the_h100_recording() -> None:
    result = evaluate(load_rules(REPO / "kernels" / "gates.toml"), read_measurements(FULL))
    verdicts = [v for v in result.verdicts if v.rule in ROOFLINE_RULES]
    assert len(verdicts) == 7 + 5 + 2 + 3 + 1
    assert all(v.status == "pass" for v in verdicts), [v for v in verdicts if v.status != "pass"]


def test_roofline_rules_fail_on_a_run_without_the_counters() -> None:
    """Nothing passes silently: the H200 run recorded without --roofline (suite_fast) lacks the counters."""
    run = FIXTURES / "nvidia_h200" / "suite_fast.results.json"
    assert json.loads(run.read_text())["kernels"][0]["raw"].get("fp32_ffma_inst") is None
    result = evaluate(load_rules(REPO / "kernels" / "gates.toml"), read_measurements(run))
    verdicts = [v for v in result.verdicts if v.rule in ROOFLINE_RULES]
    failed = [v for v in verdicts if v.status == "fail"]
    assert failed and all("profile with --roofline" in v.message for v in failed)


def test_compute_bound_family_drops_pct_of_copy_and_the_chart_shows_the_copy_roof(declared: RunResults) -> None:
    """`% of copy` stays for memory-bound families; a compute-bound one shows n/a saying why."""
    from memlens.bench.results import BenchInfo, BenchResults, CopyBandwidth, TimeSummary, VariantTiming
    from memlens.reports.roofline import COMPUTE_BOUND_COPY

    copy = CopyBandwidth(1 << 30, TimeSummary.of([0.7] * 5))  # 2 GiB in 0.7 ms: 3.07 TB/s
    timings = tuple(
        VariantTiming.build(family, variant, {}, 1 << 20, 4, 1 << 28, TimeSummary.of([0.01] * 5), copy)
        for family, variant in (("matmul", "naive"), ("matmul", "tiled"), ("running_mean", "register"))
    )
    bench = BenchResults(BenchInfo("NVIDIA H100 80GB HBM3", 50 << 20, 5), copy, timings, ())
    # ridge 7 FLOP/B: the matmuls (8.2 to 16 FLOP/B) compute-bound, the running means (2.8, 3.7) not
    roof = replace(declared.info, peak_dram_bandwidth=declared.info.peak_dram_bandwidth * 3)
    run = build_run(replace(declared, info=roof), "x", bench, "bench.json")
    families = {f.name: f for f in run.families}
    cell = next(r for r in families["matmul"].rows if r.name == "naive").cells["bench_pct_of_copy"]
    assert (cell.value, cell.text, cell.missing_reason) == (None, "n/a", COMPUTE_BOUND_COPY)
    memory_bound = next(r for r in families["running_mean"].rows if r.name == "register")
    assert not families["running_mean"].roofline.compute_bound
    assert memory_bound.cells["bench_pct_of_copy"].value is not None
    assert families["matmul"].roofline.copy_bandwidth == pytest.approx(2 * (1 << 30) / 0.7e-3)
    assert families["running_mean"].roofline.notes == (
        "global load sectors at L1, against register's 4,896: local 4,896 (the same)",
    )
    html = render(build_report([("x", replace(declared, info=roof))], [("bench.json", bench)]), "html")
    assert "copy (memlens bench) 3.07 TB/s" in html


def test_a_run_without_flop_counters_gets_no_roofline_words() -> None:
    """Runs recorded without the counters (suite_fast: no --roofline) get no roofline words."""
    recorded = load_results(FIXTURES / "nvidia_h200" / "suite_fast.results.json")
    assert recorded.kernels[0].raw.get("fp32_ffma_inst") is None
    run = build_run(recorded, "h200")
    assert all(f.roofline is None for f in run.families)
    assert not any(finding.topic == "roofline" for row in run.variants for finding in row.verdict)


def test_memory_bound_verdict_gives_the_copy_roof_too(full: RunResults) -> None:
    from memlens.reports.roofline import verdict

    naive = by_label(full)["matmul/naive"]
    where = bound(naive, run_ceilings(full.kernels))
    copy = 3.0e12  # bytes/s: 8.20 FLOP/B x 3 TB/s = 24.6 TFLOP/s
    text = verdict(naive, where, copy).text
    practical = where.intensity * copy
    assert f"{100 * where.achieved / practical:.3g}% of 24.6 TFLOP/s at the measured copy bandwidth" in text


def test_verdict_says_why_a_variant_is_not_placed() -> None:
    from memlens.reports.roofline import verdict

    kernel = KernelResult(
        "k",
        raw={
            "fp32_ffma_inst": 10.0,
            "fp32_fadd_inst": 0.0,
            "fp32_fmul_inst": 0.0,
            "fp64_dfma_inst": 0.0,
            "fp64_dadd_inst": 0.0,
            "fp64_dmul_inst": 0.0,
            "duration": 1000.0,
        },
    )
    assert bound(kernel, {"peak_flops_fp32": 1e12, "peak_dram_bandwidth": 1e12}) is None
    why = "needs dram_bytes: needs dram__bytes_read.sum: not in the report"
    assert verdict(kernel, None).text == f"roofline: not placed ({why})"


def test_ceilings_of_takes_each_recorded_ceiling_else_the_kernels_median(full):
    computed = run_ceilings(full.kernels)
    info = replace(full.info, peak_flops_fp32=1e12, peak_flops_fp64=None)
    ceilings = ceilings_of(replace(full, info=info))
    assert ceilings["peak_flops_fp32"] == 1e12  # as recorded
    assert ceilings["peak_flops_fp64"] == computed["peak_flops_fp64"] and computed["peak_flops_fp64"] > 0


def test_timed_share_is_the_flop_rate_a_bench_time_gives_over_the_compute_roof(full):
    tiled = by_label(full)["matmul/tiled"]  # 368,640 FLOPs at 15.3 FLOP/B
    compute_bound = {"peak_flops_fp32": 1e12, "peak_dram_bandwidth": 3.3e12}  # memory roof 50 TFLOP/s: above
    assert timed_share(tiled, compute_bound, 1e-6) == pytest.approx(100 * 368_640 / 1e-6 / 1e12)  # 36.864%
    assert timed_share(tiled, compute_bound, 0.0) is None
    assert timed_share(tiled, ceilings_of(full), 1e-6) is None  # memory-bound under the H100's own ceilings
    assert timed_share(by_label(full)["transpose/conflict"], compute_bound, 1e-6) is None  # no FLOPs
