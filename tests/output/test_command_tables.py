"""profiling/output/command_tables.py: the tables of check, bench, list, doctor and baseline show, drawn
from the typed records their commands hand to the table format; and the one column type's report JSON."""

from __future__ import annotations

import io
import json

from memlens.doctor import Check
from memlens.gate.baseline import load_baseline
from memlens.output import render_text, renderer
from memlens.output.command_tables import BaselineView, SuiteListing
from memlens.reports.build import build_report
from memlens.static.check import load_static
from tests.conftest import FIXTURES, REPO

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
    assert f"baseline {baseline_file}" in " ".join(shown.split()) and "duration=" in shown
    assert all(len(line) <= 100 for line in shown.splitlines())


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
