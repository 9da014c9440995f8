"""A program's kernels in the report, on recorded fixtures: hot lines with code
and a source view (HTML and Markdown), PMPP's verdicts (coalescing, DRAM- or L2-bound), the roofline of
kernels outside families, honest headings, what a CSV cannot show; the source view in Chromium at 1400
and 420 px wide."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memlens.output import render_report as render
from memlens.readers import read_report
from memlens.reports.build import build_report
from memlens.reports.global_memory_verdicts import L2_REREAD, memory_level
from tests.conftest import FIXTURES
from tests.reports.test_report_browser import chromium

PROGRAM = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"  # ncu --import-source yes
H200 = FIXTURES / "nvidia_h200"
TORCH_CSV = H200 / "programs" / "torch_triton.csv"
CONFLICT_LINE = "for (int j = 0; j < TILE; j += ROWS) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];"


def _report(path: Path, fmt: str) -> str:
    return render(build_report([(str(path), read_report(path, instructions=True))]), fmt)


@pytest.fixture(scope="module")
def program_html() -> str:
    return _report(PROGRAM, "html")


def test_program_kernels_show_each_conflicting_line_with_its_code(program_html):
    html = program_html
    escaped = CONFLICT_LINE.replace("<", "&lt;")
    assert f"<pre>{escaped}</pre>" in html  # the hot line of transpose/conflict, escaped
    assert "tests/fixtures/programs/cuda_app.cu:21" in html and "tests/fixtures/programs/cuda_app.cu:39" in html
    assert "32-way, 4,063,232" in html


def test_the_source_view_shows_code_figures_heat_and_sass_on_expand(program_html):
    html = program_html
    views = re.findall(r'<details class="source-view"', html)
    assert len(views) == 6  # one a kernel: each has shared- or local-memory lines with line info
    hot = re.search(
        r'<details class="src-line heat-4"><summary><span class="src-fig">ld 32-way \+4.06 M</span>'
        r'<span class="src-no">21</span><code class="src-code">([^<]*)</code></summary>',
        html,
    )
    assert hot is not None and hot.group(1) == "  " + CONFLICT_LINE.replace("<", "&lt;")
    after = html[hot.end() :]
    sass = after[: after.index("</details>")]
    # the line's 4 unrolled LDS and the 4 STG beside them (global stores, from the per-instruction table)
    assert sass.count("<tr><td") == 8 and sass.count("<code>STG.E") == 4
    assert "LDS R19, [R17]" in sass and "32-way, 1.02 M excess wavefronts" in sass
    assert '<div class="src-line"><span class="src-fig"></span><span class="src-no">18</span>' in html  # no figures
    assert "the code as it ran (kept in the report or the run)" in html
    assert "<script" not in html  # expands without a script


def test_markdown_has_hot_lines_and_the_source_view(tmp_path):
    md = _report(PROGRAM, "md")
    assert "#### hot lines of `transpose/conflict`" in md
    assert f"| `tests/fixtures/programs/cuda_app.cu:21` | `{CONFLICT_LINE}` |" in md
    block = md[md.index("Source of `transpose/conflict`") :]
    block = block[block.index("```") :]
    block = block[: block.index("```", 3) + 3]
    assert f"ld 32-way +4.06 M │   21 │   {CONFLICT_LINE}" in block
    assert "│      │     ↳ LDS R19, [R17]: 32-way, 1.02 M excess wavefronts, 32.8 K executions" in block
    assert "│   18 │   __syncthreads();" in block


def test_pmpp_verdicts_on_the_recorded_suite():
    report = build_report([("h200", read_report(H200 / "suite.results.json"))])
    rows = {row.label: row for row in report.runs[0].variants}
    spill = [f.text for f in rows["running_mean/spill"].verdict if f.topic == "global"]
    # from the per-instruction table: 32 sectors a warp load over an ideal of 4; the line in CuPy's temporary copy
    assert spill[0].startswith(
        "global loads uncoalesced: 32.0 sectors per access, 8.00x the ideal 4.00 of the same accesses; worst at line "
    )
    assert [f.severity for f in rows["running_mean/spill"].verdict if f.topic == "global"][0] == "bad"
    tile = [f.text for f in rows["transpose/tile64_padded"].verdict if f.topic == "memory"]
    # 83.70% of peak; L1-L2 536,870,912 B over DRAM 512,324,608 B
    assert tile == ["DRAM-bound: DRAM at 83.7% of its peak"]  # one clause; the L2 figure its tooltip
    assert [f.more for f in rows["transpose/tile64_padded"].verdict if f.topic == "memory"] == [
        "L1-L2 traffic 1.05x the DRAM bytes"
    ]
    naive = [f.text for f in rows["matmul/naive"].verdict if f.topic == "memory"]
    # L1-L2 4,224,797,728 B over DRAM 46,286,592 B
    assert naive[0].startswith("memory traffic served from L2, not DRAM: L1-L2 traffic 91.3x the DRAM bytes")
    # coalesced 16-byte vector loads (16 sectors a request) get no coalescing verdict
    assert not [f for f in rows["transpose/vec4_padded"].verdict if f.topic == "global"]


@pytest.mark.parametrize("gpu", ["nvidia_h200", "nvidia_h100_80gb_hbm3"])
def test_only_a_kernel_that_reads_global_memory_rereads_it_through_l2(gpu):
    """A shared-atomic kernel (atomics_one_bank: L1-L2 2,097,152 B over DRAM 3,328 B, its global traffic the
    stores of its result, no global load sector) was said to reread its data through L2."""
    kinds = {
        k.kernel.split("(")[0]: k
        for k in read_report(FIXTURES / gpu / "kinds" / "memory_kinds.ncu-rep", instructions=True).kernels
    }
    for name in ("atomics_one_bank", "shared_8byte_2way", "dsmem_partner_read"):  # no global load, no TMA
        assert memory_level(kinds[name]) is None, name
    spill = memory_level(kinds["spill_launch_bounds"])  # its global loads: 1,277,952 sectors
    assert spill is not None and spill.details == (L2_REREAD,)  # the story under the table, once
    tma = {
        k.label: k
        for k in read_report(
            FIXTURES / "nvidia_h100_80gb_hbm3" / "programs" / "triton_matmul.ncu-rep", instructions=True
        ).kernels
    }["matmul/tma"]
    assert tma.value("global_load_sectors") == 0  # its loads are TMA transfers, which no load sector counts
    assert memory_level(tma).text.startswith("memory traffic served from L2, not DRAM")


def test_kernels_outside_families_get_one_roofline_and_honest_words(tmp_path):
    run = build_report([("torch", read_report(TORCH_CSV))]).runs[0]
    assert run.others_heading == "kernels of the ncu report"
    assert run.others_about.startswith("by the NVTX ranges open at each launch")
    assert run.others_roofline is not None
    assert [p.name for p in run.others_roofline.points] == ["torchapp@triton_add", "torchapp@softmax"]
    softmax = next(row for row in run.others if row.label == "torchapp@softmax")
    assert any(f.topic == "roofline" and f.text.startswith("memory-bound at ") for f in softmax.verdict)
    html = render(build_report([("torch", read_report(TORCH_CSV))]), "html")
    section = html[html.index("<h3>kernels of the ncu report") :]
    assert '<div class="chart roofline-chart"><div class="wide"><svg' in section[: section.index("</section>")]
    assert "an ncu CSV holds one value a metric, not one a SASS instruction: no hot lines, no source view" in html


def test_a_plain_report_without_ranges_is_named_so():
    run = build_report([("plain", read_report(H200 / "plain_ncu.ncu-rep"))]).runs[0]
    assert run.others_heading == "kernels of the ncu report"
    assert run.others_about.startswith("by kernel name (no NVTX ranges recorded")


# The report in a frame as wide as a desktop window or a phone, and a script (the test's, not the
# report's) that measures the source view and writes the figures into the DOM --dump-dom prints.
FRAME = """<!doctype html><html><body style="margin:0">
<iframe id="frame" src="REPORT" style="width:WIDTHpx;height:900px;border:0"></iframe>
<script>
document.getElementById("frame").addEventListener("load", () => {
  const doc = document.getElementById("frame").contentDocument;
  const page = doc.documentElement;
  const views = [...doc.querySelectorAll("details.source-view")];
  const hot = doc.querySelector("details.src-line.heat-4");
  const fig = hot.querySelector(".src-fig");
  const before = hot.querySelector("table.sass").checkVisibility();
  hot.open = true;
  const after = hot.querySelector("table.sass").checkVisibility();
  const wide = [...doc.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > page.clientWidth + 1
    && !e.closest(".table-wrap, .src, .chart")).map(e => e.tagName + "." + e.className).slice(0, 5);
  const src = hot.closest(".src");
  document.body.setAttribute("data-measured", JSON.stringify({
    width: page.clientWidth, scroll: page.scrollWidth, views: views.length,
    fig_cut: fig.scrollWidth > fig.clientWidth + 1, fig_text: fig.textContent,
    heat: doc.defaultView.getComputedStyle(hot.querySelector("summary")).backgroundColor,
    sass_hidden: before, sass_shown: after, wide, src_inside: src.getBoundingClientRect().right <= page.clientWidth + 1,
  }));
});
</script></body></html>"""


@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 420])
def test_the_source_view_in_chromium(program_html, tmp_path, width):
    page = tmp_path / "report.html"
    page.write_text(program_html, encoding="utf-8")
    frame = tmp_path / "frame.html"
    frame.write_text(FRAME.replace("REPORT", page.name).replace("WIDTH", str(width)), encoding="utf-8")
    dom = chromium(
        tmp_path,
        "--allow-file-access-from-files",
        "--virtual-time-budget=5000",
        "--dump-dom",
        f"--window-size={max(width, 500)},1000",
        frame.as_uri(),
    ).stdout
    found = re.search(r'data-measured="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    figures = json.loads(found.group(1).replace("&quot;", '"'))
    assert figures["views"] == 6, figures
    assert figures["scroll"] <= figures["width"], figures  # the page never scrolls sideways; code does
    assert figures["src_inside"], figures
    assert figures["fig_text"] == "ld 32-way +4.06 M" and not figures["fig_cut"], figures  # the margin reads whole
    assert figures["heat"] not in ("rgba(0, 0, 0, 0)", "transparent"), figures  # coloured
    assert figures["sass_hidden"] is False and figures["sass_shown"] is True, figures  # SASS on expand


def test_library_kernels_are_named_with_what_the_user_controls():
    """issue 45: the cuBLAS GEMM and ATen kernels of torch_triton, beside their names and in their verdicts."""
    md = _report(TORCH_CSV, "md")
    advice = "cuBLAS's kernel: its code is not yours; what you control is the call -- shapes, dtype, layout, batching"
    row = next(line for line in md.splitlines() if line.startswith("| `torchapp@bf16_matmul` `nvjet"))
    assert "`nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT` (cuBLAS) |" in row
    verdict = next(line for line in md.splitlines() if line.startswith("| `torchapp@bf16_matmul` (cuBLAS) |"))
    assert advice in verdict and "lineinfo" not in md
    assert "| **torch** (PyTorch) |" in md  # a range's kernel that is ATen's (a program's range: no baseline)
    triton = next(line for line in md.splitlines() if line.startswith("| `torchapp@triton_add` `add_kernel`"))
    assert "(" not in triton.split("|")[1]  # the program's own kernel: no library
    html = _report(TORCH_CSV, "html")
    assert '<span class="pill" title="the library whose kernel this is">cuBLAS</span>' in html
    data = json.loads(_report(TORCH_CSV, "json"))
    others = {row["label"]: row["library"] for row in data["runs"][0]["others"]}
    assert others["torchapp@bf16_matmul"] == "cuBLAS" and others["torchapp@triton_add"] is None
