"""Figures a newcomer could misread: one label per Numba kernel whichever
reader found it, ncu's other names of a counter, one unit system, no invented precision, the file
the user named in a title."""

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
LONG_CPP = ("void transpose_kernel<float, 32, 32, cub::detail::very_long_policy_name<int, 4>, 0>"
            "(float *__restrict__, const float *__restrict__, int, int, int)")  # fmt: skip


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
    from memlens.reports.render import build_report

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


def test_long_cpp_names_are_elided_in_the_middle_never_cut_at_the_left() -> None:
    from memlens.model.kernel_names import elide_middle

    short = elide_middle(LONG_CPP, 60)
    assert len(short) <= 60 and short.startswith("void transpose_kernel<") and "…" in short
    assert elide_middle("void tr<1>(float *, const float *, int)", 20) == "void tr<1>(…)"  # arguments go first
    assert elide_middle("short", 20) == "short"
    huge = elide_middle("k" + "x" * 5000 + "_end", 100)
    assert len(huge) == 100 and huge.startswith("kxx") and huge.endswith("_end")


def test_chart_labels_fit_the_margin_and_keep_the_kernels_name() -> None:
    from memlens.reports.charts import LABEL_CHARS, short

    label = short(LONG_CPP)
    assert len(label) <= LABEL_CHARS <= 30  # 0.2 of an 11-inch figure at 9 pt: longer ones are cut at the left
    assert label.startswith("void transpose_kernel")
    assert short("transpose/padded", " (baseline)") == "transpose/padded (baseline)"


# --- item 6: ncu's other names of the shared-memory instruction counts -------------------------------

OTHER_NAMES = {
    "smsp__inst_executed_op_shared_ld.sum":
        ("smsp__sass_inst_executed_op_shared_ld.sum", "sass__inst_executed_shared_loads"),
    "smsp__inst_executed_op_shared_st.sum":
        ("smsp__sass_inst_executed_op_shared_st.sum", "sass__inst_executed_shared_stores"),
}  # fmt: skip


@pytest.mark.parametrize("which", [0, 1])
def test_a_csv_with_ncus_other_name_for_shared_loads_is_measured(which: int) -> None:
    text = (PROBE / "probe.csv").read_text(encoding="utf-8")
    original = {k.label: k for k in parse_csv(text, "probe.csv").kernels}
    for name, others in OTHER_NAMES.items():
        assert f'"{name}"' in text
        text = text.replace(f'"{name}"', f'"{others[which]}"')  # the header only: the recorded values stay
    renamed = {k.label: k for k in parse_csv(text, "renamed.csv").kernels}
    conflict = renamed["transpose/conflict"]
    for key in ("shared_ld_instructions", "shared_st_instructions", "shared_ld_ways"):
        assert conflict.metric(key).value == original["transpose/conflict"].metric(key).value, key
    assert conflict.metric("shared_ld_ways").value == pytest.approx(32.25, abs=0.01)


def test_an_ncu_rep_with_ncus_other_name_for_shared_loads_is_measured(monkeypatch) -> None:
    from memlens.readers import ncu_rep

    class Metric:
        def __init__(self, value: float, unit: str) -> None:
            self.value, self._unit = value, unit

        def unit(self) -> str:
            return self._unit

    class Binding:
        def metric_by_name(self, action: dict, name: str) -> Metric | None:
            return action.get(name)

        def has_value(self, metric: Metric) -> bool:
            return True

        def value(self, metric: Metric) -> float:
            return metric.value

    monkeypatch.setattr(ncu_rep, "_binding", lambda: Binding())
    action = {"gpu__time_duration.sum": Metric(5.0, "nsecond"),
              "smsp__sass_inst_executed_op_shared_ld.sum": Metric(2_097_152.0, "inst"),
              "sass__inst_executed_shared_stores": Metric(2_097_152.0, "inst"),
              "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": Metric(67_633_152.0, "")}  # fmt: skip
    reader = ncu_rep._MetricReader()
    values = reader.values(action)
    kernel = ncu_rep._kernel("k", 0, values, (None, None), reader.units, False)
    assert kernel.metric("shared_ld_instructions").value == 2_097_152.0
    assert kernel.metric("shared_st_instructions").value == 2_097_152.0
    assert kernel.metric("shared_ld_ways").value == pytest.approx(32.25)


# --- item 8: one unit system, units on every figure ---------------------------------------------------


def test_bytes_are_si_in_the_cli_the_report_and_the_gate(capsys, tmp_path: Path) -> None:
    from memlens.io.units import format_value
    from memlens.output import render_report as render
    from memlens.reports.render import build_report

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
    rules.write_text('version = 1\n[[rule]]\nname = "t"\nselect = "*"\nmetric = "duration"\nmax = 1\n'
                     '[[rule]]\nname = "b"\nselect = "*"\nmetric = "local_bytes"\nmax = 0\n')  # fmt: skip
    summary = tmp_path / "s.md"
    assert main(["gate", str(PROBE / "probe.csv"), "--rules", str(rules), "--summary", str(summary)]) == 1
    lines = summary.read_text(encoding="utf-8").splitlines()
    rows = [line.split(" | ") for line in lines if "| duration |" in line]
    assert rows and all(re.fullmatch(r"[\d.]+ (ns|µs|ms|s)", row[4]) for row in rows), rows
    rows = [line.split(" | ") for line in lines if "| local\\_bytes |" in line]
    assert any(row[4] == "2.15 GB" for row in rows), rows


# --- item 9: no precision the source lacks ----------------------------------------------------------


def test_a_percentage_prints_no_digits_the_source_lacks() -> None:
    from memlens.io.units import format_percent

    assert format_percent(0.05) == "0.05%"
    assert format_percent(0.0545) == "0.0545%"
    assert format_percent(35.0) == "35%" and format_percent(40.123) == "40.1%"
    assert format_percent(35.0123) == "35.0%"  # a zero the value has stays


def test_dram_percent_from_a_csv_holding_two_decimals(capsys) -> None:
    text = (PROBE / "probe.csv").read_text(encoding="utf-8")
    run = parse_csv(text, "probe.csv")
    value = run.kernels[0].metric("dram_pct_of_peak").value
    assert value is not None
    from memlens.reports.render import build_report

    report = build_report([("probe", RunResults(run.info, (KernelResult(
        run.kernels[0].kernel, "transpose", "conflict", 0, {**run.kernels[0].values(), "dram_pct_of_peak": 0.05}),)))])
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
    from memlens.readers.common import FAST_SKIPPED, INSTRUMENTED_ABSENT
    from memlens.reports.render import build_report

    run = read_report(PROBE / "probe.csv")
    reason = FAST_SKIPPED if fast else INSTRUMENTED_ABSENT
    run = RunResults(run.info, tuple(_without_exact(k, reason) for k in run.kernels), run.outcomes)
    rows = {r.label: r for f in build_report([("probe", run)]).runs[0].families for r in f.rows}
    conflict, padded = rows["transpose/conflict"].verdict[0], rows["transpose/padded"].verdict[0]
    assert conflict.text.startswith("shared loads: about 32.2 wavefronts per load: likely a 32-way bank conflict")
    assert padded.text.startswith("shared loads: about 1.0 wavefronts per load: likely no bank conflict")
    assert (conflict.severity, padded.severity) == ("bad", "ok")
    how = ("run without --fast for the exact count" if fast else
           "profile with ncu --metrics memory_l1_wavefronts_shared,memory_l1_wavefronts_shared_ideal")  # fmt: skip
    assert how in conflict.text and "shared_wavefronts:" not in conflict.text
