"""The general XOR swizzle: one-to-one, chunks kept whole, conflict-free columns, and the
transpose kernel's `c ^ r` as its special case."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlens.errors import ConfigError
from memlens.theory import bank_model
from memlens.theory.swizzle import swizzle, swizzled_offset, swizzled_row
from tests.support.fuzz import fuzz

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


@st.composite
def layouts(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    """(rows, nx, elem_bytes, chunk_bytes, swizzle_bytes) within the article's constraints."""
    swizzle_bytes = 2 ** draw(st.integers(5, 10))  # 32 .. 1024 bytes
    elem_bytes = 2 ** draw(st.integers(0, 4))  # 1 .. 16 bytes
    chunk_bytes = 2 ** draw(st.integers(elem_bytes.bit_length() - 1, swizzle_bytes.bit_length() - 1))
    nx = swizzle_bytes // elem_bytes * draw(st.integers(1, 3))  # a row holds 1 to 3 swizzle lines
    rows = draw(st.integers(1, 48))
    return rows, nx, elem_bytes, chunk_bytes, swizzle_bytes


@fuzz(150)
@given(layouts())
def test_one_to_one_over_the_whole_tile(layout: tuple[int, int, int, int, int]) -> None:
    rows, nx, elem_bytes, chunk_bytes, swizzle_bytes = layout
    for y in range(rows):
        assert sorted(swizzled_row(y, nx, elem_bytes, chunk_bytes, swizzle_bytes)) == list(range(nx))


@fuzz(150)
@given(layouts(), st.data())
def test_involution_and_chunks_stay_whole(layout: tuple[int, int, int, int, int], data: st.DataObject) -> None:
    rows, nx, elem_bytes, chunk_bytes, swizzle_bytes = layout
    y = data.draw(st.integers(0, rows - 1))
    x = data.draw(st.integers(0, nx - 1))
    stored = swizzle(y, x, nx, elem_bytes, chunk_bytes, swizzle_bytes)
    assert swizzle(y, stored, nx, elem_bytes, chunk_bytes, swizzle_bytes) == x
    per_chunk = chunk_bytes // elem_bytes
    assert stored % per_chunk == x % per_chunk  # the element keeps its place inside its chunk
    line_elems = swizzle_bytes // elem_bytes
    assert stored // line_elems == x // line_elems  # and its swizzle line


@fuzz(60)
@given(st.sampled_from([4, 8, 16]), st.integers(1, 4), st.data())
def test_a_column_of_chunks_is_conflict_free(chunk_bytes: int, lines: int, data: st.DataObject) -> None:
    # 128-byte swizzle lines of floats: the chunks of one logical chunk column, read by one
    # bank-model group of lanes (one per row), land in distinct banks.
    nx = 32 * lines
    lanes = 128 // chunk_bytes
    chunk_col = data.draw(st.integers(0, nx * 4 // chunk_bytes - 1))
    x = chunk_col * chunk_bytes // 4
    addresses = [(y * nx + swizzle(y, x, nx, 4, chunk_bytes, 128)) * 4 for y in range(lanes)]
    assert bank_model.excess_wavefronts(addresses, chunk_bytes) == 0


def article_formula(y: int, x: int, nx: int, size_t: int, size_tc: int) -> int:
    """The article's steps verbatim, with SWIZZLE_SIZE = NX * sizeof(T)."""
    swizzle_size = nx * size_t
    i_chunk = (y * nx + x) * size_t // size_tc
    y_chunk = i_chunk // (swizzle_size // size_tc)
    x_chunk = i_chunk % (swizzle_size // size_tc)
    x_chunk_swz = y_chunk ^ x_chunk
    return x_chunk_swz * size_tc // size_t % nx + x % (size_tc // size_t)


@fuzz(150)
@given(layouts(), st.data())
def test_one_line_rows_follow_the_article(layout: tuple[int, int, int, int, int], data: st.DataObject) -> None:
    rows, _, elem_bytes, chunk_bytes, swizzle_bytes = layout
    nx = swizzle_bytes // elem_bytes
    y = data.draw(st.integers(0, 4 * rows))
    x = data.draw(st.integers(0, nx - 1))
    assert swizzle(y, x, nx, elem_bytes, chunk_bytes) == article_formula(y, x, nx, elem_bytes, chunk_bytes)


def test_transpose_xor_is_the_general_formula() -> None:
    for y in range(32):
        for x in range(32):
            assert swizzle(y, x, nx=32, elem_bytes=4) == x ^ y
    assert "(c ^ r)" in (KERNELS / "transpose.cu").read_text()


def test_article_example_with_16_byte_chunks() -> None:
    # float array[][32] moved in float4 chunks: row y swaps chunk x//4 with chunk (x//4) ^ (y % 8)
    assert swizzled_row(1, 32, 4, 16)[:8] == [4, 5, 6, 7, 0, 1, 2, 3]
    assert swizzle(9, 0, 32, 4, 16) == 4  # y_chunk 9 wraps to 1 within the 8 chunks of a row


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 0, 32, 3), "element size 3"),
        ((0, 0, 32, 4, 2), "chunk size 2"),
        ((0, 0, 32, 4, 12), "chunk size 12"),
        ((0, 0, 4, 4), "swizzle size 16"),
        ((0, 0, 24, 4), "swizzle size 96"),
        ((0, 0, 32, 4, 256, 128), "exceeds the swizzle size"),
        ((0, 0, 40, 4, 4, 128), "multiple of the swizzle size"),
        ((0, 32, 32, 4), r"index \[0\]\[32\]"),
        ((-1, 0, 32, 4), r"index \[-1\]\[0\]"),
    ],
)
def test_invalid_parameters_raise_config_error(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        swizzle(*args)


# --- lines of several rows (swizzled_offset) ------------------------------------------------------


@st.composite
def lines_of_rows(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    """(rows, nx, elem_bytes, chunk_bytes, swizzle_bytes) with a swizzle line of 2 to 8 whole rows."""
    swizzle_bytes = 2 ** draw(st.integers(6, 10))  # 64 .. 1024 bytes
    rows_per_line = 2 ** draw(st.integers(1, 3))
    row_bytes = swizzle_bytes // rows_per_line
    elem_bytes = 2 ** draw(st.integers(0, min(4, row_bytes.bit_length() - 1)))
    chunk_bytes = 2 ** draw(st.integers(elem_bytes.bit_length() - 1, row_bytes.bit_length() - 1))
    rows = rows_per_line * draw(st.integers(1, 8))
    return rows, row_bytes // elem_bytes, elem_bytes, chunk_bytes, swizzle_bytes


@fuzz(120)
@given(lines_of_rows())
def test_lines_of_rows_one_to_one_and_chunks_whole(layout: tuple[int, int, int, int, int]) -> None:
    rows, nx, elem_bytes, chunk_bytes, swizzle_bytes = layout
    offsets = {
        (y, x): swizzled_offset(y, x, nx, elem_bytes, chunk_bytes, swizzle_bytes)
        for y in range(rows)
        for x in range(nx)
    }
    assert sorted(offsets.values()) == [elem_bytes * i for i in range(rows * nx)]
    for (y, x), offset in offsets.items():
        logical = (y * nx + x) * elem_bytes
        assert offset % chunk_bytes == logical % chunk_bytes  # the element keeps its place in its chunk
        assert offset // swizzle_bytes == logical // swizzle_bytes  # and its swizzle line


@fuzz(60)
@given(layouts(), st.data())
def test_offsets_of_rows_of_whole_lines_are_the_column_swizzle(layout, data: st.DataObject) -> None:
    rows, nx, elem_bytes, chunk_bytes, swizzle_bytes = layout
    y, x = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, nx - 1))
    column = swizzle(y, x, nx, elem_bytes, chunk_bytes, swizzle_bytes)
    assert swizzled_offset(y, x, nx, elem_bytes, chunk_bytes, swizzle_bytes) == (y * nx + column) * elem_bytes


def test_fp16_rows_in_128_byte_lines_are_conflict_free_for_16_byte_phases() -> None:
    # 32-half (64-byte) rows, 16-byte chunks, 128-byte lines: a quarter-warp's two rows, and an
    # 8x8 matrix's 8 rows of one chunk column, each fill the 8 bank groups once.
    def offset(row: int, chunk: int) -> int:
        return swizzled_offset(row, 8 * chunk, 32, 2, 16, 128)

    for first in range(0, 32, 2):
        assert bank_model.wavefronts([offset(first + lane // 4, lane % 4) for lane in range(8)], 16) == 1
    for first in range(0, 32, 8):
        for chunk in range(4):
            assert bank_model.wavefronts([offset(first + lane, chunk) for lane in range(8)], 16) == 1
    # keyed by the 64-byte row alone (the article's formula with one row a line): rows k and k + 4 collide
    assert bank_model.wavefronts([swizzled_offset(lane, 0, 32, 2, 16, 64) for lane in range(8)], 16) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 0, 24, 2, 16, 128), "must be a multiple or a divisor of the swizzle size 128"),
        ((0, 0, 4, 2, 16, 128), "must be a multiple or a divisor .* and a multiple of the chunk size 16"),
        ((0, 32, 32, 2, 16, 128), r"index \[0\]\[32\]"),
        ((0, 0, 32, 2, 16, 96), "swizzle size 96"),
    ],
)
def test_bad_lines_of_rows_raise_config_error(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        swizzled_offset(*args)


def test_swizzle_refuses_a_line_of_several_rows() -> None:
    with pytest.raises(ConfigError, match="holds several rows of 64 bytes and moves chunks between them"):
        swizzle(0, 0, 32, 2, 16, 128)
