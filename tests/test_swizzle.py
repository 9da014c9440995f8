"""The general XOR swizzle: one-to-one, chunks kept whole, conflict-free columns, and the
transpose kernel's `c ^ r` as its special case."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profiling import bank_model
from profiling.errors import ConfigError
from profiling.swizzle import swizzle, swizzled_row

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


@st.composite
def layouts(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    """(rows, nx, elem_bytes, chunk_bytes, swizzle_bytes) within the article's constraints."""
    swizzle_bytes = 2 ** draw(st.integers(5, 10))  # 32 .. 1024 bytes
    elem_bytes = 2 ** draw(st.integers(0, 4))  # 1 .. 16 bytes
    chunk_bytes = 2 ** draw(st.integers(elem_bytes.bit_length() - 1, swizzle_bytes.bit_length() - 1))
    nx = swizzle_bytes // elem_bytes * draw(st.integers(1, 3))  # a row holds 1 to 3 swizzle lines
    rows = draw(st.integers(1, 48))
    return rows, nx, elem_bytes, chunk_bytes, swizzle_bytes


@settings(max_examples=150, deadline=None)
@given(layouts())
def test_one_to_one_over_the_whole_tile(layout: tuple[int, int, int, int, int]) -> None:
    rows, nx, elem_bytes, chunk_bytes, swizzle_bytes = layout
    for y in range(rows):
        assert sorted(swizzled_row(y, nx, elem_bytes, chunk_bytes, swizzle_bytes)) == list(range(nx))


@settings(max_examples=150, deadline=None)
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


@settings(max_examples=60, deadline=None)
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


@settings(max_examples=150, deadline=None)
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
