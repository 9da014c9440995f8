"""The bank maps in the HTML report (reports/bank_maps.py, templates/_bank_map.html.j2): `memlens report` of a run
directory made as `memlens profile --banks` leaves it, from the recorded bank_probe fixtures (H100 and H200),
draws one SVG per conflicting instruction ncu measured and the trace recorded, under its hot line: 32 bank
columns, a lane mark per cell the worst recorded warp fills, and the proved fix in one sentence."""

from __future__ import annotations

import re

import pytest

from memlens.cli import main
from memlens.model.banks_file import read_banks_file
from memlens.readers import read_with_instructions
from memlens.theory.bank_analysis import analyse_file
from memlens.theory.bank_matching import match_instructions
from tests.support.bank_runs import BANK_GPUS, bank_probe_run

SVG = re.compile(r'<svg class="bank-map".*?</svg>', re.S)


def report(run, capsys) -> str:
    assert main(["report", str(run), "--format", "html", "-o", "-"]) == 0
    return capsys.readouterr().out


def expected_marks(run) -> list[int]:
    """Each matched conflicting instruction's count of filled cells (bank, wavefront) in its worst recorded
    warp, from the bank model directly, in the report's order: kernels as the report lists them (the
    order of the run), the most excess first on a line."""
    results = read_with_instructions(run / "results.json")
    analysis = analyse_file(read_banks_file(run / "banks.json"), "banks.json")
    marks = []
    for match in match_instructions(results.kernels, analysis):
        if (match.record.excess or 0) > 0:
            phases = match.banks.worst.phases
            marks.append(sum(1 for phase in phases for row in phase.rows for lanes in row if lanes is not None))
    return marks


@pytest.mark.parametrize("gpu", BANK_GPUS)
def test_one_svg_per_matched_conflicting_instruction(gpu, tmp_path, capsys):
    run = bank_probe_run(gpu, tmp_path)
    html = report(run, capsys)
    svgs = SVG.findall(html)
    marks = expected_marks(run)
    assert len(svgs) == len(marks) == 12
    assert all(svg.count('class="bank-col"') == 32 for svg in svgs)
    assert [svg.count('class="lane"') for svg in svgs] == marks
    # the 32-way column read: 32 wavefronts of one lane each; the 16-way 8-byte one: 16 wavefronts x 2 phases x 2 banks
    assert marks[:2] == [32, 64]
    assert html.count('class="bank-fix"') == 12
    assert "Fix (pad, proved 1-way on the 4 recorded warps): add 4 bytes after every 128-byte row" in html
    assert "32-way from the recorded addresses: 128 wavefronts over an ideal of 4" in html
    assert "ncu measured the same 32-way" in html
    assert 'viewBox="0 0 471.0 ' in svgs[0] and 'width="100%"' in svgs[0]


def test_a_run_without_banks_json_has_no_bank_map(tmp_path, capsys):
    run = bank_probe_run(BANK_GPUS[0], tmp_path, banks=False)
    html = report(run, capsys)
    assert "bank-map" not in html and "bank-col" not in html


def test_the_reports_json_carries_neither_drawings_nor_pcs(tmp_path, capsys):
    run = bank_probe_run(BANK_GPUS[1], tmp_path)
    assert main(["report", str(run), "--format", "json", "-o", "-"]) == 0
    text = capsys.readouterr().out
    assert '"bank_maps"' not in text and '"pcs"' not in text and '"hot_lines"' in text
