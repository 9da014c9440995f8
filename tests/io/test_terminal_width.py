"""profiling/io/terminal.py's width in `memlens metrics`, `lines` and `bench`: tables that fit, in a pipe too."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len

from memlens.cli import main
from tests.conftest import FIXTURES, REPO
from tests.support.table_words import assert_words_whole, parse_tables

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
    note = " ".join(out[out.index("left out to fit 80 columns: ") :].split())
    assert note.startswith("left out to fit 80 columns: DRAM GB/s, DRAM % of peak")
    assert "(--wide shows all; --json every figure)" in note


def test_a_programs_kernels_with_local_memory_show_it_at_80_columns(monkeypatch, capsys):
    """A program's kernel that spills: the local column is kept at 80 columns, kernel names shortened to make
    room; a run with no local traffic (the torch CSV) and the suite (whose names would have to be cut to
    14 characters) keep the columns they had."""
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["metrics", str(H200 / "kinds" / "memory_kinds.ncu-rep")]) == 0
    out = capsys.readouterr().out
    header = [line for line in out.splitlines() if line.startswith("┃")]
    assert "local" in header[0] and "wavefronts" in header[-1] and _widest(out) <= 80
    spill = next(line for line in out.splitlines() if line.startswith("│ spill_launch_bounds(…)"))
    assert spill.split("│")[-2].strip() == "126 MB / 125 MB" and "2,031,616 (31/atom)" in out
    for plain in (INPUTS["torch CSV"], INPUTS["suite"]):
        assert main(["metrics", str(plain)]) == 0
        out = capsys.readouterr().out
        assert "local ld / st" in out[out.index("left out to fit 80 columns") :], out


def test_wide_shows_every_column_whatever_the_width(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["metrics", str(INPUTS["suite"]), "-k", "transpose/conflict$", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "left out" not in out and "65,536 x 256 │" in out and "66,028,141" in out and _widest(out) > 80
    table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]  # wider than 80, its right edge not cut
    assert {cell_len(line) for line in table} == {_widest(out)} and all(line[-1] in "┓┃┩│┘" for line in table)


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
    assert "matmul/tiled_article  (matmul_tiled_article)  [launch 6]" in out  # not 310 characters of mangling
    assert "kernels/transpose.cu:40  shared loads 32-way, 65,011,712 excess wavefronts" in out  # wrapped, never cut


def test_lines_json_keeps_the_full_name(capsys):
    assert main(["lines", str(INPUTS["suite"]), "-k", "tiled_article", "--json"]) == 0
    kernel = json.loads(capsys.readouterr().out)["kernels"][0]["kernel"]
    assert kernel.startswith("memlens_suite_") and "[abi:" in kernel and len(kernel) > 250


def test_bench_judges_compute_bound_variants_by_their_roofline(tmp_path, capsys):
    """`memlens bench --into RUN` of a profiled run (H200: the suite's profile and bench, recorded): a matmul,
    compute-bound on its roofline, gets "% of roofline" where a copy's % would read 0.1-0.8%."""
    from memlens.bench.results import load_bench
    from memlens.commands.bench import print_table

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(H200 / "suite.results.json", run / "results.json")
    bench = load_bench(Path(__file__).parents[1] / "benchmarks" / "results" / "bench_h200.json")
    print_table(bench, run)
    out = capsys.readouterr().out
    tiled = next(line for line in out.splitlines() if "matmul/tiled " in line or "matmul/tiled  " in line)
    assert re.search(r"\d+(\.\d+)?% of roofline", tiled), tiled
    assert "0.752%" not in out  # tiled's % of copy, no longer the judgement
    transpose = next(line for line in out.splitlines() if "transpose/tile64_padded" in line)
    assert "98.2%" in transpose  # memory-bound: still % of copy
    assert "is judged by its roofline instead" in out
    print_table(bench, tmp_path)  # no profile beside: say how to get the judgement
    assert "`memlens profile --roofline`, then `memlens bench --into` that run" in capsys.readouterr().out


def test_tables_in_a_pipe_are_wide_enough_not_to_fold(monkeypatch) -> None:
    from memlens.io.terminal import PIPE_WIDTH, table_console

    monkeypatch.delenv("COLUMNS", raising=False)
    out = table_console()
    assert out.width >= PIPE_WIDTH and table_console(240).width >= 240
    monkeypatch.setenv("COLUMNS", "90")
    assert table_console().width == 90


H100 = FIXTURES / "nvidia_h100_80gb_hbm3"
COMPARE = H100 / "compare"
EVERY_COMMAND = {  # each command on a fixture, as a user runs it at 80 columns
    "list": ["list"],
    "doctor": ["doctor", "--ncu", "/nonexistent/ncu"],
    "metrics": ["metrics", str(H200 / "suite.results.json")],
    "lines": ["lines", str(H200 / "suite.results.json")],
    "compare": ["compare", str(COMPARE / "compare_v1.ncu-rep"), str(COMPARE / "compare_v2.ncu-rep")],
    "gate": ["gate", str(H200 / "suite.results.json"), "--rules", str(REPO / "kernels" / "gates.toml")],
    "baseline": ["baseline", "show", str(REPO / "kernels" / "baselines" / "nvidia_h200.json")],
    "check --help": ["check", "--help"],
    "report --help": ["report", "--help"],
    "profile --help": ["profile", "--help"],
    "bench --help": ["bench", "--help"],
}
WHOLE_WORDS = {
    "list": ["fp16_transpose", "conflict-free;"],
    "compare": ["tile[threadIdx.x"],
    "doctor": ["'memlens[cuda13]'"],
}


@pytest.mark.parametrize("command", list(EVERY_COMMAND))
def test_every_command_fits_80_columns_and_breaks_between_words(command, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(REPO)  # in the checkout, wherever it lies: a path beneath it is shown relative to it
    try:
        code = main(EVERY_COMMAND[command])
    except SystemExit as exc:  # --help
        code = exc.code
    out = capsys.readouterr().out
    assert code in (0, 3) and out.strip(), out  # doctor: 3, something required is missing here
    assert _widest(out) <= 80, "\n".join(line for line in out.splitlines() if cell_len(line) > 80)
    for word in WHOLE_WORDS.get(command, []):
        if command != "doctor" or "memlens[" in out:  # doctor gives the CuPy install hint only where CuPy is missing
            assert re.search(rf"(^|\s){re.escape(word)}", out, re.M), out


@pytest.mark.parametrize("columns", [80, 120])
def test_gate_breaks_no_rule_kernel_or_metric_key_mid_word(columns, monkeypatch, capsys):
    """Every word of every verdict (its rule, kernel and detail, `global_load_sectors_per_request` too)
    whole: at 80 columns each detail goes on a line of its own under its kernel."""
    monkeypatch.chdir(REPO)
    assert main([*EVERY_COMMAND["gate"], "--format", "json"]) == 0
    verdicts = json.loads(capsys.readouterr().out)["verdicts"]
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(EVERY_COMMAND["gate"]) == 0
    out = capsys.readouterr().out
    words = [word for v in verdicts for field in ("rule", "subject", "message") for word in v[field].split()]
    assert_words_whole(out, columns, [*words, "status", "rule", "kernel", "detail"])
    (table,) = parse_tables(out)
    first = verdicts[0]
    assert table.rows[0][1:] == (
        [first["rule"], f"{first['subject']} {first['message']}"]
        if columns == 80
        else [first["rule"], first["subject"], first["message"]]
    )


def test_gate_shortens_a_long_kernel_name_in_the_middle_at_80_columns(monkeypatch):
    from memlens.gate.evaluate import GateResult, Verdict
    from memlens.output import render_text

    name = "void transpose_kernel_with_a_long_name<float, 32, 8, true>(float *, const float *, int, int, int, int)"
    message = "global_load_sectors_per_request = 16 (<= 4)"
    result = GateResult("r.toml", "run", "profile", (Verdict("fp32 transposes load coalesced", name, "fail", message),))
    monkeypatch.setenv("COLUMNS", "80")
    out = render_text("table", "gate", result)
    assert_words_whole(out, 80, ["fp32", "transposes", "load", "coalesced", *message.split()])
    (table,) = parse_tables(out)
    kernel = table.rows[0][2].removesuffix(f" {message}")
    assert kernel.startswith("void transpose_kernel_with_a_long_name<") and "…" in kernel, kernel


BASELINE = REPO / "kernels" / "baselines" / "nvidia_h200.json"


@pytest.mark.parametrize("columns", [80, 120])
def test_baseline_show_is_tables_that_fit(columns, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["baseline", "show", str(BASELINE)]) == 0
    out = capsys.readouterr().out
    kernels = [entry["key"] for entry in json.loads(BASELINE.read_text(encoding="utf-8"))["kernels"]]
    assert_words_whole(out, columns, kernels)
    assert len(out.splitlines()) < {80: 600, 120: 330}[columns]  # the key=value list: 1,027 and 495 lines


@pytest.mark.parametrize("command", ["list", "compare"])
def test_wide_prints_the_whole_table_or_line_at_80_columns(command, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main([*EVERY_COMMAND[command], "--wide"]) == 0
    assert _widest(capsys.readouterr().out) > 80
