"""NVIDIA's command-line tools on this machine: found on PATH, in a CUDA toolkit ($CUDA_HOME,
$CUDA_PATH, /usr/local/cuda), or in one of NVIDIA's pip wheels (the `nvidia` namespace package:
`nvidia-cuda-nvcc-cu12` ships nvidia/cuda_nvcc/bin/ptxas, `nvidia-cuda-nvdisasm` nvidia/cu13/bin/nvdisasm).
The compilers (static/toolchain.py) and the readers' disassembler (readers/inline_chains.py) find theirs here.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

# what to install where nvdisasm is missing: the wheel runs on a machine with no GPU
NVDISASM_PACKAGE = "nvidia-cuda-nvdisasm"


def wheel_roots() -> list[Path]:
    """Directories of the installed `nvidia` namespace package (pip's CUDA wheels)."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def toolkit_roots() -> list[Path]:
    """CUDA toolkit directories named by $CUDA_HOME and $CUDA_PATH, then /usr/local/cuda."""
    named = [os.environ.get(var) for var in ("CUDA_HOME", "CUDA_PATH")]
    return [Path(p) for p in named if p] + [Path("/usr/local/cuda")]


def find_tool(tool: str) -> Path | None:
    """`tool`: on PATH, else in a toolkit's bin/, else in a wheel's <package>/bin/; None where none is."""
    on_path = shutil.which(tool)
    if on_path:
        return Path(on_path)
    candidates = [root / "bin" / tool for root in toolkit_roots()]
    candidates += [p for root in wheel_roots() for p in sorted(root.glob(f"*/bin/{tool}"))]
    return next((p for p in candidates if p.is_file() and os.access(p, os.X_OK)), None)


def find_nvdisasm() -> Path | None:
    """nvdisasm: PATH, a toolkit, or the `nvidia-cuda-nvdisasm` wheel's nvidia/cu13/bin/nvdisasm."""
    return find_tool("nvdisasm")
