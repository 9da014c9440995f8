"""The 64x64 transposes (transpose/tile64_* and transpose/vec4_*) without a GPU: what ptxas makes
of them, the swizzle expressions of transpose.cu against profiling/theory/swizzle.py, the bank model on
every shared access a warp makes, and the .cu itself run on the CPU (one thread per CUDA thread).
On a GPU (marker `gpu`), every transpose variant at sizes that mix float4 and scalar tiles."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from memlens.static import toolchain
from memlens.static.check import entry_body
from memlens.suite import load_suite
from memlens.theory import bank_model as bm
from memlens.theory.swizzle import swizzle

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "kernels" / "transpose.cu"
TEXT = SOURCE.read_text(encoding="utf-8")

TILE = 64
STRIDES = {  # floats a row of each kernel's tile
    "transpose_tile64_padded": 65,
    "transpose_tile64_swizzled": 64,
    "transpose_vec4_padded": 68,
    "transpose_vec4_swizzled": 64,
}
SHARED_BYTES = {name: TILE * stride * 4 for name, stride in STRIDES.items()}  # 16,640 / 16,384 / 17,408
MAX_REGISTERS = 32  # __launch_bounds__(512, 4) and (256, 8): 2048 threads fill an SM's 64K registers
ALL_KERNELS = ["transpose_conflict", "transpose_padded", "transpose_swizzled", *STRIDES]


# --- what ptxas makes of them -------------------------------------------------------------------


@functools.cache
def _compiled(route: str) -> toolchain.CompiledCuda:
    if route == "nvcc":
        return toolchain.compile_nvcc(SOURCE, "sm_90", (), list(STRIDES))
    return toolchain.compile_nvrtc(SOURCE, "sm_90", (), list(STRIDES))


@pytest.fixture(params=["nvcc", "nvrtc"])
def compiled(request: pytest.FixtureRequest) -> toolchain.CompiledCuda:
    if request.param == "nvcc" and toolchain.find_nvcc() is None:
        pytest.skip("no nvcc")
    if request.param == "nvrtc" and toolchain.nvrtc_version() is None:
        pytest.skip("NVRTC cannot be loaded: pip install nvidia-cuda-nvrtc-cu12")
    return _compiled(request.param)


@pytest.mark.parametrize("kernel", list(STRIDES))
def test_resources(compiled: toolchain.CompiledCuda, kernel: str) -> None:
    resources = compiled.kernel(kernel)
    assert resources.shared_bytes == SHARED_BYTES[kernel]
    assert (resources.stack_bytes, resources.spill_store_bytes, resources.spill_load_bytes) == (0, 0, 0)
    assert 0 < resources.registers <= MAX_REGISTERS, resources


@pytest.mark.parametrize("kernel", list(STRIDES))
def test_access_widths_in_ptx(compiled: toolchain.CompiledCuda, kernel: str) -> None:
    """vec4: 16-byte global and shared accesses on the fast path; tile64: 4-byte ones. All global
    loads go through the read-only path (`const __restrict__` and __ldg: ld.global.nc)."""
    body = entry_body(compiled.ptx, kernel)
    assert body, kernel
    assert "ld.global.f32" not in body and "ld.global.v4.f32" not in body  # every load is .nc
    vector = kernel.startswith("transpose_vec4")
    for instruction in ("ld.global.nc.v4.f32", "st.global.v4.f32", "st.shared.v4.f32", "ld.shared.v4.f32"):
        assert (instruction in body) == vector, (kernel, instruction)
    assert "ld.global.nc.f32" in body  # tile64 always; vec4 on its scalar path for edge tiles
    assert ".local" not in body


# --- the swizzle expressions of transpose.cu -------------------------------------------------------


def _c_function(name: str, params: tuple[str, str]) -> Callable[[int, int], int]:
    """The one-line `return ...;` body of an int device function of transpose.cu, as Python.
    The expressions use only ^, &, |, >>, <<, + and parentheses: C and Python agree on them."""
    match = re.search(rf"int {name}\(int {params[0]}, int {params[1]}\) \{{\s*return ([^;]+);\s*\}}", TEXT)
    assert match, f"transpose.cu defines no one-line int {name}({', '.join(params)})"
    expression = match[1]
    assert re.fullmatch(r"[\w\s^&|<>+()]+", expression), expression
    code = compile(expression, f"transpose.cu:{name}", "eval")
    return lambda a, b: eval(code, {}, {params[0]: a, params[1]: b})


def test_tile64_swizzle_is_the_articles_formula() -> None:
    """float [][64], 4-byte chunks, 128-byte swizzle lines keyed by the row."""
    column = _c_function("swizzled_col64", ("r", "c"))
    for r in range(TILE):
        stored = [column(r, c) for c in range(TILE)]
        assert stored == [swizzle(r, c, TILE, 4, 4, 128) for c in range(TILE)]
        assert sorted(stored) == list(range(TILE))
        assert all(s // 32 == c // 32 for c, s in enumerate(stored))  # a half-row stays in its half


def test_vec4_swizzle_is_the_articles_formula() -> None:
    """float [][64] moved as 16-byte chunks (float4), 128-byte swizzle lines keyed by the row."""
    chunk_of = _c_function("swizzled_chunk", ("row", "chunk"))
    for row in range(TILE):
        stored = [4 * chunk_of(row, x // 4) + x % 4 for x in range(TILE)]
        assert stored == [swizzle(row, x, TILE, 4, 16, 128) for x in range(TILE)]


def test_the_32_wide_swizzle_is_unchanged() -> None:
    assert "return SWIZZLE ? (c ^ r) : c;" in TEXT


# --- the bank model on every shared access -----------------------------------------------------------

WARPS = 8  # vec4: 256 threads
TILE64_WARPS = 16  # tile64: block (32, 16)


def _tile64_column(kernel: str) -> Callable[[int, int], int]:
    if kernel.endswith("swizzled"):
        return lambda r, c: swizzle(r, c, TILE, 4, 4, 128)
    return lambda r, c: c


def tile64_accesses(kernel: str, stride: int | None = None) -> list[list[int]]:
    """Byte addresses of every warp-wide 4-byte shared access of transpose_tile64_*: block
    (32, 16), warp w = threadIdx.y; pass j, half h: store tile[w + 16j][tx + 32h], then (after the
    barrier) load tile[tx + 32h][w + 16j]."""
    stride = STRIDES[kernel] if stride is None else stride
    column = _tile64_column(kernel)
    accesses = []
    for warp in range(TILE64_WARPS):
        for j in range(TILE // TILE64_WARPS):
            r = warp + TILE64_WARPS * j
            for h in range(2):
                accesses.append([4 * (r * stride + column(r, tx + 32 * h)) for tx in range(32)])
                accesses.append([4 * ((tx + 32 * h) * stride + column(tx + 32 * h, r)) for tx in range(32)])
    return accesses


def _vec4_lane_map() -> Callable[[int, int], tuple[int, int]]:
    """(micro-column, micro-row) of a lane of a warp, from the two lines of transpose.cu."""
    mc = re.search(r"const int mc = ([^;]+);", TEXT)
    mr = re.search(r"const int mr = ([^;]+);", TEXT)
    assert mc and mr, "transpose.cu no longer defines mc and mr"
    mc_code, mr_code = compile(mc[1], "mc", "eval"), compile(mr[1], "mr", "eval")
    return lambda lane, warp: (
        eval(mc_code, {}, {"lane": lane, "warp": warp}),
        eval(mr_code, {}, {"lane": lane, "warp": warp}),
    )


def vec4_accesses(
    kernel: str,
    stride: int | None = None,
    swizzled: bool | None = None,
    lane_map: Callable[[int, int], tuple[int, int]] | None = None,
) -> list[list[int]]:
    """Byte addresses of every warp-wide 16-byte shared access of transpose_vec4_*: the four
    stores of chunk mr into rows 4mc + j of the transposed tile, then the four loads of
    chunk tid % 16 of row 16p + tid / 16."""
    stride = STRIDES[kernel] if stride is None else stride
    swizzled = kernel.endswith("swizzled") if swizzled is None else swizzled
    lane_map = lane_map or _vec4_lane_map()

    def address(y: int, chunk: int) -> int:
        column = swizzle(y, 4 * chunk, TILE, 4, 16, 128) if swizzled else 4 * chunk
        return 4 * (y * stride + column)

    accesses = []
    for warp in range(WARPS):
        lanes = [lane_map(lane, warp) for lane in range(32)]
        accesses += [[address(4 * mc + j, mr) for mc, mr in lanes] for j in range(4)]
        tids = [32 * warp + lane for lane in range(32)]
        accesses += [[address(16 * p + tid // 16, tid % 16) for tid in tids] for p in range(4)]
    return accesses


def test_vec4_lanes_cover_the_tile_once() -> None:
    lane_map = _vec4_lane_map()
    tiles = sorted(lane_map(lane, warp) for warp in range(WARPS) for lane in range(32))
    assert tiles == [(mc, mr) for mc in range(16) for mr in range(16)]
    for warp in range(WARPS):  # a warp's loads: 4 micro-rows x 8 micro-columns (128 bytes a row)
        lanes = [lane_map(lane, warp) for lane in range(32)]
        assert len({mr for _, mr in lanes}) == 4 and len({mc for mc, _ in lanes}) == 8
        assert max(mc for mc, _ in lanes) - min(mc for mc, _ in lanes) == 7


@pytest.mark.parametrize("kernel", ["transpose_tile64_padded", "transpose_tile64_swizzled"])
def test_tile64_one_wavefront_per_request(kernel: str) -> None:
    accesses = tile64_accesses(kernel)
    assert len(accesses) == 2 * 2 * TILE // TILE64_WARPS * TILE64_WARPS
    assert [bm.wavefronts(a, 4) for a in accesses] == [1] * len(accesses)
    assert sum(bm.excess_wavefronts(a, 4) for a in accesses) == 0


@pytest.mark.parametrize("kernel", ["transpose_vec4_padded", "transpose_vec4_swizzled"])
def test_vec4_one_wavefront_per_quarter_warp(kernel: str) -> None:
    """A 16-byte warp access is 4 requests of 128 bytes (quarter-warps): ideal 4 wavefronts."""
    accesses = vec4_accesses(kernel)
    assert len(accesses) == 8 * WARPS
    assert all(a % 16 == 0 for access in accesses for a in access)
    assert [bm.wavefronts(a, 16) for a in accesses] == [4] * len(accesses)
    assert sum(bm.excess_wavefronts(a, 16) for a in accesses) == 0


def test_the_model_sees_what_padding_and_swizzling_avoid() -> None:
    """Controls: the same accesses on a plain tile[64][64], and the vec4 padding with lanes
    mapped naively (16 micro-columns a half-warp), do conflict."""
    plain = tile64_accesses("transpose_tile64_padded", stride=64)
    assert max(bm.wavefronts(a, 4) for a in plain) == 32  # a column of a [64][64] tile: one bank
    plain4 = vec4_accesses("transpose_vec4_padded", stride=64, swizzled=False)
    assert sum(bm.excess_wavefronts(a, 16) for a in plain4) > 0

    def naive(lane: int, warp: int) -> tuple[int, int]:
        tid = 32 * warp + lane
        return tid % 16, tid // 16

    assert sum(bm.excess_wavefronts(a, 16) for a in vec4_accesses("transpose_vec4_padded", lane_map=naive)) > 0
    assert sum(bm.excess_wavefronts(a, 16) for a in vec4_accesses("transpose_vec4_swizzled", lane_map=naive)) > 0


# --- transpose.cu run on the CPU ----------------------------------------------------------------------

EMULATION_HEADER = r"""
// Just enough CUDA for transpose.cu on the CPU: a std::thread per CUDA thread, __syncthreads a
// std::barrier, __shared__ a function static (the blocks of a grid run one after another).
#include <barrier>
#include <cstddef>
#include <cstdint>
struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline thread_local dim3 threadIdx;
inline thread_local dim3 blockIdx;
inline std::barrier<>* block_barrier = nullptr;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
template <class T> inline T __ldg(const T* p) { return *p; }
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
"""

EMULATION_MAIN = r"""
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
typedef void (*Kernel)(const float*, float*, int, int);

// usage: emulate KERNEL TILE BLOCK_X BLOCK_Y ROWS COLS DOWN_FIRST < input (rows * cols float32) > output
// (DOWN_FIRST 1: blockIdx.x walks tile rows, grid (ceil(rows / tile), ceil(cols / tile)))
int main(int argc, char** argv) {
    const char* names[] = {KERNEL_NAMES};
    Kernel kernels[] = {KERNEL_NAMES_BARE};
    int which = -1;
    for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); ++k)
        if (std::string(names[k]) == argv[1]) which = k;
    if (which < 0) return 2;
    const int tile = atoi(argv[2]), bx = atoi(argv[3]), by = atoi(argv[4]);
    const int rows = atoi(argv[5]), cols = atoi(argv[6]), down_first = atoi(argv[7]);
    const size_t n = (size_t)rows * cols, bytes = (n * 4 + 255) / 256 * 256;
    float* in = static_cast<float*>(aligned_alloc(256, bytes));
    float* out = static_cast<float*>(aligned_alloc(256, bytes));
    if (fread(in, 4, n, stdin) != n) return 3;
    for (size_t i = 0; i < n; ++i) out[i] = __builtin_nanf("");
    const long across = (cols + tile - 1) / tile, down = (rows + tile - 1) / tile;
    const long gx = down_first ? down : across, gy = down_first ? across : down;
    std::barrier<> barrier(bx * by);
    block_barrier = &barrier;
    std::vector<std::thread> threads;
    for (int t = 0; t < bx * by; ++t) {
        threads.emplace_back([&, t] {
            threadIdx = {unsigned(t % bx), unsigned(t / bx), 0};
            for (long b = gx * gy - 1; b >= 0; --b) {  // backwards: stale shared data would show
                blockIdx = {unsigned(b % gx), unsigned(b / gx), 0};
                kernels[which](in, out, rows, cols);
                barrier.arrive_and_wait();
            }
        });
    }
    for (auto& thread : threads) thread.join();
    fwrite(out, 4, n, stdout);
    return 0;
}
"""

LAUNCH = {  # tile edge, block and grid order (down first) of each kernel, as kernels/transpose.py launches them
    "transpose_conflict": (32, (32, 8), False),
    "transpose_padded": (32, (32, 8), False),
    "transpose_swizzled": (32, (32, 8), False),
    "transpose_tile64_padded": (64, (32, 16), True),
    "transpose_tile64_swizzled": (64, (32, 16), True),
    "transpose_vec4_padded": (64, (256, 1), True),
    "transpose_vec4_swizzled": (64, (256, 1), True),
}
CPU_SIZES = [(67, 45), (64, 64), (68, 132), (130, 200), (1, 100), (100, 1)]  # full, partial, float4 + scalar


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("no g++ to build the CPU emulation of transpose.cu")
    folder = tmp_path_factory.mktemp("emulate")
    main = EMULATION_MAIN.replace("KERNEL_NAMES_BARE", ", ".join(LAUNCH)).replace(
        "KERNEL_NAMES", ", ".join(f'"{k}"' for k in LAUNCH)
    )
    (folder / "emulate.cpp").write_text(
        EMULATION_HEADER + "#include <string>\n" + f'#include "{SOURCE}"\n' + main, encoding="utf-8"
    )
    binary = folder / "emulate"
    argv = [
        compiler,
        "-std=c++20",
        "-O1",
        "-pthread",
        "-Wno-unknown-pragmas",
        str(folder / "emulate.cpp"),
        "-o",
        str(binary),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "barrier" in done.stderr:
        pytest.skip("g++ lacks C++20 <barrier>")
    assert done.returncode == 0, done.stderr[-3000:]
    return binary


@pytest.mark.parametrize("kernel", list(LAUNCH))
def test_cu_transposes_on_the_cpu(emulator: Path, kernel: str) -> None:
    tile, (bx, by), down_first = LAUNCH[kernel]
    rng = np.random.default_rng(11)
    for rows, cols in CPU_SIZES:
        a = rng.standard_normal((rows, cols), dtype=np.float32)
        argv = [str(emulator), kernel, str(tile), str(bx), str(by), str(rows), str(cols), str(int(down_first))]
        done = subprocess.run(argv, input=a.tobytes(), capture_output=True, timeout=120)
        assert done.returncode == 0, (kernel, rows, cols, done.returncode)
        out = np.frombuffer(done.stdout, dtype=np.float32).reshape(cols, rows)
        assert np.array_equal(out, a.T), (kernel, rows, cols, int((out != a.T).sum()))


# --- on a GPU: sizes that mix the float4 and scalar paths --------------------------------------------

GPU_SIZES = [(4100, 2052), (256, 8192), (8192, 68), (4099, 2053)]  # rows x cols


@pytest.mark.gpu
@pytest.mark.parametrize("size", GPU_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize(
    "name", ["padded", "swizzled", "tile64_padded", "tile64_swizzled", "vec4_padded", "vec4_swizzled"]
)
def test_gpu_mixed_tiles(name: str, size: tuple[int, int]) -> None:
    family = load_suite(REPO / "kernels").family("transpose")
    variant = next(v for v in family.variants if v.name == name)
    shape = {"rows": size[0], "cols": size[1]}
    inputs = family.make_inputs(np.random.default_rng(5), shape)
    expected = family.reference(inputs, shape)
    launch = variant.prepare(inputs, shape)
    launch.run()
    family.verify(variant, launch.output(), expected)
    launch.reset()
    launch.run()
    family.verify(variant, launch.output(), expected)
