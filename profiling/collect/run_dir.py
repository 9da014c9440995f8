"""The run directory: its creation (`new_run_dir`), the `latest` pointer, and a run's provenance.

Its layout (file names, finding runs, the `Provenance` record) is model/run_layout.py. Provenance (GPU,
host, driver, suite commit, command, start and wall time, memlens version) is taken by
`take_provenance` for profile and bench alike; RunInfo and BenchInfo extend it and are written flat,
as earlier versions wrote them.
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memlens.errors import ConfigError, ProfilerError
from memlens.io.files import point_symlink
from memlens.io.processes import CommandFailed, run_command
from memlens.model.run_layout import LATEST, Provenance
from memlens.version import __version__

SMI_TIMEOUT_S = 30.0
GIT_TIMEOUT_S = 10.0


def new_run_dir(out_dir: Path) -> Path:
    """A directory no other run uses: mkdir is exclusive, the pid tells concurrent runs apart."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1000):
            suffix = f"-{attempt}" if attempt else ""
            path = out_dir / f"{stamp}-{os.getpid()}{suffix}"
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as exc:
        raise ConfigError(f"--out {out_dir}: cannot create a run directory there ({exc.strerror or exc})") from None
    raise ProfilerError(f"cannot create a new run directory in {out_dir}")


def point_latest(out_dir: Path, run_dir: Path) -> ProfilerError | None:
    """Point `<out_dir>/latest` at `run_dir`; the error (not raised: the run is saved already) if it cannot."""
    try:
        point_symlink(out_dir / LATEST, run_dir.name)
    except OSError as exc:
        return ProfilerError(
            f"cannot point {out_dir / LATEST} at {run_dir.name} ({exc.strerror or exc}); results in {run_dir}"
        )
    return None


# --- provenance -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    """The slow part of provenance (two subprocesses): taken once, in the background where it helps."""

    driver_version: str | None
    suite_commit: str | None


def machine_of(suite: Path) -> Machine:
    return Machine(driver_version(), git_commit(suite))


def shell_command(argv: Sequence[str]) -> str:
    """The memlens command line a run was made with (its provenance's `memlens_command`)."""
    return "memlens " + shlex.join(argv)


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def take_provenance(
    machine: Machine, suite: Path | None, memlens_command: str, started: dt.datetime, gpu_name: str | None = None
) -> dict[str, Any]:
    """The Provenance fields of a run that started at `started` and ends now, as keyword arguments
    for RunInfo or BenchInfo (suite None: a program run)."""
    record = Provenance(
        gpu_name=gpu_name,
        host=_hostname(),
        driver_version=machine.driver_version,
        memlens_command=memlens_command,
        started_at=started.isoformat(timespec="seconds"),
        wall_seconds=round((now() - started).total_seconds(), 2),
        suite=None if suite is None else str(suite),
        suite_commit=machine.suite_commit,
        memlens_version=__version__,
    )
    return {f.name: getattr(record, f.name) for f in fields(Provenance)}


def driver_version() -> str | None:
    try:
        done = run_command(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], timeout=SMI_TIMEOUT_S)
    except CommandFailed:
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if done.ok and lines else None


def git_commit(path: Path) -> str | None:
    folder = path if path.is_dir() else path.parent
    git = ["git", "-C", str(folder)]
    try:
        head = run_command([*git, "rev-parse", "HEAD"], timeout=GIT_TIMEOUT_S)
        if not head.ok:
            return None
        dirty = run_command([*git, "status", "--porcelain", "--", "."], timeout=GIT_TIMEOUT_S)
    except CommandFailed:
        return None
    return head.stdout.strip() + (" (modified)" if dirty.stdout.strip() else "")


def _hostname() -> str | None:
    import socket  # here, not above: `memlens profile -- COMMAND` imports this module before ncu starts

    return socket.gethostname() or None
