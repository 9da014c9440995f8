"""The report of the suite as recorded on a GPU by tests/fixtures/record.sh: every variant is what
it declares, the verdicts name what the notes of the GPU machine saw. Skipped until recorded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memlens.output import render_report as render
from memlens.readers import read_report
from memlens.reports.build import build_report
from memlens.reports.verdicts import judge

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = sorted(p.parent for p in FIXTURES.glob("*/suite.results.json"))

pytestmark = pytest.mark.skipif(not RECORDED, reason="suite fixtures not recorded yet (tests/fixtures/record.sh)")


@pytest.fixture(params=RECORDED, ids=[p.name for p in RECORDED])
def recorded(request) -> Path:
    return request.param


def rows(path: Path) -> dict:
    run = build_report([(str(path), read_report(path))]).runs[0]
    return {row.label: row for row in run.variants}


def test_every_variant_is_valid_and_as_declared(recorded):
    report = build_report([("suite", read_report(recorded / "suite.results.json"))])
    run = report.runs[0]
    assert run.complete and run.exact_available
    assert {f.name for f in run.families} >= {"transpose", "running_mean", "matmul"}
    for row in run.variants:
        assert row.valid, (row.label, row.status, row.message)
        assert row.expectation.state == "match", (row.label, row.declared, row.expectation.measured, row.verdict_text)
    assert dict((item.label, item.text) for item in run.header)["GPU"] != "n/a"


def test_verdicts_on_the_recorded_suite(recorded):
    by_label = rows(recorded / "suite.results.json")
    conflict = by_label["transpose/conflict"]
    assert conflict.baseline
    # 65,011,712 exact excess wavefronts over 2,097,152 shared-load executions: 31 each (both GPUs)
    assert conflict.verdict_text.startswith(
        "shared loads: 32-way bank conflicts, 65.0 M excess wavefronts (31 per shared load); "
    )
    # a recording with the roofline counters (--roofline) says a transpose moves data only
    with_roofline = read_report(recorded / "suite.results.json").kernels[0].raw.get("sm_clock") is not None
    roofline = "; roofline: no floating-point work (moves data only): no intensity figure" if with_roofline else ""
    for label in ("transpose/padded", "transpose/swizzled"):
        if label in by_label:  # PMPP's memory-level verdict between the two (reports/global_memory_verdicts.py)
            text = by_label[label].verdict_text
            assert text == "no bank conflicts, no local memory" + roofline or (  # a recording without L2 bytes
                text.startswith("no bank conflicts, no local memory; DRAM-bound: DRAM at ")
                and text.endswith(roofline or "the DRAM bytes)")
            )
            assert by_label[label].cells["speedup"].value > 1.2
    local = [row for label, row in by_label.items() if label.startswith("running_mean/") and not row.baseline]
    assert any("local memory: " in row.verdict_text and "of local loads" in row.verdict_text for row in local)


def test_fast_recording_falls_back_to_the_hardware_counter(recorded):
    by_label = rows(recorded / "suite_fast.results.json")
    conflict = by_label["transpose/conflict"]
    assert conflict.expectation.state == "unchecked"
    assert "not measured exactly: a --fast run" in conflict.verdict_text
    assert "HW counter (shared ld + st): " in conflict.verdict_text


def test_plain_ncu_report_has_other_kernels_only(recorded):
    run = build_report([("plain", read_report(recorded / "plain_ncu.csv"))]).runs[0]
    assert run.families == () and run.others
    assert any(row.verdict and row.valid for row in run.others)


def test_all_recordings_in_one_report(recorded):
    paths = [recorded / "suite.results.json", recorded / "suite_fast.results.json", recorded / "plain_ncu.ncu-rep"]
    report = build_report([(str(p), read_report(p)) for p in paths])
    html = render(report, "html")
    assert html.count("<svg") >= 4 and "Comparison across runs" in html
    assert "http" not in html
    md = render(report, "md")
    assert "| **conflict** (baseline) | ok |" in md


def test_each_kind_of_shared_access_has_its_own_n_way_column_and_verdict(recorded):
    """fp16_transpose/dense: ldmatrix 4,194,304 wavefronts over an ideal of 1,048,576 (4-way) beside its
    conflict-free LDS.128, where the "ld n-way" column blended them into 2.5; the suite has no atomics or
    tensor-core reads, so no such columns."""
    report = build_report([("suite", read_report(recorded / "suite.results.json"))])
    run = report.runs[0]
    headers = [column.header for column in report.run_columns(run)]
    assert [h for h in headers if h.endswith("n-way")] == [
        "ld n-way",
        "ldmatrix n-way",
        "st n-way",
        "stmatrix n-way",
        "cp.async n-way",
    ]
    dense = next(row for row in run.variants if row.label == "fp16_transpose/dense")
    texts = {key: cell.text for key, cell in dense.cells.items() if key.endswith("_ways")}
    assert texts == {
        "shared_ld_ways": "1.0",
        "exact_ldmatrix_ways": "4.0",
        "shared_st_ways": "—",
        "exact_stmatrix_ways": "4.0",
        "exact_cp_async_ways": "2.0",
        "exact_shared_atomics_ways": "—",
        "exact_tensor_core_reads_ways": "—",
    }
    kernel = next(k for k in read_report(recorded / "suite.results.json").kernels if k.label == "fp16_transpose/dense")
    shared = next(f for f in judge(replace(kernel, instructions=())).findings if f.topic == "shared")
    # without its instructions, each kind's sums: ldmatrix and stmatrix 4-way, cp.async 2-way, each its own
    assert shared.text == (
        "ldmatrix loads: 4-way bank conflicts, 3.15 M excess wavefronts; stmatrix stores: 4-way"
        " bank conflicts, 3.15 M excess wavefronts; cp.async stores: 2-way bank conflicts, 1.05 M"
        " excess wavefronts"
    )
