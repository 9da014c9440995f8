"""The CUDA compilers on this machine: compile a .cu file for a GPU architecture without a GPU.

Two routes give a cubin (default sm_90) and ptxas's resource report for every kernel:

- nvcc from a CUDA toolkit (`find_nvcc`): `nvcc -cubin -arch=sm_90 -Xptxas -v --keep file.cu`,
  whose kept intermediates include the PTX. A toolkit's nvcc finds its headers through
  nvcc.profile; an nvcc from pip wheels gets `-I` for the wheels' cuda_runtime.h.
- NVRTC through `cuda.bindings` (a numba-cuda dependency) from the `nvidia-cuda-nvrtc-cu12`
  wheel; with `-arch=sm_90` NVRTC runs ptxas itself. The `nvidia-cuda-nvcc-cu12` 12.9 wheel
  ships ptxas, libnvvm and device headers but no nvcc, so on a machine with only pip packages
  (CI) NVRTC is the route that works.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memlens.errors import ProfilerError
from memlens.io.cuda_tools import find_tool, wheel_roots
from memlens.io.processes import CommandFailed, CommandTimeout, run_command

log = logging.getLogger(__name__)

NVCC_ENV = "MEMLENS_NVCC"  # an explicit nvcc, first choice when set
DEFAULT_ARCH = "sm_90"
COMPILE_TIMEOUT_S = 180.0


# --- Finding the tools -------------------------------------------------------------------------


def find_nvcc() -> Path | None:
    """nvcc: $MEMLENS_NVCC, then PATH, then a toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda),
    then a pip wheel that ships bin/nvcc. None when there is none."""
    explicit = os.environ.get(NVCC_ENV)
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    return find_tool("nvcc")


def find_ptxas() -> Path | None:
    """ptxas: PATH, a toolkit, or the `nvidia-cuda-nvcc-cu12` wheel's nvidia/cuda_nvcc/bin/ptxas."""
    return find_tool("ptxas")


def _runtime_include_args(nvcc: Path) -> list[str]:
    """`-I` for cuda_runtime.h when nvcc's own toolkit lacks it (an nvcc from pip wheels)."""
    top = nvcc.resolve().parent.parent
    if (top / "include" / "cuda_runtime.h").exists() or any(top.glob("targets/*/include/cuda_runtime.h")):
        return []
    found = [p.parent for root in wheel_roots() for p in sorted(root.glob("*/include/cuda_runtime.h"))]
    return [arg for include in found[:1] for arg in ("-I", str(include))]


def nvcc_env(nvcc: Path | None = None) -> dict[str, str]:
    """Environment for running nvcc: this one with nvcc's directory first on PATH, so nvcc finds
    the tools beside it (cicc, ptxas, fatbinary) even when called by absolute path."""
    env = dict(os.environ)
    nvcc = nvcc or find_nvcc()
    if nvcc is not None:
        env["PATH"] = os.pathsep.join([str(nvcc.resolve().parent), env.get("PATH", "")])
    return env


def nvcc_command(
    source: Path,
    output: Path,
    kind: str = "cubin",
    arch: str = DEFAULT_ARCH,
    options: Sequence[str] = (),
    nvcc: Path | None = None,
    keep_dir: Path | None = None,
) -> list[str]:
    """argv compiling `source` to `output`; kind "cubin" (with ptxas -v) or "ptx". With
    `keep_dir`, nvcc also leaves its intermediates there, among them `<source stem>.ptx`."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise ProfilerError("nvcc not found: install a CUDA toolkit or set MEMLENS_NVCC")
    if kind not in ("cubin", "ptx"):
        raise ValueError(f"kind must be 'cubin' or 'ptx', not {kind!r}")
    verbose = ["-Xptxas", "-v"] if kind == "cubin" else []
    keep = ["--keep", "--keep-dir", str(keep_dir)] if keep_dir is not None else []
    return [
        str(nvcc),
        f"-{kind}",
        f"-arch={arch}",
        *verbose,
        *keep,
        *_runtime_include_args(nvcc),
        *options,
        str(source),
        "-o",
        str(output),
    ]


@functools.cache
def nvcc_version(nvcc: Path) -> str | None:
    """The release `nvcc --version` names, such as "13.0"; None where it cannot be read."""
    try:
        done = run_command([str(nvcc), "--version"], timeout=60, env=nvcc_env(nvcc))
    except CommandFailed:
        return None
    match = re.search(r"release (\d+\.\d+)", done.stdout)
    return match[1] if match else None


def nvrtc_version() -> tuple[int, int] | None:
    """NVRTC's (major, minor) through cuda.bindings, or None where NVRTC cannot be loaded."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # noqa: BLE001 - ImportError, or the library missing when first called
        return None
    return (major, minor) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else None


# --- ptxas's resource report -------------------------------------------------------------------


@dataclass(frozen=True)
class KernelResources:
    """What ptxas -v reports for one kernel (an entry function)."""

    symbol: str  # the (mangled) entry name
    registers: int
    stack_bytes: int  # per-thread stack frame: local arrays and spills live here
    spill_store_bytes: int
    spill_load_bytes: int
    shared_bytes: int  # static shared memory

    @property
    def uses_local_memory(self) -> bool:
        return self.stack_bytes > 0 or self.spill_store_bytes > 0 or self.spill_load_bytes > 0


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(text: str) -> dict[str, KernelResources]:
    """Resources per entry symbol from `ptxas -v` output (nvcc -Xptxas -v or NVRTC's log)."""
    entries: set[str] = set()
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        if match := _ENTRY.search(line):
            current = match.group(1)
            entries.add(current)
        elif match := _PROPERTIES.search(line):
            current = match.group(1)
        if current is None:
            continue
        values = found.setdefault(current, {})
        if match := _FRAME.search(line):
            values.update(stack=int(match[1]), spill_st=int(match[2]), spill_ld=int(match[3]))
        if match := _USED.search(line):
            values["registers"] = int(match[1])
            smem = _SMEM.search(line)
            values["smem"] = int(smem[1]) if smem else 0
    return {
        name: KernelResources(
            name, v.get("registers", 0), v.get("stack", 0), v.get("spill_st", 0), v.get("spill_ld", 0), v.get("smem", 0)
        )
        for name, v in found.items()
        if name in entries
    }


# --- Compiling -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompiledCuda:
    """One .cu file compiled for one architecture."""

    source: Path
    arch: str
    compiler: str  # e.g. "nvcc 13.0 (/usr/local/cuda/bin/nvcc)" or "nvrtc 12.9"
    cubin: bytes
    ptx: str
    log: str  # ptxas -v output and any warnings
    resources: Mapping[str, KernelResources]  # by entry symbol
    symbols: Mapping[str, str] = field(default_factory=dict)  # kernel name as the source names it -> symbol

    def kernel(self, name: str) -> KernelResources:
        """Resources of the kernel the source names `name` ("k" for extern "C", "k<16>" for a template)."""
        symbol = self.symbols.get(name, name)
        if symbol not in self.resources:
            raise ProfilerError(
                f"{self.source.name}: no kernel {name!r} in the {self.arch} build"
                f" (entries: {', '.join(sorted(self.resources)) or 'none'})"
            )
        return self.resources[symbol]


def compile_cuda(
    source: Path,
    arch: str = DEFAULT_ARCH,
    options: Sequence[str] = (),
    names: Sequence[str] = (),
    prefer: str = "nvcc",
) -> CompiledCuda:
    """Compile with nvcc where one is found (prefer="nvcc"), else with NVRTC."""
    if prefer == "nvcc" and find_nvcc() is not None:
        return compile_nvcc(source, arch, options, names)
    return compile_nvrtc(source, arch, options, names)


def _run(argv: list[str], env: dict[str, str], source: Path) -> str:
    try:
        done = run_command(argv, timeout=COMPILE_TIMEOUT_S, env=env)
    except CommandTimeout:
        raise ProfilerError(f"{Path(argv[0]).name} timed out after {COMPILE_TIMEOUT_S:.0f} s on {source}") from None
    output = done.output
    if done.returncode != 0:
        errors = [line for line in output.splitlines() if "error" in line] or output.splitlines()[-1:]
        raise ProfilerError(
            f"{Path(argv[0]).name} failed on {source} (exit {done.returncode}): {errors[0] if errors else ''}"
        )
    return output


def compile_nvcc(
    source: Path,
    arch: str = DEFAULT_ARCH,
    options: Sequence[str] = (),
    names: Sequence[str] = (),
    nvcc: Path | None = None,
) -> CompiledCuda:
    """`nvcc -cubin -Xptxas -v --keep` (the kept PTX comes along); template names resolved with c++filt."""
    source = Path(source)
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise ProfilerError("nvcc not found: install a CUDA toolkit or set MEMLENS_NVCC")
    with tempfile.TemporaryDirectory(prefix="memlens-nvcc-") as tmp:
        cubin = Path(tmp) / f"{source.stem}.cubin"
        argv = nvcc_command(source, cubin, "cubin", arch, options, nvcc, keep_dir=Path(tmp))
        text = _run(argv, nvcc_env(nvcc), source)
        cubin_bytes = cubin.read_bytes()
        ptx_text = (Path(tmp) / f"{source.stem}.ptx").read_text(encoding="utf-8")
    resources = parse_ptxas_log(text)
    compiler = f"nvcc {nvcc_version(nvcc) or '?'} ({nvcc})"
    symbols = _resolve_names(names, resources)
    return CompiledCuda(source, arch, compiler, cubin_bytes, ptx_text, text, resources, symbols)


def _short_name(demangled: str) -> str:
    """`void k<16>(float const*, int)` -> `k<16>`: drop the return type and the parameters."""
    depth = 0
    for index, char in enumerate(demangled):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "(" and depth == 0 and index > 0:
            demangled = demangled[:index]
            break
    return demangled.removeprefix("void ").replace(" ", "")


def _resolve_names(names: Sequence[str], resources: Mapping[str, KernelResources]) -> dict[str, str]:
    """Kernel names as the source writes them -> entry symbols (c++filt demangles C++ names)."""
    mangled = [s for s in resources if s.startswith("_Z")]
    demangler = shutil.which("c++filt") or shutil.which("cu++filt")
    short: dict[str, str] = {}
    if mangled and demangler:
        done = run_command([demangler], input="\n".join(mangled), timeout=30)
        short = {_short_name(d): s for d, s in zip(done.stdout.splitlines(), mangled, strict=False)}
    symbols = {}
    for name in names:
        if name in resources:
            symbols[name] = name
        elif name.replace(" ", "") in short:
            symbols[name] = short[name.replace(" ", "")]
    return symbols


def compile_nvrtc(
    source: Path, arch: str = DEFAULT_ARCH, options: Sequence[str] = (), names: Sequence[str] = ()
) -> CompiledCuda:
    """NVRTC with `-arch=<arch> --ptxas-options=-v`; `names` become NVRTC name expressions."""
    source = Path(source)
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise ProfilerError("NVRTC not available: pip install cuda-bindings nvidia-cuda-nvrtc-cu12") from None

    def check(result: tuple, what: str) -> tuple:
        if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise ProfilerError(f"NVRTC {what} failed on {source}: {result[0].name}")
        return result[1:]

    def read(size_fn: Callable[..., tuple], get_fn: Callable[..., tuple], program: object, what: str) -> bytes:
        (size,) = check(size_fn(program), what)
        buffer = b" " * size
        check(get_fn(program, buffer), what)
        return buffer

    version = nvrtc_version()
    if version is None:
        raise ProfilerError("NVRTC could not be loaded: pip install nvidia-cuda-nvrtc-cu12 (or a CUDA toolkit)")
    (program,) = check(nvrtc.nvrtcCreateProgram(source.read_bytes(), source.name.encode(), 0, [], []), "create")
    try:
        for name in names:
            check(nvrtc.nvrtcAddNameExpression(program, name.encode()), f"name expression {name!r}")
        argv = [f"-arch={arch}".encode(), b"--ptxas-options=-v", *(o.encode() for o in options)]
        compiled = nvrtc.nvrtcCompileProgram(program, len(argv), argv)
        raw_log = read(nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog, program, "log")
        text = raw_log.rstrip(b"\0").decode(errors="replace")
        if compiled[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            errors = [line for line in text.splitlines() if "error" in line] or [compiled[0].name]
            raise ProfilerError(f"NVRTC failed on {source}: {errors[0]}")
        ptx = read(nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX, program, "PTX").rstrip(b"\0").decode()
        cubin = read(nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN, program, "CUBIN")
        symbols = {
            name: check(nvrtc.nvrtcGetLoweredName(program, name.encode()), "lowered name")[0].decode() for name in names
        }
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    compiler = f"nvrtc {version[0]}.{version[1]}"
    return CompiledCuda(source, arch, compiler, cubin, ptx, text, parse_ptxas_log(text), symbols)
