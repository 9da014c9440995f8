"""Issue 24's "done when", on the CPU: what `memlens profile --roofline -- ./pmpp_app` recorded on a GPU
(tests/fixtures/record_program_run.sh: DEST/pmpp_run/, DEST/pmpp_plain.ncu-rep). Skipped, saying so,
until those recordings are there. The report of the run shows every conflicting line with its code, a
roofline of the kernels doing floating-point work (fma 2kn: exactly 2 k n FLOPs), a coalescing verdict
for the strided kernel and local memory for the array; re-read after its source is edited (a copy, in a
temporary folder), the run shows the code that ran and the plain report says the file changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.output import render_report as render
from memlens.readers import read_report
from memlens.reports.build import build_report
from tests.collect.test_source_copies import edit_after_the_run
from tests.conftest import FIXTURES

RUNS = sorted(FIXTURES.glob("programs/*/pmpp_run/results.json"))
pytestmark = pytest.mark.skipif(not RUNS, reason="pmpp_app not recorded yet: bash tests/fixtures/record_program_run.sh")
N, K = 1 << 20, 256  # pmpp_app.cu's defaults
LOADS_4WAY = "float v = tile[(threadIdx.x * 4) % (BLOCK * 4)];"
STORES_2WAY = "tile[threadIdx.x * 2] = i < n ? in[i] : 0.0f;"
SOURCE = FIXTURES / "programs" / "pmpp_app.cu"


@pytest.fixture(scope="module")
def run() -> Path:
    return RUNS[0].parent


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """A working directory holding a copy of the source at the path its line info names (by its tail)."""
    copy = tmp_path / "tests" / "fixtures" / "programs" / "pmpp_app.cu"
    copy.parent.mkdir(parents=True)
    shutil.copy(SOURCE, copy)
    monkeypatch.chdir(tmp_path)
    return copy


def test_the_run_report_names_every_conflicting_line_with_its_code(run):
    report = build_report([("run", read_report(run, instructions=True))])
    section = report.runs[0]
    assert section.others_heading == "kernels of the program"
    rows = {row.label: row for row in section.others}
    four, two = rows["step > 4-way loads"], rows["step > 2-way stores"]
    assert [line.source for line in four.hot_lines][:1] == [LOADS_4WAY]
    assert four.hot_lines[0].shared_ld.ways == pytest.approx(4.0, rel=0.01)
    assert [line.source for line in two.hot_lines][:1] == [STORES_2WAY]
    assert two.hot_lines[0].shared_st.ways == pytest.approx(2.0, rel=0.01)
    html = render(report, "html")
    assert LOADS_4WAY.replace("<", "&lt;") in html and "source of <code>step &gt; 4-way loads</code>" in html


def test_the_fma_kernel_is_on_the_roofline_with_exactly_2kn_flops(run):
    results = read_report(run)
    fma = next(k for k in results.kernels if k.label == "step > fma 2kn")
    assert fma.value("flops") == 2 * K * N
    section = build_report([("run", results)]).runs[0]
    assert section.others_roofline is not None
    assert "step > fma 2kn" in [point.name for point in section.others_roofline.points]


def test_the_strided_kernel_gets_the_coalescing_verdict_and_the_copy_none(run):
    section = build_report([("run", read_report(run))]).runs[0]
    rows = {row.label: row for row in section.others}
    strided = [f.text for f in rows["step > strided loads"].verdict if f.topic == "global"]
    assert strided and strided[0].startswith("global loads uncoalesced: 32.0 sectors per request")
    assert not [f for f in rows["step > coalesced copy"].verdict if f.topic == "global"]
    assert any(f.topic == "local" and f.severity == "bad" for f in rows["step > local array"].verdict)


def test_the_run_re_read_after_an_edit_shows_the_code_that_ran(run, elsewhere, tmp_path, capsys):
    edit_after_the_run(elsewhere)
    assert main(["lines", str(run), "-k", "4-way"]) == 0
    out = capsys.readouterr().out
    assert f"      {LOADS_4WAY}" in out and "changed after" not in out
    target = tmp_path / "r.md"
    assert main(["report", str(run), "--format", "md", "-o", str(target)]) == 0
    assert LOADS_4WAY in target.read_text(encoding="utf-8")


def test_the_plain_report_says_the_source_changed(run, elsewhere, tmp_path, capsys):
    plain = tmp_path / "pmpp_plain.ncu-rep"
    shutil.copy(run.parent / "pmpp_plain.ncu-rep", plain)
    assert main(["lines", str(plain), "-k", "4-way", "--top", "1"]) == 0
    assert f"      {LOADS_4WAY}" in capsys.readouterr().out
    edit_after_the_run(elsewhere)
    assert main(["lines", str(plain), "-k", "4-way", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert LOADS_4WAY not in out and "pmpp_app.cu changed after the report was written" in out
