"""What profiling needs, each found or missing with what to fix (`memlens doctor`): ncu and its version,
the GPU, permission to read its counters, the Python packages, `memlens check`'s compilers, and a probe
that profiles a tiny kernel."""

from __future__ import annotations

import importlib.metadata
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memlens.collect.ncu import PERMISSION_HINT, find_ncu
from memlens.errors import MemlensError
from memlens.io.processes import CommandFailed, run_command

PACKAGES = ("numpy", "numba", "numba-cuda", "nvtx", "ncu-report", "jinja2", "matplotlib", "rich")
CUPY_PACKAGES = ("cupy-cuda13x", "cupy-cuda12x", "cupy")
PROBE = "import cupy, nvtx\nwith nvtx.annotate('doctor.probe', domain='memlens'):\n    cupy.arange(1024).sum()\n"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


NCU_FIX = "install Nsight Compute (CUDA toolkit) or pass --ncu PATH"


def check_ncu(explicit: str | None) -> Check:
    try:
        ncu = find_ncu(explicit)
    except MemlensError as exc:
        return Check("ncu", False, _without_fix(str(exc)), NCU_FIX)
    return Check("ncu", True, f"{ncu.path} (version {ncu.version_text})")


def check_gpu() -> Check:
    try:
        done = run_command(["nvidia-smi", "-L"], timeout=30)
    except CommandFailed:
        return Check("GPU", False, "nvidia-smi not found or not answering", "install the NVIDIA driver")
    gpus = done.stdout.strip().splitlines()
    if done.returncode != 0 or not gpus:
        return Check("GPU", False, done.stderr.strip() or "no GPU listed", "check the driver with nvidia-smi")
    return Check("GPU", True, "; ".join(gpus))


def check_permission() -> Check:
    params = Path("/proc/driver/nvidia/params")
    if not params.exists():
        return Check(
            "counter permission",
            False,
            f"cannot tell: no {params} (no NVIDIA driver loaded)",
            "install the NVIDIA driver, then run `memlens doctor --probe` to read a counter",
            required=False,
        )
    admin_only = "RmProfilingAdminOnly: 1" in params.read_text(errors="replace")
    if admin_only and os.geteuid() != 0:
        return Check("counter permission", False, "counters are restricted to admin users", PERMISSION_HINT)
    return Check("counter permission", True, "root" if os.geteuid() == 0 else "counters open to all users")


def _without_fix(message: str) -> str:
    """A message without its advice ("...: install it or pass --ncu PATH"): the fix column has it."""
    return message.partition(": install it")[0]


def check_packages() -> list[Check]:
    checks = [_package(name) for name in PACKAGES]
    cupy = [c for c in (_package(name) for name in CUPY_PACKAGES) if c.ok]
    missing = Check("cupy", False, "not installed", "pip install 'memlens[cuda13]' (or cuda12)")
    checks.append(cupy[0] if cupy else missing)
    return checks


def _package(name: str) -> Check:
    try:
        return Check(name, True, importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        return Check(name, False, "not installed", "make setup (or pip install memlens)")


CHECK_EXTRA = "pip install 'memlens[check]' (NVRTC, NVVM and ptxas wheels), or install a CUDA toolkit"


def check_compilers() -> list[Check]:
    """What `memlens check` compiles with: nvcc or NVRTC for CUDA C++, NVVM and ptxas for Numba.
    Not required for profiling: warnings only."""
    from memlens.static.toolchain import find_nvcc, find_ptxas, nvrtc_version

    nvcc, ptxas, nvrtc = find_nvcc(), find_ptxas(), nvrtc_version()
    checks = []
    if nvcc is not None or nvrtc is not None:
        detail = f"nvcc {nvcc}" if nvcc is not None else "NVRTC {}.{}".format(*nvrtc)  # type: ignore[misc]  # nvrtc is set here
        checks.append(Check("check: CUDA C++ compiler", True, detail, required=False))
    else:
        checks.append(Check("check: CUDA C++ compiler", False, "no nvcc, no NVRTC", CHECK_EXTRA, required=False))
    if nvrtc is not None:
        checks.append(Check("check: NVRTC (Numba kernels)", True, "NVRTC {}.{}".format(*nvrtc), required=False))
    else:
        checks.append(
            Check(
                "check: NVRTC (Numba kernels)",
                False,
                "not found (numba.cuda.compile_ptx needs it)",
                CHECK_EXTRA,
                required=False,
            )
        )
    if ptxas is not None:
        checks.append(Check("check: ptxas", True, str(ptxas), required=False))
    else:
        checks.append(Check("check: ptxas", False, "not found (Numba kernels need it)", CHECK_EXTRA, required=False))
    return checks


def check_probe(explicit: str | None) -> Check:
    try:
        ncu = find_ncu(explicit)
    except MemlensError:
        return Check(
            "profile probe",
            False,
            "not run: it profiles a tiny CuPy kernel under ncu, and ncu is missing",
            "fix the ncu row, then run `memlens doctor --probe` again",
        )
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            str(ncu.path),
            "--clock-control",
            "none",
            "--metrics",
            "gpu__time_duration.sum",
            "--log-file",
            f"{tmp}/log",
            sys.executable,
            "-c",
            PROBE,
        ]
        try:
            run_command(argv, timeout=300)
        except CommandFailed as exc:
            return Check("profile probe", False, f"ncu failed: {exc}")
        log = Path(f"{tmp}/log").read_text(errors="replace") if Path(f"{tmp}/log").exists() else ""
    if "ERR_NVGPUCTRPERM" in log:
        return Check("profile probe", False, "ERR_NVGPUCTRPERM", PERMISSION_HINT)
    if "==PROF== Profiling" not in log:
        return Check("profile probe", False, (log.strip().splitlines() or ["no output"])[-1])
    return Check("profile probe", True, "read a counter of a tiny kernel")


def run_checks(ncu: str | None, probe: bool) -> list[Check]:
    """Every check, in the order doctor prints them; the probe only where asked for."""
    checks = [check_ncu(ncu), check_gpu(), check_permission(), *check_packages(), *check_compilers()]
    return [*checks, check_probe(ncu)] if probe else checks
