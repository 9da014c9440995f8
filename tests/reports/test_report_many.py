"""A report of a program of many kernels: the longest first, the rest folded, a filter; charts draw
the longest rows only. (Reading 10,000 launches: tests/benchmarks/record_many.py and read_many.py.)"""

from __future__ import annotations

import re

from memlens.cli import main
from memlens.readers.ncu_csv import parse_csv
from memlens.reports.build import OTHERS_SHOWN, build_run
from memlens.reports.charts import CHART_ROWS, family_chart

NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def many_kernels_csv(count: int) -> str:
    """`count` kernels, each in a range of its own, kernel i lasting (i + 1) microseconds."""
    lines = [f'"ID","{NVTX}","Kernel Name","gpu__time_duration.sum"', '"","","","nsecond"']
    for i in range(count):
        cell = f'7  ""<default domain>:step{i:03d}:none:none:none:none:none:none""'
        lines.append(f'"{i}","{cell}","kernel_{i:03d}","{(i + 1) * 1000}"')
    return "\n".join(lines) + "\n"


def test_many_kernels_longest_first_the_rest_folded(tmp_path):
    path = tmp_path / "many.csv"
    path.write_text(many_kernels_csv(40))
    run = build_run(parse_csv(path.read_text(), str(path)), "many")
    assert OTHERS_SHOWN == 25
    assert [r.label for r in run.others[:3]] == ["step039", "step038", "step037"]
    out = tmp_path / "many.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    html = out.read_text()
    shown, folded = html.split('<details class="folded">', 1)
    assert "40 kernels, the longest first: 25 shown" in shown
    assert 'class="kernel-filter"' in shown and "<script>" in folded
    assert "step039" in shown and "step015" in shown and "step014" not in shown
    assert "<summary>15 more kernels</summary>" in folded and "step014" in folded.split("</details>")[0]


def test_few_kernels_keep_their_order_and_no_script(tmp_path):
    path = tmp_path / "few.csv"
    path.write_text(many_kernels_csv(5))
    out = tmp_path / "few.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    html = out.read_text()
    assert "<script" not in html and '<details class="folded"' not in html
    assert html.index("step000") < html.index("step004")


def test_chart_draws_the_longest_rows_only():
    run = build_run(parse_csv(many_kernels_csv(60)), "many")
    svg = family_chart(run.others, "salt", exact=False)
    names = set(re.findall(r"kernel_\d{3}", svg))
    assert CHART_ROWS == 25 and len(names) == 25
    assert "kernel_059" in names and "kernel_034" not in names
