"""The report's first screen (issue 48, part 2): the run's findings ranked by time at stake, one-sentence verdict
cells with their rules shown once, a quiet "how this run was made", no speedups between a program's ranges, an
atomics column in the hot lines, charts a phone's width and roof labels apart."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from markupsafe import escape

from memlens.cli import main
from memlens.model.instruction_kinds import KINDS
from memlens.model.instruction_table import KindTotals
from memlens.readers import read_report
from memlens.reports.build import build_report
from memlens.reports.charts import NARROW, peak_labels
from memlens.reports.findings import FIXES, FindingKind, fix, shared_kind, stake_text
from memlens.reports.glossary import GLOSSARY
from tests.conftest import FIXTURES

H200 = FIXTURES / "nvidia_h200"
SUITE = H200 / "suite.results.json"
LIBRARIES = H200 / "libraries" / "results.json"  # a program run: ranges lib/..., library kernels
KINDS_REPORT = H200 / "kinds" / "memory_kinds.ncu-rep"
GLOSSARY_PAGE = Path(__file__).parents[2] / "docs" / "glossary.md"


def _html(path: Path, tmp_path: Path, fmt: str = "html") -> str:
    out = tmp_path / f"report.{fmt}"
    assert main(["report", str(path), "-o", str(out), "--format", fmt]) == 0
    return out.read_text(encoding="utf-8")


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def _finding_rows(page: str) -> list[list[str]]:
    rows = re.findall(r'<tr class="finding-row">(.*?)</tr>', page, re.S)
    return [[_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for row in rows]


@pytest.fixture(scope="module")
def suite_html(tmp_path_factory) -> str:
    return _html(SUITE, tmp_path_factory.mktemp("suite"))


def test_the_first_screen_is_the_suites_findings_most_time_at_stake_first(suite_html):
    rows = _finding_rows(suite_html)
    # number, kernel, where, what happens, time at stake, fix (the link's cell last)
    assert [row[:5] for row in rows[:6]] == [
        [
            "1",
            "matmul/naive",
            "kernels/matmul.py:41",
            "global loads uncoalesced: 8.5 sectors an access, 3.4x the ideal",
            "≤ 71% of 17.6 ms",
        ],
        [
            "2",
            "matmul/tiled_article",
            "kernels/matmul.py:58",
            "shared stores 8-way, 117 M excess wavefronts",
            "≤ 43% of 8.49 ms",
        ],
        [
            "3",
            "matmul/tiled_article",
            "kernels/matmul.py:59",
            "shared stores 8-way, 117 M excess wavefronts",
            "≤ 43% of 8.49 ms",
        ],
        [
            "4",
            "matmul/tiled_article",
            "kernels/matmul.py:62",
            "16-byte shared loads 4-way, 805 M excess wavefronts",
            "≤ 37% of 8.49 ms",
        ],
        [
            "5",
            "matmul/tiled",
            "kernel",
            "runs 2.17 ms, its floor 0.257 ms (its FLOPs at its roof)",
            "≤ 88% of 2.17 ms",
        ],
        [
            "6",
            "matmul/tiled_pmpp",
            "kernel",
            "runs 2.10 ms, its floor 0.257 ms (its FLOPs at its roof)",
            "≤ 88% of 2.10 ms",
        ],
    ]
    assert rows[0][5] == FIXES[FindingKind.UNCOALESCED] and rows[3][5] == FIXES[FindingKind.CHUNK_CONFLICT]
    # every variant of a family listed apart; the findings before the first family's section
    assert suite_html.index('class="finding-row"') < suite_html.index('<section class="family">')
    report = build_report([("suite", read_report(SUITE))]).runs[0]
    seconds = [f.seconds for f in report.findings]
    assert seconds == sorted(seconds, reverse=True) and len(report.findings) == 34
    # the upper bound said so, and what bounds it, in the tooltip; the link lands on the kernel's hot lines
    first = re.search(r'<tr class="finding-row">.*?</tr>', suite_html, re.S).group(0)
    assert 'title="an upper bound on the time this finding costs: ' in first
    anchor = re.search(r'href="#([^"]+)"', first).group(1)
    assert f'id="{anchor}"' in suite_html and not anchor.endswith("-lines")  # no hot lines: its row
    links = re.findall(r'<tr class="finding-row">.*?href="#([^"]+)"', suite_html, re.S)
    assert links[1].endswith("-lines") and all(f'id="{link}"' in suite_html for link in links)


def test_verdict_cells_are_one_sentence_and_rules_are_shown_once(suite_html):
    section = suite_html[suite_html.index("family <code>fp16_transpose</code>") :]
    section = section[: section.index('<section class="family">')]
    cells = [_text(cell) for cell in re.findall(r'<td class="verdict text">(.*?)</td>', section, re.S)]
    assert len(cells) == 5
    for cell in cells:  # one sentence: clauses joined by semicolons, one full stop at its end
        assert cell.endswith(".") and len(re.findall(r"\.(\s|$)", cell)) == 1, cell
        assert "must fall in" not in cell and "PMPP" not in cell and ".cu:" not in cell, cell
    dense = cells[0]
    assert dense.startswith("ldmatrix loads: 4-way bank conflicts, 3.15 M excess wavefronts (12 per ldmatrix load);")
    # each phase rule once in the family's section (it was three times in dense's cell alone)
    quarter_warp = "16-byte accesses are served a quarter-warp (8 lanes, 128 bytes) at a time"
    ldmatrix = "ldmatrix is served one 8x8 matrix at a time"
    assert section.count(quarter_warp) == 1 and section.count(ldmatrix) == 1
    assert "what explains these verdicts" in section


def test_a_programs_policy_is_a_quiet_block_and_its_ranges_get_no_speedup(tmp_path):
    page = _html(LIBRARIES, tmp_path)
    notes = [_text(n) for n in re.findall(r'<div class="note">(.*?)</div>', page, re.S)]
    assert not [n for n in notes if n.startswith(("ranges:", "launches:", "push/pop", "processes"))], notes
    made = page[page.index('<details class="made">') :]
    made = made[: made.index("</details>")]
    assert "how this run was made" in made and "launches: one launch of each distinct kernel" in made
    assert ">speedup<" not in page.replace('<span class="nw">', "").replace("</span>", "")
    assert "baseline:" not in page and "a program's ranges: no speedups between them" in page
    run = build_report([("lib", read_report(LIBRARIES))]).runs[0]
    assert all(row.cells["speedup"].value is None and not row.baseline for row in run.variants)
    md = _html(LIBRARIES, tmp_path, "md")
    assert "⚠️" not in md and "How this run was made:\n\n- ranges: the program's own ranges" in md


def test_a_suites_variants_keep_their_speedups(suite_html):
    run = build_report([("suite", read_report(SUITE))]).runs[0]
    padded = next(r for r in run.variants if r.label == "transpose/padded")
    assert padded.cells["speedup"].value is not None and padded.cells["speedup"].value > 1
    assert "baseline: dense" in suite_html


def test_hot_lines_have_an_atomics_column_with_its_n_way(tmp_path):
    page = _html(KINDS_REPORT, tmp_path)
    table = page[page.index("hot lines of <code>atomics_one_bank") :]
    table = table[: table.index("</table>")]
    header = [_text(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
    assert header == ["loads", "stores", "atomics", "local ld / st", "where", "code"]
    first = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)][:4]
    assert first == ["—", "—", "32-way, 2,031,616", "0 / 0"]  # was "— —": the atomic's cost not shown
    md = _html(KINDS_REPORT, tmp_path, "md")
    assert "| loads | stores | atomics | local ld / st | where | code |" in md
    assert "| — | — | 32-way, 2,031,616 | 0 / 0 |" in md


def test_a_findings_fix_by_its_kind():
    def kind(opcode: str, phase: str | None = None) -> KindTotals:
        return KindTotals(KINDS[opcode], (opcode,), 1.0, 4.0, 1.0, None, None, phase)

    assert shared_kind(kind("LDS")) is FindingKind.SHARED_CONFLICT
    assert shared_kind(kind("LDS", "16-byte accesses are served a quarter-warp")) is FindingKind.CHUNK_CONFLICT
    assert shared_kind(kind("LDSM")) is shared_kind(kind("LDGSTS")) is FindingKind.CHUNK_CONFLICT
    assert shared_kind(kind("ATOMS")) is FindingKind.SHARED_ATOMIC
    assert fix(FindingKind.SHARED_CONFLICT) == "pad each row (e.g. [32][33]) or XOR-swizzle the column with the row"
    assert fix(FindingKind.CHUNK_CONFLICT) == "swizzle the 16-byte chunk index with the row (chunk ^ row % 8)"
    assert set(FIXES) == set(FindingKind) - {FindingKind.LIBRARY}
    assert stake_text(0.153, 80_000) == "≤ 15% of 80.0 µs" and stake_text(0.0712, 12_000) == "≤ 7.1% of 12.0 µs"


def test_a_library_kernels_fix_is_what_its_user_controls():
    run = build_report([("lib", read_report(LIBRARIES))]).runs[0]
    gemm = next(f for f in run.findings if f.kernel == "lib/bf16_gemm")
    assert gemm.where == "kernel" and gemm.fix.startswith("cuBLAS's kernel: its code is not yours")


def test_the_glossary_terms_are_defined_where_the_report_uses_them(suite_html):
    headings = re.findall(r"^## (.+)$", GLOSSARY_PAGE.read_text(encoding="utf-8"), re.M)
    assert sorted(GLOSSARY) == sorted(headings)
    for term, definition in GLOSSARY.items():
        assert f'<abbr title="{escape(definition)}">{term}</abbr>' in suite_html


def test_roof_labels_of_close_roofs_do_not_overlap():
    labels = peak_labels([("bf16 tensor (dense)", 850e12), ("fp16 tensor (dense)", 935e12), ("fp32", 66.6e12)])
    assert [(text.split(" peak")[0], place) for text, _, place in labels] == [
        ("fp16 tensor (dense)", "bottom"),
        ("bf16 tensor (dense)", "top"),  # 1.1x under the one above: its label under its line
        ("fp32", "bottom"),
    ]
    same = peak_labels([("bf16 tensor (dense)", 989e12), ("fp16 tensor (dense)", 989e12)])
    assert [text for text, _, _ in same] == ["bf16 tensor (dense), fp16 tensor (dense) peak 989 TFLOP/s "]


def test_each_chart_has_a_phone_width_drawing(suite_html):
    narrow = re.findall(r'<div class="narrow"><svg[^>]*\bwidth="([\d.]+)pt"', suite_html)
    wide = re.findall(r'<div class="wide"><svg[^>]*\bwidth="([\d.]+)pt"', suite_html)
    assert narrow and len(narrow) == len(wide)
    assert {float(w) for w in narrow} == {NARROW * 72} and all(float(w) == 11 * 72 for w in wide)


def _by_place(findings) -> dict[tuple[str, str], tuple[str, str, str]]:
    return {(f.kernel, f.where): (f.what, f.stake, f.bound) for f in findings}


def test_a_bench_of_the_runs_gpu_gives_the_findings_its_measured_dram_ceiling(tmp_path):
    from memlens.bench.results import load_bench

    bench = load_bench(H200 / "copy" / "bench.json")  # the H200's copy: 4,244 GB/s (its peak: 4,811)
    results = read_report(SUITE)
    at_peak = _by_place(build_report([("suite", results)]).runs[0].findings)
    measured = _by_place(build_report([("suite", results)], [("bench.json", bench)]).runs[0].findings)
    assert at_peak[("transpose/swizzled", "kernel")][:2] == (
        "runs 0.151 ms, its floor 0.107 ms (its DRAM bytes at peak bandwidth)",
        "≤ 29% of 0.151 ms",
    )
    assert measured[("transpose/swizzled", "kernel")] == (
        "runs 0.151 ms, its floor 0.122 ms (its DRAM bytes at the measured copy bandwidth, 4,244 GB/s)",
        "≤ 20% of 0.151 ms",
        "the kernel's floor (DRAM bytes at the measured copy bandwidth, 4,244 GB/s: 122 µs of 151 µs)",
    )
    assert measured[("transpose/conflict", "kernels/transpose.cu:40")][1] == "≤ 60% of 0.307 ms"  # at peak: 65%
    assert measured.keys() == at_peak.keys()
    # the bench's copy is an H200's: an H100's run keeps its peak
    h100 = read_report(FIXTURES / "nvidia_h100_80gb_hbm3" / "suite.results.json")
    other = build_report([("suite", h100)], [("bench.json", bench)]).runs[0].findings
    assert other == build_report([("suite", h100)]).runs[0].findings
    # the report of a run directory holding one: the tooltip names the ceiling
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_bytes(SUITE.read_bytes())
    (run / "bench.json").write_bytes((H200 / "copy" / "bench.json").read_bytes())
    page = _html(run, tmp_path)
    assert "DRAM bytes at the measured copy bandwidth, 4,244 GB/s: 122 µs of 151 µs" in html.unescape(page)
