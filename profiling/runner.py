"""`memlens profile`: run a suite's variants in one process under one ncu invocation.

Each run gets a new directory `<out>/<timestamp>-<pid>/` holding the raw report (profile.ncu-rep,
never overwritten), ncu's log, the app's events and results.json; `<out>/latest` points at it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import __version__
from .catalogue import ncu_metric_names
from .errors import ConfigError, InputError, MemlensError, ProfilerError
from .fileio import point_symlink, write_json_atomic, write_text_atomic
from .ncu import NcuTimeout, ProfileRequest, check_log, command_line, find_ncu, profile_argv, run_ncu
from .results import KernelResult, RunInfo, RunResults, VariantOutcome
from .suite import NVTX_DOMAIN, Suite, Variant, load_suite

REPORT_STEM = "profile"  # ncu writes profile.ncu-rep


@dataclass(frozen=True)
class ProfileOptions:
    suite: str | None = None
    pattern: str | None = None
    out_dir: Path = Path("runs")
    clock_control: str = "base"
    cache_control: str = "all"
    fast: bool = False
    timeout: float | None = None
    ncu: str | None = None
    sizes: tuple[str, ...] = ()  # NAME=VALUE overrides
    small: bool = False
    seed: int = 0
    command: str = ""


@dataclass
class Events:
    """What the profiled app reported so far (it appends JSON lines to one file)."""

    path: Path
    plan: list[str] = field(default_factory=list)
    done: dict[str, dict] = field(default_factory=dict)
    running: str | None = None
    error: str | None = None
    _offset: int = 0

    def poll(self) -> list[dict]:
        if not self.path.exists():
            return []
        with self.path.open(encoding="utf-8") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        complete, _, _ = chunk.rpartition("\n")
        self._offset += len(complete.encode()) + (1 if complete else 0)
        new = [json.loads(line) for line in complete.splitlines() if line.strip()]
        for event in new:
            kind = event.get("event")
            if kind == "plan":
                self.plan = list(event["variants"])
            elif kind == "start":
                self.running = event["variant"]
            elif kind == "done":
                self.done[event["variant"]] = event
                self.running = None
            elif kind == "error":
                self.error = event["message"]
        return new

    def outcomes(self, suite_variants: Sequence[Variant]) -> tuple[VariantOutcome, ...]:
        by_label = {v.label: v for v in suite_variants}
        outcomes = []
        for label in self.plan or list(by_label):
            event = self.done.get(label)
            if event is None:
                status = "failed" if label == self.running else "not_run"
                message = "stopped while running" if status == "failed" else "not run: the suite stopped earlier"
            else:
                status, message = event["status"], event.get("message", "")
            outcomes.append(_outcome(by_label.get(label), label, status, message))
        return tuple(outcomes)


def _outcome(variant: Variant | None, label: str, status: str, message: str) -> VariantOutcome:
    family, _, name = label.partition("/")
    outcome = VariantOutcome(family, name, status, message)
    if variant is None:
        return outcome
    extra = {
        "demonstrates": variant.demonstrates,
        "expect": {
            "bank_conflicts": variant.expect.bank_conflicts,
            "local_memory": variant.expect.local_memory,
            "note": variant.expect.describe(),
        },
        "baseline": variant is variant.family.baseline,
    }
    fields = VariantOutcome.__dataclass_fields__
    return replace(outcome, **{k: v for k, v in extra.items() if k in fields})


def new_run_dir(out_dir: Path) -> Path:
    """A directory no other run uses: mkdir is exclusive, the pid tells concurrent runs apart."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for attempt in range(1000):
        suffix = f"-{attempt}" if attempt else ""
        path = out_dir / f"{stamp}-{os.getpid()}{suffix}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise ProfilerError(f"cannot create a new run directory in {out_dir}")


def profile(options: ProfileOptions, on_event: Callable[[dict], None] | None = None) -> tuple[Path, RunResults]:
    suite = load_suite(options.suite)
    variants = list(suite.variants(options.pattern))
    if not variants:
        raise ConfigError(f"no variant of suite {suite.path} matches -k {options.pattern!r}")
    ncu = find_ncu(options.ncu)
    run_dir = new_run_dir(options.out_dir)
    request = ProfileRequest(
        metrics=ncu_metric_names(options.fast),
        report=run_dir / REPORT_STEM,
        log=run_dir / "ncu.log",
        nvtx_include=f"regex:{NVTX_DOMAIN}@.*/",
        clock_control=options.clock_control,
        cache_control=options.cache_control,
    )
    events = Events(run_dir / "events.jsonl")
    argv = profile_argv(ncu, request, app_argv(suite, options, events.path))
    write_text_atomic(run_dir / "ncu-command.txt", command_line(argv) + "\n")
    started = dt.datetime.now(dt.timezone.utc)

    def poll() -> None:
        for event in events.poll():
            if on_event:
                on_event(event)

    error: BaseException | None = None
    try:
        run = run_ncu(argv, options.timeout, poll=poll, log=request.log)
        poll()
        check_log(run.log_text)
        if events.error:
            raise ConfigError(events.error)
        if run.returncode != 0 and not events.done:
            raise ProfilerError(f"ncu exited with code {run.returncode}; see {request.log}")
    except NcuTimeout as exc:
        poll()
        where = f" while {events.running} was running" if events.running else ""
        error = ProfilerError(f"{exc}{where}; partial results in {run_dir}")
    except (MemlensError, KeyboardInterrupt) as exc:
        poll()
        error = exc
    info = RunInfo(
        ncu_version=ncu.version_text,
        driver_version=driver_version(),
        clock_control=options.clock_control,
        cache_control=options.cache_control,
        fast=options.fast,
        command=options.command,
        started_at=started.isoformat(timespec="seconds"),
        wall_seconds=round((dt.datetime.now(dt.timezone.utc) - started).total_seconds(), 2),
        suite=str(suite.path),
        suite_commit=git_commit(suite.path),
        memlens_version=__version__,
    )
    results = collect(run_dir, info, events.outcomes(variants), complete=error is None)
    write_json_atomic(run_dir / "results.json", results.to_json())
    point_symlink(options.out_dir / "latest", run_dir.name)
    if error is not None:
        raise error
    bad = [o for o in results.outcomes if o.status != "ok"]
    if bad:
        first = bad[0]
        raise ProfilerError(
            f"{len(bad)} of {len(results.outcomes)} variants did not profile cleanly, first "
            f"{first.family}/{first.variant}: {first.status}: {first.message}; results in {run_dir}"
        )
    return run_dir, results


def app_argv(suite: Suite, options: ProfileOptions, events: Path) -> list[str]:
    argv = [sys.executable, "-m", "profiling.app", "--suite", str(suite.path.resolve()), "--events", str(events)]
    if options.pattern:
        argv += ["-k", options.pattern]
    for item in options.sizes:
        argv += ["--size", item]
    if options.small:
        argv.append("--small")
    return argv + ["--seed", str(options.seed)]


def collect(run_dir: Path, info: RunInfo, outcomes: tuple[VariantOutcome, ...], complete: bool) -> RunResults:
    """Kernels from the raw report, kept only for variants whose output verified."""
    from .readers import read_report

    report = run_dir / f"{REPORT_STEM}.ncu-rep"
    kernels: tuple[KernelResult, ...] = ()
    if report.exists():
        try:
            measured = read_report(report)
        except InputError as exc:
            outcomes += (VariantOutcome("", "", "failed", f"report unreadable: {exc}"),)
        else:
            ok = {(o.family, o.variant) for o in outcomes if o.status == "ok"}
            kernels = tuple(k for k in measured.kernels if (k.family, k.variant) in ok)
            info = replace(
                info,
                gpu_name=measured.info.gpu_name,
                compute_capability=measured.info.compute_capability,
                source=report.name,
            )
    return RunResults(info, kernels, outcomes, complete)


def driver_version() -> str | None:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def git_commit(path: Path) -> str | None:
    folder = path if path.is_dir() else path.parent
    git = ["git", "-C", str(folder)]
    try:
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "."], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + (" (modified)" if dirty.stdout.strip() else "")


def shell_command(argv: Sequence[str]) -> str:
    return "memlens " + shlex.join(argv)
