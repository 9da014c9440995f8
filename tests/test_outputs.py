"""Every file a command writes goes through io/files.write_output: atomic, never over an input, every
OS error one line and exit 2."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.errors import EXIT_INPUT
from memlens.io import files as fileio

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROBE_CSV = FIXTURES / "probe" / "probe.csv"
H200 = FIXTURES / "nvidia_h200"
FAILING_RULES = 'version = 1\n[[rule]]\nname = "never"\nselect = "*"\nmetric = "duration"\nmax = 1\n'
PASSING_RULES = 'version = 1\n[[rule]]\nname = "always"\nselect = "*"\nmetric = "duration"\nmin = 0\n'


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of a plain ncu CSV and a rules file, in a folder of their own."""
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(PROBE_CSV, folder / "x.csv")
    (folder / "r.toml").write_text(PASSING_RULES, encoding="utf-8")
    (folder / "fail.toml").write_text(FAILING_RULES, encoding="utf-8")
    return folder


def one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: ") and err.count("\n") == 1, err
    assert message in err, err


# --- item 1: no command replaces its input -----------------------------------------------------


@pytest.mark.parametrize(
    "argv, victim",
    [
        (["baseline", "save", "{d}/x.csv", "-o", "{d}/x.csv"], "x.csv"),
        (["gate", "{d}/x.csv", "--rules", "{d}/r.toml", "--junit", "{d}/x.csv"], "x.csv"),
        (["gate", "{d}/x.csv", "--rules", "{d}/r.toml", "--json", "{d}/r.toml"], "r.toml"),
        (["gate", "{d}/x.csv", "--rules", "{d}/r.toml", "--summary", "{d}/r.toml"], "r.toml"),
        (["gate", "{d}", "--rules", "{d}/r.toml", "--junit", "{d}/x.csv"], "x.csv"),  # the run directory's report
    ],
)
def test_an_output_never_replaces_an_input(capsys, data: Path, argv: list[str], victim: str) -> None:
    before = digest(data / victim)
    one_line_exit_2(capsys, [a.format(d=data) for a in argv], "is an input of this command")
    assert digest(data / victim) == before


def test_an_output_through_a_symlink_or_hard_link_to_an_input_is_refused(capsys, data: Path) -> None:
    (data / "alias.xml").symlink_to(data / "x.csv")
    os.link(data / "x.csv", data / "hard.xml")
    before = digest(data / "x.csv")
    for name in ("alias.xml", "hard.xml"):
        one_line_exit_2(capsys, ["gate", str(data / "x.csv"), "--rules", str(data / "r.toml"), "--junit",
                                 str(data / name)], "is an input of this command")  # fmt: skip
    assert digest(data / "x.csv") == before


# --- item 2: a write error is one line and exit 2, for gate too --------------------------------


@pytest.mark.parametrize("option", ["--junit", "--summary", "--json"])
@pytest.mark.parametrize("rules", ["r.toml", "fail.toml"])
def test_gate_write_errors_exit_2_not_1(capsys, data: Path, tmp_path: Path, option: str, rules: str) -> None:
    base = ["gate", str(data / "x.csv"), "--rules", str(data / rules), option]
    one_line_exit_2(capsys, [*base, str(tmp_path)], "is a directory")
    (tmp_path / "plain").write_text("", encoding="utf-8")
    one_line_exit_2(capsys, [*base, str(tmp_path / "plain" / "sub" / "out")], "cannot write")


def test_baseline_save_into_a_directory_is_exit_2(capsys, data: Path, tmp_path: Path) -> None:
    one_line_exit_2(capsys, ["baseline", "save", str(data / "x.csv"), "-o", str(tmp_path)], "is a directory")
    one_line_exit_2(capsys, ["baseline", "save", str(data / "x.csv"), "-o", str(data / "x.csv" / "b.json")],
                    "cannot write")  # fmt: skip


def test_check_json_into_a_directory_is_exit_2(capsys, tmp_path: Path, monkeypatch) -> None:
    from memlens.commands import check
    from memlens.static.check import StaticResults

    monkeypatch.setattr(check, "check_suite", lambda *a: StaticResults("sm_90", "", "kernels", ()))
    one_line_exit_2(capsys, ["check", "kernels", "-k", "^transpose/padded$", "--json", str(tmp_path)],
                    "is a directory")  # fmt: skip


def test_disk_full_and_read_only_are_one_line(tmp_path: Path, monkeypatch) -> None:
    from memlens.errors import OutputError
    from memlens.io.files import write_output

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OutputError, match="No space left on device: free some space"):
        write_output(tmp_path / "out.txt", "text")
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind
    monkeypatch.undo()

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(fileio.tempfile, "mkstemp", read_only)
    with pytest.raises(OutputError, match="Read-only file system: write into a folder you may write"):
        write_output(tmp_path / "out.txt", "text")


def test_write_output_refuses_a_raw_profiler_report(tmp_path: Path) -> None:
    from memlens.errors import OutputError
    from memlens.io.files import write_output

    with pytest.raises(OutputError, match="raw profiler report"):
        write_output(tmp_path / "new.ncu-rep", "text")
    assert not (tmp_path / "new.ncu-rep").exists()


# --- item 3: report's default file ---------------------------------------------------------------


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


# --- item 19: a symbolic link loop is named as such ------------------------------------------------


@pytest.mark.parametrize("command", [["metrics"], ["report"], ["list"]])
def test_a_symlink_loop_is_reported_as_a_loop(capsys, tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    one_line_exit_2(capsys, [*command, str(tmp_path / "a")], "symbolic link loop")
    one_line_exit_2(capsys, [*command, str(tmp_path / "dangling")], "symbolic link to a missing file")


def test_a_baseline_saved_in_its_run_directory_can_be_saved_again(capsys, data: Path) -> None:
    target = data / "baseline.json"
    assert main(["baseline", "save", str(data), "-o", str(target)]) == 0
    assert main(["baseline", "save", str(data), "-o", str(target)]) == 0  # not an input of the run
    one_line_exit_2(capsys, ["baseline", "save", str(data), "-o", str(data / "x.csv")], "is an input")
