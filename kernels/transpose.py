"""Matrix transpose through an fp32 shared-memory tile: a 32x32 tile whose columns conflict,
a padded one and an XOR-swizzled one (after the shared-memory swizzling article); then 64x64
tiles that approach the device-to-device copy bandwidth, moving single floats (tile64_*) or
16-byte float4 vectors (vec4_*), each padded and swizzled. CUDA C++ in transpose.cu, compiled
at run time by CuPy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from memlens.suite import CudaKernel, Expect, Family, Inputs, Launch, Size
from memlens.theory import bank_model

_spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]  # _common.py sits beside this file
_spec.loader.exec_module(common)  # type: ignore[union-attr]

SOURCE = Path(__file__).with_name("transpose.cu")
TILE, BLOCK_ROWS = 32, 8  # as in transpose.cu
TILE64, ROWS64, THREADS_VEC4 = 64, 16, 256  # the 64x64 tiles: blocks (32, 16) for tile64_*, (256,) for vec4_*


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    # Values in [1, 2): never 0, and 3x faster to draw than normal ones.
    return {"a": rng.random((size["rows"], size["cols"]), dtype=np.float32) + np.float32(1)}


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    # A view, not a copy: a transposed copy of 8192^2 floats costs a second on the host, while the
    # view (Fortran-ordered) goes to the GPU as it is and the check there reads it in place.
    return inputs["a"].T


def check_size(size: Size) -> None:
    """The sizes every variant's launch accepts (as _launch checks them): 32-bit element counts, and
    grids of at most 65535 tiles in y (32-wide tiles down the rows; 64-wide tiles across the columns)."""
    rows, cols = size["rows"], size["cols"]
    common.check_int32("transpose", rows * cols)
    common.check_grid((common.cdiv(cols, TILE), common.cdiv(rows, TILE)), "transpose")
    common.check_grid((common.cdiv(rows, TILE64), common.cdiv(cols, TILE64)), "transpose")


transpose = Family(
    "transpose",
    "out = a.T for an fp32 rows x cols matrix, through a 32x32 or 64x64 shared-memory tile",
    make_inputs,
    reference,
    default_size={"rows": 8192, "cols": 8192},
    small_size={"rows": 67, "cols": 45},  # neither a multiple of 32: partial tiles on both edges
    min_bytes=lambda size: 2 * 4 * size["rows"] * size["cols"],  # read a, write out
    check_size=check_size,
)


def _launch(
    kernel: CudaKernel, inputs: Inputs, tile: int = TILE, block: tuple[int, ...] = (TILE, BLOCK_ROWS),
    down_first: bool = False,
) -> Launch:
    """One block per `tile` x `tile` tile of `a`: grid (ceil(cols / tile), ceil(rows / tile)), or
    with `down_first` (the 64x64 kernels: blockIdx.x walks tile rows) (ceil(rows / tile), ceil(cols / tile))."""
    cupy = common.import_cupy()
    rows, cols = inputs["a"].shape
    common.check_int32("transpose", rows * cols)
    across, down = common.cdiv(cols, tile), common.cdiv(rows, tile)
    grid = (down, across) if down_first else (across, down)
    common.check_grid(grid, "transpose")
    function = common.cupy_function(kernel)
    a = common.on_device(inputs["a"])  # a fresh allocation: 256-byte aligned, as the float4 path needs
    out = cupy.empty((cols, rows), dtype=cupy.float32)  # poisoned by reset(), a memset
    args = (a, out, np.int32(rows), np.int32(cols))
    return common.cupy_launch(function, grid, block, args, out)


CONFLICT = CudaKernel(SOURCE, "transpose_conflict")
PADDED = CudaKernel(SOURCE, "transpose_padded")
SWIZZLED = CudaKernel(SOURCE, "transpose_swizzled")
TILE64_PADDED = CudaKernel(SOURCE, "transpose_tile64_padded")
TILE64_SWIZZLED = CudaKernel(SOURCE, "transpose_tile64_swizzled")
VEC4_PADDED = CudaKernel(SOURCE, "transpose_vec4_padded")
VEC4_SWIZZLED = CudaKernel(SOURCE, "transpose_vec4_swizzled")


@transpose.variant(
    "conflict",
    demonstrates="tile[32][32]: a warp reading a tile column hits one bank 32 times",
    expect=Expect(bank_conflicts=True, local_memory=False, note="shared loads: 32-way conflict",
                  excess_wavefronts=lambda size: bank_model.transpose_conflict_excess(size["rows"], size["cols"])),
    baseline=True,
    kernels=(CONFLICT,),
)
def conflict(inputs: Inputs, size: Size) -> Launch:
    return _launch(CONFLICT, inputs)


@transpose.variant(
    "padded",
    demonstrates="tile[32][33]: one float of padding per row spreads a column over all 32 banks",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding)",
                  excess_wavefronts=0),
    kernels=(PADDED,),
)
def padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(PADDED, inputs)


@transpose.variant(
    "swizzled",
    demonstrates="tile[y][x ^ y]: an XOR swizzle spreads a column over all 32 banks with no padding",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle)",
                  excess_wavefronts=0),
    kernels=(SWIZZLED,),
)
def swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(SWIZZLED, inputs)


# 64x64 tiles, the grid walking down before across (rows-first): all loads of a thread in flight at once.


@transpose.variant(
    "tile64_padded",
    demonstrates="tile[64][65], block 32x16: 8 floats a thread (two 128-byte rows a warp per pass), tiles down first",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding), 8 loads in flight",
                  excess_wavefronts=0),
    kernels=(TILE64_PADDED,),
)
def tile64_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(TILE64_PADDED, inputs, TILE64, (TILE, ROWS64), down_first=True)


@transpose.variant(
    "tile64_swizzled",
    demonstrates="tile[64][64] at [r][c ^ (r % 32)], block 32x16: the same tiling as tile64_padded, swizzled",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle), 8 loads in flight",
                  excess_wavefronts=0),
    kernels=(TILE64_SWIZZLED,),
)
def tile64_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(TILE64_SWIZZLED, inputs, TILE64, (TILE, ROWS64), down_first=True)


@transpose.variant(
    "vec4_padded",
    demonstrates="float4 loads and stores, 4x4 transposed in registers, tile[64][68]: 16-byte chunk padding",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (16-byte chunk padding)",
                  excess_wavefronts=0),
    kernels=(VEC4_PADDED,),
)
def vec4_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(VEC4_PADDED, inputs, TILE64, (THREADS_VEC4,), down_first=True)


@transpose.variant(
    "vec4_swizzled",
    demonstrates="float4 loads and stores, 4x4 transposed in registers, tile[64][64] with 16-byte chunks swizzled",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (16-byte chunk XOR swizzle)",
                  excess_wavefronts=0),
    kernels=(VEC4_SWIZZLED,),
)
def vec4_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(VEC4_SWIZZLED, inputs, TILE64, (THREADS_VEC4,), down_first=True)
