"""NVIDIA's command-line tools on this machine: found on PATH, in a CUDA toolkit ($CUDA_HOME,
$CUDA_PATH, /usr/local/cuda), or in one of NVIDIA's pip wheels (the `nvidia` namespace package:
`nvidia-cuda-nvcc-cu12` ships nvidia/cuda_nvcc/bin/ptxas, `nvidia-cuda-nvdisasm` nvidia/cu13/bin/nvdisasm);
and the host's C++ compiler. The compilers (static/toolchain.py), the readers' disassembler
(readers/inline_chains.py) and the bank trace's build (collect/bank_trace_build.py: its nvcc, the toolkit's
compute-sanitizer and cuda.h, its C++ compiler) find theirs here. Each search takes the environment to read
($PATH, $CUDA_HOME, ...; this process's where none is given).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

# what to install where nvdisasm is missing: the wheel runs on a machine with no GPU
NVDISASM_PACKAGE = "nvidia-cuda-nvdisasm"
DEFAULT_CUDA = Path("/usr/local/cuda")  # the toolkit where $CUDA_HOME and $CUDA_PATH name none
CXX_NAMES = ("c++", "g++", "clang++")  # the host C++ compilers tried after $CXX


def wheel_roots() -> list[Path]:
    """Directories of the installed `nvidia` namespace package (pip's CUDA wheels)."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def toolkit_roots(env: Mapping[str, str] | None = None, also: Sequence[Path] = ()) -> list[Path]:
    """CUDA toolkit directories named by $CUDA_HOME and $CUDA_PATH of `env`, then `also` (the toolkit a caller
    found its own way, e.g. the one holding a compute-sanitizer), then /usr/local/cuda."""
    env = os.environ if env is None else env
    named = [env.get(var) for var in ("CUDA_HOME", "CUDA_PATH")]
    return [Path(p) for p in named if p] + list(also) + [DEFAULT_CUDA]


def find_tool(
    tool: str, env: Mapping[str, str] | None = None, also: Sequence[Path] = (), wheels: bool = True
) -> Path | None:
    """`tool`: on `env`'s PATH, else in a toolkit's bin/ (toolkit_roots(env, also)), else, with `wheels`, in a
    wheel's <package>/bin/; None where none is."""
    env = os.environ if env is None else env
    on_path = shutil.which(tool, path=env.get("PATH"))
    if on_path:
        return Path(on_path)
    candidates = [root / "bin" / tool for root in toolkit_roots(env, also)]
    if wheels:
        candidates += [p for root in wheel_roots() for p in sorted(root.glob(f"*/bin/{tool}"))]
    return next((p for p in candidates if p.is_file() and os.access(p, os.X_OK)), None)


def find_cxx(env: Mapping[str, str] | None = None) -> str | None:
    """The host's C++ compiler: $CXX, else c++, g++ or clang++, on `env`'s PATH; None where there is none."""
    env = os.environ if env is None else env
    for name in (env.get("CXX"), *CXX_NAMES):
        found = shutil.which(name, path=env.get("PATH")) if name else None
        if found:
            return found
    return None


def find_nvdisasm() -> Path | None:
    """nvdisasm: PATH, a toolkit, or the `nvidia-cuda-nvdisasm` wheel's nvidia/cu13/bin/nvdisasm."""
    return find_tool("nvdisasm")
