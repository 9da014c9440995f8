"""The one wrapper around Nsight Compute's `ncu`: find it, ask its version, run it.

Always an argv list (never a shell), an explicit timeout, the exact command logged, the log kept.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError, ProfilerError

# The oldest ncu whose reports the readers have been checked against.
MIN_VERSION = (2023, 1)
CLOCK_CONTROLS = ("base", "none")
CACHE_CONTROLS = ("all", "none")
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
    """ncu from --ncu, $MEMLENS_NCU, PATH, or the usual CUDA install folders."""
    candidates = [explicit, os.environ.get("MEMLENS_NCU")]
    if explicit is None and not os.environ.get("MEMLENS_NCU"):
        candidates += [shutil.which("ncu"), "/usr/local/cuda/bin/ncu"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            path = Path(candidate)
            return Ncu(path, query_version(path))
    where = explicit or os.environ.get("MEMLENS_NCU")
    if where:
        raise ProfilerError(f"ncu not found at {where}")
    raise ProfilerError("ncu (Nsight Compute) not found: install it or pass --ncu PATH")


def query_version(path: Path) -> tuple[int, ...]:
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
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
    nvtx_include: str  # e.g. "regex:memlens@.*/"
    clock_control: str = "base"
    cache_control: str = "all"

    def __post_init__(self) -> None:
        if self.clock_control not in CLOCK_CONTROLS:
            raise ConfigError(f"clock control {self.clock_control!r} is not one of {', '.join(CLOCK_CONTROLS)}")
        if self.cache_control not in CACHE_CONTROLS:
            raise ConfigError(f"cache control {self.cache_control!r} is not one of {', '.join(CACHE_CONTROLS)}")


def profile_argv(ncu: Ncu, request: ProfileRequest, app: Sequence[str]) -> list[str]:
    return [
        str(ncu.path),
        "--clock-control", request.clock_control,
        "--cache-control", request.cache_control,
        "--replay-mode", "kernel",
        "--nvtx", "--nvtx-include", request.nvtx_include,
        "--metrics", ",".join(request.metrics),
        "--export", str(request.report),
        "--log-file", str(request.log),
        *app,
    ]  # fmt: skip


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
) -> NcuRun:
    """Run ncu in its own process group; on timeout or Ctrl-C end the whole group."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        raise ProfilerError(f"cannot start {argv[0]}: {exc.strerror}") from None
    try:
        while True:
            try:
                process.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if poll:
                    poll()
                if timeout is not None and time.monotonic() - started > timeout:
                    end_group(process)
                    raise NcuTimeout(timeout) from None
    except BaseException:
        end_group(process)
        raise
    text = log.read_text(encoding="utf-8", errors="replace") if log and log.exists() else ""
    return NcuRun(argv, process.returncode, time.monotonic() - started, text)


class NcuTimeout(ProfilerError):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"ncu ran past the {seconds:g} s timeout")
        self.seconds = seconds


def end_group(process: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGINT the process group (ncu then writes what it has), then SIGKILL what is left."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def check_log(log_text: str) -> None:
    """Failures that ncu reports in its log while exiting 0."""
    if "ERR_NVGPUCTRPERM" in log_text:
        raise ProfilerError(PERMISSION_HINT)
    if "No kernels were profiled" in log_text:
        hint = " (the NVTX filter matched no range)" if "NVTX include expressions" in log_text else ""
        raise ProfilerError(f"ncu profiled no kernel{hint}")


def command_line(argv: Sequence[str]) -> str:
    return shlex.join(argv)
