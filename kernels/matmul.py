"""fp32 matrix multiplication c = a b (a: m x k, b: k x n), any m, k, n: the Numba article's
naive and shared-memory kernels, the shared-memory kernel with conflict-free indexing, and
PMPP's tiled kernel (chapter 5) in CUDA C++ (matmul_pmpp.cu, compiled by CuPy).

The Numba article ("Writing CUDA Kernels", numba.readthedocs.io) uses 16x16 blocks and takes
x = cuda.grid(2)[0], driven by threadIdx.x, as the row. Its shared kernel stores sA[tx, ty]:
the fastest thread index picks the row of a 16-float-wide tile, so a warp's lanes land in a few
banks. The article's kernel also returns early (threads outside c skip cuda.syncthreads) and
assumes square matrices; here tiles overhanging the matrices are zero-filled instead.
Numba kernels run on Numba device arrays, so they also run under the CUDA simulator.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numba import config, cuda, float32

from memlens.suite import CudaKernel, Expect, Family, Inputs, Launch, NumbaKernel, Size

_spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]  # _common.py sits beside this file
_spec.loader.exec_module(common)  # type: ignore[union-attr]

TILE = 16  # the article's 16x16 blocks; also PMPP's TILE_WIDTH below
SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
PMPP = CudaKernel(Path(__file__).with_name("matmul_pmpp.cu"), f"matmul_pmpp<{TILE}>")


def matmul_naive(a, b, c):
    """The article's first kernel: one thread per element of c, row i from threadIdx.x."""
    i, j = cuda.grid(2)
    if i < c.shape[0] and j < c.shape[1]:
        acc = float32(0.0)
        for p in range(a.shape[1]):
            acc += a[i, p] * b[p, j]
        c[i, j] = acc


def matmul_tiled_article(a, b, c):
    """The article's shared-memory kernel: sA[tx, ty], tx (fastest) picks the row."""
    sa = cuda.shared.array(shape=(TILE, TILE), dtype=float32)
    sb = cuda.shared.array(shape=(TILE, TILE), dtype=float32)  # one declaration a line (simulator)
    x, y = cuda.grid(2)  # x: row of c, y: column
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    m, k = a.shape
    n = b.shape[1]
    acc = float32(0.0)
    for t in range((k + TILE - 1) // TILE):
        a_col = t * TILE + ty
        b_row = t * TILE + tx
        sa[tx, ty] = a[x, a_col] if x < m and a_col < k else float32(0.0)
        sb[tx, ty] = b[b_row, y] if b_row < k and y < n else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[tx, j] * sb[j, ty]
        cuda.syncthreads()
    if x < m and y < n:
        c[x, y] = acc


def matmul_tiled(a, b, c):
    """The shared-memory kernel indexed sA[ty, tx]: tx picks the column of c and of each tile."""
    sa = cuda.shared.array(shape=(TILE, TILE), dtype=float32)
    sb = cuda.shared.array(shape=(TILE, TILE), dtype=float32)  # one declaration a line (simulator)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    m, k = a.shape
    n = b.shape[1]
    acc = float32(0.0)
    for t in range((k + TILE - 1) // TILE):
        a_col = t * TILE + tx
        b_row = t * TILE + ty
        sa[ty, tx] = a[row, a_col] if row < m and a_col < k else float32(0.0)
        sb[ty, tx] = b[b_row, col] if b_row < k and col < n else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    return {
        "a": rng.uniform(-1, 1, (size["m"], size["k"])).astype(np.float32),
        "b": rng.uniform(-1, 1, (size["k"], size["n"])).astype(np.float32),
    }


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    return inputs["a"].astype(np.float64) @ inputs["b"].astype(np.float64)


matmul = Family(
    "matmul",
    "c = a b in fp32 (a: m x k, b: k x n), one thread per element of c, 16x16 blocks",
    make_inputs,
    reference,
    default_size={"m": 2048, "k": 2048, "n": 2048},
    small_size={"m": 70, "k": 45, "n": 33},  # none a multiple of 16: partial tiles everywhere
    # fp32 sums of k products of values in [-1, 1) against float64; at k = 2048 the largest
    # error in a 64 x 2048 sample was 1.2e-4 (tests/kernels/test_suite_contract.py simulates it).
    rtol=1e-5,
    atol=5e-4,
    min_bytes=lambda size: 4 * (size["m"] * size["k"] + size["k"] * size["n"] + size["m"] * size["n"]),
    min_flops=lambda size: 2 * size["m"] * size["k"] * size["n"],  # a multiply and an add a product
)


@functools.cache
def _jit(function: Callable[..., Any]) -> Any:
    # On-disk cache: later runs skip the compile. Line info lets ncu name each instruction's source
    # line; the CUDA simulator (CPU tests) takes no such option.
    options = {} if config.ENABLE_CUDASIM else {"lineinfo": True}  # type: ignore[attr-defined]  # set from the environment at import
    return cuda.jit(function, cache=True, **options)


def _numba_launch(function: Callable[..., Any], inputs: Inputs, rows_from_x: bool) -> Launch:
    """Launch on Numba device arrays, grid of 16x16 blocks: x over rows of c (the article's
    kernels) or over its columns."""
    kernel = _jit(function)
    m, n = inputs["a"].shape[0], inputs["b"].shape[1]
    grid = (common.cdiv(m, TILE), common.cdiv(n, TILE))
    grid = grid if rows_from_x else grid[::-1]
    common.check_grid(grid, "matmul")
    a, b = cuda.to_device(inputs["a"]), cuda.to_device(inputs["b"])
    poison = np.full((m, n), np.nan, dtype=np.float32)
    c = cuda.to_device(poison)
    return Launch(
        run=lambda: kernel[grid, (TILE, TILE)](a, b, c),
        output=c.copy_to_host,
        reset=lambda: c.copy_to_device(poison),
        device_output=lambda: c,
    )


def _article_excess(size: Size) -> int:
    """The article's kernel's exact excess wavefronts on paper (the bank model: 62 a warp and tile of k).
    Imported here, not at the top: the kernels' line numbers are recorded in the fixtures."""
    from memlens.theory import bank_model

    return bank_model.matmul_article_excess(size["m"], size["k"], size["n"])


@matmul.variant(
    "naive",
    demonstrates="the Numba article's naive kernel: every operand read from global memory",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no shared memory; a read with stride k",
                  excess_wavefronts=0),
    baseline=True,
    kernels=(NumbaKernel(matmul_naive, SIGNATURE),),
)
def naive(inputs: Inputs, size: Size) -> Launch:
    return _numba_launch(matmul_naive, inputs, rows_from_x=True)


@matmul.variant(
    "tiled_article",
    demonstrates="the Numba article's shared-memory tiles, sA[tx, ty] with tx fastest: bank conflicts",
    expect=Expect(bank_conflicts=True, local_memory=False, note="shared: 8-way stores, 4-way 16-byte loads",
                  excess_wavefronts=lambda size: _article_excess(size)),
    kernels=(NumbaKernel(matmul_tiled_article, SIGNATURE),),
)
def tiled_article(inputs: Inputs, size: Size) -> Launch:
    return _numba_launch(matmul_tiled_article, inputs, rows_from_x=True)


@matmul.variant(
    "tiled",
    demonstrates="the same tiles indexed sA[ty, tx]: conflict-free shared memory, coalesced loads",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts", excess_wavefronts=0),
    kernels=(NumbaKernel(matmul_tiled, SIGNATURE),),
)
def tiled(inputs: Inputs, size: Size) -> Launch:
    return _numba_launch(matmul_tiled, inputs, rows_from_x=False)


@matmul.variant(
    "tiled_pmpp",
    demonstrates="PMPP chapter 5's tiled kernel with boundary checks, in CUDA C++",
    expect=Expect(bank_conflicts=False, local_memory=False, note="no bank conflicts", excess_wavefronts=0),
    kernels=(PMPP,),
)
def tiled_pmpp(inputs: Inputs, size: Size) -> Launch:
    cupy = common.import_cupy()
    (m, k), n = inputs["a"].shape, inputs["b"].shape[1]
    common.check_int32("matmul", m * k, k * n, m * n)
    grid = (common.cdiv(n, TILE), common.cdiv(m, TILE))
    common.check_grid(grid, "matmul")
    function = common.cupy_function(PMPP)
    a, b = common.on_device(inputs["a"]), common.on_device(inputs["b"])
    c = cupy.empty((m, n), dtype=cupy.float32)  # poisoned by reset(), a memset
    args = (a, b, c, np.int32(m), np.int32(k), np.int32(n))
    return common.cupy_launch(function, grid, (TILE, TILE), args, c)
