"""Matrix transpose through an fp32 shared-memory tile: a 32x32 tile whose columns conflict,
a padded one and an XOR-swizzled one (after the shared-memory swizzling article); then 64x64
tiles that approach the device-to-device copy bandwidth, moving single floats (tile64_*) or
16-byte float4 vectors (vec4_*), each padded and swizzled; then four candidates that attack what
limits tile64 (issue 6), each padded and swizzled: 128x64 tiles of 512 threads (tall128_*), a
grouped block order (group64_*), a persistent grid that prefetches its next tile (persist64_*),
streaming cache hints (stream64_*). CUDA C++ in transpose.cu, compiled at run time by CuPy."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from profiling.suite import CudaKernel, Expect, Family, Inputs, Launch, Size

_spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)

SOURCE = Path(__file__).with_name("transpose.cu")
TILE, BLOCK_ROWS = 32, 8  # as in transpose.cu
TILE64, THREADS64 = 64, 256  # the 64x64 tiles: blocks (32, 8) for tile64_*, (256,) for vec4_*
TALL = 128  # tall128_*: 128 input rows x 64 columns a tile, block (32, 16)
GROUP = 4  # group64_*: tiles a group, one above the other (GROUP in transpose.cu)
ORDERS = ("rowmajor", "grouped", "persistent")


def persistent_blocks(tiles: int, slots: int) -> int:
    """Blocks of a persistent grid over `tiles` tiles when `slots` blocks fit on the GPU at once:
    each block takes at most ceil(tiles / slots) tiles, and the fewest blocks that allows, so
    that the blocks' tile counts differ by at most one (8192^2: 16,384 tiles, 528 slots -> 512
    blocks of 32 tiles) and no block waits for a slot."""
    per_block = max(1, common.cdiv(tiles, max(1, slots)))
    return common.cdiv(tiles, per_block)


class Geometry(NamedTuple):
    """How transpose.cu expects a kernel launched: its tile (input rows x columns), its block,
    and the order of its blocks (ORDERS): "rowmajor", grid (ceil(cols / tile_cols), ceil(rows /
    tile_rows)); "grouped", GROUP vertically adjacent tiles on consecutive blocks, grid
    (GROUP * ceil(cols / 64), ceil(ceil(rows / 64) / GROUP)); "persistent", a 1-D grid of
    persistent_blocks(tiles, slots) blocks that loop over the tiles. (A NamedTuple, not a
    dataclass: suites that load this file by path without registering it still can.)"""

    tile_rows: int
    tile_cols: int
    block: tuple[int, ...]
    order: str = "rowmajor"

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    def grid(self, rows: int, cols: int, slots: int | None = None) -> tuple[int, ...]:
        tiles_x, tiles_y = common.cdiv(cols, self.tile_cols), common.cdiv(rows, self.tile_rows)
        if self.order == "grouped":
            return (GROUP * tiles_x, common.cdiv(tiles_y, GROUP))
        if self.order == "persistent":
            if slots is None:
                raise ValueError("transpose: a persistent grid needs the number of blocks that fit at once")
            return (persistent_blocks(tiles_x * tiles_y, slots),)
        if self.order != "rowmajor":
            raise ValueError(f"transpose: block order {self.order!r} is none of {ORDERS}")
        return (tiles_x, tiles_y)


TILE32 = Geometry(TILE, TILE, (TILE, BLOCK_ROWS))
SCALAR64 = Geometry(TILE64, TILE64, (TILE, BLOCK_ROWS))
VECTOR64 = Geometry(TILE64, TILE64, (THREADS64,))
GEOMETRY = {  # kernel -> launch geometry; tests/test_transpose_fast.py emulates these launches
    "transpose_conflict": TILE32,
    "transpose_padded": TILE32,
    "transpose_swizzled": TILE32,
    "transpose_tile64_padded": SCALAR64,
    "transpose_tile64_swizzled": SCALAR64,
    "transpose_vec4_padded": VECTOR64,
    "transpose_vec4_swizzled": VECTOR64,
    "transpose_tall128_padded": Geometry(TALL, TILE64, (TILE, TALL // BLOCK_ROWS)),
    "transpose_tall128_swizzled": Geometry(TALL, TILE64, (TILE, TALL // BLOCK_ROWS)),
    "transpose_group64_padded": Geometry(TILE64, TILE64, (TILE, BLOCK_ROWS), "grouped"),
    "transpose_group64_swizzled": Geometry(TILE64, TILE64, (TILE, BLOCK_ROWS), "grouped"),
    "transpose_persist64_padded": Geometry(TILE64, TILE64, (TILE, BLOCK_ROWS), "persistent"),
    "transpose_persist64_swizzled": Geometry(TILE64, TILE64, (TILE, BLOCK_ROWS), "persistent"),
    "transpose_stream64_padded": SCALAR64,
    "transpose_stream64_swizzled": SCALAR64,
}


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    return {"a": rng.standard_normal((size["rows"], size["cols"]), dtype=np.float32)}


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    return np.ascontiguousarray(inputs["a"].T)


transpose = Family(
    "transpose",
    "out = a.T for an fp32 rows x cols matrix, through a 32x32, 64x64 or 128x64 shared-memory tile",
    make_inputs,
    reference,
    default_size={"rows": 8192, "cols": 8192},
    small_size={"rows": 67, "cols": 45},  # neither a multiple of 32: partial tiles on both edges
    min_bytes=lambda size: 2 * 4 * size["rows"] * size["cols"],  # read a, write out
)


def _slots(function: Any, threads: int) -> int:
    """Blocks of `function` that fit on the current GPU at once: SMs x blocks an SM."""
    cupy = common.import_cupy()
    from cupy_backends.cuda.api import driver

    per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(function.kernel.ptr, threads, 0)
    return cupy.cuda.Device().attributes["MultiProcessorCount"] * max(1, per_sm)


def _launch(kernel: CudaKernel, inputs: Inputs) -> Launch:
    """Launched as GEOMETRY[kernel.name] says: one block per tile, or a persistent grid."""
    cupy = common.import_cupy()
    rows, cols = inputs["a"].shape
    common.check_int32("transpose", rows * cols)
    geometry = GEOMETRY[kernel.name]
    function = common.cupy_function(kernel)
    slots = _slots(function, geometry.threads) if geometry.order == "persistent" else None
    grid = geometry.grid(rows, cols, slots)
    common.check_grid(grid, "transpose")
    block = geometry.block
    a = cupy.asarray(inputs["a"])  # a fresh allocation: 256-byte aligned, as the float4 path needs
    out = cupy.full((cols, rows), np.nan, dtype=cupy.float32)
    args = (a, out, np.int32(rows), np.int32(cols))
    return common.cupy_launch(function, grid, block, args, out)


CONFLICT = CudaKernel(SOURCE, "transpose_conflict")
PADDED = CudaKernel(SOURCE, "transpose_padded")
SWIZZLED = CudaKernel(SOURCE, "transpose_swizzled")
TILE64_PADDED = CudaKernel(SOURCE, "transpose_tile64_padded")
TILE64_SWIZZLED = CudaKernel(SOURCE, "transpose_tile64_swizzled")
VEC4_PADDED = CudaKernel(SOURCE, "transpose_vec4_padded")
VEC4_SWIZZLED = CudaKernel(SOURCE, "transpose_vec4_swizzled")
TALL128_PADDED = CudaKernel(SOURCE, "transpose_tall128_padded")
TALL128_SWIZZLED = CudaKernel(SOURCE, "transpose_tall128_swizzled")
GROUP64_PADDED = CudaKernel(SOURCE, "transpose_group64_padded")
GROUP64_SWIZZLED = CudaKernel(SOURCE, "transpose_group64_swizzled")
PERSIST64_PADDED = CudaKernel(SOURCE, "transpose_persist64_padded")
PERSIST64_SWIZZLED = CudaKernel(SOURCE, "transpose_persist64_swizzled")
STREAM64_PADDED = CudaKernel(SOURCE, "transpose_stream64_padded")
STREAM64_SWIZZLED = CudaKernel(SOURCE, "transpose_stream64_swizzled")


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


# 64x64 tiles: 256 threads a block, 16 elements a thread, all loads of a thread in flight at once.


@transpose.variant(
    "tile64_padded",
    demonstrates="tile[64][65], block 32x8: 16 floats a thread (two 128-byte rows a warp per pass)",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding), 16 loads in flight"),
    kernels=(TILE64_PADDED,),
)
def tile64_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(TILE64_PADDED, inputs)


@transpose.variant(
    "tile64_swizzled",
    demonstrates="tile[64][64] at [r][c ^ (r % 32)], block 32x8: the same tiling as tile64_padded, swizzled",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle), 16 loads in flight"),
    kernels=(TILE64_SWIZZLED,),
)
def tile64_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(TILE64_SWIZZLED, inputs)


@transpose.variant(
    "vec4_padded",
    demonstrates="float4 loads and stores, 4x4 transposed in registers, tile[64][68]: 16-byte chunk padding",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (16-byte chunk padding)"),
    kernels=(VEC4_PADDED,),
)
def vec4_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(VEC4_PADDED, inputs)


@transpose.variant(
    "vec4_swizzled",
    demonstrates="float4 loads and stores, 4x4 transposed in registers, tile[64][64] with 16-byte chunks swizzled",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (16-byte chunk XOR swizzle)"),
    kernels=(VEC4_SWIZZLED,),
)
def vec4_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(VEC4_SWIZZLED, inputs)


# Candidates after tile64 (issue 6): the tile64 thread work (16 floats a thread, all loads in
# flight before the first use, tile[64][65] or tile[][64] swizzled by row % 32), changed in one
# respect each.


@transpose.variant(
    "tall128_padded",
    demonstrates="tile[128][65], block 32x16: half the blocks, 512 contiguous bytes an output row a block",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding), 128x64 tiles"),
    kernels=(TALL128_PADDED,),
)
def tall128_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(TALL128_PADDED, inputs)


@transpose.variant(
    "tall128_swizzled",
    demonstrates="tile[128][64] at [r][c ^ (r % 32)], block 32x16: the tall128 tiling, swizzled",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle), 128x64 tiles"),
    kernels=(TALL128_SWIZZLED,),
)
def tall128_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(TALL128_SWIZZLED, inputs)


@transpose.variant(
    "group64_padded",
    demonstrates="tile64_padded with 4 vertically adjacent tiles on consecutive blocks: 1 KB output runs together",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding), grouped order"),
    kernels=(GROUP64_PADDED,),
)
def group64_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(GROUP64_PADDED, inputs)


@transpose.variant(
    "group64_swizzled",
    demonstrates="tile64_swizzled with 4 vertically adjacent tiles on consecutive blocks",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle), grouped order"),
    kernels=(GROUP64_SWIZZLED,),
)
def group64_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(GROUP64_SWIZZLED, inputs)


@transpose.variant(
    "persist64_padded",
    demonstrates="persistent blocks, equal tile counts, next tile's loads in flight while storing; tile[64][65]",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding), persistent"),
    kernels=(PERSIST64_PADDED,),
)
def persist64_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(PERSIST64_PADDED, inputs)


@transpose.variant(
    "persist64_swizzled",
    demonstrates="persistent blocks, equal tile counts, next tile's loads in flight while storing; swizzled",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle), persistent"),
    kernels=(PERSIST64_SWIZZLED,),
)
def persist64_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(PERSIST64_SWIZZLED, inputs)


@transpose.variant(
    "stream64_padded",
    demonstrates="tile64_padded with streaming hints: ld.global.cs / st.global.cs (evict first)",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (padding), .cs accesses"),
    kernels=(STREAM64_PADDED,),
)
def stream64_padded(inputs: Inputs, size: Size) -> Launch:
    return _launch(STREAM64_PADDED, inputs)


@transpose.variant(
    "stream64_swizzled",
    demonstrates="tile64_swizzled with streaming hints: ld.global.cs / st.global.cs (evict first)",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts (XOR swizzle), .cs accesses"),
    kernels=(STREAM64_SWIZZLED,),
)
def stream64_swizzled(inputs: Inputs, size: Size) -> Launch:
    return _launch(STREAM64_SWIZZLED, inputs)
