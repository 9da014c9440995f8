"""Every short-lived command memlens starts (compilers, c++filt, nvidia-smi, git, `ncu --version`,
doctor's probe) goes through `run_command`: an argv list (never a shell), an explicit timeout that
ends the command's whole process group, and the command with its output kept when it fails.
The long ones (ncu's profiling run: `ncu.run_ncu`) go through `run_watched`, polled while they run;
those started at once (`bench --gpus`, the readers' helpers) through `start_command` and
`start_pipe`. Ending a process group and holding signals meanwhile live here too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memlens.errors import ProfilerError

log = logging.getLogger("memlens")

REAP_SECONDS = 5.0  # after the group is killed, how long to wait for its pipes to close


def command_line(argv: Sequence[str]) -> str:
    """The command as one line a shell would run (for logs and messages)."""
    return shlex.join(argv)


@dataclass(frozen=True)
class Finished:
    """A command that ran to its end, whatever its exit code."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def failure(self) -> str:
        """One line naming the command, its exit code and its last line of output."""
        last = (self.output.strip().splitlines() or [""])[-1]
        because = f": {last}" if last else ""
        return f"{command_line(self.argv)} exited with code {self.returncode}{because}"


class CommandFailed(ProfilerError):
    """A command could not be started, or ran past its timeout; `argv` and `output` say which and what."""

    def __init__(self, message: str, argv: Sequence[str], output: str = "") -> None:
        super().__init__(message)
        self.argv = tuple(argv)
        self.output = output


class CommandTimeout(CommandFailed):
    def __init__(self, argv: Sequence[str], seconds: float, output: str = "") -> None:
        super().__init__(f"{command_line(argv)} ran past its {seconds:g} s timeout", argv, output)
        self.seconds = seconds


def run_command(
    argv: Sequence[str],
    *,
    timeout: float,
    input: str | None = None,  # noqa: A002 - subprocess's own name for it
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run `argv` in a process group of its own and wait up to `timeout` seconds. Past the timeout
    (or on Ctrl-C) the whole group is killed, grandchildren included. CommandFailed where it cannot
    start, CommandTimeout past the timeout; a non-zero exit is returned, for the caller to judge."""
    argv = tuple(str(a) for a in argv)
    log.info("running %s", command_line(argv))
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=None if env is None else dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        raise CommandFailed(f"cannot start {command_line(argv)}: {exc.strerror or exc}", argv) from None
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CommandTimeout(argv, timeout, _end_group(process)) from None
    except BaseException:
        _end_group(process)
        raise
    return Finished(argv, process.returncode, stdout, stderr)


def start_command(argv: Sequence[str], *, env: Mapping[str, str], output: Path) -> subprocess.Popen[bytes]:
    """Start `argv` in a process group of its own, its stdout and stderr into the file `output`,
    without waiting: for commands that run at once (`bench --gpus`); the caller waits for them
    and ends their groups (end_group) on a timeout or Ctrl-C. CommandFailed where it cannot start."""
    argv = tuple(str(a) for a in argv)
    log.info("starting %s", command_line(argv))
    try:
        with output.open("wb") as sink:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=dict(env),
                start_new_session=True,
            )
    except OSError as exc:
        raise CommandFailed(f"cannot start {command_line(argv)}: {exc.strerror or exc}", argv) from None


def run_watched(
    argv: Sequence[str],
    *,
    timeout: float | None,
    poll: Callable[[], None] | None = None,
    env: Mapping[str, str] | None = None,
    stderr: int | None = None,
    stdout: int | None = None,
    on_start: Callable[[], None] | None = None,
) -> int:
    """Run `argv` in a session of its own, calling `on_start` once it has started and `poll` every 0.2 s
    while it runs, and return its exit code. A Ctrl-C at the terminal reaches memlens alone, which then
    ends the whole group (end_group: SIGINT first, so ncu writes what it has); so do the timeout
    (CommandTimeout), SIGTERM (a CI job cancelled, taken as Ctrl-C meanwhile) and anything `poll` or
    `on_start` raises. Once it exits, what it left running in its group ends too. `stderr`, `stdout`:
    file descriptors (default: this process's). CommandFailed where it cannot start."""
    argv = tuple(str(a) for a in argv)
    log.info("running %s", command_line(argv))
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=_default_sigint(),
            env=None if env is None else dict(env),
        )
    except OSError as exc:
        raise CommandFailed(f"cannot start {argv[0]}: {exc.strerror or exc}", argv) from None
    try:
        if on_start:
            on_start()
        with sigterm_as_interrupt():
            while True:
                try:
                    process.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if poll:
                        poll()
                    if timeout is not None and time.monotonic() - started > timeout:
                        raise CommandTimeout(argv, timeout) from None
        if group_members(process.pid):
            end_group(process)
    except BaseException:
        end_group(process)
        raise
    return process.returncode


def _default_sigint() -> Callable[[], None] | None:
    """Where memlens itself ignores SIGINT (started in the background by a shell without job control,
    or under nohup), the child would inherit that and ignore the SIGINT that asks it to stop (ncu: and
    write its report): give it the default action back."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return None

    def restore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return restore


def start_pipe(argv: Sequence[str], *, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start `argv` with pipes to its stdin and from its stdout (stderr discarded), without waiting:
    for helpers that run at once and hand back what they made (readers/reader_processes.py); the caller writes,
    reads and waits. CommandFailed where it cannot start."""
    argv = tuple(str(a) for a in argv)
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(env)
        )
    except OSError as exc:
        raise CommandFailed(f"cannot start {command_line(argv)}: {exc.strerror or exc}", argv) from None


def _end_group(process: subprocess.Popen[str]) -> str:
    """Kill the command's process group; the output it wrote before, where it can be read."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    try:
        stdout, stderr = process.communicate(timeout=REAP_SECONDS)
    except (subprocess.TimeoutExpired, ValueError):  # a process outside the group holds the pipes
        process.kill()
        process.wait()
        return ""
    return (stdout or "") + (stderr or "")


# --- ending a process group, and signals held while it ends (ncu, bench and profile over several GPUs) ---

STOP_GRACE_S = 5.0  # after SIGINT, how long ncu gets to write its report before SIGKILL


def end_group(process: subprocess.Popen[bytes], grace: float | None = None) -> None:
    """SIGINT the process group (ncu then writes what it has), then SIGKILL what is left.
    A second Ctrl-C meanwhile is held until the group is gone, so nothing is left running."""
    grace = STOP_GRACE_S if grace is None else grace
    with hold_interrupts():
        for sig in (signal.SIGINT, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            if _group_gone(process, grace):
                break
        if process.poll() is None:  # ncu itself is reaped even where its group outlived it
            process.kill()
            process.wait()


def _group_gone(process: subprocess.Popen[bytes], grace: float) -> bool:
    """Wait up to `grace` seconds for ncu to exit and every process of its group with it."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        process.poll()  # reap ncu, or it would count as alive
        if not group_members(process.pid):
            return True
        time.sleep(0.05)
    return False


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`: from /proc on Linux, else by signal 0.

    Kept rather than psutil (measured, issue 35): psutil has no process-group field, so it would list
    every process and still ask os.getpgid of each: 1.5 to 1.8 ms against this loop's 1.3 to 1.7 ms
    over 73 to 92 processes, for a dependency of 15 ms import (tests/benchmarks/handwritten_vs_libraries.py)."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp ...
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid):
            members.append(int(entry.name))
    return members


@contextlib.contextmanager
def hold_interrupts() -> Iterator[None]:
    """Defer Ctrl-C (SIGINT) and SIGTERM to the end of the block, where they raise KeyboardInterrupt:
    for work that must not be cut in half, such as stopping ncu or saving partial results."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda number, frame: caught.append(number)) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if caught:
        raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises KeyboardInterrupt, so it is cleaned up like a Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(number: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
