"""Helpers to put the fake ncu on a test's PATH, and to find processes a test left behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
REPO = SUPPORT.parent.parent
CPU_SUITE = SUPPORT / "cpu_suite.py"
CPU_FAILURES = REPO / "tests" / "failure_suites" / "cpu_failures.py"  # twin of gpu_failures.py
GPU_FAILURES = REPO / "tests" / "failure_suites" / "gpu_failures.py"
PERMISSION_LOG = SUPPORT / "logs" / "nvgpuctrperm.log"  # NVIDIA's documented message (see logs/README.md)
MARKER = "MEMLENS_TEST_MARKER"  # set for a run's processes, found again in /proc/<pid>/environ
# The CPU suite's variants whose kernels tests/fixtures/probe's recording holds. Over several GPUs, a GPU
# may end up with any unit (it takes over what another has not started); the fake's report, the probe's,
# then holds a kernel of whatever each GPU ran only where the run selects these.
IN_THE_PROBE = ("transpose/conflict", "transpose/padded", "running_mean/local")
PROBE_SELECTION = ("-k", "|".join(label.partition("/")[2] for label in IN_THE_PROBE))


def recorded(record: Path) -> list[dict]:
    """What a fake recorded in its JSON-lines file (FAKE_NCU_RECORD, FAKE_BENCH_RECORD): one dict a run,
    none where nothing ran."""
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def write_fake_ncu(folder: Path) -> Path:
    """An executable `ncu` in folder that runs tests/support/fake_ncu.py."""
    folder.mkdir(parents=True, exist_ok=True)
    ncu = folder / "ncu"
    ncu.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.path.insert(0, {str(REPO)!r})\n"
        f"runpy.run_path({str(SUPPORT / 'fake_ncu.py')!r}, run_name='__main__')\n"
    )
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return ncu


def install_fake_ncu(folder: Path, monkeypatch, **env: str) -> Path:
    """Write an executable `ncu` into folder, first on PATH, replaying what `env` names."""
    ncu = write_fake_ncu(folder)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return ncu


def fake_ncu_env(folder: Path, **env: str) -> dict[str, str]:
    """The environment for a `python -m memlens` subprocess that finds the fake ncu first."""
    write_fake_ncu(folder)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_NCU_", "MEMLENS_"))}
    return {**base, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO), **env}


def marked_processes(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment holds MEMLENS_TEST_MARKER=marker, this one aside."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat_line = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        state = stat_line[stat_line.rfind(")") + 2 :].split()[:1]
        if state != ["Z"] and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """True while `pid` is a live process (a zombie counts as gone)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat_line[stat_line.rfind(")") + 2 :].split()[:1] != ["Z"]


@dataclass(frozen=True)
class Interrupted:
    """How a command ended after a signal: its exit code, its stderr, the seconds from the signal to its
    exit, and the processes of its run (those carrying MARKER) still alive 5 s after it (killed since)."""

    returncode: int
    err: str
    seconds: float
    left: list[int]


def interrupt_when(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    ready: Callable[[], bool],
    signum: int = signal.SIGINT,
    wait: float = 30.0,
) -> Interrupted:
    """Run `argv` as from a terminal (SIGINT at its default action), send it `signum` once `ready()` (or
    after 60 s, or once it exited), and wait up to `wait` s for it to end. It is killed whatever happens,
    and so is anything of its run left behind, once counted."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    left: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None and not ready():
            time.sleep(0.1)
        process.send_signal(signum)
        signalled = time.monotonic()
        _, err = process.communicate(timeout=wait)
        seconds = time.monotonic() - signalled
    finally:
        process.kill()
        if MARKER in env:
            deadline = time.monotonic() + 5
            while (left := marked_processes(env[MARKER])) and time.monotonic() < deadline:
                time.sleep(0.1)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    return Interrupted(process.returncode, err, seconds, left)
