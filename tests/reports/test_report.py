"""The report's content: tables, speedups, verdicts, expectation checks, n/a, invalid variants,
other kernels, several runs, JSON, and the recorded probe fixtures."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from memlens.model.ncu_settings import NcuSettings
from memlens.model.results import RunResults
from memlens.output import render_report as render
from memlens.reports.build import NOT_VARIANTS, build_report
from memlens.reports.model import REPORT_VERSION
from tests.reports.test_report_samples import (
    CONFLICT,
    FAST_REASON,
    INFO,
    LOCAL,
    PADDED,
    fast,
    kernel,
    outcome,
    suite_run,
)

PROBE = str(Path(__file__).resolve().parents[1] / "fixtures" / "probe")


def rows_of(results: RunResults, label: str = "run") -> dict:
    report = build_report([(label, results)])
    return {row.label: row for family in report.runs[0].families for row in family.rows}


def test_table_figures_and_speedup():
    rows = rows_of(suite_run())
    conflict, padded = rows["transpose/conflict"], rows["transpose/padded"]
    assert conflict.baseline and not padded.baseline
    assert conflict.cells["speedup"].value == 1.0
    assert padded.cells["speedup"].value == pytest.approx(85_440 / 33_824)
    assert padded.cells["speedup"].text == "2.53×"
    assert conflict.cells["duration"].text == "85.4 µs"
    assert conflict.cells["dram_bandwidth"].text == "1.33 TB/s"
    assert conflict.cells["dram_pct_of_peak"].text == "27.7%"
    # no exact pass in this sample: the hardware's wavefronts per instruction (16,905,672 / 524,288), marked "*"
    assert conflict.cells["shared_ld_ways"].value == pytest.approx(16_905_672 / 524_288)
    assert conflict.cells["shared_ld_ways"].text == "32.2*"
    assert conflict.cells["shared_ld_ways"].exact.startswith("fallback: the hardware's wavefronts per instruction")
    assert conflict.cells["exact_excess_wavefronts"].value == 16_252_928
    assert conflict.cells["exact_excess_wavefronts"].text == "16.3 M"
    assert conflict.cells["exact_excess_wavefronts"].exact == "16,252,928"
    assert conflict.cells["exact_excess_wavefronts"].flag == "bad"
    assert conflict.cells["hw_bank_conflicts"].value == 16_381_384 + 38_203
    assert padded.cells["exact_excess_wavefronts"].text == "0"
    assert padded.cells["hw_bank_conflicts"].text == "40.2 K"  # the counter's false conflicts
    assert padded.cells["shared_per_block"].text == "4,224 B"
    assert rows["running_mean/local"].cells["local_ld_bytes"].text == "1.07 GB"
    local_ways = rows["running_mean/local"].cells["shared_ld_ways"]
    assert local_ways.text == "—"  # no shared loads counted, as `memlens metrics` shows it ("-")
    assert local_ways.missing_reason.startswith("the hardware counts no shared-memory load instructions")


def test_verdicts_in_words():
    rows = rows_of(suite_run())
    assert rows["transpose/conflict"].verdict_text == (
        "shared loads: 32-way bank conflicts, 16.3 M excess wavefronts (31 per load); no local memory"
    )
    assert rows["transpose/padded"].verdict_text == "no bank conflicts, no local memory"
    assert rows["running_mean/registers"].verdict_text == "no shared-memory accesses, no local memory"
    assert rows["running_mean/local"].verdict_text == (
        "no shared-memory accesses; local memory: 1.07 GB of local loads and 1.07 GB of local stores"
        " (cause unknown: run `memlens check` or compile with -Xptxas -v)"
    )


def test_registers_alone_do_not_name_the_cause_of_local_memory():
    # 255 registers and local traffic: a spill, or an array too large for registers, or both
    rows = rows_of(suite_run(local={"registers_per_thread": 255.0, "local_ld_sectors": 8_388_608.0}))
    assert rows["running_mean/local"].verdict_text.endswith(
        "268 MB of local loads and 1.07 GB of local stores (cause unknown: run `memlens check` or compile with"
        " -Xptxas -v)"
    )


def test_store_conflicts_are_attributed_to_stores():
    swapped = {
        "shared_ld_wavefronts": 562_491.0,
        "shared_st_wavefronts": 16_905_672.0,
        "hw_ld_bank_conflicts": 38_203.0,
        "hw_st_bank_conflicts": 16_381_384.0,
    }
    rows = rows_of(suite_run(conflict=swapped))
    assert rows["transpose/conflict"].verdict[0].text == (
        "shared stores: 32-way bank conflicts, 16.3 M excess wavefronts (31 per store)"
    )


def test_expectations_match_and_mismatch_is_flagged():
    results = suite_run(padded=dict(CONFLICT))  # the "padded" variant measures a conflict
    report = build_report([("run", results)])
    rows = {r.label: r for r in report.runs[0].variants}
    assert rows["transpose/conflict"].expectation.state == "match"
    padded = rows["transpose/padded"].expectation
    assert padded.state == "mismatch"
    assert [(c.aspect, c.expected, c.measured, c.state) for c in padded.checks] == [
        ("bank_conflicts", False, True, "mismatch"),
        ("local_memory", False, False, "match"),
    ]
    assert padded.declared == "no bank conflicts (padding)"
    assert padded.measured == "bank conflicts, no local memory"
    assert report.runs[0].mismatches == (rows["transpose/padded"],)
    html = render(report, "html")
    assert html.count("MISMATCH") == 1
    assert "1 not as declared" in html
    assert "❌ mismatch" in render(report, "md")


def test_fast_run_says_so_and_falls_back_to_the_labelled_hardware_counter():
    results = suite_run()
    info = replace(INFO, ncu_settings=NcuSettings(fast=True))
    results = replace(results, info=info, kernels=tuple(fast(k) for k in results.kernels))
    report = build_report([("run", results)])
    run = report.runs[0]
    rows = {r.label: r for r in run.variants}
    conflict = rows["transpose/conflict"]
    cell = conflict.cells["exact_excess_wavefronts"]
    assert cell.value is None and cell.text == "n/a" and "--fast" in cell.missing_reason
    assert conflict.verdict[0].severity == "bad"  # the estimate the wavefront counter supports
    assert conflict.verdict[0].text == (
        "shared loads: about 32.2 wavefronts per load: likely a 32-way bank conflict (an estimate, not measured"
        " exactly: a --fast run: no instrumented pass; run without --fast for the exact count);"
        " HW counter (shared ld + st): 16.4 M load and 38.2 K store conflicts"
    )
    assert conflict.expectation.state == "unchecked"
    assert rows["running_mean/local"].expectation.state == "match"  # no shared accesses: nothing to count
    assert not run.exact_available
    # what the counter counts, not "over-counts": it misses atomics (0 beside a 32-way atomic kernel's 2,031,616)
    assert any(
        "HW counter (shared ld + st): the L1 pipeline's bank-conflict count of shared loads plus stores: it"
        " includes cycles that are not address conflicts, and counts no atomics" in note
        for note in run.notes
    )
    html = render(report, "html")
    assert f'title="needs memory_l1_wavefronts_shared: {FAST_REASON}"' in html
    assert "HW conflicts (shared ld + st)" in html  # the chart's panel, labelled


@pytest.mark.parametrize("status, words", [("wrong", "output wrong"), ("failed", "failed")])
def test_invalid_variants_are_never_shown_as_measurements(status, words):
    results = suite_run()
    bad = outcome("transpose", "padded", False, False, status=status, message="index 7: got 1.0, expected 2.0")
    results = replace(results, outcomes=tuple(bad if o.variant == "padded" else o for o in results.outcomes))
    report = build_report([("run", results)])
    padded = next(r for r in report.runs[0].variants if r.name == "padded")
    assert not padded.valid and padded.cells == {} and padded.expectation is None
    assert padded.verdict_text == f"not a valid measurement: {words} (index 7: got 1.0, expected 2.0)"
    html = render(report, "html")
    assert "33.8 µs" not in html and "2.53×" not in html  # neither its duration nor its speedup
    assert "figures withheld" in html
    md = render(report, "md")
    assert f"| **padded** | {status} | — |" in md


def test_invalid_baseline_leaves_speedups_undefined():
    results = suite_run()
    bad = outcome("transpose", "conflict", True, False, status="wrong", baseline=True)
    results = replace(results, outcomes=tuple(bad if o.variant == "conflict" else o for o in results.outcomes))
    padded = rows_of(results)["transpose/padded"]
    assert padded.cells["speedup"].value is None
    assert padded.cells["speedup"].missing_reason == "the baseline conflict is not a valid measurement"


def test_variants_without_kernels_and_not_run():
    results = suite_run()
    results = replace(
        results,
        kernels=results.kernels[:1],
        outcomes=results.outcomes[:2] + (outcome("transpose", "swizzled", False, False, status="not_run"),),
        complete=False,
    )
    rows = rows_of(results)
    assert rows["transpose/padded"].status == "no_kernel" and not rows["transpose/padded"].valid
    assert rows["transpose/swizzled"].verdict_text == "not a valid measurement: not run"
    assert "incomplete run" in build_report([("run", results)]).runs[0].notes[0]


def test_plain_kernels_go_to_other_kernels_with_launches_together():
    results = RunResults(
        INFO,
        (
            kernel("void transpose<float, 32, 32, 0>(T1 *, const T1 *, int)", None, None, CONFLICT, 1),
            kernel("void transpose<float, 32, 32, 0>(T1 *, const T1 *, int)", None, None, CONFLICT, 2),
            kernel("rm_local", None, None, LOCAL, 3),
        ),
    )
    run = build_report([("plain", results)]).runs[0]
    assert run.families == ()
    assert [r.label for r in run.others] == ["void transpose<float, 32, 32, 0>(T1 *, const T1 *, int)", "rm_local"]
    both = run.others[0]
    assert both.launches == 2 and both.status == "unverified" and both.valid
    assert both.cells["duration"].value == 2 * 85_440
    assert both.cells["exact_excess_wavefronts"].value == 2 * 16_252_928
    assert both.cells["registers_per_thread"].value == 28  # a per-launch setting: the largest, not a sum
    assert "speedup" not in both.cells
    assert "other kernels" in render(build_report([("plain", results)]), "html")


def test_comparison_across_runs_marks_better_and_worse():
    before = suite_run()
    after = suite_run(conflict={"duration": 60_000.0}, padded={"duration": 40_000.0, "registers_per_thread": 30.0})
    report = build_report([("runs/a", before), ("runs/b", after)])
    by_label = {c.label: c for c in report.comparisons}
    assert list(by_label) == ["transpose/conflict", "transpose/padded", "running_mean/registers", "running_mean/local"]
    duration = {m.key: m for m in by_label["transpose/conflict"].metrics}["duration"]
    assert duration.cells[1].change == pytest.approx(60_000 / 85_440 - 1)
    assert (duration.cells[1].direction, duration.cells[1].change_text) == ("better", "−29.8%")
    padded = {m.key: m for m in by_label["transpose/padded"].metrics}
    assert padded["duration"].cells[1].direction == "worse"
    assert padded["registers_per_thread"].cells[1].direction == "worse"
    assert padded["dram_bandwidth"].cells[1].direction == "worse"  # higher is better
    same = {m.key: m for m in by_label["running_mean/local"].metrics}
    assert same["duration"].cells[1].direction == "same"
    html = render(report, "html")
    assert '<span class="better" title="noise ±3.0% (floor)">−29.8%</span>' in html
    assert '<span class="worse" title="noise ±3.0% (floor)">+18.3%</span>' in html
    md = render(report, "md")
    assert "60.0 µs (🟢 −29.8%)" in md and "40.0 µs (🔴 +18.3%)" in md


def test_comparison_of_a_kernel_missing_or_invalid_in_one_run():
    before = suite_run()
    after = replace(before, kernels=before.kernels[:3], outcomes=before.outcomes[:3])
    report = build_report([("a", before), ("b", after), ("a", before)])
    assert [r.label for r in report.runs] == ["a", "b", "a (2)"]
    local = next(c for c in report.comparisons if c.label == "running_mean/local")
    assert local.statuses == ("ok", "absent", "ok")
    duration = next(m for m in local.metrics if m.key == "duration")
    assert [c.direction for c in duration.cells] == ["n/a", "n/a", "same"]
    assert duration.cells[1].text == "n/a"


def test_json_format_is_versioned_and_carries_the_same_content():
    data = json.loads(render(build_report([("runs/a", suite_run())]), "json"))
    assert data["format"] == "memlens-report" and data["version"] == REPORT_VERSION == 1
    run = data["runs"][0]
    assert run["info"]["gpu_name"] == "NVIDIA H200"
    family = run["families"][0]
    assert family["name"] == "transpose" and family["baseline"] == "conflict"
    padded = family["variants"][1]
    assert padded["cells"]["speedup"]["value"] == pytest.approx(85_440 / 33_824)
    assert padded["cells"]["duration"] == {
        "value": 33_824.0,
        "unit": "ns",
        "text": "33.8 µs",
        "exact": "",
        "missing_reason": None,
        "flag": None,
    }
    assert padded["verdict_text"] == "no bank conflicts, no local memory"
    assert padded["expectation"]["state"] == "match"
    assert data["comparisons"] == []


def test_rendering_is_deterministic(charts_drawn_afresh):
    report = build_report([("a", suite_run()), ("b", suite_run(conflict={"duration": 60_000.0}))])
    first = render(report, "html")
    assert first == render(report, "html")
    # one chart per family of each run, one for the comparison; each drawn for a screen and for a phone
    assert first.count('<div class="wide"><svg') == first.count('<div class="narrow"><svg') == 5
    ids = re.findall(r'\bid="([^"]+)"', first)
    assert len(ids) == len(set(ids))  # charts of one page never share an id


def test_results_json_carries_declared_expectations():
    results = suite_run()
    again = RunResults.from_json(json.loads(json.dumps(results.to_json())))
    assert again.outcomes == results.outcomes
    assert again.outcomes[0].expect.note == "shared loads: 32-way conflict" and again.outcomes[0].baseline
    old = results.to_json()
    for item in old["outcomes"]:
        for key in ("demonstrates", "expect", "baseline"):
            del item[key]
    rows = rows_of(RunResults.from_json(old))
    assert rows["transpose/conflict"].baseline  # the first variant, as Family.baseline
    assert rows["transpose/padded"].expectation.state == "undeclared"
    assert rows["transpose/padded"].declared == "no expectation declared"


@pytest.mark.skipif(not Path(PROBE).is_dir(), reason="the probe recording was replaced by the suite's")
def test_probe_recordings():
    from memlens.readers import read_report

    rows = rows_of(read_report(f"{PROBE}/probe.csv"))
    assert rows["transpose/conflict"].verdict_text.startswith(
        "shared loads: 32-way bank conflicts, 16.3 M excess wavefronts (31 per load)"
    )
    assert rows["transpose/padded"].verdict_text == "no bank conflicts, no local memory"
    # a CSV declares no variants (no suite outcomes): its ranges get no speedup over one another
    assert rows["transpose/padded"].cells["speedup"].value is None
    assert rows["transpose/padded"].cells["speedup"].missing_reason == NOT_VARIANTS
    assert "1.07 GB of local loads" in rows["running_mean/local"].verdict_text
    fast_rows = rows_of(read_report(f"{PROBE}/probe_fast.ncu-rep"))
    assert "not measured exactly: a --fast run" in fast_rows["transpose/conflict"].verdict_text
    assert fast_rows["transpose/conflict"].cells["exact_excess_wavefronts"].text == "n/a"


def test_padded_figures_unchanged_by_aggregation():
    from memlens.model.over_launches import aggregate

    single = kernel("k", "f", "v", PADDED)
    assert aggregate([single]) is single
    double = aggregate([single, replace(single, launch_id=1)])
    assert double.raw["duration"] == 2 * PADDED["duration"]
    assert double.raw["dram_pct_of_peak"] == pytest.approx(PADDED["dram_pct_of_peak"])
    assert double.metric("dram_bandwidth").value == pytest.approx(single.metric("dram_bandwidth").value)


def test_launches_combine_as_the_catalogue_declares():
    from memlens.model.catalogue import CATALOGUE
    from memlens.model.over_launches import aggregate

    assert {k for k, m in CATALOGUE.items() if m.over_launches == "max"} == {
        "registers_per_thread",
        "static_shared_per_block",
        "dynamic_shared_per_block",
        "grid_size",
        "block_size",
        "sm_count",
    }
    assert {k for k, m in CATALOGUE.items() if m.over_launches == "duration_weighted"} == {
        "dram_pct_of_peak",
        "peak_ffma_per_cycle",
        "peak_dfma_per_cycle",
        "peak_hfma_per_cycle",
        "peak_dram_bytes_per_cycle",
        "sm_clock",
        "dram_clock",
        "l1_hit_rate",
        "l2_hit_rate",
        "dram_throughput",  # a rate, as ncu's sections hold DRAM bytes (issue 45)
        *(key for key in CATALOGUE if key.startswith("peak_tensor_")),  # 21 tensor-core peaks a cycle
    }
    assert sum(key.startswith("peak_tensor_") for key in CATALOGUE) == 21
    assert {k for k, m in CATALOGUE.items() if m.problem_above_zero} == {
        "exact_excess_wavefronts",
        "local_ld_bytes",
        "local_st_bytes",
    }
    first = kernel("k", "f", "v", {**PADDED, "duration": 1000.0, "dram_pct_of_peak": 40.0, "registers_per_thread": 16})
    second = replace(
        first, launch_id=1, raw={**first.raw, "duration": 3000.0, "dram_pct_of_peak": 80.0, "registers_per_thread": 32}
    )
    both = aggregate([first, second])
    assert both.raw["duration"] == 4000.0  # sum
    assert both.raw["registers_per_thread"] == 32  # max
    assert both.raw["dram_pct_of_peak"] == pytest.approx(70.0)  # (40 * 1000 + 80 * 3000) / 4000


def test_run_level_failure_is_a_note_not_a_family():
    from memlens.model.results import VariantOutcome

    results = suite_run()
    results = replace(results, outcomes=results.outcomes + (VariantOutcome("", "", "failed", "report unreadable: x"),))
    run = build_report([("run", results)]).runs[0]
    assert [f.name for f in run.families] == ["transpose", "running_mean"]
    assert run.notes == ("failed: report unreadable: x",)


@pytest.mark.parametrize(
    "wavefronts, ideal, text",
    [
        (
            16_000.0,
            4_000.0,
            "shared loads: bank conflicts (wavefronts 4.0× the conflict-free ideal),"
            " 12.0 K excess wavefronts (12 per load)",
        ),  # 16-byte loads: 4 wavefronts ideal
        (1_500.0, 1_000.0, "shared loads: 1.5-way bank conflicts (average), 500 excess wavefronts (0.500 per load)"),
    ],
)
def test_n_way_only_where_an_access_ideally_takes_one_wavefront(wavefronts, ideal, text):
    figures = {
        "shared_ld_instructions": 1_000.0,
        "shared_st_instructions": 0.0,
        "shared_ld_wavefronts": wavefronts,
        "shared_st_wavefronts": 0.0,
        "hw_ld_bank_conflicts": wavefronts - ideal,
        "hw_st_bank_conflicts": 0.0,
        "shared_wavefronts": wavefronts,
        "shared_wavefronts_ideal": ideal,
    }
    rows = rows_of(suite_run(conflict=figures))
    assert rows["transpose/conflict"].verdict[0].text == text


@pytest.mark.parametrize(
    "name, short",
    [
        ("void transpose<float, 32, 32, 0>(T1 *, const T1 *, ...)", "transpose<float, 32, 32, 0>"),
        (
            "memlens_suite_99454d3a12c8f5e_matmul::matmul_naive[abi:v1,cw51cX_3d](Array<float, 2, C, mutable>)",
            "matmul_naive",
        ),
        ("cub::DeviceReduceKernel<Policy, int *>(int *, int)", "cub::DeviceReduceKernel<Policy, int *>"),
        ("rm_local", "rm_local"),
    ],
)
def test_kernel_names_shortened_in_family_tables_with_the_full_name_as_tooltip(name, short):
    from memlens.reports.formatting import short_kernel

    assert short_kernel(name) == short
    results = suite_run()
    results = replace(results, kernels=(replace(results.kernels[0], kernel=name),) + results.kernels[1:])
    html = render(build_report([("run", results)]), "html")
    escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    short_escaped = short.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert f'<code class="kernel" title="{escaped}">{short_escaped}</code>' in html
