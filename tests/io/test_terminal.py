"""profiling/io/terminal.py's guarded streams: a closed pipe is quiet and exit 141, any other write error exit 2."""

from __future__ import annotations

import errno
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.errors import EXIT_INPUT, EXIT_PIPE_CLOSED
from memlens.version import __version__

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
RUN = FIXTURES / "nvidia_h200" / "suite.results.json"
PASSING_RULES = 'version = 1\n[[rule]]\nname = "always"\nselect = "*"\nmetric = "duration"\nmin = 0\n'


class FailingOutput(io.RawIOBase):
    """A descriptor whose writes fail with `error` while `broken` (then succeed: what is still
    buffered when the test ends is dropped quietly)."""

    def __init__(self, error: int) -> None:
        self.error = error
        self.broken = True

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[no-untyped-def, override]
        if self.broken:
            raise (BrokenPipeError if self.error == errno.EPIPE else OSError)(self.error, os.strerror(self.error))
        return len(data)


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(PASSING_RULES, encoding="utf-8")
    return path


@pytest.fixture
def printing(rules: Path, tmp_path: Path, monkeypatch) -> dict[str, list[str]]:
    """Every command that prints on standard output, and what makes it print there."""
    from memlens.commands import check
    from memlens.static.check import StaticKernel, StaticResults

    kernel = StaticKernel(
        "transpose", "padded", "transpose_padded", "transpose_padded", "cuda", 28, 0, 0, 0, 4224, 0, False
    )
    monkeypatch.setattr(check, "check_suite", lambda *a: StaticResults("sm_90", "nvcc", "kernels", (kernel,)))
    baseline = tmp_path / "baseline.json"
    assert main(["baseline", "save", str(RUN), "-o", str(baseline)]) == 0
    return {
        "list": ["list", "kernels"],
        "metrics": ["metrics", str(RUN)],
        "metrics --json": ["metrics", str(RUN), "--json"],
        "metrics --csv": ["metrics", str(RUN), "--csv"],
        "lines": ["lines", str(RUN)],
        "lines --json": ["lines", str(RUN), "--json"],
        "gate": ["gate", str(RUN), "--rules", str(rules)],
        "gate --json -": ["gate", str(RUN), "--rules", str(rules), "--json", "-"],
        "check": ["check", "kernels", "-k", "^transpose/padded$"],
        "check --json -": ["check", "kernels", "-k", "^transpose/padded$", "--json", "-"],
        "baseline save": ["baseline", "save", str(RUN), "-o", str(tmp_path / "again.json")],
        "baseline save -o -": ["baseline", "save", str(RUN), "-o", "-"],
        "baseline show": ["baseline", "show", str(baseline)],
        "report": ["report", str(RUN), "-o", str(tmp_path / "r.md"), "--format", "md"],
        "report -o -": ["report", str(RUN), "-o", "-", "--format", "md"],
        "doctor": ["doctor"],
    }


PRINTING = [
    "list",
    "metrics",
    "metrics --json",
    "metrics --csv",
    "lines",
    "lines --json",
    "gate",
    "gate --json -",
    "check",
    "check --json -",
    "baseline save",
    "baseline save -o -",
    "baseline show",
    "report",
    "report -o -",
    "doctor",
]


def run_with_stdout(monkeypatch, argv: list[str], error: int) -> int:
    raw = FailingOutput(error)
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8"))
    try:
        return main(argv)
    finally:
        raw.broken = False


@pytest.mark.parametrize("command", PRINTING)
def test_a_full_disk_on_stdout_is_one_line_and_exit_2(capsys, monkeypatch, printing, command: str) -> None:
    assert run_with_stdout(monkeypatch, printing[command], errno.ENOSPC) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.endswith("memlens: error: standard output: cannot write (No space left on device)\n"), err
    assert err.count("memlens: error:") == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", PRINTING)
def test_an_io_error_on_stdout_is_one_line_and_exit_2(capsys, monkeypatch, printing, command: str) -> None:
    assert run_with_stdout(monkeypatch, printing[command], errno.EIO) == EXIT_INPUT
    assert capsys.readouterr().err.endswith("memlens: error: standard output: cannot write (Input/output error)\n")


@pytest.mark.parametrize("command", PRINTING)
def test_a_closed_pipe_ends_quietly_with_141(capsys, monkeypatch, printing, command: str) -> None:
    assert run_with_stdout(monkeypatch, printing[command], errno.EPIPE) == EXIT_PIPE_CLOSED == 141
    assert "memlens: error" not in capsys.readouterr().err


def test_a_failing_gate_with_a_full_stdout_is_a_write_error_not_a_gate_failure(capsys, monkeypatch, tmp_path) -> None:
    rules = tmp_path / "fail.toml"
    rules.write_text(PASSING_RULES.replace("min = 0", "max = 0"), encoding="utf-8")
    assert run_with_stdout(monkeypatch, ["gate", str(RUN), "--rules", str(rules)], errno.ENOSPC) == EXIT_INPUT
    assert capsys.readouterr().err == "memlens: error: standard output: cannot write (No space left on device)\n"


# --- the real thing, in a process of its own --------------------------------------------------------


def memlens(*argv: str, **streams) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    """`memlens ARGV` in a process of its own, its stdout and stderr as `streams` give them (else captured)."""
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **streams}
    return subprocess.run([sys.executable, "-m", "memlens", *argv], cwd=REPO, text=True, timeout=120, **streams)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize(
    "argv", [["gate", str(RUN), "--rules", "{rules}"], ["metrics", str(RUN)], ["report", str(RUN), "-o", "-"], ["list"]]
)
def test_dev_full_as_stdout_is_one_line_and_exit_2(rules: Path, argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = memlens(*(a.format(rules=rules) for a in argv), stdout=full)
    assert done.returncode == EXIT_INPUT
    assert done.stderr == "memlens: error: standard output: cannot write (No space left on device)\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["metrics", "--help"], ["gate", "--help"]])
def test_help_and_version_into_dev_full_are_one_line_and_exit_2(argv: list[str]) -> None:
    """issue 33 (4): argparse prints them while the arguments are parsed, before the command's guard."""
    with open("/dev/full", "w") as full:
        done = memlens(*argv, stdout=full)
    assert (done.returncode, done.stderr) == (
        EXIT_INPUT,
        "memlens: error: standard output: cannot write (No space left on device)\n",
    )


def test_help_and_version_print_and_exit_0() -> None:
    version = memlens("--version")
    assert (version.returncode, version.stdout) == (0, f"memlens {__version__}\n")
    done = memlens("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: memlens") and done.stderr == ""


@pytest.mark.parametrize(
    "argv",
    [["metrics", str(RUN)], ["report", str(RUN), "-o", "-"], ["report", str(RUN), "-o", "/dev/stdout"], ["list"]],
)
def test_a_pipe_closed_by_its_reader_is_quiet_and_141(argv: list[str]) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "memlens", *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    process.stdout.close()  # type: ignore[union-attr]  # the reader had enough before the first line
    assert process.wait(timeout=120) == EXIT_PIPE_CLOSED
    assert process.stderr.read() == b""  # type: ignore[union-attr]  # nor "Exception ignored ... BrokenPipeError"
    process.stderr.close()  # type: ignore[union-attr]


@pytest.mark.skipif(shutil.which("head") is None or shutil.which("bash") is None, reason="needs bash and head")
def test_head_in_a_pipefail_script_sees_141() -> None:
    # --json: 110 kB, more than a pipe holds, so memlens is still writing when head has its line
    script = f"set -o pipefail; {sys.executable} -m memlens metrics {RUN} --json | head -1; echo status $?"
    done = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (done.stdout, done.stderr) == ("{\nstatus 141\n", "")


@pytest.mark.skipif(shutil.which("head") is None or shutil.which("bash") is None, reason="needs bash and head")
def test_one_large_write_into_a_closed_pipe_is_141_not_0() -> None:
    """issue 33 (2): the HTML report is one write of 600 kB; Python's buffered writer returns a short
    count when the reader goes away mid-write, and the rest was lost with exit 0."""
    fast = FIXTURES / "nvidia_h200" / "suite_fast.results.json"
    script = f"set -o pipefail; {sys.executable} -m memlens report {RUN} {fast} -o - | head -1; echo status $?"
    done = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (done.stdout, done.stderr) == ("<!doctype html>\nstatus 141\n", "")


def test_a_large_write_is_written_whole_where_the_pipe_stays_open() -> None:
    fast = FIXTURES / "nvidia_h200" / "suite_fast.results.json"
    done = memlens("report", str(RUN), str(fast), "-o", "-")  # HTML, 600 kB
    assert done.returncode == 0 and len(done.stdout) > 500_000 and done.stdout.rstrip().endswith("</html>")


def test_a_closed_stdout_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import os, sys; os.close(1); from memlens.cli import main; sys.exit(main(['metrics', {str(RUN)!r}]))",
        ],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_INPUT
    assert done.stderr == "memlens: error: standard output: cannot write (Bad file descriptor)\n"


def test_an_error_with_stderr_full_keeps_its_exit_code() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        done = memlens("metrics", "no-such-file", stderr=full)
    assert done.returncode == EXIT_INPUT and done.stdout == ""
