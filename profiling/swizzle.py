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

The transpose kernels' `tile[y][x ^ y]` is the case T = TC = float, NX = 32 (SWIZZLE_SIZE 128).
"""

from __future__ import annotations

from .errors import ConfigError

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
