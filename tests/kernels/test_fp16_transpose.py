"""The fp16_transpose family on the CPU: the kernel's four steps simulated in NumPy with the PTX
semantics of cp.async, ldmatrix.trans and stmatrix (the output is a.T in every layout), the bank
model's figures for each layout and instruction, the paper figures the variants declare, the size
check, and the skip on a GPU older than compute capability 9.0."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from memlens.errors import ConfigError
from memlens.readers import read_report
from memlens.suite import load_suite
from memlens.theory import bank_model as bm

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
SUITE = load_suite(KERNELS)
FAMILY = SUITE.family("fp16_transpose")
LAYOUTS = ("dense", "pitch128", "padded", "xor_row", "xor_128b")
BUFFER_BYTES = {"dense": 2048, "pitch128": 4096, "padded": 2560, "xor_row": 2048, "xor_128b": 2048}

# Excess wavefronts per warp-level execution (cp.async, ldmatrix.x4, stmatrix.x4, LDS.128), worked
# out by hand: LDS.128 goes a quarter-warp (2 tile rows) at a time, ldmatrix/stmatrix one 8x8 matrix
# (8 rows of one chunk column) at a time, one wavefront per distinct 16-byte row in a bank group
# (bank // 4). cp.async: one wavefront per global row (8 a warp, ideal 4), one more for a row whose
# shared bytes start off 32 bytes, and one more where they cross 128 (padded rows 1, 3, 5, 6, 7 at
# 80, 112+, 16, 96, 48: 3 + 3 + 2 + 2 + 2 + rows 0, 2, 4 at 1 = 15), as measured on the H100.
PAPER = {
    "dense": {"cp.async": 4, "ldmatrix": 12, "stmatrix": 12, "lds128": 0},  # rows 4-way: 2 bank groups
    "pitch128": {"cp.async": 4, "ldmatrix": 28, "stmatrix": 28, "lds128": 4},  # 8-way, 2-way
    "padded": {"cp.async": 11, "ldmatrix": 0, "stmatrix": 0, "lds128": 4},  # 2 rows share a group
    "xor_row": {"cp.async": 4, "ldmatrix": 4, "stmatrix": 4, "lds128": 0},  # rows k, k+4 collide
    "xor_128b": {"cp.async": 4, "ldmatrix": 0, "stmatrix": 0, "lds128": 0},
}


def _cu_offset(layout: str, r: int, c: int) -> int:
    """off(r, c) as fp16_transpose.cu writes it, transcribed."""
    if layout == "dense":
        return r * 64 + 16 * c
    if layout == "pitch128":
        return r * 128 + 16 * c
    if layout == "padded":
        return r * 80 + 16 * c
    if layout == "xor_row":
        return r * 64 + 16 * ((c ^ r) & 3)
    i = 4 * r + c
    line = i >> 3
    return 16 * ((line << 3) | ((i & 7) ^ (line & 7)))


def test_the_cu_layouts_are_the_bank_models() -> None:
    source = (KERNELS / "fp16_transpose.cu").read_text()
    for layout in LAYOUTS:
        assert f"fp16_transpose_{layout}(" in source
        off = bm.fp16_layout(layout)
        assert all(off(r, c) == _cu_offset(layout, r, c) for r in range(32) for c in range(4)), layout
    assert "return 16 * ((line << 3) | ((i & 7) ^ (line & 7)));" in source
    assert "return r * 64 + 16 * ((c ^ r) & 3);" in source


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_hold_every_chunk_once_inside_the_buffer(layout: str) -> None:
    offsets = [bm.fp16_layout(layout)(r, c) for r in range(32) for c in range(4)]
    assert len(set(offsets)) == 128 and all(o % 16 == 0 for o in offsets)
    assert max(offsets) + 16 <= BUFFER_BYTES[layout]
    assert re.search(rf"Layout<LAYOUT_{layout.upper()}>::BYTES", (KERNELS / "fp16_transpose.cu").read_text())


# --- the kernel simulated: each PTX instruction as the PTX ISA defines it ------------------------


def _ldmatrix_x4_trans(buffer: np.ndarray, addresses: list[int]) -> np.ndarray:
    """Registers (thread, matrix, 2 halves) of ldmatrix.m8n8.x4.trans.b16: lane i gives row i % 8 of
    matrix i // 8; without .trans thread t holds row t // 4, columns 2 (t % 4) .. +1 of each matrix,
    with .trans the same of the transposed matrix."""
    matrices = np.stack(
        [np.stack([buffer[a // 2 : a // 2 + 8] for a in addresses[8 * m : 8 * m + 8]]) for m in range(4)]
    )
    regs = np.empty((32, 4, 2), dtype=buffer.dtype)
    for t in range(32):
        for m in range(4):
            transposed = matrices[m].T
            regs[t, m] = transposed[t // 4, 2 * (t % 4) : 2 * (t % 4) + 2]
    return regs


def _stmatrix_x4(buffer: np.ndarray, addresses: list[int], regs: np.ndarray) -> None:
    for m in range(4):
        for t in range(32):
            row = addresses[8 * m + t // 4] // 2
            buffer[row + 2 * (t % 4) : row + 2 * (t % 4) + 2] = regs[t, m]


def _simulate(layout: str, a: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    off = bm.fp16_layout(layout)
    out = np.full_like(a, np.nan)
    for tile_row in range(n // 32):
        for tile_col in range(n // 32):
            row0, col0 = 32 * tile_row, 32 * tile_col
            s = np.zeros(BUFFER_BYTES[layout] // 2, dtype=a.dtype)
            u = np.zeros_like(s)
            for t in range(128):  # 1. cp.async 16 bytes: row t // 4, chunk t % 4
                r, c = t // 4, t % 4
                s[off(r, c) // 2 : off(r, c) // 2 + 8] = a[row0 + r, col0 + 8 * c : col0 + 8 * c + 8]
            for w in range(4):  # 2. ldmatrix.x4.trans, 3. stmatrix.x4
                regs = _ldmatrix_x4_trans(s, bm.fp16_transpose_access(layout, "ldmatrix", w))
                _stmatrix_x4(u, bm.fp16_transpose_access(layout, "stmatrix", w), regs)
            for t in range(128):  # 4. LDS.128 and a 16-byte global store, tile origins swapped
                r, c = t // 4, t % 4
                out[col0 + r, row0 + 8 * c : row0 + 8 * c + 8] = u[off(r, c) // 2 : off(r, c) // 2 + 8]
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_simulated_kernel_transposes(layout: str) -> None:
    size = {"n": 64}
    inputs = FAMILY.make_inputs(np.random.default_rng(5), size)
    got = _simulate(layout, inputs["a"])
    expected = FAMILY.reference(inputs, size)
    FAMILY.verify(FAMILY.variants[0], got, expected)
    assert np.array_equal(got, inputs["a"].T)


# --- the bank model's figures --------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("warp", range(4))
def test_bank_model_figures_per_warp_execution(layout: str, warp: int) -> None:
    assert bm.fp16_transpose_figures(layout, warp) == PAPER[layout]


def test_phases_of_the_matrix_instructions() -> None:
    rows = [64 * lane for lane in range(32)]  # dense rows of chunk 0: two bank groups a matrix
    assert bm.matrix_wavefronts(rows, 4) == 16 and bm.matrix_ideal_wavefronts(rows, 4) == 4
    assert bm.matrix_excess_wavefronts(rows, 1) == 3 and bm.matrix_excess_wavefronts(rows, 2) == 6
    assert bm.matrix_excess_wavefronts([16 * lane for lane in range(8)], 1) == 0
    rows = [lane // 4 for lane in range(32)]
    one_line = [16 * lane for lane in range(32)]  # 512 contiguous bytes from 4 global lines: 4 wavefronts, ideal
    assert bm.cp_async_excess_wavefronts(one_line, [16 * lane for lane in range(32)]) == 0
    # 8 rows of 64 bytes, each from a global line of its own: 8 wavefronts against 4, whatever the pitch
    assert (
        bm.cp_async_excess_wavefronts(
            [128 * r + 16 * (lane % 4) for lane, r in enumerate(rows)], [4096 * r for r in rows]
        )
        == 4
    )
    with pytest.raises(ConfigError, match=r"bank model: ldmatrix/stmatrix move \(1, 2, 4\) matrices, not 3"):
        bm.matrix_wavefronts(rows, 3)
    with pytest.raises(ConfigError, match="bank model: .x4 needs 32 row addresses, 8 given"):
        bm.matrix_wavefronts(rows[:8], 4)
    with pytest.raises(ConfigError, match="not a 16-byte aligned address"):
        bm.matrix_wavefronts([8] * 8, 1)
    with pytest.raises(ConfigError, match="unknown fp16 tile layout 'diagonal'"):
        bm.fp16_transpose_figures("diagonal")
    with pytest.raises(ConfigError, match="instruction 'ldgsts' is not one of"):
        bm.fp16_transpose_access("dense", "ldgsts")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n", [96, 8192])
def test_declared_paper_figures(layout: str, n: int) -> None:
    variant = next(v for v in FAMILY.variants if v.name == layout)
    per_tile = 4 * sum(PAPER[layout].values())  # 4 warps, each instruction once a warp
    assert variant.expect.at_size({"n": n}).excess_wavefronts == (n // 32) ** 2 * per_tile
    assert variant.expect.bank_conflicts == (per_tile > 0)


def test_default_figures() -> None:
    at = {v.name: v.expect.at_size(FAMILY.size()).excess_wavefronts for v in FAMILY.variants}
    assert at == {
        "dense": 7_340_032,
        "pitch128": 16_777_216,
        "padded": 3_932_160,
        "xor_row": 3_145_728,
        "xor_128b": 1_048_576,
    }


# --- the family's contract ----------------------------------------------------------------------


def test_sizes() -> None:
    assert FAMILY.size() == {"n": 8192} and FAMILY.size(small=True) == {"n": 96}
    assert FAMILY.min_bytes({"n": 96}) == 2 * 2 * 96 * 96
    FAMILY.check_size({"n": 96})
    with pytest.raises(ConfigError, match=r"^fp16_transpose: n=100 is not a multiple of 32 \(the kernels move"):
        FAMILY.check_size({"n": 100})
    with pytest.raises(ConfigError, match="exceed the kernels' 32-bit int arguments"):
        FAMILY.check_size({"n": 2**16})


def test_needs_hopper_and_says_why() -> None:
    assert FAMILY.min_compute_capability == (9, 0)
    assert FAMILY.requirement() == "needs compute capability 9.0 or newer (stmatrix)"
    assert FAMILY.unsupported_on((8, 0)) == "needs compute capability 9.0 or newer (stmatrix); this GPU is 8.0"
    assert FAMILY.unsupported_on((8, 9)) is not None
    assert FAMILY.unsupported_on((9, 0)) is None and FAMILY.unsupported_on((10, 0)) is None
    assert FAMILY.unsupported_on(None) is None  # unknown: launched, and the launch says what failed
    assert SUITE.family("transpose").unsupported_on((7, 0)) is None


# --- the recordings: one kernel, the same figures from every kind of report ---------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED_GPUS = ("nvidia_h100_80gb_hbm3", "nvidia_h200")


def _sides(kernel) -> tuple:
    keys = (
        "exact_excess_wavefronts_ld",
        "exact_excess_wavefronts_st",
        "shared_ld_executions",
        "shared_st_executions",
        "exact_shared_ld_ways",
        "exact_shared_st_ways",
        "excess_wavefronts_per_shared_ld",
        "excess_wavefronts_per_shared_st",
    )
    return tuple(kernel.value(key) for key in keys)


def _expected_sides(layout: str, n: int) -> tuple[float, float, float, float]:
    """Excess of loads (ldmatrix + LDS.128) and stores (cp.async + stmatrix), and the executions of
    each side (two instructions a warp and tile), from the bank model."""
    tiles = (n // 32) ** 2
    per_warp = [bm.fp16_transpose_figures(layout, warp) for warp in range(4)]
    loads = tiles * sum(f["ldmatrix"] + f["lds128"] for f in per_warp)
    stores = tiles * sum(f["cp.async"] + f["stmatrix"] for f in per_warp)
    return loads, stores, 2 * 4 * tiles, 2 * 4 * tiles


@pytest.mark.parametrize("gpu", RECORDED_GPUS)
def test_plain_and_source_counters_reports_give_the_suite_runs_figures(gpu: str) -> None:
    """ncu with memlens's metric list, ncu's own --section SourceCounters and a memlens run: the same
    per-side figures, every instruction kind counted on its side (cp.async a store, ldmatrix a load)."""
    where = FIXTURES / gpu
    plain = {k.kernel: k for k in read_report(where / "fp16_plain.ncu-rep").kernels if "fp16" in k.kernel}
    counters = {k.kernel: k for k in read_report(where / "fp16_sourcecounters.ncu-rep").kernels if "fp16" in k.kernel}
    assert set(plain) == set(counters) == {f"fp16_transpose_{layout}" for layout in LAYOUTS}
    small = FAMILY.size(small=True)["n"]
    for layout in LAYOUTS:
        kernel = plain[f"fp16_transpose_{layout}"]
        assert _sides(kernel) == _sides(counters[f"fp16_transpose_{layout}"]), layout
        assert _sides(kernel)[:4] == _expected_sides(layout, small), layout
    suite = {k.variant: k for k in read_report(where / "suite.ncu-rep").kernels if k.family == "fp16_transpose"}
    n = FAMILY.size()["n"]
    for layout in LAYOUTS:
        assert _sides(suite[layout])[:4] == _expected_sides(layout, n), layout
    # the hardware counters classify these instructions otherwise: no stmatrix nor cp.async among stores
    assert suite["dense"].value("shared_st_instructions") == 0 and suite["dense"].value("shared_st_executions") > 0
