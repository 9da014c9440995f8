"""The general XOR swizzle of a shared-memory array `T array[][NX]`, after the shared-memory
swizzling article (Lei Mao, "CUDA Shared Memory Swizzling").

The article's formula, for an element [y][x] of T array[][NX] with a chunk type TC
(sizeof(TC) = 2^k bytes, a whole number of T) and a swizzle size NX * sizeof(T) == SWIZZLE_SIZE:

    i_chunk     = (y * NX + x) * sizeof(T) / sizeof(TC)
    y_chunk     = i_chunk / (SWIZZLE_SIZE / sizeof(TC))
    x_chunk     = i_chunk % (SWIZZLE_SIZE / sizeof(TC))
    x_chunk_swz = y_chunk ^ x_chunk
    x_swz       = x_chunk_swz * sizeof(TC) / sizeof(T) % NX + x % (sizeof(TC) / sizeof(T))

Constraints: SWIZZLE_SIZE is a power of two of at least 32 bytes; sizeof(T) and sizeof(TC) are
powers of two with sizeof(T) <= sizeof(TC) <= SWIZZLE_SIZE. This module also accepts rows
holding several swizzle lines (NX * sizeof(T) a multiple of SWIZZLE_SIZE): each line of a row
is swizzled with the row's key y, so that a column read over consecutive rows stays
conflict-free (keying by the line's linear index, as an XOR of address bits would, repeats
keys and conflicts). With one line per row the result is the article's.

And lines holding several rows (SWIZZLE_SIZE a multiple of NX * sizeof(T), `swizzled_offset`):
the article's formula as written, over the linear chunk index, with y_chunk the line's index.
A chunk may then move to another row of its line, so the result is a byte offset, not a column.
This is the form for 16-byte accesses to narrow rows (a 32-half fp16 tile row is 64 bytes): a
quarter-warp's LDS.128 or cp.async, or one 8x8 matrix of ldmatrix/stmatrix, is served 128 bytes
at a time, and a 128-byte line spanning two rows is what one such phase touches
(profiling/theory/bank_model.py: `fp16_transpose_figures`).

The transpose kernels' `tile[y][x ^ y]` is the case T = TC = float, NX = 32 (SWIZZLE_SIZE 128).
"""

from __future__ import annotations

from memlens.errors import ConfigError

MIN_SWIZZLE_BYTES = 32


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def check_swizzle(nx: int, elem_bytes: int, chunk_bytes: int, swizzle_bytes: int) -> None:
    """Raise ConfigError, in one line, unless the parameters fit the article's constraints."""
    if not _is_power_of_two(elem_bytes):
        raise ConfigError(f"swizzle: element size {elem_bytes} bytes must be a power of two")
    if not _is_power_of_two(chunk_bytes) or chunk_bytes < elem_bytes:
        raise ConfigError(
            f"swizzle: chunk size {chunk_bytes} bytes must be a power of two, at least the element size {elem_bytes}"
        )
    if not _is_power_of_two(swizzle_bytes) or swizzle_bytes < MIN_SWIZZLE_BYTES:
        raise ConfigError(
            f"swizzle: swizzle size {swizzle_bytes} bytes must be a power of two of at least {MIN_SWIZZLE_BYTES}"
        )
    if chunk_bytes > swizzle_bytes:
        raise ConfigError(f"swizzle: chunk size {chunk_bytes} bytes exceeds the swizzle size {swizzle_bytes}")
    if nx <= 0 or (nx * elem_bytes) % swizzle_bytes:
        raise ConfigError(
            f"swizzle: a row of NX={nx} elements of {elem_bytes} bytes ({nx * elem_bytes} bytes)"
            f" must be a positive multiple of the swizzle size {swizzle_bytes}"
        )


def check_line_of_rows(nx: int, elem_bytes: int, chunk_bytes: int, swizzle_bytes: int) -> None:
    """Raise ConfigError, in one line, unless the parameters fit the article's constraints with
    rows of whole chunks and either rows of whole lines or lines of whole rows."""
    row_bytes = nx * elem_bytes
    if nx <= 0 or row_bytes % swizzle_bytes == 0:
        check_swizzle(nx, elem_bytes, chunk_bytes, swizzle_bytes)
        return
    check_swizzle(swizzle_bytes // elem_bytes, elem_bytes, chunk_bytes, swizzle_bytes)  # the line as one row
    if swizzle_bytes % row_bytes or row_bytes % chunk_bytes:
        raise ConfigError(
            f"swizzle: a row of NX={nx} elements of {elem_bytes} bytes ({row_bytes} bytes) must be a multiple"
            f" or a divisor of the swizzle size {swizzle_bytes}, and a multiple of the chunk size {chunk_bytes}"
        )


def swizzle(
    y: int,
    x: int,
    nx: int,
    elem_bytes: int,
    chunk_bytes: int | None = None,
    swizzle_bytes: int | None = None,
) -> int:
    """Column where element [y][x] of `T array[][nx]` is stored once swizzled (its row stays y).

    `elem_bytes` is sizeof(T); `chunk_bytes` is sizeof(TC), the unit that moves as a whole
    (default: one element); `swizzle_bytes` is SWIZZLE_SIZE (default: one row, nx * elem_bytes).
    The map is one-to-one within each row and is its own inverse.
    """
    chunk_bytes = elem_bytes if chunk_bytes is None else chunk_bytes
    swizzle_bytes = nx * elem_bytes if swizzle_bytes is None else swizzle_bytes
    if nx > 0 and swizzle_bytes > nx * elem_bytes:
        raise ConfigError(
            f"swizzle: a {swizzle_bytes}-byte line holds several rows of {nx * elem_bytes} bytes and moves chunks"
            " between them: use swizzled_offset"
        )
    check_swizzle(nx, elem_bytes, chunk_bytes, swizzle_bytes)
    if y < 0 or not 0 <= x < nx:
        raise ConfigError(f"swizzle: index [{y}][{x}] is outside an array of rows of {nx} elements")
    chunks_per_line = swizzle_bytes // chunk_bytes
    line, byte_in_line = divmod(x * elem_bytes, swizzle_bytes)
    x_chunk, byte_in_chunk = divmod(byte_in_line, chunk_bytes)
    # The article's y_chunk is y when a row is one line; its `% NX` is the `% chunks_per_line`.
    x_chunk_swz = (y % chunks_per_line) ^ x_chunk
    return (line * swizzle_bytes + x_chunk_swz * chunk_bytes + byte_in_chunk) // elem_bytes


def swizzled_row(
    y: int, nx: int, elem_bytes: int, chunk_bytes: int | None = None, swizzle_bytes: int | None = None
) -> list[int]:
    """Stored column of every element of row y, in logical column order."""
    return [swizzle(y, x, nx, elem_bytes, chunk_bytes, swizzle_bytes) for x in range(nx)]


def swizzled_offset(y: int, x: int, nx: int, elem_bytes: int, chunk_bytes: int, swizzle_bytes: int) -> int:
    """Byte offset, from the array's start, where element [y][x] of `T array[][nx]` is stored once
    swizzled, for rows of whole lines (as `swizzle`) or lines of whole rows (the article's formula
    over the linear chunk index: a chunk may move to another row of its line). One-to-one over
    the array, and each chunk stays whole."""
    check_line_of_rows(nx, elem_bytes, chunk_bytes, swizzle_bytes)
    row_bytes = nx * elem_bytes
    if row_bytes % swizzle_bytes == 0:
        return y * row_bytes + swizzle(y, x, nx, elem_bytes, chunk_bytes, swizzle_bytes) * elem_bytes
    if y < 0 or not 0 <= x < nx:
        raise ConfigError(f"swizzle: index [{y}][{x}] is outside an array of rows of {nx} elements")
    chunks_per_line = swizzle_bytes // chunk_bytes
    i_chunk, byte_in_chunk = divmod((y * nx + x) * elem_bytes, chunk_bytes)
    y_chunk, x_chunk = divmod(i_chunk, chunks_per_line)
    x_chunk_swz = (y_chunk % chunks_per_line) ^ x_chunk
    return (y_chunk * chunks_per_line + x_chunk_swz) * chunk_bytes + byte_in_chunk
