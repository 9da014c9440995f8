"""profiling/io/markdown.py: one Markdown escaper for the gate summary and the report."""

from __future__ import annotations

from tests.support.outputs import outputs, results_file


def test_a_kernel_name_with_a_backtick_is_the_same_in_the_gate_summary_and_the_report(capsys, tmp_path) -> None:
    name = "void k<`tick`, a|b>(T *)"
    texts = outputs(capsys, tmp_path, results_file(tmp_path, name))
    shown = "``void k<`tick`, a\\|b>(T *)``"
    assert f" {shown} |" in texts["summary"] and f"| {shown} |" in texts["md"]
