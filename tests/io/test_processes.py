"""The one wrapper for short-lived commands: argv only, a timeout that ends the whole process group,
the command and its output kept when it fails."""

from __future__ import annotations

import os
import sys
import time

import pytest

from memlens.errors import EXIT_PROFILER
from memlens.io.processes import CommandFailed, CommandTimeout, run_command

GRANDCHILD = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads process states from /proc")
def test_a_timeout_kills_the_grandchild_too():
    started = time.monotonic()
    with pytest.raises(CommandTimeout) as caught:
        run_command([sys.executable, "-c", GRANDCHILD], timeout=1)
    assert time.monotonic() - started < 20
    grandchild = int(caught.value.output.split()[0])  # what it printed before the timeout is kept
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
    assert caught.value.seconds == 1 and caught.value.exit_code == EXIT_PROFILER
    assert str(caught.value).endswith("ran past its 1 s timeout") and sys.executable in str(caught.value)


def test_a_command_that_cannot_start_is_named():
    with pytest.raises(CommandFailed) as caught:
        run_command(["memlens-no-such-tool", "--version"], timeout=5)
    assert str(caught.value).startswith("cannot start memlens-no-such-tool --version: ")
    assert caught.value.argv == ("memlens-no-such-tool", "--version")


def test_a_failing_command_keeps_its_output_and_names_itself():
    done = run_command([sys.executable, "-c", "import sys; print('partial'); sys.exit('broke: bad input')"], timeout=30)
    assert (done.returncode, done.ok, done.stdout) == (1, False, "partial\n")
    assert done.stderr == "broke: bad input\n"
    assert done.failure().endswith("exited with code 1: broke: bad input")
    assert done.failure().startswith(sys.executable)


def test_input_reaches_the_command_and_nothing_goes_through_a_shell():
    done = run_command(
        [sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], input="a;b $(x)", timeout=30
    )
    assert done.ok and done.stdout == "A;B $(X)\n"


def test_run_watched_returns_the_exit_code_and_ends_what_the_command_left_in_its_group(tmp_path):
    from memlens.io.processes import run_watched

    pid_file = tmp_path / "pid"
    leaves = (
        f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); sys.exit(3)"
    )
    assert run_watched([sys.executable, "-c", leaves], timeout=30) == 3
    assert not _alive(int(pid_file.read_text()))  # the grandchild it left went with its group


def test_run_watched_ends_the_group_on_its_timeout_and_on_what_poll_raises(tmp_path):
    from memlens.io.processes import run_watched

    polls = []
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match="ran past its 0.5 s timeout"):
        run_watched([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5, poll=lambda: polls.append(1))
    assert time.monotonic() - started < 15 and polls  # polled while it ran, then ended

    def stop() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_watched([sys.executable, "-c", "import time; time.sleep(60)"], timeout=None, poll=stop)
    with pytest.raises(CommandFailed, match="^cannot start memlens-no-such-tool: "):
        run_watched(["memlens-no-such-tool"], timeout=1)
