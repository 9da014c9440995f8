"""Nsight Compute's `ncu`: finding it, its version, its argv and what its log says (its run goes
through io/processes.run_watched).

Always an argv list (never a shell), an explicit timeout, the exact command logged, the log kept.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memlens.errors import ConfigError, ProfilerError
from memlens.io.processes import CommandFailed, CommandTimeout, run_command, run_watched
from memlens.model.ncu_settings import NcuSettings

# The oldest ncu whose reports the readers have been checked against.
MIN_VERSION = (2023, 1)
# kernel: each kernel replayed in place (memory saved and restored per pass); application: the whole
# program run once per pass (it must launch the same kernels each run)
REPLAY_MODES = ("kernel", "application")
# ncu --nvtx-push-pop-scope: which launches a push/pop range covers, those of the thread that pushed it
# (ncu's default) or every thread's of its process (PyTorch's backward runs on its autograd thread)
PUSH_POP_SCOPES = ("thread", "process")
PERMISSION_HINT = (
    "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root, or allow all users "
    "with `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d and reboot; see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)


@dataclass(frozen=True)
class Ncu:
    path: Path
    version: tuple[int, ...]

    @property
    def version_text(self) -> str:
        return ".".join(str(p) for p in self.version)


def find_ncu(explicit: str | None = None) -> Ncu:
    """ncu from --ncu, $MEMLENS_NCU, PATH, or the usual CUDA install folders (inside `looked_up_soon`,
    the answer of the lookup it started)."""
    soon = _soon.pop(_lookup_key(explicit), None)
    return soon.answer() if soon is not None else _look_up(explicit)


def _look_up(explicit: str | None) -> Ncu:
    candidates = [explicit, os.environ.get("MEMLENS_NCU")]
    if explicit is None and not os.environ.get("MEMLENS_NCU"):
        candidates += [shutil.which("ncu"), "/usr/local/cuda/bin/ncu"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            path = Path(candidate)
            return Ncu(path, query_version(path))
    where = explicit or os.environ.get("MEMLENS_NCU")
    if where and Path(where).is_dir():
        raise ProfilerError(f"{where}: a folder, not the ncu program (e.g. /usr/local/cuda/bin/ncu)")
    if where and Path(where).exists():
        raise ProfilerError(f"{where}: not executable, not the ncu program (e.g. /usr/local/cuda/bin/ncu)")
    if where:
        raise ProfilerError(f"ncu not found at {where}")
    raise ProfilerError("ncu (Nsight Compute) not found: install it or pass --ncu PATH")


@contextmanager
def looked_up_soon(explicit: str | None) -> Iterator[None]:
    """Within: find_ncu(explicit) answers from a lookup started on entry in a thread of its own, so that
    `ncu --version` (15 to 20 ms on the GPU hosts) runs while memlens imports what profiling needs
    (tests/benchmarks/start_time.py). Its error, where it failed, is raised there, no sooner; a lookup
    that nothing asked for is waited for and dropped on exit, so that no `ncu --version` outlives the block
    (its fork would hold open whatever the caller writes meanwhile, and an exec of that file then fails)."""
    key = _lookup_key(explicit)
    _soon[key] = _Lookup(explicit)
    try:
        yield
    finally:
        unasked = _soon.pop(key, None)
        if unasked is not None:
            unasked.thread.join()


class _Lookup:
    """The lookup of find_ncu(explicit), running in a thread: the Ncu it found, or the error it raised."""

    def __init__(self, explicit: str | None) -> None:
        self.found: Ncu | BaseException = ProfilerError("the lookup of ncu never ended")
        self.thread = threading.Thread(target=self._find, args=(explicit,), name="memlens-ncu", daemon=True)
        self.thread.start()

    def _find(self, explicit: str | None) -> None:
        try:
            self.found = _look_up(explicit)
        except BaseException as exc:  # noqa: BLE001 - raised in the thread that asks for the answer
            self.found = exc

    def answer(self) -> Ncu:
        self.thread.join()
        if isinstance(self.found, BaseException):
            raise self.found
        return self.found


_soon: dict[tuple[str | None, ...], _Lookup] = {}  # lookups started by looked_up_soon, by _lookup_key


def _lookup_key(explicit: str | None) -> tuple[str | None, ...]:
    """What find_ncu's answer depends on, besides the files it finds."""
    return explicit, os.environ.get("MEMLENS_NCU"), os.environ.get("PATH")


def query_version(path: Path) -> tuple[int, ...]:
    try:
        done = run_command([str(path), "--version"], timeout=60)
    except CommandFailed as exc:
        raise ProfilerError(f"{path} --version failed: {exc}") from None
    match = re.search(r"Version (\d+(?:\.\d+)+)", done.stdout)
    if done.returncode != 0 or not match:
        raise ProfilerError(f"{path} --version printed no version (exit code {done.returncode})")
    version = tuple(int(p) for p in match.group(1).split("."))
    if version[:2] < MIN_VERSION:
        oldest = ".".join(map(str, MIN_VERSION))
        raise ProfilerError(f"ncu {'.'.join(map(str, version))} is older than {oldest}, the oldest memlens reads")
    return version


@dataclass(frozen=True)
class ProfileRequest:
    metrics: Sequence[str]
    report: Path  # written as <report>.ncu-rep
    log: Path
    nvtx_include: str | tuple[str, ...]  # e.g. "regex:memlens@.*/"; () for every kernel
    settings: NcuSettings = NcuSettings()  # clock and cache control
    launch_count: int | None = None  # ncu --launch-count: profile at most this many launches
    nvtx_exclude: tuple[str, ...] = ()  # ncu --nvtx-exclude: kernels in these ranges are not profiled
    replay_mode: str = "kernel"  # ncu --replay-mode: "application" runs the program once per pass
    launch_filter: tuple[str, ...] = ()  # ncu's kernel filter options (launch_sampling.LaunchSampling.ncu_args)
    push_pop_scope: str | None = None  # ncu --nvtx-push-pop-scope; None: ncu's default (thread)
    all_processes: bool = False  # ncu --target-processes all: a program's child processes too

    def __post_init__(self) -> None:
        if self.replay_mode not in REPLAY_MODES:
            raise ConfigError(f"replay mode {self.replay_mode!r} is not one of {', '.join(REPLAY_MODES)}")
        if self.push_pop_scope is not None and self.push_pop_scope not in PUSH_POP_SCOPES:
            raise ConfigError(f"push/pop scope {self.push_pop_scope!r} is not one of {', '.join(PUSH_POP_SCOPES)}")


def profile_argv(ncu: Ncu, request: ProfileRequest, app: Sequence[str]) -> list[str]:
    filters = (request.nvtx_include,) if isinstance(request.nvtx_include, str) else request.nvtx_include
    return [
        str(ncu.path),
        "--clock-control",
        request.settings.clock_control,
        "--cache-control",
        request.settings.cache_control,
        "--replay-mode",
        request.replay_mode,
        *(["--target-processes", "all"] if request.all_processes else []),
        "--nvtx",
        *(["--nvtx-push-pop-scope", request.push_pop_scope] if request.push_pop_scope else []),
        *[arg for nvtx_filter in filters for arg in ("--nvtx-include", nvtx_filter)],
        *[arg for nvtx_filter in request.nvtx_exclude for arg in ("--nvtx-exclude", nvtx_filter)],
        *request.launch_filter,
        *(["--launch-count", str(request.launch_count)] if request.launch_count else []),
        "--metrics",
        ",".join(request.metrics),
        "--export",
        str(request.report),
        "--log-file",
        str(request.log),
        *app,
    ]


@dataclass(frozen=True)
class NcuRun:
    argv: list[str]
    returncode: int
    seconds: float
    log_text: str


def run_ncu(
    argv: list[str],
    timeout: float | None,
    poll: Callable[[], None] | None = None,
    log: Path | None = None,
    env: dict[str, str] | None = None,
    stderr: int | None = None,
    on_start: Callable[[], None] | None = None,
) -> NcuRun:
    """Run ncu through `processes.run_watched`: on the timeout (NcuTimeout), Ctrl-C or SIGTERM, ncu and
    the profiled app end together and what they wrote is kept; its log is read once it is done.
    `env`: ncu's environment (None: memlens's); `stderr`: a file descriptor for the stderr of ncu and
    the profiled app (default: this process's); `on_start`: called once ncu has started. ProfilerError
    where ncu cannot start."""
    started = time.monotonic()
    try:
        returncode = run_watched(argv, timeout=timeout, poll=poll, env=env, stderr=stderr, on_start=on_start)
    except CommandTimeout:
        raise NcuTimeout(timeout or 0.0) from None
    except CommandFailed as exc:
        raise ProfilerError(str(exc)) from None
    text = log.read_text(encoding="utf-8", errors="replace") if log and log.exists() else ""
    return NcuRun(argv, returncode, time.monotonic() - started, text)


class NcuTimeout(ProfilerError):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"ncu ran past the {seconds:g} s timeout")
        self.seconds = seconds


def check_permission(log_text: str) -> None:
    """ncu may not read the counters: it says so in its log, and may still exit 0."""
    if "ERR_NVGPUCTRPERM" in log_text:
        raise ProfilerError(PERMISSION_HINT)


def check_log(log_text: str) -> None:
    """Failures that ncu reports in its log while exiting 0: no permission, nothing profiled."""
    check_permission(log_text)
    if "No kernels were profiled" in log_text:
        hint = " (the NVTX filter matched no range)" if "NVTX include expressions" in log_text else ""
        raise ProfilerError(f"ncu profiled no kernel{hint}")


def first_error(log_text: str) -> str | None:
    """ncu's first `==ERROR==` line, without the prefix: the reason it gives for a failure."""
    for line in log_text.splitlines():
        if line.startswith("==ERROR=="):
            return line.removeprefix("==ERROR==").strip() or None
    return None
