"""A pure-Python model of shared-memory banks: how many wavefronts one warp-wide access takes.

The model (Volta to Hopper, as the CUDA programming guide and ncu's counters describe it):

- Shared memory is 32 banks of 4 bytes; the 4-byte word at byte address `a` lies in bank
  `(a // 4) % 32`.
- An access of `width` bytes per thread (1, 2, 4, 8 or 16) is served in groups of lanes that
  together ask for at most 128 bytes: the whole warp for accesses of up to 4 bytes, each half-warp
  (lanes 0-15, 16-31) for 8-byte accesses, each quarter-warp (8 lanes) for 16-byte accesses. A
  1- or 2-byte lane asks for the word that holds its bytes: lanes on one word share it.
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
from dataclasses import dataclass

from memlens.errors import ConfigError
from memlens.theory.swizzle import swizzle, swizzled_offset

BANKS = 32
BANK_BYTES = 4
WARP_SIZE = 32
WIDTHS = (1, 2, 4, 8, 16)
PHASE_BYTES = 128  # what one phase of lanes asks for at most: 32 banks of 4 bytes

Addresses = Sequence["int | None"]  # byte address per lane; None for an inactive lane


@dataclass(frozen=True)
class Phase:
    """One group of lanes served together, wavefront by wavefront: `rows[w][bank]` are the lanes whose
    word bank `bank` delivers in wavefront w (lanes on one word share it), None where the bank is idle.
    A bank's distinct words go to successive wavefronts, lowest word first."""

    lanes: tuple[int, ...]  # every lane of the phase, active or not
    rows: tuple[tuple[tuple[int, ...] | None, ...], ...]
    ideal: int  # one wavefront per 32 distinct words (at least one)

    @property
    def wavefronts(self) -> int:
        return len(self.rows)


def lanes_per_phase(width: int) -> int:
    """Lanes served together: the whole warp up to 4 bytes a lane, a half-warp for 8, a quarter for 16."""
    return min(WARP_SIZE, PHASE_BYTES // width)


def _check(addresses: Addresses, width: int) -> None:
    if width not in WIDTHS:
        raise ConfigError(f"bank model: access width {width} bytes is not one of {WIDTHS}")
    if len(addresses) > WARP_SIZE:
        raise ConfigError(f"bank model: {len(addresses)} addresses given for a warp of {WARP_SIZE} lanes")
    for lane, address in enumerate(addresses):
        if address is not None and (address < 0 or address % width):
            raise ConfigError(f"bank model: lane {lane} address {address} is not a {width}-byte aligned address")


def lane_words(address: int, width: int) -> range:
    """The 4-byte words an access of `width` bytes at `address` touches (a sub-word access: one)."""
    return range(address // BANK_BYTES, (address + width - 1) // BANK_BYTES + 1)


def serve(addresses: Addresses, width: int = 4, group: int | None = None) -> list[Phase]:
    """The phases (lanes `group` at a time; by default as the width decides) that have an active lane."""
    _check(addresses, width)
    group = lanes_per_phase(width) if group is None else group
    phases = []
    for start in range(0, len(addresses), group):
        lanes = tuple(range(start, min(start + group, len(addresses))))
        word_lanes: dict[int, list[int]] = {}
        for lane in lanes:
            address = addresses[lane]
            if address is not None:
                for word in lane_words(address, width):
                    word_lanes.setdefault(word, []).append(lane)
        if not word_lanes:
            continue
        per_bank: dict[int, list[int]] = {}
        for word in sorted(word_lanes):
            per_bank.setdefault(word % BANKS, []).append(word)
        depth = max(len(words) for words in per_bank.values())
        rows = tuple(
            tuple(tuple(word_lanes[per_bank[b][w]]) if w < len(per_bank.get(b, ())) else None for b in range(BANKS))
            for w in range(depth)
        )
        phases.append(Phase(lanes, rows, -(-len(word_lanes) // BANKS)))
    return phases


def wavefronts(addresses: Addresses, width: int = 4) -> int:
    """Wavefronts that one warp-wide shared-memory access of `width` bytes per lane takes."""
    return sum(phase.wavefronts for phase in serve(addresses, width))


def ideal_wavefronts(addresses: Addresses, width: int = 4) -> int:
    """Wavefronts the same access would take with no bank conflict."""
    return sum(phase.ideal for phase in serve(addresses, width))


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


# --- Matrix instructions and cp.async ------------------------------------------------------------
# ldmatrix and stmatrix (m8n8, b16) move one, two or four 8x8 matrices of 16-bit values; each
# matrix row is 16 contiguous bytes whose address one lane gives (lanes 0-7 the rows of matrix
# 0, 8-15 of matrix 1, ...). Shared memory serves one matrix a phase: 8 row addresses, 128 bytes,
# ideally one wavefront; the rows of a matrix that fall in one 16-byte bank group (4 banks) are
# served one a wavefront. That is the 16-byte access's quarter-warp rule with 8 lanes a matrix.

MATRIX_COUNTS = (1, 2, 4)  # .x1, .x2, .x4
MATRIX_ROW_BYTES = 16
LANES_PER_MATRIX = 8


def _matrix_rows(row_addresses: Addresses, matrices: int) -> list[int | None]:
    if matrices not in MATRIX_COUNTS:
        raise ConfigError(f"bank model: ldmatrix/stmatrix move {MATRIX_COUNTS} matrices, not {matrices}")
    needed = LANES_PER_MATRIX * matrices
    if len(row_addresses) < needed:
        raise ConfigError(f"bank model: .x{matrices} needs {needed} row addresses, {len(row_addresses)} given")
    return list(row_addresses[:needed])  # the other lanes' addresses are not read


def matrix_wavefronts(row_addresses: Addresses, matrices: int = 4) -> int:
    """Wavefronts of one warp's ldmatrix or stmatrix .x`matrices`: lane i gives the address of
    row i % 8 of matrix i // 8 (16-byte aligned)."""
    return wavefronts(_matrix_rows(row_addresses, matrices), MATRIX_ROW_BYTES)


def matrix_ideal_wavefronts(row_addresses: Addresses, matrices: int = 4) -> int:
    return ideal_wavefronts(_matrix_rows(row_addresses, matrices), MATRIX_ROW_BYTES)


def matrix_excess_wavefronts(row_addresses: Addresses, matrices: int = 4) -> int:
    return matrix_wavefronts(row_addresses, matrices) - matrix_ideal_wavefronts(row_addresses, matrices)


# cp.async (LDGSTS) is not served like a store of its width. Its shared-memory writes are made as
# the data comes back from the memory system, per global 128-byte line its lanes read: on the H100
# (kernels/fp16_transpose.cu, five layouts, tests/fixtures/nvidia_h100_80gb_hbm3), a group of lanes
# reading one global line wrote its bytes in one wavefront for each 128-byte shared segment they
# touch, plus one where they start off a 32-byte boundary, however conflict-free the banks. So a
# warp reading 8 rows of 64 bytes takes 8 wavefronts against ncu's ideal of 4: 2-way, whatever the
# layout. This is fitted to those measurements, not a documented rule; CPU tests hold it to them.
CP_ASYNC_LINE_BYTES, CP_ASYNC_SEGMENT_BYTES, CP_ASYNC_ALIGN_BYTES = 128, 128, 32


def cp_async_wavefronts(shared: Addresses, global_: Sequence[int | None], size: int = 16) -> int:
    """Wavefronts of one warp's cp.async of `size` bytes a lane: lane i copies from global byte address
    `global_[i]` to shared byte address `shared[i]` (None: inactive)."""
    lines: dict[int, list[int]] = {}
    for address, source in zip(shared, global_, strict=True):
        if address is not None and source is not None:
            lines.setdefault(source // CP_ASYNC_LINE_BYTES, []).append(address)
    total = 0
    for addresses in lines.values():
        start, end = min(addresses), max(addresses) + size
        segments = (end - 1) // CP_ASYNC_SEGMENT_BYTES - start // CP_ASYNC_SEGMENT_BYTES + 1
        total += max(segments, wavefronts(addresses, size)) + (1 if start % CP_ASYNC_ALIGN_BYTES else 0)
    return total


def cp_async_excess_wavefronts(shared: Addresses, global_: Sequence[int | None], size: int = 16) -> int:
    """Wavefronts beyond ncu's ideal for the same bytes (that of a store of the width)."""
    return cp_async_wavefronts(shared, global_, size) - ideal_wavefronts(shared, size)


# --- The fp16 transpose (kernels/fp16_transpose.cu) ---------------------------------------------
# One block of 4 warps per 32x32 fp16 tile; a tile row is 4 chunks of 16 bytes and off(r, c) is
# the byte offset of chunk c of row r in a layout. Per tile and warp w, each instruction once:
#   cp.async 16 B   lane l: row 8w + l // 4, chunk l % 4, from one global 128-byte line a row
#   ldmatrix.x4     lane l: row l, chunk w                         (matrix m: rows 8m..8m+7)
#   stmatrix.x4     lane l: row 8w + l % 8, chunk l // 8           (matrix m: chunk m)
#   LDS.128         lane l: row 8w + l // 4, chunk l % 4           (quarter-warp phases: 2 rows)

Layout = Callable[[int, int], int]
FP16_ROW_ELEMS, FP16_BYTES, CHUNK_BYTES = 32, 2, 16
FP16_WARPS = 4
FP16_INSTRUCTIONS = ("cp.async", "ldmatrix", "stmatrix", "lds128")


def _xor_layout(swizzle_bytes: int) -> Layout:
    def offset(row: int, chunk: int) -> int:
        return swizzled_offset(
            row, chunk * CHUNK_BYTES // FP16_BYTES, FP16_ROW_ELEMS, FP16_BYTES, CHUNK_BYTES, swizzle_bytes
        )

    return offset


FP16_LAYOUTS: dict[str, Layout] = {
    "dense": lambda r, c: 64 * r + 16 * c,
    "pitch128": lambda r, c: 128 * r + 16 * c,
    "padded": lambda r, c: 80 * r + 16 * c,
    "xor_row": _xor_layout(64),  # the article's formula, one 64-byte row a swizzle line: chunk c ^ (r % 4)
    "xor_128b": _xor_layout(128),  # over 128-byte lines of two rows: what one phase serves
}


def fp16_layout(name: str) -> Layout:
    if name not in FP16_LAYOUTS:
        raise ConfigError(f"bank model: unknown fp16 tile layout {name!r}; one of {sorted(FP16_LAYOUTS)}")
    return FP16_LAYOUTS[name]


def fp16_transpose_access(layout: Layout | str, instruction: str, warp: int = 0) -> list[int]:
    """The 32 shared addresses (byte offsets in the buffer) that warp `warp` gives `instruction`."""
    off = fp16_layout(layout) if isinstance(layout, str) else layout
    lanes = range(WARP_SIZE)
    if instruction in ("cp.async", "lds128"):
        return [off(8 * warp + lane // 4, lane % 4) for lane in lanes]
    if instruction == "ldmatrix":
        return [off(lane, warp) for lane in lanes]
    if instruction == "stmatrix":
        return [off(8 * warp + lane % 8, lane // 8) for lane in lanes]
    raise ConfigError(f"bank model: instruction {instruction!r} is not one of {FP16_INSTRUCTIONS}")


def fp16_transpose_figures(layout: Layout | str, warp: int = 0) -> dict[str, int]:
    """Excess wavefronts of each instruction of one warp's tile (its four executions), by instruction."""
    figures = {}
    for instruction in FP16_INSTRUCTIONS:
        addresses = fp16_transpose_access(layout, instruction, warp)
        if instruction in ("ldmatrix", "stmatrix"):
            figures[instruction] = matrix_excess_wavefronts(addresses, 4)
        elif instruction == "cp.async":  # each tile row is 64 bytes of one global row: a line of its own
            rows = [8 * warp + lane // 4 for lane in range(WARP_SIZE)]
            figures[instruction] = cp_async_excess_wavefronts(addresses, [row * 4096 for row in rows])
        else:
            figures[instruction] = excess_wavefronts(addresses, CHUNK_BYTES)
    return figures


def fp16_transpose_excess(layout: Layout | str, n: int) -> int:
    """Exact excess wavefronts of the whole n x n transpose (n a multiple of 32): every warp of
    every tile, all four instructions."""
    tiles = (n // FP16_ROW_ELEMS) ** 2
    return tiles * sum(sum(fp16_transpose_figures(layout, warp).values()) for warp in range(FP16_WARPS))


# --- Paper figures of the other built-in families (their sizes as the suite names them) ----------


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def transpose_conflict_excess(rows: int, cols: int) -> int:
    """kernels/transpose.cu's transpose_conflict: each warp's column read of tile[32][32] takes one
    wavefront per active lane (31 excess for a full column: `transpose_tile_access`); in an edge
    tile only the lanes whose output column lies in the matrix read, and only the reads of output
    rows inside it happen."""
    reads = sum(min(TRANSPOSE_TILE, cols - TRANSPOSE_TILE * tile) for tile in range(_cdiv(cols, TRANSPOSE_TILE)))
    per_read = sum(min(TRANSPOSE_TILE, rows - TRANSPOSE_TILE * tile) - 1 for tile in range(_cdiv(rows, TRANSPOSE_TILE)))
    return reads * per_read


def matmul_article_excess(m: int, k: int, n: int) -> int:
    """The Numba article's matmul (sA[tx, ty]): every thread of every block takes part in every
    16-wide tile of k (edge tiles are zero-filled), each warp spending the bank model's excess a tile."""
    per_block_tile = 0
    for warp in range(MATMUL_TILE * MATMUL_TILE // WARP_SIZE):
        spent, ideal = matmul_tile_wavefronts("tx_ty", warp)
        per_block_tile += spent - ideal
    return _cdiv(m, MATMUL_TILE) * _cdiv(n, MATMUL_TILE) * _cdiv(k, MATMUL_TILE) * per_block_tile
