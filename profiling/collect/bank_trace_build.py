"""memlens's bank-trace library and device patch, built at first use: the CUDA Sanitizer API found (the
toolkit's compute-sanitizer, NVIDIA's wheel, or MEMLENS_SANITIZER), the host library built with the system C++
compiler into the user's cache keyed by the Sanitizer's version and the sources (as Triton builds its
launcher), the device patch built with nvcc for the GPU's architecture where there is one, else taken from
banktrace/patches/ (tools/build_bank_patches.sh). What is missing is one line naming what to install
(SetupError, exit 3)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memlens.errors import ProfilerError, SetupError
from memlens.io.cuda_tools import find_cxx, find_tool, toolkit_roots, wheel_roots

SOURCES = Path(__file__).parent / "banktrace"
PATCHES = SOURCES / "patches"
HOST_SOURCE, PATCH_SOURCE, LAYOUT, MODEL = "banktrace.cpp", "banktrace_patch.cu", "banktrace.h", "banktrace_model.h"
SANITIZER_LIBRARY = "libsanitizer-public.so"
SANITIZER_ENV = "MEMLENS_SANITIZER"  # a compute-sanitizer folder (include/ and libsanitizer-public.so)
CACHE_ENV = "MEMLENS_CACHE_DIR"
INSTALL_SANITIZER = (
    'install the CUDA toolkit\'s compute-sanitizer, or pip install "memlens[sanitizer]" (CUDA 13) or '
    f'"memlens[sanitizer-cu12]" (CUDA 12), or set {SANITIZER_ENV} to a compute-sanitizer folder'
)


@dataclass(frozen=True)
class Sanitizer:
    root: Path  # the folder holding libsanitizer-public.so and include/
    version: str

    @property
    def include(self) -> Path:
        return self.root / "include"

    @property
    def library(self) -> Path:
        return self.root / SANITIZER_LIBRARY


def _candidates(env: Mapping[str, str]) -> list[Path]:
    found = [Path(env[SANITIZER_ENV])] if env.get(SANITIZER_ENV) else []
    for base in wheel_roots():  # the namespace of NVIDIA's wheels: nvidia/cu13/compute-sanitizer, ...
        found += sorted(base.glob("*/compute-sanitizer")) + sorted(base.glob("*/*/compute-sanitizer"))
    found += [root / "compute-sanitizer" for root in toolkit_roots(env)]
    tool = shutil.which("compute-sanitizer", path=env.get("PATH"))
    if tool:
        found.append(Path(tool).resolve().parent)
    return found


def find_sanitizer(env: Mapping[str, str] | None = None) -> Sanitizer:
    """The first compute-sanitizer folder with the API's headers and library; SetupError naming what to
    install where there is none."""
    env = os.environ if env is None else env
    for root in _candidates(env):
        if (root / SANITIZER_LIBRARY).is_file() and (root / "include" / "sanitizer.h").is_file():
            return Sanitizer(root, _version(root))
    raise SetupError(
        f"memlens banks needs the CUDA Sanitizer API ({SANITIZER_LIBRARY} and sanitizer.h): {INSTALL_SANITIZER}"
    )


def _version(root: Path) -> str:
    """The Sanitizer's version: its wheel's, else the toolkit's version.json, else the library's size and time."""
    from importlib import metadata

    for name in ("nvidia-cuda-sanitizer-api", "nvidia-cuda-sanitizer-api-cu12"):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if root.resolve().is_relative_to(Path(str(dist.locate_file(""))).resolve()):
            return f"{name} {dist.version}"
    try:
        entry = json.loads((root.parent / "version.json").read_text(encoding="utf-8"))["cuda_sanitizer_api"]
        return f"toolkit {entry['version']}"
    except (OSError, ValueError, KeyError, TypeError):
        stat = (root / SANITIZER_LIBRARY).stat()
        return f"{stat.st_size}-{int(stat.st_mtime)}"


def find_cuda_header(sanitizer: Sanitizer, env: Mapping[str, str] | None = None) -> Path:
    """A folder holding cuda.h (the Sanitizer's headers include it)."""
    env = os.environ if env is None else env
    beside = [folder.parent for folder in sorted(sanitizer.root.parent.parent.glob("*/include"))]
    folders = [sanitizer.root.parent / "include"] + [root / "include" for root in toolkit_roots(env, beside)]
    for folder in folders:
        if (folder / "cuda.h").is_file():
            return folder
    raise SetupError(
        "memlens banks needs cuda.h to build its Sanitizer library: install the CUDA toolkit's headers "
        "(or pip install nvidia-cuda-runtime) or set CUDA_HOME"
    )


def find_compiler(env: Mapping[str, str] | None = None) -> str:
    found = find_cxx(env)
    if found:
        return found
    raise SetupError(
        "memlens banks builds its Sanitizer library with a C++ compiler and found none: install g++ "
        "(apt install g++) or set CXX"
    )


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "memlens"


def _key(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def host_library_command(sanitizer: Sanitizer, cuda_include: Path, compiler: str, output: Path) -> list[str]:
    return [
        compiler,
        "-std=c++17",
        "-O2",
        "-Wall",
        "-Wextra",
        "-fPIC",
        "-shared",
        f"-I{sanitizer.include}",
        f"-I{cuda_include}",
        f"-I{SOURCES}",
        "-o",
        str(output),
        str(SOURCES / HOST_SOURCE),
        f"-L{sanitizer.root}",
        "-lsanitizer-public",
        f"-Wl,-rpath,{sanitizer.root}",
        "-lpthread",
    ]


def build_host_library(sanitizer: Sanitizer, env: Mapping[str, str] | None = None) -> Path:
    """The injection library, built once per Sanitizer version and source into the cache."""
    compiler = find_compiler(env)
    cuda_include = find_cuda_header(sanitizer, env)
    sources = b"".join((SOURCES / name).read_bytes() for name in (HOST_SOURCE, LAYOUT))
    key = _key(sanitizer.version, str(sanitizer.root), compiler, sources)
    target = cache_root(env) / "banktrace" / key / "libmemlens_banks.so"
    if target.is_file():
        return target
    _compile(host_library_command(sanitizer, cuda_include, compiler, target.with_suffix(".tmp")), target, "C++")
    return target


def patch_command(nvcc: str, sanitizer: Sanitizer, arch: str, output: Path) -> list[str]:
    return [
        nvcc,
        f"-arch={arch}",
        "--compile-as-tools-patch",
        "-fatbin",
        f"-I{sanitizer.include}",
        f"-I{SOURCES}",
        "-o",
        str(output),
        str(SOURCES / PATCH_SOURCE),
    ]


def device_patch(sanitizer: Sanitizer, arch: str, env: Mapping[str, str] | None = None) -> Path:
    """The patch fatbin for `arch` (e.g. sm_90): built with nvcc into the cache where there is one, else
    the one shipped in banktrace/patches/."""
    env = os.environ if env is None else env
    # on PATH, in the toolkits named, the one holding the Sanitizer or /usr/local/cuda; not in a wheel
    found = find_tool("nvcc", env, also=[sanitizer.root.parent], wheels=False)
    if found is not None:
        nvcc = str(found)
        sources = b"".join((SOURCES / name).read_bytes() for name in (PATCH_SOURCE, LAYOUT, MODEL))
        target = cache_root(env) / "banktrace" / _key(nvcc, arch, sanitizer.version, sources) / f"patch.{arch}.fatbin"
        if not target.is_file():
            _compile(patch_command(nvcc, sanitizer, arch, target.with_suffix(".tmp")), target, "nvcc")
        return target
    shipped = PATCHES / f"banktrace_patch.{arch}.fatbin"
    if shipped.is_file():
        return shipped
    raise SetupError(
        f"memlens banks needs nvcc to build its device patch for {arch} (none is shipped for it): install "
        "the CUDA toolkit or pip install nvidia-cuda-nvcc, or set CUDA_HOME"
    )


def _compile(argv: list[str], target: Path, what: str) -> None:
    from memlens.io.processes import CommandFailed, command_line, run_command

    target.parent.mkdir(parents=True, exist_ok=True)
    built = Path(argv[argv.index("-o") + 1])
    try:
        done = run_command(argv, timeout=300)
    except CommandFailed as exc:
        raise SetupError(f"memlens banks could not run {what} ({exc})") from None
    if done.returncode != 0 or not built.is_file():
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ProfilerError(f"building memlens's bank trace failed ({command_line(argv)}): {last}")
    os.replace(built, target)  # whole or not at all: another memlens may be building the same
