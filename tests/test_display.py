"""How names and charts display: a very long kernel name is elided in the
middle everywhere it is shown, bidirectional control characters cannot reorder the text around them,
and the cross-run chart reads small and large durations alike."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from memlens.cli import main
from memlens.model.results import KernelResult, RunInfo, RunResults

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: would show "kernel_evil" as "live_lenrek" and what follows reversed
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
HUGE = "void huge_kernel<" + ", ".join(f"T{i}" for i in range(1000)) + ">(int)"  # about 5,000 characters
RULES = 'version = 1\n[[rule]]\nname = "t"\nselect = "*"\nmetric = "duration"\nmax = 1\n'


def results_file(tmp_path: Path, *names: str) -> Path:
    raw = {"duration": 1000.0, "local_ld_sectors": 0.0, "local_st_sectors": 0.0}
    kernels = tuple(KernelResult(name, None, None, i, raw) for i, name in enumerate(names))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(RunResults(RunInfo(source="x"), kernels).to_json()), encoding="utf-8")
    return path


def outputs(capsys, tmp_path: Path, path: Path) -> dict[str, str]:
    """Every text memlens shows a kernel name in: terminal tables, gate files, report formats."""
    texts: dict[str, str] = {}
    assert main(["metrics", str(path)]) == 0
    texts["metrics"] = capsys.readouterr().out
    rules = tmp_path / "r.toml"
    rules.write_text(RULES, encoding="utf-8")
    files = {kind: tmp_path / f"gate.{kind}" for kind in ("junit", "summary")}
    assert main(["gate", str(path), "--rules", str(rules), *(f"--{k}={p}" for k, p in files.items())]) == 1
    texts["gate"] = capsys.readouterr().out
    texts.update({kind: p.read_text(encoding="utf-8") for kind, p in files.items()})
    for fmt in ("html", "md"):
        target = tmp_path / f"report.{fmt}"
        assert main(["report", str(path), "--format", fmt, "-o", str(target)]) == 0
        texts[fmt] = target.read_text(encoding="utf-8")
    capsys.readouterr()
    return texts


# --- item 13: a 5,000-character name, and bidirectional controls ------------------------------------


def test_a_huge_kernel_name_is_elided_in_the_middle_in_terminal_tables(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    texts = outputs(capsys, tmp_path, results_file(tmp_path, HUGE))
    for kind in ("metrics", "gate"):  # a name filled 50 lines of the table
        rows = [line for line in texts[kind].splitlines() if line.startswith("│")]
        assert len(rows) <= 2, texts[kind]
    assert "void huge_kernel<" in texts["metrics"] and "…" in texts["metrics"]
    for kind in ("summary", "md"):
        rows = [line for line in texts[kind].splitlines() if "huge_kernel" in line and line.startswith("|")]
        assert rows and all(len(row) < 400 for row in rows), kind  # a table line, not 5,000 characters
    names = {case.get("name") for case in ElementTree.fromstring(texts["junit"].encode()).iter("testcase")}
    assert f"{HUGE} [duration]" in names  # machines get the whole name


def test_bidirectional_controls_are_neutralised_everywhere(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    name = f"kernel_{RLO}live{BIDI}_end"
    texts = outputs(capsys, tmp_path, results_file(tmp_path, name))
    for kind, text in texts.items():
        assert not any(c in text for c in BIDI), kind
        assert "<U+202E>" in text or "&lt;U+202E&gt;" in text, kind
    ElementTree.fromstring(texts["junit"].encode())  # still well-formed


# --- item 14: the cross-run chart on a log scale -----------------------------------------------------


def test_the_comparison_chart_uses_a_log_scale() -> None:
    from memlens.reports.charts import comparison_chart
    from memlens.reports.render import build_report

    def timed(slow: float) -> RunResults:
        durations = {"small_a": 120_000.0, "small_b": 125_000.0, "big": slow}
        kernels = tuple(KernelResult(n, None, None, i, {"duration": d}) for i, (n, d) in enumerate(durations.items()))
        return RunResults(RunInfo(source=str(slow)), kernels)

    report = build_report([("a", timed(17_600_000.0)), ("b", timed(17_000_000.0))])
    svg = comparison_chart(report.comparisons, "t")
    assert svg is not None and "log scale" in svg


@pytest.mark.parametrize("name", ["transpose_conflict", "void tr<0>(float *, const float *, int)"])
def test_short_names_are_shown_whole(name: str) -> None:
    from memlens.model.kernel_names import NAME_WIDTH, elide_middle

    assert elide_middle(name, NAME_WIDTH) == name


# --- issue 15's twins: one Markdown escaper, one value formatter, one pipe width -------------------


def test_a_kernel_name_with_a_backtick_is_the_same_in_the_gate_summary_and_the_report(capsys, tmp_path) -> None:
    name = "void k<`tick`, a|b>(T *)"
    texts = outputs(capsys, tmp_path, results_file(tmp_path, name))
    shown = "``void k<`tick`, a\\|b>(T *)``"
    assert f" {shown} |" in texts["summary"] and f"| {shown} |" in texts["md"]


def test_one_formatter_for_a_figure_in_the_gate_the_baseline_and_the_report(capsys, tmp_path) -> None:
    from memlens.gate import evaluate as gate
    from memlens.io import units
    from memlens.reports import formatting

    assert formatting.format_value is units.format_value and gate.format_value is units.format_value
    path = results_file(tmp_path, "k")
    base = tmp_path / "base.json"
    assert main(["baseline", "save", str(path), "-o", str(base)]) == 0
    assert main(["baseline", "show", str(base)]) == 0
    assert "duration=1.00 µs" in capsys.readouterr().out  # with its unit, as in the gate and the report


def test_tables_in_a_pipe_are_wide_enough_not_to_fold(monkeypatch) -> None:
    from memlens.io.terminal import PIPE_WIDTH, table_console

    monkeypatch.delenv("COLUMNS", raising=False)
    out = table_console()
    assert out.width >= PIPE_WIDTH and table_console(240).width >= 240
    monkeypatch.setenv("COLUMNS", "90")
    assert table_console().width == 90
