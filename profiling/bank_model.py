"""A pure-Python model of shared-memory banks: how many wavefronts one warp-wide access takes.

The model (Volta to Hopper, as the CUDA programming guide and ncu's counters describe it):

- Shared memory is 32 banks of 4 bytes; the 4-byte word at byte address `a` lies in bank
  `(a // 4) % 32`.
- An access of `width` bytes per thread (4, 8 or 16) is served in groups of lanes that together
  ask for at most 128 bytes: the whole warp for 4-byte accesses, each half-warp (lanes 0-15,
  16-31) for 8-byte accesses, each quarter-warp (8 lanes) for 16-byte accesses.
- Within a group, lanes reading the same word share it (broadcast); distinct words in one bank
  are served one per wavefront. A group takes as many wavefronts as the largest number of
  distinct words asked of any one bank; the access takes the sum over groups with an active lane.
- The ideal is one wavefront per 32 distinct words per active group (at least one). Wavefronts
  beyond the ideal are the excess that ncu reports as
  `memory_l1_wavefronts_shared - memory_l1_wavefronts_shared_ideal`.

The model predicts the exact counts measured on an H200 for this suite's kernels (recorded in
tests/fixtures/nvidia_h200/suite.results.json by tests/fixtures/record.sh): the transpose's column
read of `tile[32][32]` takes 32 wavefronts (31 excess) and the Numba article's matmul takes 96
wavefronts per 16-wide tile and warp against an ideal of 34 (its `sA[tx, j]` reads compile to
16-byte loads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .errors import ConfigError
from .swizzle import swizzle

BANKS = 32
BANK_BYTES = 4
WARP_SIZE = 32
WIDTHS = (4, 8, 16)

Addresses = Sequence["int | None"]  # byte address per lane; None for an inactive lane


def _groups(addresses: Addresses, width: int) -> list[list[int]]:
    if width not in WIDTHS:
        raise ConfigError(f"bank model: access width {width} bytes is not one of {WIDTHS}")
    if len(addresses) > WARP_SIZE:
        raise ConfigError(f"bank model: {len(addresses)} addresses given for a warp of {WARP_SIZE} lanes")
    for lane, address in enumerate(addresses):
        if address is not None and (address < 0 or address % width):
            raise ConfigError(f"bank model: lane {lane} address {address} is not a {width}-byte aligned address")
    lanes_per_group = WARP_SIZE * BANK_BYTES // width
    groups = []
    for start in range(0, WARP_SIZE, lanes_per_group):
        active = [a for a in addresses[start : start + lanes_per_group] if a is not None]
        if active:
            groups.append(active)
    return groups


def _words(group: list[int], width: int) -> set[int]:
    return {a // BANK_BYTES + k for a in group for k in range(width // BANK_BYTES)}


def wavefronts(addresses: Addresses, width: int = 4) -> int:
    """Wavefronts that one warp-wide shared-memory access of `width` bytes per lane takes."""
    total = 0
    for group in _groups(addresses, width):
        per_bank: dict[int, int] = {}
        for word in _words(group, width):
            per_bank[word % BANKS] = per_bank.get(word % BANKS, 0) + 1
        total += max(per_bank.values())
    return total


def ideal_wavefronts(addresses: Addresses, width: int = 4) -> int:
    """Wavefronts the same access would take with no bank conflict."""
    return sum(-(-len(_words(group, width)) // BANKS) for group in _groups(addresses, width))


def excess_wavefronts(addresses: Addresses, width: int = 4) -> int:
    """Wavefronts caused by bank conflicts: wavefronts minus ideal."""
    return wavefronts(addresses, width) - ideal_wavefronts(addresses, width)


# --- Address lists for the suite's access patterns -------------------------------------------


def warp_threads(block: tuple[int, int], warp: int = 0) -> list[tuple[int, int]]:
    """(threadIdx.x, threadIdx.y) of each lane of warp `warp` in a 2-D block (x varies fastest)."""
    block_x, block_y = block
    first = warp * WARP_SIZE
    return [(t % block_x, t // block_x) for t in range(first, min(first + WARP_SIZE, block_x * block_y))]


def array_addresses(
    threads: Sequence[tuple[int, int]],
    element: Callable[[int, int], tuple[int, int]],
    row_elems: int,
    elem_bytes: int = 4,
) -> list[int]:
    """Byte addresses in a row-major `T array[][row_elems]` of the element [row][col] that
    `element(tx, ty)` names for each thread."""
    addresses = []
    for tx, ty in threads:
        row, col = element(tx, ty)
        addresses.append((row * row_elems + col) * elem_bytes)
    return addresses


# The transpose's three tiles: (floats per row, swizzled).
TRANSPOSE_TILE = 32
TRANSPOSE_BLOCK = (32, 8)
TRANSPOSE_LAYOUTS = {"conflict": (32, False), "padded": (33, False), "swizzled": (32, True)}


def _tile_column(layout: str) -> Callable[[int, int], int]:
    if layout not in TRANSPOSE_LAYOUTS:
        raise ConfigError(f"bank model: unknown transpose layout {layout!r}; one of {sorted(TRANSPOSE_LAYOUTS)}")
    stride, swizzled = TRANSPOSE_LAYOUTS[layout]
    if swizzled:
        return lambda row, col: swizzle(row, col, stride, 4)
    return lambda row, col: col


def transpose_tile_access(layout: str, phase: str, row: int = 0) -> list[int]:
    """Addresses one warp of the transpose touches in its shared tile.

    phase "store": the warp writes tile row `row` (tile[row][tx]); phase "load": it reads tile
    column `row` (tile[tx][row]), which is where the layouts differ.
    """
    column = _tile_column(layout)
    stride = TRANSPOSE_LAYOUTS[layout][0]
    lanes = range(TRANSPOSE_TILE)
    if phase == "store":
        return [(row * stride + column(row, tx)) * 4 for tx in lanes]
    if phase == "load":
        return [(tx * stride + column(tx, row)) * 4 for tx in lanes]
    raise ConfigError(f"bank model: phase {phase!r} must be 'store' or 'load'")


# The Numba matmul tiles: 16x16 float32, block (16, 16). The article indexes sA[tx, ty] (tx,
# the fastest thread index, picks the row); the corrected kernel indexes sA[ty, tx].
MATMUL_TILE = 16
MATMUL_ORDERS = ("tx_ty", "ty_tx")


def _matmul_threads(order: str, warp: int) -> list[tuple[int, int]]:
    if order not in MATMUL_ORDERS:
        raise ConfigError(f"bank model: matmul index order {order!r} must be one of {MATMUL_ORDERS}")
    return warp_threads((MATMUL_TILE, MATMUL_TILE), warp)


def matmul_tile_store(order: str, warp: int = 0) -> list[int]:
    """Addresses of the tile store sA[tx, ty] ("tx_ty") or sA[ty, tx] ("ty_tx") by one warp."""
    threads = _matmul_threads(order, warp)
    element = (lambda tx, ty: (tx, ty)) if order == "tx_ty" else (lambda tx, ty: (ty, tx))
    return array_addresses(threads, element, MATMUL_TILE)


def matmul_row_read(order: str, j: int = 0, warp: int = 0) -> list[int]:
    """Addresses of the inner-loop read of sA: sA[tx, j] ("tx_ty") or sA[ty, j] ("ty_tx").
    With j a multiple of 4 the same list is the start of a 16-byte read of sA[., j:j+4]."""
    threads = _matmul_threads(order, warp)
    element = (lambda tx, ty: (tx, j)) if order == "tx_ty" else (lambda tx, ty: (ty, j))
    return array_addresses(threads, element, MATMUL_TILE)


def matmul_column_read(order: str, j: int = 0, warp: int = 0) -> list[int]:
    """Addresses of the inner-loop read of sB: sB[j, ty] ("tx_ty") or sB[j, tx] ("ty_tx")."""
    threads = _matmul_threads(order, warp)
    element = (lambda tx, ty: (j, ty)) if order == "tx_ty" else (lambda tx, ty: (j, tx))
    return array_addresses(threads, element, MATMUL_TILE)


def matmul_tile_wavefronts(order: str, warp: int = 0, vector_bytes: int = 16) -> tuple[int, int]:
    """(wavefronts, ideal) one warp spends on shared memory per 16-wide tile of k: two tile
    stores, the sA row reads as `vector_bytes`-wide loads (the compiler merges sA[., j:j+4]) and
    16 scalar sB reads."""
    accesses = [(matmul_tile_store(order, warp), 4)] * 2
    step = vector_bytes // 4
    accesses += [(matmul_row_read(order, j, warp), vector_bytes) for j in range(0, MATMUL_TILE, step)]
    accesses += [(matmul_column_read(order, j, warp), 4) for j in range(MATMUL_TILE)]
    return (
        sum(wavefronts(a, w) for a, w in accesses),
        sum(ideal_wavefronts(a, w) for a, w in accesses),
    )
