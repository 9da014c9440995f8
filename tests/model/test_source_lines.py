"""profiling/model/source_lines.py and `memlens lines`: per-instruction records rolled up to lines, by side."""

# On recordings made on an H100 with line info (tests/fixtures/nvidia_h100_80gb_hbm3 by record.sh,
# tests/fixtures/programs/nvidia_h100_80gb_hbm3 by record_programs.sh) and on the H200 ones without it.

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.kernels import matmul, transpose
from memlens.model.instruction_kinds import Side, Space, classify
from memlens.model.instruction_table import InstructionRecord, Placement
from memlens.model.kernel_lines import kernel_lines
from memlens.model.results import KernelResult, RunResults, VariantOutcome
from memlens.model.source_lines import SourceMap, line_words, placement_note, roll_up
from memlens.output.line_listing import describe
from memlens.readers import read_lines, read_report
from memlens.reports.hot_lines import hot_lines, line_findings

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
H100 = FIXTURES / "nvidia_h100_80gb_hbm3"
H200 = FIXTURES / "nvidia_h200"
CUDA_APP = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the one line of `path` containing `text`."""
    found = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (path, text, found)
    return found[0]


@pytest.fixture(scope="module")
def suite() -> RunResults:
    """The H100 suite report with its instructions, and the sources its variants declare (as a run
    recorded now writes them into results.json's outcomes)."""
    results = read_report(H100 / "suite.ncu-rep", instructions=True)
    declared = {
        ("transpose", "conflict"): (str(transpose.CONFLICT.source),),
        ("matmul", "tiled_pmpp"): (str(matmul.PMPP.source),),
    }
    outcomes = tuple(VariantOutcome(f, v, "ok", sources=s) for (f, v), s in declared.items())
    return replace(results, outcomes=outcomes)


@pytest.fixture(scope="module")
def app() -> dict:
    return {k.kernel.split("(")[0]: k for k in read_report(CUDA_APP, instructions=True).kernels}


def lines_of(results: RunResults, label: str):
    kernel = next(k for k in results.kernels if k.label == label)
    return kernel_lines(results, [kernel], REPO)[0]


# --- classifying SASS ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sass", "expected"),
    [
        ("LDS R19, [R17]", ("LDS", "shared", "ld", 32)),
        ("@!P2  STS [R3], R14", ("STS", "shared", "st", 32)),
        ("LDS.128 R12, [R2+0x10]", ("LDS.128", "shared", "ld", 128)),
        ("STS.64 [R0], R2", ("STS.64", "shared", "st", 64)),
        ("LDSM.16.M88.4 R4, [R2]", ("LDSM.16.M88.4", "shared", "ld", 128)),  # 16-byte matrix rows
        ("STSM.16.MT88.4 [R2], R4", ("STSM.16.MT88.4", "shared", "st", 128)),
        ("LDGSTS.E.BYPASS.128 [R5], desc[UR8][R2.64]", ("LDGSTS.E.BYPASS.128", "shared", "st", 128)),
        ("HGMMA.64x128x16.F32 R24, gdesc[UR4], R24", ("HGMMA.64x128x16.F32", "shared", "mma", 32)),
        ("UTMALDG.2D [UR8], [UR4]", ("UTMALDG.2D", "tma", "other", 32)),
        ("ATOMS.ADD RZ, [R2], R3", ("ATOMS.ADD", "shared", "atom", 32)),
        ("LDL.LU.64 R4, [R1+0x8]", ("LDL.LU.64", "local", "ld", 64)),
        ("STL.128 [R1], R4", ("STL.128", "local", "st", 128)),
        ("LDG.E R7, desc[UR6][R8.64]", ("LDG.E", None, "other", 32)),
    ],
)
def test_classify_names_opcode_space_side_and_width(sass, expected):
    assert classify(sass) == expected


def test_a_wide_access_is_judged_against_its_own_ideal():
    # a 16-byte load takes 4 wavefronts a warp at best: 4 a warp is conflict-free, not "4-way"
    wide = InstructionRecord(
        0x10, "LDS.128 R4, [R2]", "LDS.128", "shared", "ld", 128, executions=1000, wavefronts=4000, ideal=4000
    )
    assert wide.ways == 1.0 and wide.excess == 0
    line = roll_up([wide], SourceMap(REPO))[0]
    assert describe(line) == "16-byte shared loads conflict-free (1-way)"  # its width named: served in quarter-warps


# --- the built-in suite, H100, line info ------------------------------------------------------------


def test_transpose_conflict_names_the_column_read_line(suite):
    found = lines_of(suite, "transpose/conflict")
    source = REPO / "kernels" / "transpose.cu"
    hottest = found.lines[0]
    assert found.line_info
    assert (hottest.file, hottest.line) == ("kernels/transpose.cu", 40)
    assert hottest.line == line_of(source, "= tile[tx][tile_col<SWIZZLE>(tx, r)];")
    assert hottest.source == "out[(size_t)out_row * rows + out_col] = tile[tx][tile_col<SWIZZLE>(tx, r)];"
    assert not hottest.temporary  # CuPy's temporary copy, mapped back to the declared file
    assert hottest.shared_ld.excess == 65_011_712 and hottest.shared_ld.ways == 32
    assert hottest.shared_st.ways is None and hottest.opcodes == ("LDS", "STG.E")  # the load and its global store
    store = found.lines[1]
    assert store.line == 31 and store.shared_st.excess == 0 and store.shared_st.ways == 1
    assert describe(hottest) == (
        "shared loads 32-way, 65,011,712 excess wavefronts; global stores coalesced (4 sectors per access, the ideal)"
    )


def test_matmul_article_store_line_and_load_line_each_with_its_own_excess(suite):
    found = lines_of(suite, "matmul/tiled_article")
    source = REPO / "kernels" / "matmul.py"
    by_line = {line.line: line for line in found.lines}
    store_a = line_of(source, "sa[tx, ty] = a[x, a_col]")
    store_b = line_of(source, "sb[tx, ty] = b[b_row, y]")
    load = line_of(source, "acc += sa[tx, j] * sb[j, ty]")
    assert {line.file for line in found.lines} == {"kernels/matmul.py"}
    assert by_line[load].shared_ld.excess == 805_306_368 and by_line[load].shared_st.ways is None
    assert by_line[load].opcodes == ("LDS", "LDS.128")
    assert by_line[store_a].shared_st.excess == by_line[store_b].shared_st.excess == 117_440_512
    assert by_line[store_a].shared_st.ways == 8 and by_line[store_a].shared_ld.ways is None
    kernel = next(k for k in suite.kernels if k.label == "matmul/tiled_article")
    assert kernel.metric("exact_excess_wavefronts_ld").value == 805_306_368
    assert kernel.metric("exact_excess_wavefronts_st").value == 2 * 117_440_512
    assert kernel.metric("exact_excess_wavefronts").value == 805_306_368 + 2 * 117_440_512


def test_a_temporary_copy_without_declared_sources_is_shown_as_temporary(suite):
    bare = replace(suite, outcomes=())
    hottest = lines_of(bare, "transpose/conflict").lines[0]
    assert hottest.temporary and hottest.file is not None and hottest.file.endswith(".cubin.cu")
    assert hottest.line == 40 and hottest.source is None


def test_split_sums_to_the_total_for_every_suite_kernel(suite):
    assert len(suite.kernels) == 19  # every variant of the H100 recording
    for kernel in suite.kernels:
        total = kernel.metric("exact_excess_wavefronts").value
        ld, st = (kernel.metric(f"exact_excess_wavefronts_{side}").value for side in ("ld", "st"))
        assert ld + st == total, kernel.label


def test_results_json_round_trip_keeps_instructions_and_sources(suite, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(suite.to_json()))
    loaded = read_report(path)
    assert [k.instructions for k in loaded.kernels] == [k.instructions for k in suite.kernels]
    assert loaded.outcomes[0].sources == (str(transpose.CONFLICT.source),)
    assert suite.to_json()["schema_version"] == 3


# --- the CUDA C++ program: the load/store split and wide accesses -----------------------------------


def test_store_conflict_is_counted_on_the_store_side(app):
    kernel = app["transpose_store_conflict"]
    assert kernel.metric("exact_excess_wavefronts_st").value == 4_063_232
    assert kernel.metric("exact_excess_wavefronts_ld").value == 0
    assert kernel.metric("excess_wavefronts_per_shared_ld").value == 0
    assert kernel.metric("excess_wavefronts_per_shared_st").value == 31


def test_eight_byte_shared_accesses_are_conflict_free(app):
    kernel = app["copy_float2_shared"]
    records = [r for r in kernel.instructions if r.space == "shared"]
    assert {r.opcode for r in records} == {"STS.64", "LDS.64"}
    assert all(r.wavefronts == 2 * r.executions and r.ways == 1 for r in records)
    assert kernel.metric("exact_excess_wavefronts").value == 0


def test_local_loads_and_stores_by_line(app, tmp_path):
    results = read_report(CUDA_APP, instructions=True)
    kernel = next(k for k in results.kernels if k.kernel.startswith("running_sum_local"))
    found = kernel_lines(results, [kernel], REPO)[0]
    source = REPO / "tests" / "fixtures" / "programs" / "cuda_app.cu"
    by_line = {line.line: line for line in found.lines}
    read_line = line_of(source, "sum += window[(j + i) % 32]")
    assert by_line[read_line].local_ld_executions == 4_194_304 and by_line[read_line].local_st_executions is None
    assert by_line[read_line].file == "tests/fixtures/programs/cuda_app.cu"
    assert found.lines[0].line == read_line  # the hottest line


# --- memlens lines --------------------------------------------------------------------------------


def test_lines_cli_names_the_store_line_of_a_program(capsys):
    assert main(["lines", str(CUDA_APP), "-k", "store_conflict", "--top", "1"]) == 0
    out = capsys.readouterr().out
    # the conflict first; the line's global load follows, where the report has per-instruction global sectors
    assert "tests/fixtures/programs/cuda_app.cu:39  shared stores 32-way, 4,063,232 excess wavefronts" in out
    assert "STS" in out.splitlines()[1]
    assert "tile[threadIdx.x][threadIdx.y + j] = in[(y + j) * n + x];" in out
    assert "transpose_conflict" not in out and "1 more line (--top 0" in out


def test_lines_json_entries_carry_file_line_source_and_figures(capsys):
    assert main(["lines", str(CUDA_APP), "-k", "transpose_conflict", "--json", "--top", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    (kernel,) = data["kernels"]
    first = kernel["lines"][0]
    assert kernel["line_info"] is True and kernel["hint"] is None
    assert (first["file"], first["line"]) == ("tests/fixtures/programs/cuda_app.cu", 21)
    assert "tile[threadIdx.x][threadIdx.y + j]" in first["source"]
    assert first["shared_ld"]["excess_wavefronts"] == 4_063_232 and first["shared_ld"]["n_way"] == 32
    assert first["shared_st"]["n_way"] is None and len(kernel["lines"]) == 2


def test_lines_without_line_info_attributes_to_sass_and_hints(capsys):
    # the probe recording has no line info (the H200 suite recording has it now)
    assert main(["lines", str(FIXTURES / "probe" / "probe.ncu-rep"), "-k", "transpose/conflict$", "--top", "1"]) == 0
    out = capsys.readouterr().out
    # no line info: one line a kind of instruction, of those that ran (4 LDS of 4,063,232 excess each)
    expected = "  shared loads (4 instructions, no line info)  shared loads 32-way, 16,252,928 excess wavefronts  [LDS]"
    assert expected in out
    assert "not executed" not in out
    assert "hint: no line info in this report: compile with -lineinfo" in out
    assert "lineinfo=True" in out


def test_lines_of_a_csv_is_refused_in_one_line(capsys):
    assert main(["lines", str(H200 / "suite.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a CSV cannot carry per-instruction data" in err


def test_lines_of_a_fast_report_says_what_is_missing(capsys):
    assert main(["lines", str(H200 / "suite_fast.ncu-rep")]) == 2
    assert "no per-instruction values" in capsys.readouterr().err


def test_lines_of_an_old_results_json_reads_the_runs_report(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_bytes((H100 / "suite.results.json").read_bytes())  # schema 1
    (run / "profile.ncu-rep").write_bytes((H100 / "suite.ncu-rep").read_bytes())
    results = read_lines(run)
    assert sum(len(k.instructions) for k in results.kernels) > 0
    assert main(["lines", str(run), "-k", "tiled_article", "--top", "3"]) == 0
    # the line's two loads apart: sb[j, ty]'s 16-byte loads conflict, sa[tx, j]'s 4-byte ones do not
    assert (
        "kernels/matmul.py:62  16-byte shared loads 4-way, 805,306,368 excess wavefronts; shared loads"
        " conflict-free (1-way)"
    ) in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-k", "nomatch"], "no kernel in"),
        (["--top", "-1"], "--top must be 0 or more"),
    ],
)
def test_lines_usage_errors_are_exit_2(argv, message, capsys):
    assert main(["lines", str(CUDA_APP), *argv]) == 2
    assert message in capsys.readouterr().err


# --- the report -----------------------------------------------------------------------------------


def test_report_verdict_and_html_name_the_hot_line(suite):
    from memlens.output import render_report as render
    from memlens.reports.build import build_report

    declared = {(o.family, o.variant): o for o in suite.outcomes}
    outcomes = tuple(
        declared.get((k.family, k.variant), VariantOutcome(k.family, k.variant, "ok")) for k in suite.kernels
    )
    report = build_report([("h100", replace(suite, outcomes=outcomes))])
    rows = {row.label: row for family in report.runs[0].families for row in family.rows}
    conflict = rows["transpose/conflict"]
    assert [(line.file, line.line) for line in conflict.hot_lines] == [("kernels/transpose.cu", 40)]
    assert (
        "kernels/transpose.cu:40 `out[(size_t)out_row * rows + out_col] = tile[tx][tile_col<SWIZZLE>(tx, r)];`:"
        " shared loads 32-way, 65.0 M excess wavefronts"
    ) in [f.text for f in conflict.verdict if f.topic == "line"]  # the record's; the hot lines show it, not the cell
    article = rows["matmul/tiled_article"]
    assert [line.line for line in article.hot_lines] == [62, 58, 59]
    store = (
        "kernels/matmul.py:58 `sa[tx, ty] = a[x, a_col] if x < m and a_col < k else float32(0.0)`: "
        "global loads uncoalesced: 16 sectors per access, 4x the ideal 4, shared stores 8-way"
    )
    assert any(store in f.text for f in article.verdict if f.topic == "line")
    assert rows["transpose/padded"].hot_lines == () and "kernels/" not in rows["transpose/padded"].verdict_text
    html = render(report, "html")
    assert "hot lines of <code>transpose/conflict</code>" in html
    assert "tile[tx][tile_col&lt;SWIZZLE&gt;(tx, r)];</pre>" in html  # escaped
    assert "32-way, 65,011,712" in html
    markdown = render(report, "md")
    assert "kernels/transpose.cu:40" in markdown


def test_verdict_puts_a_store_conflict_on_the_stores(app):
    from memlens.reports.verdicts import judge

    # the hardware counter would weigh both sides; the exact split says: stores only
    shared = next(f for f in judge(app["transpose_store_conflict"]).findings if f.topic == "shared")
    assert shared.text.startswith("shared stores: 32-way bank conflicts, 4.06 M excess wavefronts")


def test_verdict_takes_the_side_from_the_exact_split_not_the_hardware_counter():
    from memlens.model.results import KernelResult
    from memlens.reports.verdicts import judge

    # the hardware counter blames the loads (as it over-counts); the exact split says stores
    raw = {
        "shared_ld_instructions": 1000.0,
        "shared_st_instructions": 1000.0,
        "shared_wavefronts": 33000.0,
        "shared_wavefronts_ideal": 2000.0,
        "hw_ld_bank_conflicts": 5000.0,
        "hw_st_bank_conflicts": 0.0,
        "exact_excess_wavefronts_ld": 0.0,
        "exact_excess_wavefronts_st": 31000.0,
    }
    shared = next(f for f in judge(KernelResult("k", raw=raw)).findings if f.topic == "shared")
    assert shared.text.startswith("shared stores:"), shared.text


def test_metrics_json_carries_the_split(capsys):
    assert main(["metrics", str(CUDA_APP), "-k", "store_conflict", "--json"]) == 0
    (kernel,) = json.loads(capsys.readouterr().out)["kernels"]
    metrics = kernel["metrics"]
    assert metrics["exact_excess_wavefronts_st"]["value"] == 4_063_232
    assert metrics["exact_excess_wavefronts_ld"]["value"] == 0
    assert metrics["exact_excess_wavefronts"]["value"] == 4_063_232


def test_metrics_table_puts_a_store_conflict_per_store(capsys):
    assert main(["metrics", str(CUDA_APP), "-k", "transpose_(store_)?conflict"]) == 0
    out = capsys.readouterr().out
    assert "4,063,232 (31/st)" in out and "4,063,232 (31/ld)" in out
    assert out.count("(31/ld)") == 1  # the store conflict is not read as a load conflict


def test_a_gate_rule_on_the_store_side(tmp_path, capsys):
    rules = tmp_path / "rules.toml"
    rules.write_text(
        'version = 1\n[[rule]]\nname = "no store conflicts"\nselect = "*"\n'
        'metric = "exact_excess_wavefronts_st"\nequals = 0\n'
    )
    assert main(["gate", str(CUDA_APP), "--rules", str(rules), "--json", str(tmp_path / "gate.json")]) == 1
    verdicts = json.loads((tmp_path / "gate.json").read_text())["verdicts"]
    failed = [v for v in verdicts if v["status"] == "fail"]
    assert [v["subject"] for v in failed] == ["transpose/store_conflict"]  # its NVTX range labels it
    assert failed[0]["value"] == 4_063_232


def test_report_of_a_programs_ncu_rep_shows_its_hot_lines(tmp_path):
    out = tmp_path / "app.html"
    assert main(["report", str(CUDA_APP), "-o", str(out)]) == 0
    html = out.read_text()
    assert "hot lines of <code>transpose/store_conflict</code>" in html  # labelled by its NVTX range
    assert "<code>tests/fixtures/programs/cuda_app.cu:39</code>" in html
    # the line in the hot lines with its code, and among the findings with what happens there
    assert "<code>tests/fixtures/programs/cuda_app.cu:62</code>" in html
    assert "<pre>for (int j = 0; j &lt; 32; ++j) sum += window[(j + i) % 32];</pre>" in html
    assert '<td class="text what">4.19 M local loads (warp-level)</td>' in html


def test_kernel_n_way_is_over_the_ideal_of_the_accesses_themselves(app, suite):
    copy = app["copy_float2_shared"]
    assert copy.metric("shared_ld_ways").value == pytest.approx(2.14, abs=0.01)  # hardware wavefronts per 8-byte load
    assert copy.metric("exact_shared_ld_ways").value == 1  # ... which is their ideal: no conflict
    assert copy.metric("exact_shared_st_ways").value == 1
    store = app["transpose_store_conflict"]
    assert store.metric("exact_shared_st_ways").value == 32
    article = next(k for k in suite.kernels if k.label == "matmul/tiled_article")
    # 16 scalar LDS at 1 wavefront (their ideal) and 4 LDS.128 at 16 (ideal 4) a warp
    assert article.metric("exact_shared_ld_ways").value == 2.5
    assert article.metric("exact_shared_st_ways").value == 8


def test_verdict_n_way_of_wide_loads_is_against_their_own_ideal():
    from memlens.model.results import KernelResult
    from memlens.reports.verdicts import judge

    # 1,000 16-byte loads at 8 wavefronts a warp (ideal 4) and 1,000 conflict-free 4-byte stores
    raw = {
        "shared_ld_instructions": 1000.0,
        "shared_st_instructions": 1000.0,
        "shared_wavefronts": 9000.0,
        "shared_wavefronts_ideal": 5000.0,
        "hw_ld_bank_conflicts": 4000.0,
        "hw_st_bank_conflicts": 0.0,
        "exact_excess_wavefronts_ld": 4000.0,
        "exact_excess_wavefronts_st": 0.0,
        "exact_shared_ld_ways": 2.0,
        "exact_shared_st_ways": 1.0,
    }
    shared = next(f for f in judge(KernelResult("k", raw=raw)).findings if f.topic == "shared")
    assert shared.text.startswith("shared loads: 2-way bank conflicts, 4.00 K excess wavefronts"), shared.text


def test_report_table_and_verdict_give_the_exact_n_way_as_metrics_and_lines_do(suite, app):
    from memlens.reports.build import build_report
    from memlens.reports.verdicts import judge

    outcomes = tuple(VariantOutcome(k.family, k.variant, "ok") for k in suite.kernels)
    report = build_report([("h100", replace(suite, outcomes=outcomes))])
    rows = {row.label: row for family in report.runs[0].families for row in family.rows}
    ld, st = rows["matmul/tiled_article"].cells["shared_ld_ways"], rows["matmul/tiled_article"].cells["shared_st_ways"]
    assert (ld.text, st.text) == ("2.5", "8.0")  # not the hardware's 4.0 wavefronts per LDS.128 load
    assert ld.exact.startswith("exact; the hardware counts 4.0 wavefronts per instruction") and ld.flag == "bad"
    assert rows["transpose/padded"].cells["shared_ld_ways"].text == "1.0"
    assert rows["transpose/padded"].cells["shared_ld_ways"].flag is None
    shared = next(
        f
        for f in judge(next(k for k in suite.kernels if k.label == "matmul/tiled_article")).findings
        if f.topic == "shared"
    )
    # each side in the words of its instructions, divided by the executions of that side's instructions
    # the 16-byte loads with their own figures (the side's blend with the conflict-free 4-byte loads was 2.5-way)
    assert shared.text == (
        "16-byte shared loads: 4-way bank conflicts, 805 M excess wavefronts (12 per 16-byte"
        " shared load); shared stores: 8-way bank conflicts, 235 M excess wavefronts (7 per shared store)"
    ), shared.text
    # the width's phase rule: under the table, once, not in the cell
    assert [d.split(":")[0] for d in shared.details] == [
        "16-byte accesses are served a quarter-warp (8 lanes, 128 bytes) at a time"
    ]
    copy = build_report([("app", RunResults(suite.info, (app["copy_float2_shared"],)))])
    cell = copy.runs[0].families[0].rows[0].cells["shared_ld_ways"]
    assert cell.text == "1.0" and cell.flag is None  # 8-byte loads at their own ideal: no conflict


# --- inlined library code: how its line was found, said once --------------------------------------------------


def _inlined_atomics(placed_by: Placement | None) -> list[InstructionRecord]:
    header = "/usr/local/cuda/targets/x86_64-linux/include/device_atomic_functions.hpp:112"
    return [
        InstructionRecord(
            pc,
            "ATOMS.POPC.INC.32 RZ, [R2+UR4]",
            "ATOMS.POPC.INC.32",
            Space.SHARED,
            Side.ATOM,
            32,
            "probe.cu",
            28,
            executions=100.0,
            wavefronts=3200.0,
            ideal=100.0,
            memory_type=16,
            access_type=8,
            inlined_from=header,
            placed_by=placed_by,
        )
        for pc in (0x10, 0x20)
    ]


def test_how_inlined_code_was_placed_is_said_once_and_only_for_the_nearest_line():
    (line,) = roll_up(_inlined_atomics(Placement.NO_NVDISASM), SourceMap(Path.cwd()))
    words = "; ".join(line_words(line, str))
    assert words.endswith("with inlined device_atomic_functions.hpp:112") and "nearest" not in words
    note = placement_note(_inlined_atomics(Placement.NO_NVDISASM) + _inlined_atomics(Placement.NO_CHAIN))
    assert note == (
        "inlined library code (device_atomic_functions.hpp:112) is counted on the nearest line of the kernel's own "
        "code in address order, which may be another statement's: nvdisasm was not found to read its caller's line "
        "from the kernel's binary (pip install nvidia-cuda-nvdisasm, or memlens[lines], or put a CUDA toolkit's "
        "nvdisasm on PATH); the kernel's binary records no inline chain for it (Triton's records none)"
    )
    assert placement_note(_inlined_atomics(Placement.CALLER)) is None
    assert "results.json was written" in (placement_note(_inlined_atomics(None)) or "")


def test_the_reports_hot_line_of_inlined_code_says_how_it_was_placed():
    kernel = KernelResult("probe", None, None, 0, {}, instructions=tuple(_inlined_atomics(Placement.NO_BINARY)))
    lines = hot_lines([kernel], None)
    assert [(line.file, line.line) for line in lines] == [("probe.cu", 28)]
    findings = line_findings(lines, [kernel])
    assert [f.severity for f in findings] == ["bad", "unknown"]
    assert "holds no binary of this kernel" in findings[1].text
    placed = KernelResult("probe", None, None, 0, {}, instructions=tuple(_inlined_atomics(Placement.CALLER)))
    assert len(line_findings(hot_lines([placed], None), [placed])) == 1
