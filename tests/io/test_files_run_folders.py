"""profiling/io/files.py with model/run_layout.py: an output never lands on a run folder's files nor on a
name memlens reads from one (issue 46 (1)); a file replaced keeps its mode, one the user may not write is
refused (46 (2)); a link to nothing names itself (46 (4))."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.errors import EXIT_INPUT, OutputError
from memlens.io.files import write_output

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200 = FIXTURES / "nvidia_h200"
RULES = Path(__file__).resolve().parents[2] / "kernels" / "gates.toml"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: ") and err.count("\n") == 1, err
    assert message in err, err


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """RUNS as `memlens profile --out RUNS` leaves it: one run with its report, log, command and results,
    no check.json, and RUNS/latest pointing at it."""
    root = tmp_path / "runs"
    run = root / "20261127-100000-1"
    run.mkdir(parents=True)
    shutil.copy(H200 / "suite.results.json", run / "results.json")
    shutil.copy(H200 / "suite.ncu-rep", run / "profile.ncu-rep")
    (run / "ncu.log").write_text("==PROF== Disconnected from process 1\n", encoding="utf-8")
    (run / "ncu-command.txt").write_text("ncu --set full -o profile python suite.py\n", encoding="utf-8")
    os.symlink(run.name, root / "latest")
    return root


@pytest.mark.parametrize(
    ("argv", "target"),
    [
        (["lines", "{run}", "--sarif", "{run}/latest/ncu.log"], "ncu.log"),
        (["baseline", "save", "{run}", "-o", "{run}/latest/ncu-command.txt"], "ncu-command.txt"),
        (["report", "{run}", "--format", "md", "-o", "{run}/latest/ncu-command.txt"], "ncu-command.txt"),
        (["gate", "{run}", "--rules", str(RULES), "--junit", "{run}/latest/ncu.log"], "ncu.log"),
    ],
)
def test_an_output_never_lands_on_a_file_of_a_run_folder(capsys, runs: Path, argv: list[str], target: str) -> None:
    """issue 46 (1): `lines RUN --sarif RUN/latest/ncu.log` and `baseline save RUN -o RUN/latest/ncu-command.txt`
    replaced them, exit 0."""
    before = digest(runs / "latest" / target)
    one_line_exit_2(capsys, [part.format(run=runs) for part in argv], f"{target}: is a file of the run folder")
    assert digest(runs / "latest" / target) == before


@pytest.mark.parametrize("name", ["check.json", "bench.json", "results.json", "events.jsonl"])
def test_an_output_never_takes_a_name_memlens_reads_from_a_run_folder(capsys, runs: Path, name: str) -> None:
    """issue 46 (1): `report RUN -o RUN/latest/check.json` in a run without one wrote HTML named check.json, after
    which `metrics RUN` failed with "invalid JSON"."""
    (runs / "latest" / "results.json").unlink() if name == "results.json" else None
    one_line_exit_2(
        capsys,
        ["report", str(H200 / "suite.results.json"), "-o", str(runs / "latest" / name)],
        f"{name}: is a name memlens reads or writes in a run folder",
    )
    assert not (runs / "latest" / name).exists()
    if name != "results.json":
        assert main(["metrics", str(runs)]) == 0


def test_a_runs_report_and_other_outputs_may_be_written_there_again(capsys, runs: Path) -> None:
    """The run folder's own report (`report RUN`'s default) and a SARIF the user keeps there are outputs, not the
    run's records: written, and written again."""
    for _ in range(2):
        assert main(["report", str(runs), "--format", "md"]) == 0
        assert main(["lines", str(runs), "--sarif", str(runs / "latest" / "lines.sarif")]) == 0
    capsys.readouterr()
    assert (runs / "latest" / "report.md").read_text(encoding="utf-8").startswith("#")
    assert '"version": "2.1.0"' in (runs / "latest" / "lines.sarif").read_text(encoding="utf-8")


def test_the_run_itself_still_writes_its_records(runs: Path) -> None:
    """What makes a run (profile, bench --into, check --into) writes its records there: `record=True`."""
    write_output(runs / "latest" / "ncu-command.txt", "ncu -o profile x\n", record=True)
    assert (runs / "latest" / "ncu-command.txt").read_text(encoding="utf-8") == "ncu -o profile x\n"
    with pytest.raises(OutputError, match="is a file of the run folder"):
        write_output(runs / "latest" / "ncu-command.txt", "x\n")


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o755])
def test_a_replaced_output_keeps_its_mode(tmp_path: Path, mode: int) -> None:
    """issue 46 (2): replacing an existing output left it 644 whatever it was (600 became 644)."""
    target = tmp_path / "report.md"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(mode)
    write_output(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_a_new_output_gets_the_usual_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_output(tmp_path / "new.md", "x\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o644


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o000])
def test_a_read_only_output_is_refused_and_left_as_it_was(capsys, tmp_path: Path, mode: int) -> None:
    """issue 46 (2): a 444 file was rewritten (a rename needs only the folder's permission). A file with no write
    bit is read-only for memlens, run as root too (the tests run as root)."""
    target = tmp_path / "gate.xml"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(mode)
    one_line_exit_2(
        capsys,
        ["report", str(H200 / "suite.results.json"), "--format", "md", "-o", str(target)],
        f"{target}: cannot write (permission denied: the file is read-only)",
    )
    assert target.read_text(encoding="utf-8") == "old\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_a_file_the_user_may_not_write_is_refused(tmp_path: Path, monkeypatch) -> None:
    """For a user other than root, what os.access says: a file of another user's, 644, is not written (as `cp`)."""
    target = tmp_path / "summary.md"
    target.write_text("old\n", encoding="utf-8")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, how, **kw: False if Path(path) == target else real_access(path, how))
    with pytest.raises(OutputError, match="cannot write .permission denied"):
        write_output(target, "new\n")
    assert target.read_text(encoding="utf-8") == "old\n"


def test_a_link_to_nowhere_says_so(capsys, tmp_path: Path) -> None:
    """issue 46 (4): `--sarif out/link.sarif`, a dangling link in an existing folder, said "no such folder out"."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "link.sarif").symlink_to(tmp_path / "gone" / "x.sarif")
    one_line_exit_2(
        capsys,
        ["lines", str(H200 / "suite.results.json"), "--sarif", str(out / "link.sarif")],
        f"{out / 'link.sarif'}: cannot write (a symbolic link to {tmp_path / 'gone' / 'x.sarif'}, which "
        "points nowhere: no such folder",
    )
    assert (out / "link.sarif").is_symlink() and not (tmp_path / "gone").exists()
