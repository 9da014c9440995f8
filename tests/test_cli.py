"""profiling/cli.py: the parser and its help, errors mapped to exit codes, a Ctrl-C lost in a callback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from memlens import errors
from memlens.cli import COMMANDS, build_parser, main
from memlens.errors import EXIT_INPUT
from tests.conftest import FIXTURES, REPO

RUN = FIXTURES / "nvidia_h200" / "suite.results.json"


def usage_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == EXIT_INPUT
    return capsys.readouterr().err


# --- usage and help ----------------------------------------------------------------------------------


def test_an_extra_argument_shows_the_commands_own_usage(capsys) -> None:
    err = usage_error(capsys, ["metrics", "X", "X"])
    assert err.startswith("usage: memlens metrics ") and "memlens metrics: error: unrecognized arguments: X" in err
    err = usage_error(capsys, ["baseline", "save", str(RUN), "-o", "b.json", "extra"])
    assert err.startswith("usage: memlens baseline ")
    assert "memlens baseline: error: unrecognized arguments: extra" in err


def test_an_unknown_option_is_named_before_a_missing_command(capsys) -> None:
    assert usage_error(capsys, ["--bogus"]).endswith("memlens: error: unrecognized arguments: --bogus\n")
    assert usage_error(capsys, []).endswith("memlens: error: the following arguments are required: COMMAND\n")


def test_baseline_help_keeps_its_paragraphs_and_examples(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main(["baseline", "--help"])
    out = capsys.readouterr().out
    assert "show one.\n\n    memlens baseline save RUN -o FILE    RUN: run directory" in out
    assert "\n    memlens baseline show FILE\n\n" in out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_commands_help_keeps_its_paragraphs(capsys, monkeypatch, command: str) -> None:
    """Each paragraph of a command's description starts a paragraph of its --help (argparse would
    run them together)."""
    monkeypatch.setenv("COLUMNS", "100")
    description = build_parser(command).commands[command].description or ""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = capsys.readouterr().out
    for paragraph in description.split("\n\n")[1:]:
        first_words = " ".join(paragraph.split()[:3])
        assert f"\n\n{first_words}" in help_text or f"\n\n    {first_words}" in help_text, (command, first_words)


def test_the_epilog_documents_the_closed_pipe_status(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "141 when standard output's reader went away" in " ".join(capsys.readouterr().out.split())


def test_only_the_named_commands_module_is_built(capsys) -> None:
    assert list(build_parser("list").commands) == ["list"]
    assert list(build_parser().commands) == list(COMMANDS) and len(COMMANDS) == 12
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == "memlens 0.1.0\n"


def test_profile_hands_everything_after_double_dash_to_the_program(monkeypatch) -> None:
    from memlens.commands import profile

    seen = []
    monkeypatch.setattr(profile, "run", lambda args: seen.append(args) or 0)
    assert main(["profile", "--fast", "--", "./app", "--fast", "-k", "x"]) == 0
    assert main(["profile", "--fast"]) == 0
    assert [args.program for args in seen] == [["./app", "--fast", "-k", "x"], []]
    assert all(args.fast for args in seen)


# --- errors and exit codes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raised, code",
    [
        (errors.ConfigError("bad option"), 2),
        (errors.InputError("bad file"), 2),
        (errors.OutputError("cannot write"), 2),
        (errors.StdoutError("standard output"), 2),
        (errors.ProfilerError("ncu failed"), 3),
        (errors.SetupError("needs CuPy"), 3),
        (errors.VerificationError("wrong result"), 3),
        (errors.GateFailed("1 check failed"), 1),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_each_error_class_is_one_line_and_its_exit_code(capsys, monkeypatch, raised: Exception, code: int) -> None:
    from memlens.commands import list_suite

    def fail(args: object) -> int:
        raise raised

    monkeypatch.setattr(list_suite, "run", fail)
    assert main(["list"]) == code
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"memlens: error: {raised}\n")


@pytest.mark.parametrize(
    "raised, code, err",
    [
        (errors.StdoutClosed("closed"), 141, ""),  # quiet: the reader went away
        (BrokenPipeError(), 141, ""),
        (KeyboardInterrupt(), 3, "memlens: interrupted\n"),
    ],
    ids=["StdoutClosed", "BrokenPipeError", "KeyboardInterrupt"],
)
def test_a_closed_pipe_and_a_ctrl_c_have_their_own_exit_codes(capsys, monkeypatch, raised, code, err) -> None:
    from memlens.commands import list_suite

    def fail(args: object) -> int:
        raise raised

    monkeypatch.setattr(list_suite, "run", fail)
    assert main(["list"]) == code
    assert capsys.readouterr().err == err


def test_a_bug_is_a_traceback_not_an_exit_code(monkeypatch) -> None:
    from memlens.commands import list_suite

    def bug(args: object) -> int:
        raise ZeroDivisionError("a bug in memlens")

    monkeypatch.setattr(list_suite, "run", bug)
    with pytest.raises(ZeroDivisionError, match="a bug in memlens"):
        main(["list"])


LOST_INTERRUPT = """
import sys, time, weakref
from memlens import cli
from memlens.commands import list_suite

class Lock:
    pass

def interrupted(_):
    raise KeyboardInterrupt  # as a Ctrl-C does when it lands in an import lock's weakref callback

def run(args):
    lock = Lock()
    ref = weakref.ref(lock, interrupted)
    del lock  # the callback runs here, where Python cannot raise what it raises
    time.sleep(20)
    return 0

list_suite.run = run
sys.exit(cli.main(["list"]))
"""


def test_a_ctrl_c_that_lands_in_a_callback_still_stops_memlens_without_a_traceback():
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", LOST_INTERRUPT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        # a test run started in the background (SIGINT ignored, as a shell's `&` leaves it) ignores it too
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert done.returncode == 3 and time.monotonic() - started < 15
    assert done.stderr.splitlines()[-1].startswith("memlens: interrupted")
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
