"""The tensor_matmul family on the CPU: the kernel's index formulas transcribed from tensor_matmul.cu,
simulated in NumPy with the PTX semantics of ldmatrix and mma.sync.m16n8k16 (the product is a b in
every layout); each shared access phase of one warp through the bank model, against the excess the
variants declare; the tolerance against tensor-core rounding; the size check and the GPU requirement."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlens.cli import main
from memlens.errors import ConfigError, VerificationError
from memlens.suite import load_suite
from memlens.theory import bank_model as bm
from memlens.theory.swizzle import swizzled_offset

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
SOURCE = (KERNELS / "tensor_matmul.cu").read_text()
SUITE = load_suite(KERNELS)
FAMILY = SUITE.family("tensor_matmul")
LAYOUTS = ("conflict", "padded", "swizzled")
TILE_BYTES = {"conflict": 64 * 128, "padded": 64 * 144, "swizzled": 64 * 128}


def off(layout: str, r: int, c: int) -> int:
    """Tile<LAYOUT>::off(r, c) as tensor_matmul.cu writes it, transcribed."""
    if layout == "conflict":
        return r * 128 + 16 * c
    if layout == "padded":
        return r * 144 + 16 * c
    return r * 128 + 16 * (c ^ (r & 7))


def test_the_transcribed_layouts_are_the_sources() -> None:
    assert "{ return r * 128 + 16 * c; }" in SOURCE
    assert "{ return r * 144 + 16 * c; }" in SOURCE
    assert "{ return r * 128 + 16 * (c ^ (r & 7)); }" in SOURCE
    for layout in LAYOUTS:
        assert f"tensor_matmul_{layout}(" in SOURCE


def test_the_swizzle_is_the_articles_formula() -> None:
    """16-byte chunks (TC) of fp16 rows of 64 (T), SWIZZLE_SIZE one 128-byte row: chunk c ^ (r % 8)."""
    for r in range(64):
        for c in range(8):
            assert off("swizzled", r, c) == swizzled_offset(r, 8 * c, 64, 2, 16, 128)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_hold_every_chunk_once_inside_the_tile(layout: str) -> None:
    offsets = [off(layout, r, c) for r in range(64) for c in range(8)]
    assert len(set(offsets)) == 512 and all(o % 16 == 0 for o in offsets)
    assert max(offsets) + 16 <= TILE_BYTES[layout]


# --- one warp's shared accesses, as the .cu gives them ------------------------------------------


def fill_addresses(layout: str, warp: int, i: int) -> list[int]:
    """Step 1: thread t = 32 warp + lane stores row 16 i + t / 8, chunk t % 8 (of SA, and the same of SB)."""
    return [off(layout, 16 * i + (32 * warp + lane) // 8, lane % 8) for lane in range(32)]


def ldmatrix_a_addresses(layout: str, warp: int, s: int, mi: int) -> list[int]:
    wm = warp >> 1
    return [off(layout, 32 * wm + 16 * mi + (lane & 15), 2 * s + (lane >> 4)) for lane in range(32)]


def ldmatrix_b_addresses(layout: str, warp: int, s: int, nj: int) -> list[int]:
    wn = warp & 1
    return [off(layout, 16 * s + (lane & 15), 4 * wn + 2 * nj + (lane >> 4)) for lane in range(32)]


def block_step_figures(layout: str) -> dict[str, tuple[int, int]]:
    """(wavefronts, ideal) of a block's 64-wide step of k, by instruction: 4 warps, each 8 STS.128
    (4 into SA, 4 into SB: the same offsets) and 16 ldmatrix.x4 (8 of a, 8 of b)."""
    stores = [fill_addresses(layout, w, i) for w in range(4) for i in range(4)] * 2
    matrices = [ldmatrix_a_addresses(layout, w, s, x) for w in range(4) for s in range(4) for x in range(2)]
    matrices += [ldmatrix_b_addresses(layout, w, s, x) for w in range(4) for s in range(4) for x in range(2)]
    return {
        "sts128": (sum(bm.wavefronts(a, 16) for a in stores), sum(bm.ideal_wavefronts(a, 16) for a in stores)),
        "ldmatrix": (
            sum(bm.matrix_wavefronts(a, 4) for a in matrices),
            sum(bm.matrix_ideal_wavefronts(a, 4) for a in matrices),
        ),
    }


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("warp", range(4))
def test_each_phase_n_way(layout: str, warp: int) -> None:
    """Stores: 4 quarter-warp phases, each one 128-byte tile row: 1 wavefront each in every layout.
    ldmatrix.x4: 4 phases, each 8 rows of one chunk column: 8 wavefronts each (8-way) at 128-byte rows."""
    ways = 8 if layout == "conflict" else 1
    for i in range(4):
        assert (
            bm.wavefronts(fill_addresses(layout, warp, i), 16)
            == bm.ideal_wavefronts(fill_addresses(layout, warp, i), 16)
            == 4
        )
    for s in range(4):
        for x in range(2):
            for addresses in (ldmatrix_a_addresses(layout, warp, s, x), ldmatrix_b_addresses(layout, warp, s, x)):
                assert bm.matrix_ideal_wavefronts(addresses, 4) == 4
                assert bm.matrix_wavefronts(addresses, 4) == 4 * ways
                assert bm.matrix_excess_wavefronts(addresses, 1) == ways - 1  # the first matrix alone


def test_block_step_figures_are_the_declared_ones() -> None:
    module = FAMILY.variants[0].prepare.__globals__
    for layout in LAYOUTS:
        figures = block_step_figures(layout)
        assert figures["sts128"] == (128, 128)  # 32 instructions, 4 phases each, none conflicting
        spent, ideal = figures["ldmatrix"]
        assert ideal == 256  # 64 ldmatrix.x4, 4 matrices each
        assert spent - ideal == module["EXCESS_PER_BLOCK_STEP"][layout] == {"conflict": 1792}.get(layout, 0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_declared_paper_figures(layout: str) -> None:
    variant = next(v for v in FAMILY.variants if v.name == layout)
    excess = {name: spent - ideal for name, (spent, ideal) in block_step_figures(layout).items()}
    for size in (FAMILY.size(), FAMILY.size(small=True), {"m": 128, "k": 64, "n": 320}):
        steps = (size["m"] // 64) * (size["n"] // 64) * (size["k"] // 64)
        assert variant.expect.at_size(size).excess_wavefronts == steps * sum(excess.values())
    assert variant.expect.bank_conflicts == (layout == "conflict")
    assert variant.expect.local_memory is False


def test_default_and_small_figures() -> None:
    at = {v.name: v.expect.at_size(FAMILY.size()).excess_wavefronts for v in FAMILY.variants}
    assert at == {"conflict": 58_720_256, "padded": 0, "swizzled": 0}  # 7 m n k / 1024 at 2048^3
    small = {v.name: v.expect.at_size(FAMILY.size(small=True)).excess_wavefronts for v in FAMILY.variants}
    assert small == {"conflict": 43_008, "padded": 0, "swizzled": 0}  # 3 x 2 blocks, 4 steps, 1,792 each


# --- the kernel simulated: ldmatrix and mma.sync as the PTX ISA defines their fragments ---------


def _ldmatrix_x4(tile: np.ndarray, addresses: list[int], trans: bool) -> np.ndarray:
    """Registers (thread, matrix, 2 halves) of ldmatrix.m8n8.x4(.trans).b16: lane i gives row i % 8 of
    matrix i // 8; thread t holds row t // 4, columns 2 (t % 4) ..+1 of each matrix (of its transpose)."""
    regs = np.empty((32, 4, 2), dtype=tile.dtype)
    for m in range(4):
        matrix = np.stack([tile[a // 2 : a // 2 + 8] for a in addresses[8 * m : 8 * m + 8]])
        matrix = matrix.T if trans else matrix
        for t in range(32):
            regs[t, m] = matrix[t // 4, 2 * (t % 4) : 2 * (t % 4) + 2]
    return regs


def _mma_m16n8k16(a_regs: np.ndarray, b_regs: np.ndarray, acc: np.ndarray) -> None:
    """acc (thread, 4) += A B, A 16 x 16 from a_regs (thread, 4 registers, 2 halves), B 16 x 8 from
    b_regs (thread, 2, 2), with the fragment layouts of mma.m16n8k16 .row.col f16."""
    a, b = np.zeros((16, 16), np.float32), np.zeros((16, 8), np.float32)
    for t in range(32):
        g, q = t // 4, 2 * (t % 4)
        a[g, q : q + 2], a[g + 8, q : q + 2] = a_regs[t, 0], a_regs[t, 1]
        a[g, q + 8 : q + 10], a[g + 8, q + 8 : q + 10] = a_regs[t, 2], a_regs[t, 3]
        b[q : q + 2, g], b[q + 8 : q + 10, g] = b_regs[t, 0], b_regs[t, 1]
    d = a @ b
    for t in range(32):
        g, q = t // 4, 2 * (t % 4)
        acc[t] += (d[g, q], d[g, q + 1], d[g + 8, q], d[g + 8, q + 1])


def _simulate(layout: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    (m, k), n = a.shape, b.shape[1]
    c = np.full((m, n), np.nan, dtype=np.float32)
    for by in range(m // 64):
        for bx in range(n // 64):
            row0, col0 = 64 * by, 64 * bx
            acc = np.zeros((4, 2, 4, 32, 4), np.float32)  # warp, mi, ni, thread, register
            for k0 in range(0, k, 64):
                sa = np.zeros(TILE_BYTES[layout] // 2, np.float16)
                sb = np.zeros_like(sa)
                for t in range(128):  # 1. the fill
                    for i in range(4):
                        r, ch = 16 * i + t // 8, t % 8
                        o = off(layout, r, ch) // 2
                        sa[o : o + 8] = a[row0 + r, k0 + 8 * ch : k0 + 8 * ch + 8]
                        sb[o : o + 8] = b[k0 + r, col0 + 8 * ch : col0 + 8 * ch + 8]
                for w in range(4):  # 2. ldmatrix and mma
                    for s in range(4):
                        af = [_ldmatrix_x4(sa, ldmatrix_a_addresses(layout, w, s, mi), False) for mi in range(2)]
                        bf = [_ldmatrix_x4(sb, ldmatrix_b_addresses(layout, w, s, nj), True) for nj in range(2)]
                        for mi in range(2):
                            for ni in range(4):  # b0, b1 = bf[ni >> 1][2 (ni & 1)], [2 (ni & 1) + 1]
                                pair = bf[ni >> 1][:, 2 * (ni & 1) : 2 * (ni & 1) + 2]
                                _mma_m16n8k16(af[mi], pair, acc[w, mi, ni])
            for w in range(4):  # 3. registers -> c
                wm, wn = w >> 1, w & 1
                for mi in range(2):
                    for ni in range(4):
                        for t in range(32):
                            row = row0 + 32 * wm + 16 * mi + (t >> 2)
                            col = col0 + 32 * wn + 8 * ni + 2 * (t & 3)
                            c[row, col : col + 2] = acc[w, mi, ni, t, :2]
                            c[row + 8, col : col + 2] = acc[w, mi, ni, t, 2:]
    return c


def test_the_sources_fragment_indexing_is_the_simulated_one() -> None:
    for line in (
        ': "r"(sa + L::off(32 * wm + 16 * mi + (lane & 15), 2 * s + (lane >> 4)))',
        ': "r"(sb + L::off(16 * s + (lane & 15), 4 * wn + 2 * nj + (lane >> 4)))',
        "const unsigned b0 = bf[ni >> 1][2 * (ni & 1)], b1 = bf[ni >> 1][2 * (ni & 1) + 1];",
        "const int row = row0 + 32 * wm + 16 * mi + (lane >> 2), col = col0 + 32 * wn + 8 * ni + 2 * (lane & 3);",
        "const int r = 16 * i + (t >> 3), ch = t & 7;",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    ):
        assert line in SOURCE, line


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_simulated_kernel_multiplies(layout: str) -> None:
    size = {"m": 64, "k": 128, "n": 128}
    inputs = FAMILY.make_inputs(np.random.default_rng(11), size)
    got = _simulate(layout, inputs["a"], inputs["b"])
    FAMILY.verify(FAMILY.variants[0], got, FAMILY.reference(inputs, size))


# --- the tolerance ----------------------------------------------------------------------------


def _toward_zero(exact: np.ndarray) -> np.ndarray:
    """float64 values to float32, rounded toward zero (as the tensor cores align and add)."""
    rounded = exact.astype(np.float32)
    over = np.abs(rounded.astype(np.float64)) > np.abs(exact)
    return np.where(over, np.nextafter(rounded, np.float32(0)), rounded)


def test_tolerance_covers_tensor_core_rounding_at_default_k() -> None:
    """The kernel's sums at k = 2048, every one of the 128 mma steps rounding toward zero in fp32
    (the worst, a bias of up to an ulp a step), pass; the same missing one 16-wide step fail."""
    size = {"m": 32, "k": FAMILY.size()["k"], "n": 256}
    inputs = FAMILY.make_inputs(np.random.default_rng(3), size)
    a, b = inputs["a"].astype(np.float64), inputs["b"].astype(np.float64)
    acc = np.zeros((32, 256), np.float32)
    for k0 in range(0, size["k"], 16):
        acc = _toward_zero(acc.astype(np.float64) + a[:, k0 : k0 + 16] @ b[k0 : k0 + 16])
    expected = FAMILY.reference(inputs, size)
    FAMILY.verify(FAMILY.variants[0], acc, expected)
    missing = acc - (a[:, 16:32] @ b[16:32]).astype(np.float32)
    with pytest.raises(VerificationError, match=r"tensor_matmul/conflict: wrong result at index"):
        FAMILY.verify(FAMILY.variants[0], missing, expected)


# --- the family's contract --------------------------------------------------------------------


def test_sizes_flops_and_bytes() -> None:
    assert FAMILY.size() == {"m": 2048, "k": 2048, "n": 2048}
    assert FAMILY.size(small=True) == {"m": 192, "k": 256, "n": 128}
    assert FAMILY.min_flops is not None and FAMILY.min_flops(FAMILY.size()) == 2 * 2048**3
    assert FAMILY.min_bytes is not None and FAMILY.min_bytes(FAMILY.size()) == 2 * 2 * 2048**2 + 4 * 2048**2
    assert FAMILY.min_flops(FAMILY.size()) / FAMILY.min_bytes(FAMILY.size()) == 512  # FLOP/B, the docstring's
    FAMILY.check_size({"m": 64, "k": 64, "n": 64})
    with pytest.raises(ConfigError, match=r"^tensor_matmul: k=100 is not a multiple of 64 \(the kernels move"):
        FAMILY.check_size({"m": 64, "k": 100, "n": 64})
    with pytest.raises(ConfigError, match="exceed the kernels' 32-bit int arguments"):
        FAMILY.check_size({"m": 2**16, "k": 2**16, "n": 64})
    with pytest.raises(ConfigError, match="exceeds 65535 blocks in y"):
        FAMILY.check_size({"m": 64 * 65536, "k": 64, "n": 64})


def test_needs_ampere_and_says_why() -> None:
    assert FAMILY.min_compute_capability == (8, 0)
    assert FAMILY.requirement() == "needs compute capability 8.0 or newer (mma.sync.m16n8k16 on fp16)"
    assert FAMILY.unsupported_on((7, 5)) == (
        "needs compute capability 8.0 or newer (mma.sync.m16n8k16 on fp16); this GPU is 7.5"
    )
    assert FAMILY.unsupported_on((8, 0)) is None and FAMILY.unsupported_on((9, 0)) is None


def test_memlens_list_shows_the_family(capsys) -> None:
    assert main(["list", str(KERNELS), "-k", "^tensor_matmul/", "--wide"]) == 0
    out = capsys.readouterr().out
    for text in (
        "tensor_matmul",
        "conflict",
        "(baseline)",
        "padded",
        "swizzled",
        "58,720,256",
        "needs compute capability 8.0",
    ):
        assert text in out, text
    assert out.count("tensor_matmul │") == 3  # a row a variant
