"""Helper processes that read a share of a report's actions, for readers/ncu_rep.py.

A forked helper starts with the report loaded and NVIDIA's libraries started, but memlens forks only
a process of one thread. Where another thread runs (NumPy starts its BLAS threads on import, and a
notebook has imported it), one new Python process, `python -m memlens.readers.spawned_reader REPORT CHUNK
[--instructions]`, loads the report itself (tenths of a second more), reads the actions named on its
standard input in chunks of CHUNK by helpers it forks, and hands them all back on its standard output
(processes.start_pipe). Either way ncu_report's memory (what it decoded, kept for as long as a
process lives: see ncu_rep.IN_FLIGHT_ACTIONS) goes with the helper that decoded it.

Forked by hand rather than with a standard pool (measured, issue 35, Python 3.11): each helper
must die after its share (that is what frees ncu_report's memory) and must be forked from a process
of one thread; concurrent.futures.ProcessPoolExecutor refuses `max_tasks_per_child` with the fork
start method (ValueError), and multiprocessing.Pool(maxtasksperchild=1) starts 3 threads of its own
in this process (1 -> 4) and forks its replacement helpers from one of them, the very fork that
can_fork refuses (tests/benchmarks/handwritten_vs_libraries.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from memlens.io.processes import CommandFailed, start_pipe

LaunchReader = Any  # ncu_rep._LaunchReader (not imported: ncu_rep imports this module)
Slot = tuple[int, int]  # (range index, action index) of an action in the report
Read = tuple[list[Any], dict[str, str]]  # the launches read, and the units met
# the folder holding the package where it is installed as folders named memlens (a checkout's profiling/
# is found through its editable install instead): the new process imports the same memlens
_PACKAGE = Path(__file__).resolve().parents[1]
ROOT = _PACKAGE.parent if _PACKAGE.name == "memlens" else None
HELPER_PROCESS = "memlens.readers.spawned_reader"  # the new process's module


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Linux, two CPUs or more for this process, and one thread in it (a fork copies only the one
    that calls it: another's locks would stay held in the child)."""
    if sys.platform != "linux" or cpus() < 2:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class Helper:
    """A forked process reading the later actions of a report into a pipe (see PARALLEL_MIN_ACTIONS)."""

    def __init__(self, pid: int, read_end: int) -> None:
        self.pid = pid
        self.pipe = open(read_end, "rb")  # closed by result() or stop()

    @classmethod
    def start(cls, reader: LaunchReader, slots: Sequence[Slot]) -> Helper | None:
        """The helper reading `slots` with a copy of `reader`, or None where no process can be forked."""
        reap_helpers()
        try:
            read_end, write_end = os.pipe()
        except OSError:
            return None
        # SIGINT stays blocked in the child: Ctrl-C interrupts this process, which then stops the child.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid == 0:
            help_and_exit(reader, slots, read_end, write_end)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(write_end)
        if pid < 0:
            os.close(read_end)
            return None
        return cls(pid, read_end)

    def result(self) -> Read | None:
        """The launches the helper read and the units it met, or None where it failed (a pickle cut
        short does not load). Its exit is not waited for (tens of ms, freeing what it decoded): it is
        reaped later, see reap_helpers."""
        with self.pipe:
            data = self.pipe.read()
        EXITING.append(self.pid)
        self.pid = 0
        try:
            return cast(Read, pickle.loads(data))
        except Exception:
            return None

    def stop(self) -> None:
        self.pipe.close()
        if self.pid:
            with contextlib.suppress(OSError):  # gone already
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = 0


EXITING: list[int] = []  # helpers that handed over what they read, and may be exiting still


def reap_helpers(wait: bool = False) -> None:
    """Reaps the helpers that have exited (all, waiting for them, where `wait`); called as the next
    helper starts. Those a process leaves at its end are reaped by init."""
    for pid in EXITING[:]:
        try:
            done, _ = os.waitpid(pid, 0 if wait else os.WNOHANG)
        except ChildProcessError:  # reaped already
            done = pid
        if done:
            EXITING.remove(pid)


def help_and_exit(reader: LaunchReader, slots: Sequence[Slot], read_end: int, write_end: int) -> None:
    """The helper process: reads `slots`, writes what it read to the pipe, and exits (with 0 only
    where it wrote it all); it never returns, whatever happens."""
    status = 1
    try:
        os.close(read_end)
        reader.launches = []
        reader.read(slots)
        unsent = memoryview(pickle.dumps((reader.launches, reader.metrics.units), pickle.HIGHEST_PROTOCOL))
        while unsent:
            unsent = unsent[os.write(write_end, unsent) :]
        os.close(write_end)  # now, not as the exit frees all this process decoded (tens of ms)
        status = 0
    finally:
        os._exit(status)


class SpawnedHelper:
    """A new Python process reading actions of a report, in chunks by helpers it forks, into its
    standard output."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    @classmethod
    def start(cls, path: Path, instructions: bool, slots: Sequence[Slot], chunk: int) -> SpawnedHelper | None:
        argv = [sys.executable, "-m", HELPER_PROCESS, str(path), str(chunk)]
        argv += ["--instructions"] if instructions else []
        python_path = os.pathsep.join(filter(None, (str(ROOT) if ROOT else None, os.environ.get("PYTHONPATH"))))
        env = {**os.environ, "PYTHONPATH": python_path}
        try:
            process = start_pipe(argv, env=env)
        except CommandFailed:
            return None
        helper = cls(process)
        try:
            with process.stdin:  # type: ignore[union-attr]
                process.stdin.write(json.dumps(list(slots)).encode())  # type: ignore[union-attr]
        except OSError:  # it died at once: the actions are read by the caller
            helper.stop()
            return None
        return helper

    def result(self) -> Read | None:
        """What the helper read, or None where it failed (the caller then reads the actions itself)."""
        data = self.process.stdout.read()  # type: ignore[union-attr]
        self.process.stdout.close()  # type: ignore[union-attr]
        if self.process.wait() != 0:
            return None
        try:
            return cast(Read, pickle.loads(data))
        except Exception:
            return None

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        with contextlib.suppress(OSError):
            self.process.stdout.close()  # type: ignore[union-attr]
