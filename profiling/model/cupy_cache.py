"""CuPy's kernel cache: where it is, and the variable that makes CuPy keep each kernel's source there.

CuPy compiles `<cache>/<hash>.cubin` from a temporary `<hash>.cubin.cu`; with
CUPY_CACHE_SAVE_CUDA_SOURCE=1 it saves the source as `<cache>/<hash>.cubin.cu`, the same name. A module
of its own: `memlens profile -- COMMAND` sets the variable before ncu starts, and imports no more than it
needs by then (tests/benchmarks/start_time.py).
"""

from __future__ import annotations

import os
from pathlib import Path

CUPY_SAVE_SOURCE = "CUPY_CACHE_SAVE_CUDA_SOURCE"


def cupy_cache_dirs() -> tuple[Path, ...]:
    """Where CuPy keeps its kernel cache: $CUPY_CACHE_DIR, else ~/.cupy/kernel_cache."""
    configured = os.environ.get("CUPY_CACHE_DIR")
    return (Path(configured),) if configured else (Path.home() / ".cupy" / "kernel_cache",)


def cupy_cached_source(recorded: str) -> Path | None:
    """The source CuPy saved in its cache for the temporary file `recorded`, where it did."""
    name = Path(recorded).name
    for folder in cupy_cache_dirs():
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None
