"""Helpers shared by the built-in suite's modules. The leading _ keeps load_suite from
collecting it; suite directories are not packages, so each module loads it by path:

    _spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
    common = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(common)
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memlens.errors import ConfigError, ProfilerError
from memlens.suite import CudaKernel, Launch

MAX_GRID_Y = 65535  # gridDim.y and gridDim.z limit
MAX_INT32 = 2**31 - 1


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def check_grid(grid: Sequence[int], what: str) -> None:
    if len(grid) > 1 and max(grid[1:]) > MAX_GRID_Y:
        raise ConfigError(f"{what}: grid {tuple(grid)} exceeds {MAX_GRID_Y} blocks in y or z; use a smaller size")


def check_int32(what: str, *values: int) -> None:
    if any(v > MAX_INT32 for v in values):
        raise ConfigError(f"{what}: sizes {values} exceed the kernels' 32-bit int arguments")


def import_cupy() -> Any:
    try:
        import cupy
    except ImportError:
        raise ProfilerError(
            "CuPy is not installed: pip install 'memlens[cuda13]' (or [cuda12]; nvidia-smi shows the CUDA version)"
        ) from None
    return cupy


_uploads: dict[int, tuple[weakref.ref, Any]] = {}  # id of a host array -> (the array, its device copy)


def on_device(host: np.ndarray) -> Any:
    """`host` as a CuPy array, copied to the GPU once for every variant given the same input array
    (the suite's kernels never write their inputs); a copy lives as long as its host array."""
    cupy = import_cupy()
    key = id(host)
    found = _uploads.get(key)
    if found is None or found[0]() is not host:
        found = (weakref.ref(host, lambda _: _uploads.pop(key, None)), cupy.asarray(host))
        _uploads[key] = found
    return found[1]


@functools.cache
def _raw_module(source: Path, options: tuple[str, ...], name_expressions: tuple[str, ...]) -> Any:
    cupy = import_cupy()
    code = source.read_text(encoding="utf-8")
    # -lineinfo: ncu maps each SASS instruction to its source line (no change to the machine code)
    options = options if "-lineinfo" in options else (*options, "-lineinfo")
    return cupy.RawModule(code=code, options=options, name_expressions=name_expressions or None)


def cupy_function(kernel: CudaKernel) -> Any:
    """The kernel `kernel.name` of `kernel.source`, compiled once per process by CuPy (NVRTC)
    with `kernel.options`; a templated name such as "k<16>" is passed as a name expression."""
    templated = (kernel.name,) if "<" in kernel.name else ()
    import_cupy()
    from cupy.cuda.compiler import CompileException

    try:
        return _raw_module(Path(kernel.source), tuple(kernel.options), templated).get_function(kernel.name)
    except CompileException as exc:
        lines = str(exc).splitlines() or [""]
        first = next((line for line in lines if "error" in line), lines[0])
        raise ProfilerError(f"{Path(kernel.source).name}: NVRTC failed to compile {kernel.name}: {first}") from exc


def cupy_launch(
    function: Any, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], out: Any
) -> Launch:
    """Launch of a CuPy RawKernel on the default stream; `output` copies `out` to the host
    (synchronising), `device_output` is `out` itself, `reset` sets every bit of it: NaN in every
    float (a memset: no kernel launch, which a profiled process pays for)."""
    cupy = import_cupy()
    return Launch(
        run=lambda: function(grid, block, args),
        output=lambda: cupy.asnumpy(out),
        reset=lambda: out.data.memset_async(0xFF, out.nbytes),
        device_output=lambda: out,
    )
