"""Matrix transpose through a 32x32 fp32 shared-memory tile: a tile whose columns conflict,
a padded one and an XOR-swizzled one (after the shared-memory swizzling article).
CUDA C++ in transpose.cu, compiled at run time by CuPy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from profiling.suite import CudaKernel, Expect, Family, Inputs, Launch, Size

_spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)

SOURCE = Path(__file__).with_name("transpose.cu")
TILE, BLOCK_ROWS = 32, 8  # as in transpose.cu


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    return {"a": rng.standard_normal((size["rows"], size["cols"]), dtype=np.float32)}


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    return np.ascontiguousarray(inputs["a"].T)


transpose = Family(
    "transpose",
    "out = a.T for an fp32 rows x cols matrix, through a 32x32 shared-memory tile",
    make_inputs,
    reference,
    default_size={"rows": 8192, "cols": 8192},
    small_size={"rows": 67, "cols": 45},  # neither a multiple of 32: partial tiles on both edges
    min_bytes=lambda size: 2 * 4 * size["rows"] * size["cols"],  # read a, write out
)


def _launch(kernel: CudaKernel, inputs: Inputs) -> Launch:
    cupy = common.import_cupy()
    rows, cols = inputs["a"].shape
    common.check_int32("transpose", rows * cols)
    grid = (common.cdiv(cols, TILE), common.cdiv(rows, TILE))
    common.check_grid(grid, "transpose")
    function = common.cupy_function(kernel)
    a = cupy.asarray(inputs["a"])
    out = cupy.full((cols, rows), np.nan, dtype=cupy.float32)
    args = (a, out, np.int32(rows), np.int32(cols))
    return common.cupy_launch(function, grid, (TILE, BLOCK_ROWS), args, out)


CONFLICT = CudaKernel(SOURCE, "transpose_conflict")
PADDED = CudaKernel(SOURCE, "transpose_padded")
SWIZZLED = CudaKernel(SOURCE, "transpose_swizzled")


@transpose.variant(
    "conflict",
    demonstrates="tile[32][32]: a warp reading a tile column hits one bank 32 times",
    expect=Expect(bank_conflicts=True, local_memory=False, note="shared loads: 32-way conflict"),
    baseline=True,
    kernels=(CONFLICT,),
)
def conflict(inputs: Inputs, size: Size) -> Launch:
    return _launch(CONFLICT, inputs)


@transpose.variant(
    "padded",
    demonstrates="tile[32][33]: one float of padding per row spreads a column over all 32 banks",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding)"),
    kernels=(PADDED,),
)
def padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(PADDED, inputs)


@transpose.variant(
    "swizzled",
    demonstrates="tile[y][x ^ y]: an XOR swizzle spreads a column over all 32 banks with no padding",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle)"),
    kernels=(SWIZZLED,),
)
def swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(SWIZZLED, inputs)
