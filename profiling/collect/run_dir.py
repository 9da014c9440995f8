"""The run directory: its layout, its creation, the `latest` pointer, and a run's provenance.

    runs/                      DEFAULT_OUT (`--out`)
      latest -> <time>-<pid>   LATEST: the newest profile run (bench --into leaves it)
      <time>-<pid>/            new_run_dir(): one per profile (or bench without --into)
        profile.ncu-rep        NCU_REPORT: ncu's raw report, never overwritten
        ncu.log                NCU_LOG
        ncu-command.txt        NCU_COMMAND: the exact ncu command line
        events.jsonl           EVENTS: what the profiled program reported, one JSON line each
        profile.gpu<i>.ncu-rep, ncu.gpu<i>.log, ncu-command.gpu<i>.txt, events.gpu<i>.jsonl
                               profile_files(run_dir, i): the same, per GPU, for `--gpus` over several
        results.json           RESULTS: RunResults (profiling/model/results.py)
        bench.json             BENCH: BenchResults (profiling/bench/results.py)
        report.html|md|json    report_file(): `memlens report`

Provenance (GPU, host, driver, suite commit, command, start and wall time, memlens version) is one
record, `Provenance`, taken by `take_provenance` for profile and bench alike; RunInfo and BenchInfo
extend it and are written flat, as earlier versions wrote them.
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memlens import __version__
from memlens.errors import ConfigError, ProfilerError
from memlens.io.files import point_symlink
from memlens.io.processes import CommandFailed, run_command

DEFAULT_OUT = Path("runs")
LATEST = "latest"
LATEST_RUN = DEFAULT_OUT / LATEST
NO_RUN_YET = (f"{LATEST_RUN}: no run yet; run `memlens profile` or name a run directory, results.json, .ncu-rep "
              "or ncu CSV")  # fmt: skip
REPORT_STEM = "profile"  # ncu is given the stem and adds .ncu-rep
NCU_REPORT = f"{REPORT_STEM}.ncu-rep"
NCU_LOG = "ncu.log"
NCU_COMMAND = "ncu-command.txt"
EVENTS = "events.jsonl"
RESULTS = "results.json"
BENCH = "bench.json"
REPORT_FILE_STEM = "report"  # memlens report writes report.<format> into a run directory

SMI_TIMEOUT_S = 30.0
GIT_TIMEOUT_S = 10.0


def no_run_yet(path: str | Path) -> bool:
    """Whether `path` is the default run (runs/latest) and no profile run has made it yet: every
    command then says NO_RUN_YET."""
    return os.path.normpath(path) == str(LATEST_RUN) and not os.path.lexists(path)


def report_file(run_dir: Path, fmt: str) -> Path:
    return run_dir / f"{REPORT_FILE_STEM}.{fmt}"


@dataclass(frozen=True)
class ProfileFiles:
    """The files one ncu run writes into a run directory."""

    report_stem: Path  # ncu is given the stem and adds .ncu-rep
    log: Path
    command: Path
    events: Path

    @property
    def report(self) -> Path:
        return self.report_stem.with_name(self.report_stem.name + ".ncu-rep")


def profile_files(run_dir: Path, gpu: int | None = None) -> ProfileFiles:
    """The files of the one ncu run of a run directory, or (`gpu` given) of the ncu run on GPU `gpu`
    of several: `profile.gpu1.ncu-rep` beside `profile.gpu0.ncu-rep`, never one over the other."""
    tag = "" if gpu is None else f".gpu{gpu}"
    return ProfileFiles(
        report_stem=run_dir / f"{REPORT_STEM}{tag}",
        log=run_dir / NCU_LOG.replace(".log", f"{tag}.log"),
        command=run_dir / NCU_COMMAND.replace(".txt", f"{tag}.txt"),
        events=run_dir / EVENTS.replace(".jsonl", f"{tag}.jsonl"),
    )


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


def resolve_run(path: Path) -> Path:
    """`path`, or the run its `latest` link points at where `path` is a folder of runs (what
    `profile --out DIR` writes: DIR/<time>-<pid>/ and DIR/latest) that holds no results of its own."""
    if not path.is_dir() or (path / RESULTS).is_file():
        return path
    latest = path / LATEST
    if latest.is_dir() and (latest / RESULTS).is_file():
        return latest
    return path


def runs_in(folder: Path) -> list[Path]:
    """The run directories (each with a results.json) directly in `folder`, oldest name first."""
    try:
        return sorted(p for p in folder.iterdir() if p.name != LATEST and p.is_dir() and (p / RESULTS).is_file())
    except OSError:
        return []


def point_latest(out_dir: Path, run_dir: Path) -> ProfilerError | None:
    """Point `<out_dir>/latest` at `run_dir`; the error (not raised: the run is saved already) if it cannot."""
    try:
        point_symlink(out_dir / LATEST, run_dir.name)
    except OSError as exc:
        return ProfilerError(f"cannot point {out_dir / LATEST} at {run_dir.name} ({exc.strerror or exc}); "
                             f"results in {run_dir}")  # fmt: skip
    return None


# --- provenance -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where, when and by what a run was made: shared by RunInfo (profile) and BenchInfo (bench)."""

    gpu_name: str | None = None
    host: str | None = None  # the machine's host name
    driver_version: str | None = None  # as nvidia-smi prints it, e.g. 580.159.04
    command: str | None = None
    started_at: str | None = None  # ISO 8601
    wall_seconds: float | None = None
    suite: str | None = None
    suite_commit: str | None = None  # git commit of the suite, " (modified)" where it has changes
    memlens_version: str | None = None


@dataclass(frozen=True)
class Machine:
    """The slow part of provenance (two subprocesses): taken once, in the background where it helps."""

    driver_version: str | None
    suite_commit: str | None


def machine_of(suite: Path) -> Machine:
    return Machine(driver_version(), git_commit(suite))


def shell_command(argv: Sequence[str]) -> str:
    """The memlens command line a run was made with (its provenance's `command`)."""
    return "memlens " + shlex.join(argv)


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def take_provenance(
    machine: Machine, suite: Path, command: str, started: dt.datetime, gpu_name: str | None = None
) -> dict[str, Any]:
    """The Provenance fields of a run that started at `started` and ends now, as keyword arguments
    for RunInfo or BenchInfo."""
    record = Provenance(
        gpu_name=gpu_name,
        host=_hostname(),
        driver_version=machine.driver_version,
        command=command,
        started_at=started.isoformat(timespec="seconds"),
        wall_seconds=round((now() - started).total_seconds(), 2),
        suite=str(suite),
        suite_commit=machine.suite_commit,
        memlens_version=__version__,
    )
    return {f.name: getattr(record, f.name) for f in fields(Provenance)}


def driver_version() -> str | None:
    try:
        done = run_command(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           timeout=SMI_TIMEOUT_S)  # fmt: skip
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
