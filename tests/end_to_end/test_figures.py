"""Figures a newcomer could misread: one label per Numba kernel whichever
reader found it, one unit system, no invented precision, the file the user named in a title (ncu's
other names of a counter: readers/test_ncu_csv.py and test_ncu_rep.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.model.results import KernelResult, RunInfo, RunResults
from memlens.readers import read_report
from memlens.readers.ncu_csv import parse_csv

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBE = FIXTURES / "probe"
H200 = FIXTURES / "nvidia_h200"
HASH = "cw51cXTLSUwv1sDUaKthqaNgoKmjgOR3W3Cw6igA9duC0hkwnNGiHEkYkrqQBFBTDEwCyQe21eqwcFW3UoDGjzpQEsgzrtUEAA_3d_3d"
FROM_CSV = f"matmul[v1,{HASH}]"
ARRAY = "Array<float, 2, C, mutable, aligned>"
FROM_REP = f"__main__::matmul[abi:v1,{HASH}]({ARRAY}, {ARRAY})"


def plain_run(*names: str, duration: float = 1000.0) -> RunResults:
    raw = {"duration": duration}
    return RunResults(RunInfo(source="plain"), tuple(KernelResult(n, None, None, i, raw) for i, n in enumerate(names)))


# --- item 5: one label for one Numba kernel --------------------------------------------------------


def test_a_numba_kernel_has_one_label_from_csv_and_ncu_rep() -> None:
    from memlens.model.kernel_names import kernel_label

    assert kernel_label(FROM_CSV) == kernel_label(FROM_REP) == "matmul"
    assert plain_run(FROM_CSV).kernels[0].label == plain_run(FROM_REP).kernels[0].label == "matmul"
    assert kernel_label("void tr<1>(float *, const float *, int)") == "void tr<1>(float *, const float *, int)"


def test_a_report_of_a_csv_and_an_ncu_rep_compares_the_numba_kernel_once() -> None:
    from memlens.output import render_report as render
    from memlens.reports.build import build_report

    report = build_report([("a.csv", plain_run(FROM_CSV)), ("a.ncu-rep", plain_run(FROM_REP))])
    assert [c.label for c in report.comparisons] == ["matmul"]
    html = render(report, "html")
    assert f'title="{FROM_REP.replace("<", "&lt;").replace(">", "&gt;")}"' in html  # the full name on hover
    data = json.loads(render(report, "json"))
    assert FROM_REP in json.dumps(data)  # and in JSON


def test_metrics_shows_the_numba_kernel_short_and_keeps_the_name_in_json(capsys, tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(plain_run(FROM_REP).to_json()), encoding="utf-8")
    assert main(["metrics", str(path)]) == 0
    out = capsys.readouterr().out
    assert "│ matmul " in out and "cw51" not in out
    assert main(["metrics", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"][0]["kernel"] == FROM_REP


# --- item 8: one unit system, units on every figure ---------------------------------------------------


def test_bytes_are_si_in_the_cli_the_report_and_the_gate(capsys, tmp_path: Path) -> None:
    from memlens.io.units import format_value
    from memlens.output import render_report as render
    from memlens.reports.build import build_report

    assert format_value(2**31, "bytes") == "2.15 GB" and format_value(2**31, "byte") == "2.15 GB"
    run = read_report(PROBE / "probe.csv")
    assert main(["metrics", str(PROBE / "probe.csv")]) == 0
    cli = capsys.readouterr().out
    html = render(build_report([("probe", run)]), "html")
    md = render(build_report([("probe", run)]), "md")
    for text in (cli, html, md):
        assert "1.07 GB" in text and "GiB" not in text and "MiB" not in text and "KiB" not in text


def test_the_gate_summary_gives_every_value_its_unit(capsys, tmp_path: Path) -> None:
    rules = tmp_path / "r.toml"
    rules.write_text(
        'version = 1\n[[rule]]\nname = "t"\nselect = "*"\nmetric = "duration"\nmax = 1\n'
        '[[rule]]\nname = "b"\nselect = "*"\nmetric = "local_bytes"\nmax = 0\n'
    )
    summary = tmp_path / "s.md"
    assert main(["gate", str(PROBE / "probe.csv"), "--rules", str(rules), "--summary", str(summary)]) == 1
    lines = summary.read_text(encoding="utf-8").splitlines()
    rows = [line.split(" | ") for line in lines if "| duration |" in line]
    assert rows and all(re.fullmatch(r"[\d.]+ (ns|µs|ms|s)", row[4]) for row in rows), rows
    rows = [line.split(" | ") for line in lines if "| local\\_bytes |" in line]
    assert any(row[4] == "2.15 GB" for row in rows), rows


# --- item 9: no precision the source lacks ----------------------------------------------------------


def test_dram_percent_from_a_csv_holding_two_decimals(capsys) -> None:
    text = (PROBE / "probe.csv").read_text(encoding="utf-8")
    run = parse_csv(text, "probe.csv")
    value = run.kernels[0].metric("dram_pct_of_peak").value
    assert value is not None
    from memlens.reports.build import build_report

    report = build_report(
        [
            (
                "probe",
                RunResults(
                    run.info,
                    (
                        KernelResult(
                            run.kernels[0].kernel,
                            "transpose",
                            "conflict",
                            0,
                            {**run.kernels[0].values(), "dram_pct_of_peak": 0.05},
                        ),
                    ),
                ),
            )
        ]
    )
    cell = report.runs[0].families[0].rows[0].cells["dram_pct_of_peak"]
    assert cell.text == "0.05%"


# --- item 10: the title names the file the user gave -------------------------------------------------


def test_metrics_titles_the_table_with_the_file_named(capsys) -> None:
    path = H200 / "suite.results.json"
    assert main(["metrics", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(str(path)) and "profile.ncu-rep" not in first


# --- item 7: without the instrumented pass, the estimate the counters support ------------------------


def _without_exact(kernel: KernelResult, reason: str) -> KernelResult:
    raw = {k: v for k, v in kernel.raw.items() if k not in ("shared_wavefronts", "shared_wavefronts_ideal")}
    missing = {**kernel.missing, "shared_wavefronts": reason, "shared_wavefronts_ideal": reason}
    return KernelResult(kernel.kernel, kernel.family, kernel.variant, kernel.launch_id, raw, missing)


@pytest.mark.parametrize("fast", [True, False])
def test_without_the_exact_count_a_conflict_and_a_padded_transpose_read_differently(fast: bool) -> None:
    from memlens.readers.metric_values import FAST_SKIPPED, INSTRUMENTED_ABSENT
    from memlens.reports.build import build_report

    run = read_report(PROBE / "probe.csv")
    reason = FAST_SKIPPED if fast else INSTRUMENTED_ABSENT
    run = RunResults(run.info, tuple(_without_exact(k, reason) for k in run.kernels), run.outcomes)
    rows = {r.label: r for f in build_report([("probe", run)]).runs[0].families for r in f.rows}
    conflict, padded = rows["transpose/conflict"].verdict[0], rows["transpose/padded"].verdict[0]
    assert conflict.text.startswith("shared loads: about 32.2 wavefronts per load: likely a 32-way bank conflict")
    assert padded.text.startswith("shared loads: about 1.0 wavefronts per load: likely no bank conflict")
    assert (conflict.severity, padded.severity) == ("bad", "ok")
    how = (
        "run without --fast for the exact count"
        if fast
        else "profile with ncu --metrics memory_l1_wavefronts_shared,memory_l1_wavefronts_shared_ideal"
    )
    assert how in conflict.text and "shared_wavefronts:" not in conflict.text
