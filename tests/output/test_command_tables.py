"""profiling/output/command_tables.py: the tables of check, bench, list, doctor and baseline show, drawn
from the typed records their commands hand to the table format; and the one column type's report JSON."""

from __future__ import annotations

import io
import json

import pytest

from memlens.doctor import Check
from memlens.gate.baseline import load_baseline
from memlens.gate.rules import ALL_METRICS
from memlens.io.units import format_value
from memlens.output import render_text, renderer
from memlens.output.command_tables import CHECK_COLUMNS, BaselineView, SuiteListing
from memlens.reports.build import build_report
from memlens.static.check import load_static, rows
from tests.conftest import FIXTURES, REPO
from tests.support.table_words import assert_words_whole, parse_tables

H200 = FIXTURES / "nvidia_h200"


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_each_record_renders_to_the_stream_it_is_given(monkeypatch):
    """A record renders to any stream (a file, here), at the width COLUMNS sets."""
    monkeypatch.setenv("COLUMNS", "200")
    static = render_text("table", "check", load_static(H200 / "check.json"))
    assert static.splitlines()[0].strip().startswith("memlens check")
    row = next(line for line in static.splitlines() if line.startswith("│ transpose/padded "))
    assert row.split("│")[3].strip() == "32" and row.split("│")[-2].strip() == "no"  # registers; no PTX .local
    monkeypatch.setenv("COLUMNS", "100")
    baseline_file = REPO / "kernels" / "baselines" / "nvidia_h200.json"
    shown = render_text("table", "baseline", BaselineView(baseline_file, load_baseline(baseline_file)))
    assert f"baseline {baseline_file}" in " ".join(shown.split()) and "duration" in parse_tables(shown)[0].headers
    assert all(len(line) <= 100 for line in shown.splitlines())


@pytest.mark.parametrize("columns", [80, 120])
def test_check_breaks_no_variant_kernel_or_header_mid_word(columns, monkeypatch):
    """At 80 columns the kernel goes under its variant; at 120 each has its column; no name is cut."""
    monkeypatch.setenv("COLUMNS", str(columns))
    results = load_static(H200 / "check.json")
    text = render_text("table", "check", results)
    names = [name for row in rows(results) for name in row[:2]]
    assert_words_whole(text, columns, [*(word for column in CHECK_COLUMNS for word in column.header.split()), *names])
    (table,) = parse_tables(text)
    spill = next(row for row in table.rows if row[0].startswith("running_mean/spill"))
    assert spill == ["running_mean/spill running_mean_spill", "32", "112", "240", "360", "0", "no"] or spill == [
        "running_mean/spill",
        "running_mean_spill",
        *("32", "112", "240", "360", "0", "no"),
    ]
    assert (columns == 80) == (len(table.headers) == 7)  # at 80 the kernel shares the variant's column


BASELINE = REPO / "kernels" / "baselines" / "nvidia_h200.json"


@pytest.mark.parametrize("columns", [80, 120])
def test_baseline_show_is_tables_of_every_figure_formatted_as_before(columns, monkeypatch):
    """One row a kernel, one column a figure, as many tables as fit the width: every figure of the file
    shows, formatted with its unit as the key=value list showed it ("78.8 µs", "4,096 B"); "-" where a
    kernel lacks a figure; kernels and figure keys whole."""
    monkeypatch.setenv("COLUMNS", str(columns))
    baseline = load_baseline(BASELINE)
    text = render_text("table", "baseline", BaselineView(BASELINE, baseline))
    keys = {key for values in baseline.values.values() for key in values}
    assert_words_whole(text, columns, [*baseline.values, *keys])
    assert " ".join(text.split()).startswith(
        f"baseline {BASELINE}: profile, gpu_name NVIDIA H200, compute_capability 9.0"
    )
    shown = {}
    for table in parse_tables(text):
        assert table.headers[0] == "kernel" and [row[0] for row in table.rows] == list(baseline.values)
        for row in table.rows:
            shown.update({(row[0], key): cell for key, cell in zip(table.headers[1:], row[1:], strict=True)})
    expected = {
        (kernel, key): format_value(value, ALL_METRICS[key].unit if key in ALL_METRICS else "")
        for kernel, values in baseline.values.items()
        for key, value in values.items()
    }
    assert {pair: shown.get(pair) for pair in expected} == expected
    assert {cell for pair, cell in shown.items() if pair not in expected} == {"-"}
    assert len(shown) == len(baseline.values) * len(keys)
    assert shown[("transpose/padded", "duration")] == "0.148 ms"
    assert shown[("transpose/padded", "static_shared_per_block")] == "4,224 B"


def test_the_suite_listing_is_a_table_or_one_block_a_variant(monkeypatch):
    row = ("transpose", "padded (baseline)", "a column of padding", "conflict-free", "0 excess wavefronts")
    listing = SuiteListing("kernels", (row,), ("matmul: needs cc 8.0",))
    monkeypatch.setenv("COLUMNS", "120")
    table = _lines(render_text("table", "suite", listing))
    assert table[0].strip() == "suite kernels" and table[-1] == "matmul: needs cc 8.0"
    assert [cell.strip() for cell in table[4].split("│")[1:-1]] == list(row)
    monkeypatch.setenv("COLUMNS", "40")  # too narrow for its longest words: one block a variant
    assert _lines(render_text("table", "suite", listing)) == [
        "suite kernels",
        "",
        "transpose / padded (baseline)",
        "  demonstrates: a column of padding",
        "  expect: conflict-free",
        "  on paper: 0 excess wavefronts",
        "matmul: needs cc 8.0",
    ]


def test_doctor_says_missing_only_of_a_required_check(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    checks = [
        Check("ncu", False, "not found", "install Nsight Compute", True),
        Check("GPU", False, "nvidia-smi: not found", "", False),
        Check("numpy", True, "2.4", "", False),
    ]
    out = io.StringIO()
    renderer("table", "doctor")(checks, out)
    status = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.getvalue().splitlines()
        if line.startswith("│") and line.split("│")[1].strip()
    }
    assert status == {"ncu": "MISSING", "GPU": "warning", "numpy": "ok"}


def test_the_reports_columns_are_five_fields_in_json_whatever_the_column_type_holds():
    """io/tables.Column also holds a terminal's layout; the report's JSON keeps its five fields, in order."""
    from memlens.readers import read_report

    report = build_report([("run", read_report(H200 / "suite.results.json"))])
    data = json.loads(json.dumps(report.to_json()))
    assert len(data["columns"]) == 17  # 12, and the n-ways of ldmatrix, stmatrix, cp.async, atomics, tensor-core reads
    assert all(list(column) == ["key", "header", "group", "kind", "title"] for column in data["columns"])
    assert data["columns"][0] == {
        "key": "duration",
        "header": "duration",
        "group": "time",
        "kind": "duration",
        "title": "kernel duration on the GPU (all launches of the variant)",
    }


def test_the_doctors_table_imports_no_numpy():
    """`memlens doctor` says NumPy is missing: its command and its table must run without it."""
    import subprocess
    import sys

    code = (
        "import sys, memlens.commands.doctor, memlens.output.formats.table, memlens.output.command_tables; "
        "print(sorted(m for m in ('numpy', 'memlens.suite', 'memlens.bench.timing') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
