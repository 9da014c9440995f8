"""profiling/io/files.py with model/run_layout.py: an output never lands on a run folder's files nor on a
name memlens reads from one (issue 46 (1)); a file replaced keeps its mode, one the user may not write is
refused (46 (2)); a link to nothing names itself (46 (4))."""

from __future__ import annotations

import hashlib
import os
import shutil
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
    one_line_exit_2(capsys, ["report", str(H200 / "suite.results.json"), "-o", str(runs / "latest" / name)],
                    f"{name}: is a name memlens reads or writes in a run folder")  # fmt: skip
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
