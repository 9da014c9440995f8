"""Compare and gate by source line: lines matched across builds, `memlens compare`, the report
of several runs, line rules with baselines.

The scenario tests read two builds of tests/fixtures/programs/compare_v{1,2}.cu recorded on a GPU by
tests/fixtures/record_compare.sh (tests/fixtures/<gpu>/compare/); until that recording is committed
they fail, saying so. Their expected figures are worked out here with the bank model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.gate.baseline import from_measurements, load_baseline, save_baseline
from memlens.gate.evaluate import evaluate, read_measurements
from memlens.gate.rules import parse_rules
from memlens.io.markdown import md_escape
from memlens.model.line_compare import LineFigures, LineSet, SourceLine, change_of, compare_lines
from memlens.output.formats.junit import to_junit
from memlens.output.formats.markdown import gate_summary as to_markdown
from memlens.readers import read_lines
from memlens.reports.line_changes import markdown_table
from memlens.theory.bank_model import excess_wavefronts

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
PROGRAMS = FIXTURES / "programs"
CUDA_APP = PROGRAMS / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"
RECORDED = sorted(FIXTURES.glob("*/compare/compare_v1.ncu-rep"))

BLOCKS, THREADS = 512, 256  # compare_v*.cu
WARPS = BLOCKS * THREADS // 32


def recorded(name: str) -> Path:
    if not RECORDED:
        pytest.fail(
            "no recording of the compare fixtures: run `bash tests/fixtures/record_compare.sh` on a GPU "
            "machine and commit tests/fixtures/<gpu>/compare/"
        )
    return RECORDED[0].parent / name


def line_of(path: Path, text: str) -> int:
    found = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (path, text, found)
    return found[0]


# --- the figures on paper ------------------------------------------------------------------------


def _excess(address, width: int, rounds: int) -> int:
    """Excess wavefronts of one read executed `rounds` times by every warp of every block."""
    total = 0
    for warp in range(THREADS // 32):
        for r in range(rounds):
            total += excess_wavefronts([address(warp * 32 + lane, lane, r) for lane in range(32)], width)
    return total * BLOCKS


EXPECTED = {  # kernel -> (v1 excess, v2 excess) of its read
    "four_way": (_excess(lambda t, lane, r: (t * 4 + r) % 1024 * 4, 4, 32),) * 2,
    "swizzle": (
        _excess(lambda t, lane, r: (lane * 32 + (((t // 32 + r) % 32) ^ (lane // 2))) * 4, 4, 32),
        _excess(lambda t, lane, r: (lane * 32 + (((t // 32 + r) % 32) ^ lane)) * 4, 4, 32),
    ),
    "vector": (
        _excess(lambda t, lane, r: (t + 32 * r) % 1024 * 16, 16, 8),
        _excess(lambda t, lane, r: (2 * t + 32 * r) % 1024 * 16, 16, 8),
    ),
}


def test_the_two_builds_figures_worked_out_with_the_bank_model():
    assert EXPECTED == {"four_way": (393_216, 393_216), "swizzle": (131_072, 0), "vector": (0, 131_072)}
    # the fills are conflict-free: 4-byte and 16-byte stores of consecutive elements
    assert excess_wavefronts([lane * 4 for lane in range(32)], 4) == 0
    assert excess_wavefronts([lane * 16 for lane in range(32)], 16) == 0


def test_the_two_builds_differ_by_one_inserted_line_and_two_edited_reads():
    v1 = (PROGRAMS / "compare_v1.cu").read_text().splitlines()
    v2 = (PROGRAMS / "compare_v2.cu").read_text().splitlines()
    assert v2[1:] != v1 and len(v2) == len(v1) + 1
    differ = [n for n, (a, b) in enumerate(zip(v1, v2[1:], strict=True), 1) if a != b]
    assert differ == [25, 33]
    assert line_of(PROGRAMS / "compare_v1.cu", "tile[(threadIdx.x * 4 + r) % 1024]") == 17


# --- matching, on lines made here --------------------------------------------------------------


def _line(
    line: int | None,
    source: str | None,
    ld: float | None = None,
    st: float | None = None,
    local_ld: float | None = None,
    file: str | None = "app.cu",
) -> SourceLine:
    return SourceLine(file, line, source, LineFigures(ld, st, local_ld, None))


FILL = "for (int i = threadIdx.x; i < THREADS * 4; i += THREADS) tile[i] = in[blockIdx.x * THREADS * 4 + i];"
OLD_READ = "for (int r = 0; r < 32; ++r) sum += tile[lane][((c + r) % 32) ^ (lane / 2)];"
NEW_READ = "for (int r = 0; r < 32; ++r) sum += tile[lane][((c + r) % 32) ^ lane];"


def test_a_moved_line_is_matched_by_its_code_and_an_edited_one_between_matched_ones_too():
    # the texts of each build's own (as a baseline saves them)
    base = LineSet((_line(10, FILL, st=0.0), _line(25, OLD_READ, ld=131_072.0)), texts_own=True)
    head = LineSet((_line(11, FILL, st=0.0), _line(26, NEW_READ, ld=0.0)), texts_own=True)
    # the whole files, as a report with imported sources embeds them: the same matches
    files = {"app.cu": "\n".join(["x"] * 9 + [FILL] + ["y"] * 14 + [OLD_READ])}
    moved = {"app.cu": "\n".join(["new"] + ["x"] * 9 + [FILL] + ["y"] * 14 + [NEW_READ])}
    for old, new in ((base, head), (LineSet(base.lines, files), LineSet(head.lines, moved))):
        changes = compare_lines("k", old, new)
        found = {(c.base_line, c.head_line, c.change, c.matched_by) for c in changes.lines}
        assert found == {(10, 11, "same", "text"), (25, 26, "better", "text")}
        edited = next(c for c in changes.lines if c.base_line == 25)
        assert (edited.source, edited.base_source, edited.location) == (NEW_READ, OLD_READ, "app.cu:25 -> 26")
        assert changes.notes == ()


def test_new_gone_worse_better_and_same():
    base = LineSet(
        (
            _line(1, "a = s[i];", ld=0.0),
            _line(2, "b = s[2 * i];", ld=8.0),
            _line(3, "c = s[j];", ld=4.0),
            _line(9, "gone = s[k];", ld=1.0),
        )
    )
    head = LineSet(
        (
            _line(1, "a = s[i];", ld=4.0),
            _line(2, "b = s[2 * i];", ld=0.0),
            _line(3, "c = s[j];", ld=4.0),
            _line(5, "t[x] = l[y];", local_ld=32.0),
        )
    )
    changes = compare_lines("k", base, head)
    assert [(c.base_line, c.head_line, c.change) for c in changes.lines] == [
        (1, 1, "worse"),
        (2, 2, "better"),
        (3, 3, "same"),
        (None, 5, "new"),
        (9, None, "gone"),
    ]
    assert [c.change for c in changes.changed] == ["worse", "new", "better", "gone"]
    new = next(c for c in changes.lines if c.change == "new")
    assert new.to_json("k") == {
        "label": "k",
        "file": "app.cu",
        "base_line": None,
        "head_line": 5,
        "source": "t[x] = l[y];",
        "base_source": None,
        "change": "new",
        "matched_by": None,
        "base": None,
        "head": {
            "excess_wavefronts_ld": None,
            "excess_wavefronts_st": None,
            "excess_wavefronts_atom": None,
            "excess_wavefronts_mma": None,
            "local_ld": 32.0,
            "local_st": None,
        },
    }
    # a figure that grows while another falls: worse
    assert change_of(LineFigures(8.0, 0.0), LineFigures(0.0, 1.0)) == "worse"


def test_without_code_text_lines_are_matched_by_number_and_a_note_says_so():
    base = LineSet((_line(17, None, ld=3.0), _line(25, None, ld=1.0)))
    head = LineSet((_line(18, None, ld=3.0), _line(25, None, ld=0.0)))
    changes = compare_lines("k", base, head)
    assert [(c.base_line, c.head_line, c.change, c.matched_by) for c in changes.lines] == [
        (17, None, "gone", None),
        (None, 18, "new", None),
        (25, 25, "better", "line"),
    ]
    assert len(changes.notes) == 1
    assert changes.notes[0].startswith("app.cu: lines matched by number (no code text in BASE and HEAD)")


def test_code_read_from_one_file_on_disk_for_both_runs_is_not_trusted_to_match_moved_lines():
    # neither report embeds the file: both texts were read now from the one file on disk
    base = LineSet((_line(17, "x = s[i];", ld=3.0),))
    head = LineSet((_line(17, "x = s[i];", ld=3.0),))
    changes = compare_lines("k", base, head)
    assert [(c.change, c.matched_by) for c in changes.lines] == [("same", "line")]
    assert "read from the file on disk for both runs" in changes.notes[0]
    # a baseline's texts are its own build's: matched by text
    assert compare_lines("k", LineSet(base.lines, texts_own=True), head).lines[0].matched_by == "text"


# --- Markdown ----------------------------------------------------------------------------------


def test_markdown_table_escapes_code_and_truncates_with_a_count():
    code = "a[i] = b[`x` | y] < c;"
    head = LineSet((_line(4, code, ld=2.0),))
    change = compare_lines("k", LineSet((), texts_own=True), head).lines[0]
    table = markdown_table([("t<a|b>", change)])
    row = table[2]
    assert "``a[i] = b[`x` \\| y] < c;``" in row  # a code span longer than the backticks inside, | escaped
    assert "`t<a\\|b>`" in row and "🟠 new" in row and "2 excess wavefronts (loads)" in row
    assert row.count(" | ") == 5  # six cells: no pipe of the code splits the row
    many = markdown_table([("k", change)] * 1000, limit=5_000)
    assert len("\n".join(many)) <= 5_000
    shown = sum(1 for line in many if line.startswith("| `k`"))
    left = f"… {1000 - shown} more changed lines not shown (`memlens compare --json` lists every line)"
    assert many[-1].strip() == left


# --- gate and baseline on a recorded program ----------------------------------------------------


LINE_RULES = """
[[rule]]
name = "no conflicting line"
select = "transpose/*"
metric = "line_excess_wavefronts"
max = 0

[[rule]]
name = "no line gains conflicts"
select = "*"
metric = "line_excess_wavefronts"
max_regression = "0%"
"""


def test_a_line_rule_fails_naming_the_line_and_its_code(tmp_path, capsys):
    rules = tmp_path / "rules.toml"
    rules.write_text(LINE_RULES)
    summary, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    code = main(["gate", str(CUDA_APP), "--rules", str(rules), "--summary", str(summary), "--junit", str(junit)])
    assert code == 1
    app = PROGRAMS / "cuda_app.cu"
    conflict = line_of(app, "transpose_conflict(float *out") + 7  # its column read, as in cuda_app.cu
    out = capsys.readouterr().out
    assert f"cuda_app.cu:{conflict}" in out
    text = junit.read_text()
    where = f"tests/fixtures/programs/cuda_app.cu:{conflict}"
    assert f"line_excess_wavefronts at {where}: 4,063,232, expected &lt;= 0" in text
    assert "tile[threadIdx.x][threadIdx.y + j]" in text
    md = summary.read_text()
    assert f"cuda\\_app.cu:{conflict}: 4,063,232, expected &lt;= 0: for (int j = 0; j &lt; TILE" in md
    assert "tile\\[threadIdx.x\\]\\[threadIdx.y + j\\]" in md
    assert "⏭️ skip" in md  # max_regression without a baseline


def test_a_baseline_carries_the_lines_and_a_line_gaining_conflicts_fails(tmp_path):
    measurements = read_measurements(CUDA_APP, lines=True)
    path = tmp_path / "base.json"
    save_baseline(from_measurements(measurements), path)
    baseline = load_baseline(path)
    lines = baseline.lines_of("transpose/conflict")
    assert lines is not None and sorted(line.figures.excess for line in lines) == [0.0, 4_063_232.0]
    rules = parse_rules(LINE_RULES)
    result = evaluate(rules, measurements, baseline)
    regress = [v for v in result.verdicts if v.rule == "no line gains conflicts"]
    assert {v.status for v in regress} == {"pass"} and len(regress) == 6
    # the same run against a baseline whose conflicting line had none: that line fails, named with its code
    data = json.loads(path.read_text())
    for kernel in data["kernels"]:
        for line in kernel.get("lines", []):
            for side in ("excess_wavefronts_ld", "excess_wavefronts_st"):
                line[side] = 0.0 if line[side] else line[side]
    path.write_text(json.dumps(data))
    result = evaluate(rules, measurements, load_baseline(path))
    failed = [v for v in result.verdicts if v.rule == "no line gains conflicts" and v.status == "fail"]
    assert sorted(v.subject for v in failed) == ["transpose/conflict", "transpose/store_conflict"]
    assert all(v.baseline == 0.0 and v.value == 4_063_232.0 and v.source_code for v in failed)
    assert "baseline 0 (worse), expected <= baseline +0%" in failed[0].message
    assert "tile[threadIdx.x][threadIdx.y + j]" in to_markdown(result).replace("\\", "")
    assert "cuda_app.cu:" in to_junit(result)


def test_a_baseline_without_lines_fails_a_line_regression_rule(tmp_path):
    measurements = read_measurements(CUDA_APP, lines=True)
    old = from_measurements(read_measurements(CUDA_APP))  # no lines read: as a baseline of an older memlens
    result = evaluate(parse_rules(LINE_RULES), measurements, old)
    failed = [v for v in result.verdicts if v.rule == "no line gains conflicts"]
    assert {v.status for v in failed} == {"fail"}
    assert failed[0].message == (
        "transpose/conflict has no per-line figures in the baseline (save a new baseline with this memlens)"
    )


def test_a_line_rule_on_a_run_without_per_instruction_values_fails():
    csv = FIXTURES / "nvidia_h200" / "suite.csv"
    result = evaluate(parse_rules(LINE_RULES), read_measurements(csv, lines=True))
    checks = [v for v in result.verdicts if v.rule == "no conflicting line"]
    assert checks and {v.status for v in checks} == {"fail"}
    assert checks[0].message.startswith("line_excess_wavefronts: no per-line figures: the run has no per-instruction")


def test_memlens_compare_of_one_recording_with_itself(capsys):
    assert main(["compare", str(CUDA_APP), str(CUDA_APP), "-k", "^transpose/conflict$"]) == 0
    out = capsys.readouterr().out
    assert ": 0 lines changed in 1 kernel\n" in out and "2 lines the same (--all shows them)" in out
    assert main(["compare", str(CUDA_APP), str(CUDA_APP), "-k", "nothing-matches"]) == 2
    assert "no kernel in" in capsys.readouterr().err


# --- the two recorded builds (tests/fixtures/<gpu>/compare/, record_compare.sh) -------------------


def _lines_json(capsys, base: Path, head: Path) -> dict[str, dict[str, object]]:
    assert main(["compare", str(base), str(head), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    return {f"{line['label']}:{line['head_line'] or line['base_line']}": line for line in data["lines"]}


def test_compare_names_the_fixed_and_the_newly_conflicting_line_across_a_shift(capsys):
    lines = _lines_json(capsys, recorded("compare_v1.ncu-rep"), recorded("compare_v2.ncu-rep"))
    read = {"compare/four_way": (17, 18), "compare/swizzle": (25, 26), "compare/vector": (33, 34)}
    change = {"compare/four_way": "same", "compare/swizzle": "better", "compare/vector": "worse"}
    for label, (old, new) in read.items():
        line = lines[f"{label}:{new}"]
        assert set(line) >= {"label", "file", "base_line", "head_line", "source", "change", "base", "head"}
        assert (line["base_line"], line["head_line"], line["change"]) == (old, new, change[label])
        before, after = EXPECTED[label.split("/")[1]]
        assert line["base"] == {
            "excess_wavefronts_ld": before,
            "excess_wavefronts_st": None,
            "excess_wavefronts_atom": None,
            "excess_wavefronts_mma": None,
            "local_ld": None,
            "local_st": None,
        }
        assert line["head"]["excess_wavefronts_ld"] == after
        assert line["source"] == (PROGRAMS / "compare_v2.cu").read_text().splitlines()[new - 1].strip()
        assert line["file"].endswith("app.cu") and line["matched_by"] == "text"
    assert lines["compare/swizzle:26"]["base_source"] != lines["compare/swizzle:26"]["source"]
    # The fills' stores are conflict-free, as on paper, but ncu (ncu_report's source_info of each PC) puts the
    # stores of the inlined fill() on the line that calls it, not on the template's `tile[i] = in[...]` line:
    # one line a kernel, moved down by one, the same.
    fill = line_of(PROGRAMS / "compare_v2.cu", "tile[i] = in[")
    assert not [line for line in lines.values() if line["head_line"] == fill]
    calls = {"compare/four_way": (14, 15), "compare/swizzle": (22, 23), "compare/vector": (30, 31)}
    stores = {
        "excess_wavefronts_ld": None,
        "excess_wavefronts_st": 0,
        "excess_wavefronts_atom": None,
        "excess_wavefronts_mma": None,
        "local_ld": None,
        "local_st": None,
    }
    v2 = (PROGRAMS / "compare_v2.cu").read_text().splitlines()
    for label, (old, new) in calls.items():
        line = lines[f"{label}:{new}"]
        assert (line["base_line"], line["head_line"], line["change"]) == (old, new, "same")
        assert line["source"] == v2[new - 1].strip() and line["source"].startswith("fill(")
        assert line["base"] == line["head"] == stores
    assert len(lines) == 6  # each kernel: its read and its fill


def _built_file(capsys) -> str:
    """The file both builds were compiled from, as the reports name it: record_compare.sh builds in a
    temporary folder (mktemp -d, then app.cu), outside the working directory, so shown whole."""
    lines = _lines_json(capsys, recorded("compare_v1.ncu-rep"), recorded("compare_v2.ncu-rep"))
    files = {line["file"] for line in lines.values()}
    assert len(files) == 1 and next(iter(files)).endswith("/app.cu"), files
    return str(files.pop())


def test_compare_terminal_and_markdown_name_the_lines(capsys):
    v1, v2 = recorded("compare_v1.ncu-rep"), recorded("compare_v2.ncu-rep")
    built = md_escape(_built_file(capsys))
    assert main(["compare", str(v1), str(v2)]) == 0
    out = capsys.readouterr().out
    assert "2 lines changed (1 worse, 1 better)" in out
    loads = "excess wavefronts (loads)"
    assert f"worse   .../app.cu:33 -> 34  0 {loads} -> 131,072 {loads}".split("...")[1] in out
    assert f"better  .../app.cu:25 -> 26  131,072 {loads} -> 0 {loads}".split("...")[1] in out
    assert "app.cu:17 -> 18" not in out  # the same: only with --all
    assert main(["compare", str(v1), str(v2), "--all"]) == 0
    assert "app.cu:17 -> 18  393,216 excess wavefronts (loads) -> 393,216" in capsys.readouterr().out
    assert main(["compare", str(v1), str(v2), "--md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("## memlens compare: 2 lines changed (1 worse, 1 better)")
    assert f"| `compare/vector` | {built}:33 → 34 |" in md and "🔴 worse" in md and "🟢 better" in md


def test_compare_without_source_text_matches_by_number_and_says_so(capsys):
    lines = _lines_json(capsys, recorded("compare_v1.ncu-rep"), recorded("compare_v2.plain.ncu-rep"))
    # v1's read of line 17 is line 18 in v2: by number, one gone and one new
    assert lines["compare/four_way:17"]["change"] == "gone" and lines["compare/four_way:18"]["change"] == "new"
    assert lines["compare/four_way:18"]["source"] is None
    assert main(["compare", str(recorded("compare_v1.ncu-rep")), str(recorded("compare_v2.plain.ncu-rep"))]) == 0
    assert "lines matched by number (no code text in HEAD)" in capsys.readouterr().out


def test_a_line_gate_with_a_baseline_fails_on_the_new_conflict(tmp_path, capsys):
    baseline = tmp_path / "v1.json"
    assert main(["baseline", "save", str(recorded("compare_v1.ncu-rep")), "-o", str(baseline)]) == 0
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\nname = "no line gains conflicts"\nselect = "compare/*"\n'
        'metric = "line_excess_wavefronts"\nmax_regression = "0%"\n'
    )
    summary, verdicts = tmp_path / "gate.md", tmp_path / "gate.json"
    code = main(
        [
            "gate",
            str(recorded("compare_v2.ncu-rep")),
            "--rules",
            str(rules),
            "--baseline",
            str(baseline),
            "--summary",
            str(summary),
            "--json",
            str(verdicts),
        ]
    )
    assert code == 1
    failed = [v for v in json.loads(verdicts.read_text())["verdicts"] if v["status"] == "fail"]
    assert len(failed) == 1
    verdict = failed[0]
    assert (verdict["subject"], verdict["source_line"], verdict["value"], verdict["baseline"]) == (
        "compare/vector",
        34,
        131_072.0,
        0.0,
    )
    assert verdict["source_file"].endswith("app.cu") and "2 * threadIdx.x + 32 * r" in verdict["source_code"]
    assert "app.cu:34 (line 33 in the baseline): 131,072, baseline 0 (worse)" in verdict["message"]
    assert "app.cu:34" in capsys.readouterr().out
    md = summary.read_text()
    assert "1 fail" in md and "131,072" in md and "2 \\* threadIdx.x + 32 \\* r" in md


def test_the_report_of_two_builds_shows_the_changed_lines(tmp_path, capsys):
    out = tmp_path / "report.md"
    v1, v2 = recorded("compare_v1.ncu-rep"), recorded("compare_v2.ncu-rep")
    built = md_escape(_built_file(capsys))
    assert main(["report", str(v1), str(v2), "--format", "md", "-o", str(out)]) == 0
    text = out.read_text()
    assert "### Source lines that changed" in text
    assert f"| `compare/swizzle` | {built}:25 → 26 |" in text and "🟢 better" in text
    html = tmp_path / "report.html"
    assert main(["report", str(v1), str(v2), "-o", str(html)]) == 0
    assert 'class="line-changes"' in html.read_text()


def test_compare_of_runs_without_per_instruction_values_says_lines_were_not_compared(capsys, monkeypatch):
    csv = FIXTURES / "nvidia_h200" / "suite.csv"
    monkeypatch.chdir(FIXTURES)  # a path beneath the working directory is shown relative to it
    assert main(["compare", str(csv), str(csv), "-k", "^transpose/conflict$"]) == 0
    out = capsys.readouterr().out
    shown = "nvidia_h200/suite.csv"
    assert out.count("no per-line data") == 2 and out.startswith(
        f"memlens compare: {shown} -> {shown}: 1 kernel, source lines not compared\n"
    )
    assert f"note: {shown}: no per-line data" in out
    monkeypatch.chdir(FIXTURES / "nvidia_h100_80gb_hbm3")  # elsewhere: as given
    assert main(["compare", str(csv), str(csv), "-k", "^transpose/conflict$"]) == 0
    assert capsys.readouterr().out.startswith(f"memlens compare: {csv} -> {csv}: 1 kernel, ")
    assert "excess wavefronts" not in out.split("transpose/conflict", 1)[1]  # the kernel's figures: all the same


def test_a_baseline_with_malformed_lines_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "base.json"
    save_baseline(from_measurements(read_measurements(CUDA_APP, lines=True)), path)
    data = json.loads(path.read_text())
    data["kernels"][0]["lines"][0]["line"] = "twelve"
    path.write_text(json.dumps(data))
    rules = tmp_path / "rules.toml"
    rules.write_text(LINE_RULES)
    assert main(["gate", str(CUDA_APP), "--rules", str(rules), "--baseline", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"memlens: error: {path}: malformed baseline (line must be a whole number or null, not 'twelve')\n"


FULL = FIXTURES / "nvidia_h200" / "suite.results.json"
FAST = FIXTURES / "nvidia_h200" / "suite_fast.results.json"  # a --fast run: no per-instruction values
NO_LINE_DATA = (
    "no per-line data (no per-instruction values: a CSV, a --fast run, or ncu without the SourceCounters "
    "metrics): source lines not compared"
)


def test_compare_with_one_side_without_line_data_lists_no_gone_lines(capsys, monkeypatch):
    """issue 33 (6): a note, then "2 lines changed (2 gone)" and two `gone` rows, for lines never measured in HEAD."""
    monkeypatch.chdir("/")  # the paths are shown as given
    assert main(["compare", str(FULL), str(FAST), "-k", "^transpose/conflict$"]) == 0
    out = capsys.readouterr().out
    assert "gone" not in out and out.count("no per-line data") == 1
    assert out.splitlines()[:2] == [
        f"memlens compare: {FULL} -> {FAST}: 1 kernel, source lines not compared",
        f"note: {FAST}: {NO_LINE_DATA}",
    ]
    assert main(["compare", str(FULL), str(FAST), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["lines"] == [] and data["notes"] == [f"{FAST}: {NO_LINE_DATA}"]
    assert data["summary"] == "source lines not compared"
    assert main(["compare", str(FULL), str(FAST), "--md"]) == 0
    md = capsys.readouterr().out
    assert "gone" not in md and md.count("no per-line data") == 1 and "| kernel | line |" not in md


def test_a_report_of_a_run_without_line_data_beside_one_with_says_so_once(capsys):
    """issue 33 (6): the demo Markdown (suite and suite_fast) listed about 150 `gone` rows, without a note."""
    assert main(["report", str(FULL), str(FAST), "--format", "md", "-o", "-"]) == 0
    md = capsys.readouterr().out
    assert "gone |" not in md and "Source lines that changed" not in md
    assert md.count("no per-line data") == 1 and f"> {md_escape(str(FAST))}: {md_escape(NO_LINE_DATA)}\n" in md
    assert main(["report", str(FULL), str(FAST), "--format", "json", "-o", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(c["lines"] == [] for c in data["comparisons"]) and len(data["line_notes"]) == 1


# --- runs that are not two builds of one program (issue 46 (5)) ---------------------------------------------


SUITE_H100 = FIXTURES / "nvidia_h100_80gb_hbm3" / "suite.results.json"
SUITE_H200 = FIXTURES / "nvidia_h200" / "suite.results.json"


def test_two_runs_with_no_kernel_in_common_are_refused_naming_each_runs_kernels(capsys):
    """issue 46 (5): compare of two programs' runs with no kernel in common printed "20 lines changed (14 new,
    6 gone) in 9 kernels", exit 0."""
    base = recorded("compare_v1.ncu-rep")
    assert main(["compare", str(base), str(CUDA_APP)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"memlens: error: {base} and {CUDA_APP} have no kernel in common: BASE has 3 (compare/four_way, "
        "compare/swizzle, compare/vector), HEAD has 6 (transpose/conflict, transpose/padded, "
        "transpose/store_conflict, and 3 more); compare two builds of one program\n"
    )
    assert main(["compare", str(base), str(CUDA_APP), "-k", "four_way|store"]) == 2
    assert "BASE has 1 (compare/four_way), HEAD has 1 (transpose/store_conflict)" in capsys.readouterr().err


def test_runs_on_two_gpu_models_get_a_note(capsys):
    assert main(["compare", str(SUITE_H100), str(SUITE_H200)]) == 0
    out = capsys.readouterr().out
    note = (
        "note: BASE ran on NVIDIA H100 80GB HBM3, HEAD on NVIDIA H200: two GPU models, so a figure may differ "
        "by the GPU as well as by the code"
    )
    assert note in out
    assert main(["compare", str(SUITE_H100), str(SUITE_H200), "--json"]) == 0
    assert any("two GPU models" in n for n in json.loads(capsys.readouterr().out)["notes"])
    assert main(["compare", str(CUDA_APP), str(CUDA_APP)]) == 0
    assert "GPU models" not in capsys.readouterr().out


def test_a_line_with_no_figure_on_either_side_is_no_change():
    """issue 46 (5): a line new (or gone) with 0 excess wavefronts and no local access was counted as a change."""
    empty, worse = LineFigures(excess_wavefronts_st=0.0), LineFigures(excess_wavefronts_ld=8.0)
    head = LineSet((SourceLine("a.cu", 3, "x = 1;", empty), SourceLine("a.cu", 4, "y = t[i];", worse)))
    found = compare_lines("k", LineSet(()), head)
    assert [(c.head_line, c.change) for c in found.lines] == [(3, "same"), (4, "new")]
    assert [c.head_line for c in found.changed] == [4]
    gone = compare_lines("k", head, LineSet(()))
    assert [(c.base_line, c.change) for c in gone.lines] == [(3, "same"), (4, "gone")]


def test_a_kernel_missing_from_the_baseline_is_named_so(tmp_path):
    """issue 46 (6): a baseline without the kernel said it "has no per-line figures (save a new baseline with this
    memlens)", as though the baseline were old."""
    other = from_measurements(read_measurements(recorded("compare_v1.ncu-rep"), lines=True))
    rules = parse_rules(
        LINE_RULES + '\n[[rule]]\nname = "no slower"\nselect = "transpose/*"\nmetric = "duration"\n'
        'max_regression = "10%"\n'
    )
    result = evaluate(rules, read_measurements(CUDA_APP, lines=True), other)
    messages = {
        (v.rule, v.message)
        for v in result.verdicts
        if v.subject == "transpose/conflict" and v.rule != "no conflicting line"
    }
    missing = "transpose/conflict is not in the baseline (a kernel new since, or a baseline of another program)"
    assert messages == {("no line gains conflicts", missing), ("no slower", missing)}, messages


def test_the_readme_compare_example_prints_what_it_shows(capsys, tmp_path, monkeypatch):
    """issue 46 (10): README's `compare` example showed `app.cu:25 -> 26` where the command prints the path the
    build named. Each line it shows (its `...` aside) is printed, in its order."""
    readme = (REPO / "docs" / "compare.md").read_text(encoding="utf-8")
    command = "$ memlens compare v1.ncu-rep v2.ncu-rep --wide\n"
    shown = readme.partition(command)[2].partition("```")[0].splitlines()
    assert shown, "the compare example of docs/compare.md is gone"
    monkeypatch.chdir(tmp_path)
    for name in ("v1", "v2"):
        (tmp_path / f"{name}.ncu-rep").write_bytes(recorded(f"compare_{name}.ncu-rep").read_bytes())
    assert main(command.removeprefix("$ memlens ").split()) == 0
    printed = iter(capsys.readouterr().out.splitlines())
    files = {r.file for k in read_lines(str(recorded("compare_v1.ncu-rep"))).kernels for r in k.instructions}
    (build,) = {str(Path(file).parent) for file in files if file}  # the folder record_compare.sh built in
    for line in (line.replace("<build>", build) for line in shown):
        if line.strip() != "...":
            assert any(out == line for out in printed), f"the README shows {line!r}, not printed (in this order)"
