"""fp16 transpose out = a.T (n x n, n a multiple of 32) through the shared-memory instructions of
Ampere and Hopper: cp.async into a tile, ldmatrix.trans out of it, stmatrix into a second tile and
16-byte loads (LDS.128) out of that, in five tile layouts. Each variant's exact excess wavefronts
are computed on paper by profiling/theory/bank_model.py from the layout and each instruction's phases
(16-byte loads: a quarter-warp at a time; ldmatrix/stmatrix: one 8x8 matrix at a time; cp.async:
per global 128-byte line read, a rule fitted to the H100's measurements, see the bank model).
CUDA C++ in fp16_transpose.cu, compiled at run time by CuPy; stmatrix needs compute capability 9.0.

Excess wavefronts per warp and tile, by instruction (the bank model's figures):

    layout     cp.async     ldmatrix.x4  stmatrix.x4  LDS.128
    dense          4 (2-way)   12 (4-way)    12          0
    pitch128       4 (2-way)   28 (8-way)    28          4
    padded        11 (3.75-way) 0             0          4
    xor_row        4 (2-way)    4 (2-way)     4          0
    xor_128b       4 (2-way)    0             0          0
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from memlens.errors import ConfigError
from memlens.suite import CudaKernel, Expect, Family, Inputs, Launch, Size
from memlens.theory import bank_model

_spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]  # _common.py sits beside this file
_spec.loader.exec_module(common)  # type: ignore[union-attr]

SOURCE = Path(__file__).with_name("fp16_transpose.cu")
TILE, THREADS = 32, 128  # as in fp16_transpose.cu


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    # Values in [1, 2): never 0, and every fp16 bit pattern a different number. Drawn as the bit patterns
    # of [1, 2) (exponent 0x3C00, any 10-bit mantissa): an fp32 draw cast to fp16 took a second at n = 8192.
    bits = rng.integers(0x3C00, 0x4000, (size["n"], size["n"]), dtype=np.uint16)
    return {"a": bits.view(np.float16)}


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    return inputs["a"].T  # a view: the check on the GPU reads it in place


def check_size(size: Size) -> None:
    """n a positive multiple of 32 (whole tiles: the kernels check no bounds), 32-bit element counts."""
    n = size["n"]
    if n % TILE:
        raise ConfigError(f"fp16_transpose: n={n} is not a multiple of {TILE} (the kernels move whole 32x32 tiles)")
    common.check_int32("fp16_transpose", n * n)
    common.check_grid((n // TILE, n // TILE), "fp16_transpose")


fp16_transpose = Family(
    "fp16_transpose",
    "out = a.T for an fp16 n x n matrix: cp.async, ldmatrix.trans, stmatrix and 16-byte loads through shared tiles",
    make_inputs,
    reference,
    default_size={"n": 8192},
    small_size={"n": 96},  # 3 x 3 tiles
    min_bytes=lambda size: 2 * 2 * size["n"] ** 2,  # read a, write out
    check_size=check_size,
    min_compute_capability=(9, 0),
    needs="stmatrix",
)


def _launch(kernel: CudaKernel, inputs: Inputs) -> Launch:
    """One block of 128 threads per 32x32 tile: grid (n / 32, n / 32)."""
    cupy = common.import_cupy()
    n = inputs["a"].shape[0]
    check_size({"n": n})
    function = common.cupy_function(kernel)
    a = common.on_device(inputs["a"])  # a fresh allocation: 256-byte aligned, as 16-byte accesses need
    out = cupy.empty((n, n), dtype=cupy.float16)  # poisoned by reset(), a memset (NaN)
    return common.cupy_launch(function, (n // TILE, n // TILE), (THREADS,), (a, out, np.int32(n)), out)


def _paper(layout: str):  # noqa: ANN202 - the figure as a function of the size
    return lambda size: bank_model.fp16_transpose_excess(layout, size["n"])


LAYOUTS = {  # variant: (demonstrates, note)
    "dense": (
        "__half tile[32][32] (64-byte rows): LDS.128 fine, ldmatrix/stmatrix rows 4-way",
        "ldmatrix and stmatrix 4-way (12 excess a warp each); LDS.128 conflict-free; cp.async 2-way (4): "
        "one wavefront per 64-byte global row it reads",
    ),
    "pitch128": (
        "rows padded to 128 bytes: every row starts in bank 0, the worst pitch",
        "ldmatrix and stmatrix 8-way (28 excess a warp each); LDS.128 2-way (4); cp.async 2-way (4)",
    ),
    "padded": (
        "__half tile[32][40] (80-byte rows): padding fixes ldmatrix/stmatrix, leaves 16-byte accesses 2-way",
        "ldmatrix and stmatrix conflict-free; LDS.128 2-way (4 excess a warp); cp.async 3.75-way (11): rows "
        "that start off 32 bytes or cross 128 cost more",
    ),
    "xor_row": (
        "chunk c of row r at c ^ (r % 4): the article's formula over one 64-byte row looks right, is 2-way",
        "ldmatrix and stmatrix 2-way (4 excess a warp each: rows k and k+4 of a matrix collide); "
        "LDS.128 conflict-free; cp.async 2-way (4)",
    ),
    "xor_128b": (
        "the article's formula over 128-byte lines of two rows (what one phase serves): conflict-free",
        "no bank conflicts in ldmatrix, stmatrix and LDS.128 (XOR swizzle of 16-byte chunks, 128-byte lines); "
        "cp.async 2-way (4), as in every layout: one wavefront per 64-byte global row",
    ),
}
KERNELS = {name: CudaKernel(SOURCE, f"fp16_transpose_{name}") for name in LAYOUTS}


def _register(name: str) -> None:
    demonstrates, note = LAYOUTS[name]
    kernel = KERNELS[name]

    @fp16_transpose.variant(
        name,
        demonstrates=demonstrates,
        expect=Expect(bank_conflicts=True, local_memory=False, note=note,  # cp.async is 2-way in every layout
                      excess_wavefronts=_paper(name)),  # fmt: skip
        baseline=name == "dense",
        kernels=(kernel,),
    )
    def prepare(inputs: Inputs, size: Size) -> Launch:
        return _launch(kernel, inputs)


for _name in LAYOUTS:
    _register(_name)
