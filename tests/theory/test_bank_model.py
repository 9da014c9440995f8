"""The shared-memory bank model against hand-computed cases and the H200 measurements recorded in
tests/fixtures/nvidia_h200/suite.results.json (8192^2 transpose, 2048^3 Numba matmul)."""

from __future__ import annotations

import pytest

from memlens.errors import ConfigError
from memlens.theory import bank_model as bm


def test_distinct_banks_take_one_wavefront() -> None:
    assert bm.wavefronts([4 * lane for lane in range(32)]) == 1
    assert bm.excess_wavefronts([4 * lane for lane in range(32)]) == 0


def test_same_word_broadcasts() -> None:
    assert bm.wavefronts([128] * 32) == 1
    # two words per bank, each read by 16 lanes: 2 wavefronts, not 32
    assert bm.wavefronts([0] * 16 + [128] * 16) == 2


def test_stride_of_32_words_is_a_32_way_conflict() -> None:
    assert bm.wavefronts([128 * lane for lane in range(32)]) == 32
    assert bm.ideal_wavefronts([128 * lane for lane in range(32)]) == 1


def test_inactive_lanes_are_ignored() -> None:
    addresses = [128 * lane if lane < 4 else None for lane in range(32)]
    assert bm.wavefronts(addresses) == 4
    assert bm.wavefronts([None] * 32) == 0


def test_wide_accesses_go_by_half_and_quarter_warp() -> None:
    contiguous8 = [8 * lane for lane in range(32)]
    contiguous16 = [16 * lane for lane in range(32)]
    assert bm.wavefronts(contiguous8, 8) == bm.ideal_wavefronts(contiguous8, 8) == 2
    assert bm.wavefronts(contiguous16, 16) == bm.ideal_wavefronts(contiguous16, 16) == 4
    # 16-byte reads 64 bytes apart: in each quarter-warp, 4 lanes share banks 0-3 and 4 lanes 16-19
    assert bm.wavefronts([64 * lane for lane in range(32)], 16) == 4 * 4


@pytest.mark.parametrize(
    ("addresses", "width"),
    [([2], 4), ([8] * 33, 4), ([4], 8), ([0], 3), ([-4], 4)],
)
def test_bad_access_raises_config_error(addresses: list[int], width: int) -> None:
    with pytest.raises(ConfigError, match="bank model"):
        bm.wavefronts(addresses, width)


@pytest.mark.parametrize("row", [0, 7, 31])
def test_transpose_column_read(row: int) -> None:
    assert bm.wavefronts(bm.transpose_tile_access("conflict", "load", row)) == 32
    assert bm.wavefronts(bm.transpose_tile_access("padded", "load", row)) == 1
    assert bm.wavefronts(bm.transpose_tile_access("swizzled", "load", row)) == 1


@pytest.mark.parametrize("layout", sorted(bm.TRANSPOSE_LAYOUTS))
def test_transpose_row_write_is_conflict_free(layout: str) -> None:
    assert all(bm.wavefronts(bm.transpose_tile_access(layout, "store", row)) == 1 for row in range(32))


def test_transpose_excess_matches_the_h200() -> None:
    # 8192 x 8192 with 32x32 tiles: one column read per 32 elements, 31 excess each.
    column_reads = 8192 * 8192 // 32
    excess = bm.excess_wavefronts(bm.transpose_tile_access("conflict", "load", 0))
    assert excess * column_reads == 65_011_712


def test_numba_article_indexing_conflicts() -> None:
    assert bm.wavefronts(bm.matmul_tile_store("tx_ty")) == 8
    assert bm.wavefronts(bm.matmul_row_read("tx_ty", 0)) == 8
    assert bm.wavefronts(bm.matmul_row_read("tx_ty", 0), 16) == 16  # LDS.128 of sA[tx, 0:4]
    assert bm.wavefronts(bm.matmul_column_read("tx_ty", 3)) == 1  # sB[j, ty]: broadcast


def test_corrected_indexing_is_conflict_free() -> None:
    assert bm.wavefronts(bm.matmul_tile_store("ty_tx")) == 1
    assert bm.wavefronts(bm.matmul_row_read("ty_tx", 0)) == 1
    assert bm.excess_wavefronts(bm.matmul_row_read("ty_tx", 0), 16) == 0
    assert bm.wavefronts(bm.matmul_column_read("ty_tx", 3)) == 1
    for warp in range(8):
        assert bm.matmul_tile_wavefronts("ty_tx", warp) == (34, 34)


def test_numba_article_matmul_matches_the_h200() -> None:
    # Per warp and 16-wide tile: 2 STS, 4 LDS.128 of sA, 16 LDS of sB (SASS of the kernel).
    assert bm.matmul_tile_wavefronts("tx_ty") == (96, 34)
    warps, tiles = 2048 * 2048 // 32, 2048 // 16
    wavefronts, ideal = (count * warps * tiles for count in bm.matmul_tile_wavefronts("tx_ty"))
    assert (wavefronts, ideal) == (1_610_612_736, 570_425_344)


def test_unknown_pattern_names_raise() -> None:
    with pytest.raises(ConfigError):
        bm.transpose_tile_access("diagonal", "load")
    with pytest.raises(ConfigError):
        bm.transpose_tile_access("padded", "sideways")
    with pytest.raises(ConfigError):
        bm.matmul_tile_store("xy")
