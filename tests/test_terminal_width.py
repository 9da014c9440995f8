"""Output that fits (issue 24, item 5): at 80, 100 and 120 columns `memlens metrics` and `memlens lines`
print no line longer than the terminal; the table keeps the most telling columns and names the ones
left out with the option that shows all; kernel names are shortened to what a person wrote (the full
name in JSON); CSV and JSON are unchanged."""

from __future__ import annotations

import json

import pytest
from rich.cells import cell_len

from profiling.cli import main
from tests.conftest import FIXTURES

H200 = FIXTURES / "nvidia_h200"
INPUTS = {
    "suite": H200 / "suite.results.json",
    "program": FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep",
    "torch CSV": H200 / "programs" / "torch_triton.csv",
}


def _widest(text: str) -> int:
    return max(cell_len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize("kind", list(INPUTS))
def test_metrics_fits_the_terminal(kind, columns, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["metrics", str(INPUTS[kind])]) == 0
    out = capsys.readouterr().out
    assert _widest(out) <= columns, out
    assert "duration" in out  # the most telling columns stay
    left = [line for line in out.splitlines() if line.startswith("left out to fit")]
    if columns < 120 or kind != "torch CSV":
        assert left, out
    assert all("--wide shows all" in line or "--wide" in out for line in left)


def test_the_columns_kept_at_80_and_what_is_said_of_the_rest(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["metrics", str(INPUTS["suite"]), "-k", "transpose/conflict$"]) == 0
    out = capsys.readouterr().out
    header = [line for line in out.splitlines() if line.startswith("┃")]
    assert "duration" in header[-1] and "wavefronts" in header[-1]
    assert "65,011,712 (31/ld)" in out  # the exact figure, whole
    note = " ".join(out[out.index("left out to fit 80 columns: "):].split())
    assert note.startswith("left out to fit 80 columns: DRAM GB/s, DRAM % of peak")
    assert "(--wide shows all; --json every figure)" in note


def test_wide_shows_every_column_whatever_the_width(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["metrics", str(INPUTS["suite"]), "-k", "transpose/conflict$", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "left out" not in out and "65,536 x 256" in out and "66,026,179" in out and _widest(out) > 80


def test_a_programs_kernel_name_is_shortened_in_the_table_and_whole_in_json(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    path = str(INPUTS["torch CSV"])
    assert main(["metrics", path, "-k", "softmax"]) == 0
    out = capsys.readouterr().out
    assert "softmax_warp_forward" in out and "(float *" not in out  # no argument list
    assert main(["metrics", path, "-k", "softmax", "--json"]) == 0
    kernel = json.loads(capsys.readouterr().out)["kernels"][0]["kernel"]
    assert kernel.startswith("void <unnamed>::softmax_warp_forward<float, float, float, 10, 0, 0>(")


def test_csv_and_json_do_not_depend_on_the_width(monkeypatch, capsys):
    outputs = {}
    for columns in ("80", "240"):
        monkeypatch.setenv("COLUMNS", columns)
        for option in ("--csv", "--json"):
            assert main(["metrics", str(INPUTS["suite"]), option]) == 0
            outputs[(columns, option)] = capsys.readouterr().out
    assert outputs[("80", "--csv")] == outputs[("240", "--csv")]
    assert outputs[("80", "--json")] == outputs[("240", "--json")]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_lines_fits_the_terminal_and_names_numba_kernels_by_their_function(columns, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["lines", str(INPUTS["suite"]), "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert _widest(out) <= columns, out
    assert "matmul/tiled_article  (matmul_tiled_article)  [launch 1]" in out  # not 310 characters of mangling
    assert "kernels/transpose.cu:40  32-way loads, 65,011,712 excess wavefronts  [LDS]" in out


def test_lines_json_keeps_the_full_name(capsys):
    assert main(["lines", str(INPUTS["suite"]), "-k", "tiled_article", "--json"]) == 0
    kernel = json.loads(capsys.readouterr().out)["kernels"][0]["kernel"]
    assert kernel.startswith("memlens_suite_") and "[abi:" in kernel and len(kernel) > 250
