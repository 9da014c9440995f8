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
        run_command([sys.executable, "-c", GRANDCHILD], timeout=2)
    assert time.monotonic() - started < 20
    grandchild = int(caught.value.output.split()[0])  # what it printed before the timeout is kept
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
    assert caught.value.seconds == 2 and caught.value.exit_code == EXIT_PROFILER
    assert str(caught.value).endswith("ran past its 2 s timeout") and sys.executable in str(caught.value)


def test_a_command_that_cannot_start_is_named():
    with pytest.raises(CommandFailed) as caught:
        run_command(["memlens-no-such-tool", "--version"], timeout=5)
    assert str(caught.value).startswith("cannot start memlens-no-such-tool --version: ")
    assert caught.value.argv == ("memlens-no-such-tool", "--version")


def test_a_failing_command_keeps_its_output_and_names_itself():
    done = run_command([sys.executable, "-c", "import sys; print('partial'); sys.exit('broke: bad input')"],
                       timeout=30)  # fmt: skip
    assert (done.returncode, done.ok, done.stdout) == (1, False, "partial\n")
    assert done.stderr == "broke: bad input\n"
    assert done.failure().endswith("exited with code 1: broke: bad input")
    assert done.failure().startswith(sys.executable)


def test_input_reaches_the_command_and_nothing_goes_through_a_shell():
    done = run_command([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], input="a;b $(x)",
                       timeout=30)  # fmt: skip
    assert done.ok and done.stdout == "A;B $(X)\n"
