"""fp16 tensor-core matmul c = a b (a: m x k, b: k x n, fp16 row-major; c fp32, fp32 accumulation):
mma.sync.m16n8k16 fed by ldmatrix from two 64 x 64 shared tiles a block, in three tile layouts:
rows of exactly 128 bytes (every 8x8 matrix's 8 rows in one 16-byte bank group: 8-way), rows
padded by 16 bytes, and the shared-memory swizzling article's XOR of the 16-byte chunk index with
the row (mod 8). CUDA C++ with inline PTX in tensor_matmul.cu, compiled at run time by CuPy;
mma.sync.m16n8k16 on fp16 needs compute capability 8.0.

Excess wavefronts on paper, per block and 64-wide step of k (every shared access of the kernel):

    instruction (a warp's count a step)  phase               conflict      padded     swizzled
    STS.128 tile fill (8: 4 SA, 4 SB)    8 lanes = one row   0             0          0
    ldmatrix.x4 (16: 8 SA, 8 SB .trans)  one 8x8 matrix      7 a matrix    0          0

A store phase is one 128-byte tile row, 8 distinct bank groups in every layout. An ldmatrix phase is
8 consecutive rows of one chunk column c: at 128-byte rows all start in bank group c (8 wavefronts,
ideal 1: 7 excess); at 144-byte rows in group (r + c) mod 8, at c ^ (r mod 8) in 8 distinct groups.
So conflict: 4 warps x 16 ldmatrix.x4 x 4 matrices x 7 = 1,792 a block and step, m n k / 64^3 of
them: 7 m n k / 1024 in all (58,720,256 at 2048^3); padded and swizzled: 0.
tests/kernels/test_tensor_matmul.py recomputes each phase with profiling/theory/bank_model.py.

On the roofline: 2 m n k FLOPs against at least 2 (m k + k n) + 4 m n bytes of DRAM traffic, 512
FLOP/B at 2048^3, right of the fp16 tensor roof's ridge (about 300 FLOP/B on an H100, 200 on an
H200): DRAM does not bound it, the tensor roof does. Shared memory bounds it below that roof: a warp
reads 2 KiB through ldmatrix per 32,768 FLOPs of mma (16 FLOP/B); at 128 bytes a cycle an SM that
is 2,048 FLOPs a cycle an SM, half the dense fp16 tensor peak of an H100 SM (4,096), and the 8-way
conflict makes each 128-byte matrix 8 wavefronts: an eighth of it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from memlens.errors import ConfigError
from memlens.suite import CudaKernel, Expect, Family, Inputs, Launch, Size

_spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]  # _common.py sits beside this file
_spec.loader.exec_module(common)  # type: ignore[union-attr]

SOURCE = Path(__file__).with_name("tensor_matmul.cu")
TILE, THREADS = 64, 128  # BM = BN = BK and the block, as in tensor_matmul.cu
# Excess wavefronts a block spends per 64-wide step of k (the docstring's table): 4 warps, 16
# ldmatrix.x4 each, 4 matrices each, 7 excess a matrix in the conflicting layout.
EXCESS_PER_BLOCK_STEP = {"conflict": 4 * 16 * 4 * 7, "padded": 0, "swizzled": 0}


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    """Values of either sign, magnitudes in [0.5, 1): never 0, and sums that cancel as real ones do."""

    def draw(shape: tuple[int, int]) -> np.ndarray:
        # fp16 bit patterns: [0.5, 1) is exponent 0x3800 with any 10-bit mantissa; bit 10 of the draw is the sign
        k = rng.integers(0, 1 << 11, shape, dtype=np.uint16)
        return (np.uint16(0x3800) | (k & np.uint16(0x3FF)) | ((k >> np.uint16(10)) << np.uint16(15))).view(np.float16)

    return {"a": draw((size["m"], size["k"])), "b": draw((size["k"], size["n"]))}


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    # The products of two fp16 values are exact in fp32; only the sums round.
    return inputs["a"].astype(np.float32) @ inputs["b"].astype(np.float32)


def check_size(size: Size) -> None:
    """m, n and k positive multiples of 64 (whole tiles: the kernels check no bounds), 32-bit element counts."""
    m, k, n = size["m"], size["k"], size["n"]
    for name, value in (("m", m), ("k", k), ("n", n)):
        if value % TILE:
            raise ConfigError(f"tensor_matmul: {name}={value} is not a multiple of {TILE} (the kernels move whole "
                              f"64 x 64 tiles)")  # fmt: skip
    common.check_int32("tensor_matmul", m * k, k * n, m * n)
    common.check_grid((n // TILE, m // TILE), "tensor_matmul")


def paper_excess(layout: str, size: Size) -> int:
    """The exact excess shared wavefronts of the whole launch: one block per 64 x 64 tile of c, each
    taking k / 64 steps."""
    return (size["m"] // TILE) * (size["n"] // TILE) * (size["k"] // TILE) * EXCESS_PER_BLOCK_STEP[layout]


tensor_matmul = Family(
    "tensor_matmul",
    "c = a b, fp16 a (m x k) and b (k x n), fp32 c: mma.sync on the tensor cores, operands through ldmatrix",
    make_inputs,
    reference,
    default_size={"m": 2048, "k": 2048, "n": 2048},
    small_size={"m": 192, "k": 256, "n": 128},  # 3 x 2 blocks, 4 steps of k: no two sizes alike
    # Sums of k = 2048 products of magnitude [0.25, 1) and random sign: |c| about 26 (a standard
    # deviation), fp32 partial sums. The tensor cores add in fp32 but align and round toward zero,
    # 128 times (once an mma's 16 products) at default k; the reference's own rounding is smaller.
    # tests/kernels/test_tensor_matmul.py bounds both, and shows that one missing 16-wide step fails.
    rtol=1e-4,
    atol=1e-3,
    min_bytes=lambda size: 2 * (size["m"] * size["k"] + size["k"] * size["n"]) + 4 * size["m"] * size["n"],
    min_flops=lambda size: 2 * size["m"] * size["k"] * size["n"],  # a multiply and an add a product
    check_size=check_size,
    min_compute_capability=(8, 0),
    needs="mma.sync.m16n8k16 on fp16",
)


def _launch(kernel: CudaKernel, inputs: Inputs) -> Launch:
    """One block of 128 threads per 64 x 64 tile of c: grid (n / 64, m / 64)."""
    cupy = common.import_cupy()
    (m, k), n = inputs["a"].shape, inputs["b"].shape[1]
    check_size({"m": m, "k": k, "n": n})
    function = common.cupy_function(kernel)
    a, b = common.on_device(inputs["a"]), common.on_device(inputs["b"])  # 256-byte aligned: 16-byte loads
    c = cupy.empty((m, n), dtype=cupy.float32)  # poisoned by reset(), a memset (NaN)
    args = (a, b, c, np.int32(m), np.int32(k), np.int32(n))
    return common.cupy_launch(function, (n // TILE, m // TILE), (THREADS,), args, c)


LAYOUTS = {  # variant: (demonstrates, note)
    "conflict": (
        "__half tile[64][64] (128-byte rows): each ldmatrix matrix's 8 rows start in one bank group, 8-way",
        "ldmatrix 8-way (28 excess a warp's .x4: 7 a matrix); the tile fill's 16-byte stores conflict-free",
    ),
    "padded": (
        "__half tile[64][72] (rows padded by 16 bytes): a matrix's 8 rows in 8 bank groups",
        "no bank conflicts: ldmatrix rows 144 bytes apart start in 8 different bank groups; stores whole rows",
    ),
    "swizzled": (
        "tile[64][64] with 16-byte chunk c of row r at c ^ (r % 8): the swizzling article on ldmatrix, no padding",
        "no bank conflicts (XOR swizzle of 16-byte chunks over 128-byte rows): ldmatrix and the tile fill",
    ),
}
KERNELS = {name: CudaKernel(SOURCE, f"tensor_matmul_{name}") for name in LAYOUTS}


def _register(name: str) -> None:
    demonstrates, note = LAYOUTS[name]
    kernel = KERNELS[name]

    @tensor_matmul.variant(
        name,
        demonstrates=demonstrates,
        expect=Expect(
            bank_conflicts=EXCESS_PER_BLOCK_STEP[name] > 0,
            local_memory=False,
            note=note,
            excess_wavefronts=lambda size: paper_excess(name, size),
        ),  # fmt: skip
        baseline=name == "conflict",
        kernels=(kernel,),
    )
    def prepare(inputs: Inputs, size: Size) -> Launch:
        return _launch(kernel, inputs)


for _name in LAYOUTS:
    _register(_name)
