"""profiling/commands/report.py (`memlens report`) through cli.main: where it writes, what it prints, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlens.cli import main
from tests.reports.test_report_samples import suite_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = sorted(p.parent for p in FIXTURES.glob("*/suite.csv"))
H200 = FIXTURES / "nvidia_h200"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "runs" / "20261121-230000-1"
    directory.mkdir(parents=True)
    (directory / "results.json").write_text(json.dumps(suite_run().to_json()), encoding="utf-8")
    return directory


def test_one_run_writes_report_html_into_the_run(run_dir, capsys):
    assert main(["report", str(run_dir)]) == 0
    target = run_dir / "report.html"
    assert capsys.readouterr().out.strip() == str(target)
    html = target.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "shared loads: 32-way bank conflicts" in html
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_several_runs_write_memlens_report_in_the_working_directory(run_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(run_dir), str(run_dir / "results.json"), "--format", "md"]) == 0
    assert capsys.readouterr().out.strip() == "memlens-report.md"
    md = (tmp_path / "memlens-report.md").read_text(encoding="utf-8")
    assert "## Comparison across runs" in md


def test_output_option_and_json(run_dir, tmp_path, capsys):
    target = tmp_path / "r.json"  # into a folder that exists: memlens makes none (test_fileio)
    assert main(["report", str(run_dir), "-o", str(target), "--format", "json"]) == 0
    assert capsys.readouterr().out.strip() == str(target)
    assert json.loads(target.read_text(encoding="utf-8"))["format"] == "memlens-report"


def test_stdout_output(run_dir, capsys):
    assert main(["report", str(run_dir), "--format", "md", "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# memlens report") and "| **padded** | ok | 33.8 µs | 2.53× |" in out


def test_an_existing_file_is_replaced_whole(run_dir):
    target = run_dir / "report.html"
    target.write_text("old", encoding="utf-8")
    assert main(["report", str(run_dir)]) == 0
    assert target.read_text(encoding="utf-8").startswith("<!doctype html>")


@pytest.mark.skipif(not RECORDED, reason="suite fixtures not recorded yet (tests/fixtures/record.sh)")
def test_reads_recorded_ncu_reports(tmp_path, capsys):
    target = tmp_path / "recorded.html"
    recorded = RECORDED[0]
    assert main(["report", str(recorded / "suite.csv"), str(recorded / "suite_fast.ncu-rep"), "-o", str(target)]) == 0
    html = target.read_text(encoding="utf-8")
    assert "Comparison across runs" in html and "not measured exactly: a --fast run" in html


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["no/such/run"], "no/such/run: no such file or directory"),
        (["{run}", "-o", "{run}/results.json"], "is an input of this command"),
        (["{run}", "-o", "{run}"], "is a directory"),
    ],
)
def test_user_errors_exit_2_with_one_line(run_dir, capsys, arguments, message):
    argv = ["report", *(a.format(run=run_dir) for a in arguments)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: ") and message in err and err.count("\n") == 1
    assert json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["schema_version"] == 3


def test_malformed_results_exit_2(tmp_path, capsys):
    bad = tmp_path / "results.json"
    bad.write_text('{"schema_version": 1, "info": {}, "kernels": [], "outcomes": [{"expect": 3}]}', encoding="utf-8")
    assert main(["report", str(bad)]) == 2
    assert "malformed results" in capsys.readouterr().err


def test_unknown_format_is_a_usage_error(run_dir):
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(run_dir), "--format", "pdf"])
    assert exit_info.value.code == 2


# --- the default file: never beside the data ---------------------------------------------------------


def test_two_reports_of_one_folder_land_in_the_working_directory(capsys, tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "a"
    data.mkdir()
    shutil.copy(H200 / "suite.csv", data / "seed.csv")
    shutil.copy(H200 / "plain_ncu.csv", data / "numba.csv")
    (data / "bench.json").write_text("not memlens's bench", encoding="utf-8")  # unrelated: ignored
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    listing = sorted(p.name for p in data.iterdir())
    assert main(["report", str(data / "seed.csv")]) == 0
    assert main(["report", str(data / "numba.csv")]) == 0
    assert capsys.readouterr().out.split() == ["seed.report.html", "numba.report.html"]
    assert sorted(p.name for p in work.iterdir()) == ["numba.report.html", "seed.report.html"]
    assert sorted(p.name for p in data.iterdir()) == listing  # nothing written beside the data


def test_a_run_directory_the_user_may_not_write_gets_its_report_in_the_working_directory(
    capsys, tmp_path: Path, monkeypatch
) -> None:
    import json

    from memlens.commands import report
    from memlens.model.results import KernelResult, RunInfo, RunResults

    run = tmp_path / "runs" / "20261122-010203-1"
    run.mkdir(parents=True)
    results = RunResults(RunInfo(source="x"), (KernelResult("k", "f", "v", 0, {"duration": 1.0}),))
    (run / "results.json").write_text(json.dumps(results.to_json()), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["report", str(run)]) == 0 and (run / "report.html").is_file()  # a run you may write: its own
    monkeypatch.setattr(report.os, "access", lambda path, mode: Path(path) != run)  # as a user who may not
    (run / "report.html").unlink()
    assert main(["report", str(run)]) == 0
    assert capsys.readouterr().out.split()[-1] == "20261122-010203-1.report.html"
    assert not (run / "report.html").exists() and (work / "20261122-010203-1.report.html").is_file()


def test_report_help_says_where_the_default_goes(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "./STEM.report.<ext>" in help_text and "never into the data's folder" in help_text
