"""The fix of a conflicting instruction, proved on its recorded addresses (theory/bank_fix.py): the
smallest padding first, else an XOR swizzle, else "none" said so; a found fix is conflict-free on every
recorded warp (hypothesis), and the swizzle is one-to-one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memlens.model.banks_file import BankAccess, RecordedInstruction
from memlens.theory.bank_analysis import analyse
from memlens.theory.bank_fix import find_fix, find_swizzle, pad_offset, strides, swizzle_offset
from memlens.theory.recorded_banks import serve_instruction
from tests.conftest import REPO
from tests.support.fuzz import fuzz

B = 1024
LANES = range(32)


def record(warps, width=4, access="load", **fields) -> RecordedInstruction:
    return RecordedInstruction("k", 0, width, BankAccess(access), tuple(tuple(w) for w in warps), **fields)


def column_reads(columns=(0, 3, 31)):
    return [[B + 128 * lane + 4 * column for lane in LANES] for column in columns]


def test_the_transpose_column_read_is_fixed_by_one_float_of_padding():
    # rows of 128 bytes (the lanes' stride); 4 bytes after each: word 33 l + c, bank (l + c) % 32: 1.
    fix = find_fix(record(column_reads()))
    assert (fix.kind, fix.row_bytes, fix.pad_bytes, fix.base, fix.n_way_after) == ("pad", 128, 4, B, 1)
    assert fix.words == (
        "add 4 bytes after every 128-byte row: declare the tile [..][33] instead of [..][32] (4-byte elements)"
    )


def test_the_transpose_swizzle_is_col_xor_row():
    # chunk = one float, line = the 128-byte row: [row][col ^ (row % 32)], the transpose's tile[y][x ^ y].
    instruction = record(column_reads())
    fix = find_swizzle(instruction, strides(instruction))
    assert (fix.kind, fix.row_bytes, fix.chunk_bytes, fix.swizzle_bytes) == ("swizzle", 128, 4, 128)
    assert "index [row][col ^ (row % 32)]" in fix.words
    assert [fix.offset(B + 128 * row + 4 * col) for row, col in ((0, 5), (1, 5), (7, 2))] == [
        B + 4 * 5,
        B + 128 + 4 * (5 ^ 1),
        B + 7 * 128 + 4 * (2 ^ 7),
    ]


def test_the_8_byte_column_read_pads_by_one_double():
    # 256-byte rows; 4 bytes would misalign an 8-byte lane, so the smallest pad is 8: word pair 66 r + 2c,
    # banks 2 r + 2c and + 1 mod 32: 16 rows of a half-warp fill 32 banks once.
    fix = find_fix(record([[B + 256 * (lane % 16) + 16 for lane in LANES]], 8))
    assert (fix.kind, fix.row_bytes, fix.pad_bytes) == ("pad", 256, 8)
    assert "[..][33] instead of [..][32] (8-byte elements)" in fix.words


def test_ldmatrix_on_64_byte_rows_pads_by_16_bytes():
    # the fp16 transpose's "padded" layout: 80-byte rows (kernels/fp16_transpose.cu)
    fix = find_fix(record([[B + 64 * lane for lane in LANES]], 16, "ldmatrix", matrices=4))
    assert (fix.kind, fix.row_bytes, fix.pad_bytes) == ("pad", 64, 16)
    assert "[..][40] instead of [..][32] (2-byte elements)" in fix.words


def test_rows_padded_already_are_fixed_by_a_swizzle_in_place_of_the_padding():
    # fp16_transpose's padded layout: 16-byte chunk c of row r at 80 r + 16 c, thread t reading row t / 4,
    # chunk t % 4. A quarter-warp (8 lanes) reads rows 0 and 1: byte 0 and byte 128 (row 1's chunk 3) share
    # 16-byte group 0: 2-way. No pad and no swizzle of 80-byte rows serves it; rows of 64 bytes with the chunk
    # XOR the row (r * 64 + 16 * (c ^ r % 4): the suite's xor_row layout) do.
    warps = [[B + 80 * (t // 4) + 16 * (t % 4) for t in range(32 * w, 32 * w + 32)] for w in (0, 1)]
    instruction = record(warps, 16)
    assert [w.wavefronts / w.ideal for w in serve_instruction(instruction)] == [2, 2]
    fix = find_fix(instruction)
    assert (fix.kind, fix.row_bytes, fix.pad_bytes, fix.chunk_bytes, fix.swizzle_bytes) == ("unpad", 80, 16, 16, 64)
    assert fix.n_way_after == 1
    moved = fix.warps(instruction.warps)
    assert moved[0][:8] == [B + 64 * (t // 4) + 16 * ((t % 4) ^ (t // 4 % 4)) for t in range(8)]
    assert fix.words.startswith("drop the 16-byte padding of the 80-byte rows (rows of 64 bytes)")
    assert "XOR the 16-byte chunk index with the row instead: chunk c of row r at chunk c ^ (r % 4)" in fix.words


def test_the_suites_padded_fp16_transpose_load_recorded_on_the_h200_gets_that_fix():
    from memlens.model.banks_file import read_banks_file

    recorded = read_banks_file(REPO / "tests/fixtures/nvidia_h200/banks/suite.banks.json")
    (load,) = [
        i for i in recorded.instructions if i.kernel.startswith("fp16_transpose_padded") and i.access.value == "load"
    ]
    fix = find_fix(load)
    assert (fix.kind, fix.row_bytes, fix.pad_bytes, fix.chunk_bytes, fix.swizzle_bytes) == ("unpad", 80, 16, 16, 64)


def test_a_conflict_free_instruction_has_no_fix_and_a_scatter_has_none_said_so():
    assert analyse(record([[B + 4 * lane for lane in LANES]])).fix is None
    # words 0, 32 (bank 0), 65, 97 (bank 1), then 28 lanes alternating banks 2 and 3 on words 32 apart at
    # uneven steps: 14 distinct words in bank 3 (and 14 in bank 2): 14 wavefronts over 1. The row lengths the
    # lanes show (256, 132, 124, 128, 384) break no such scatter apart: none found, and it says so.
    words = (
        0,
        32,
        65,
        97,
        130,
        163,
        194,
        227,
        258,
        291,
        322,
        355,
        386,
        419,
        450,
        483,
        515,
        546,
        579,
        610,
        643,
        674,
        707,
        738,
        771,
        802,
        835,
        866,
        899,
        930,
        963,
        994,
    )
    scatter = [B + 4 * w for w in words]
    found = analyse(record([scatter]))
    assert (found.wavefronts, found.ideal, found.fix.kind, found.fix.n_way_after) == (14, 1, "none", None)
    assert found.fix.words == (
        "no padding of up to 128 bytes nor XOR swizzle of rows of 256, 132, 124, 128, 384 "
        "bytes (nor their padding dropped) makes every recorded warp conflict-free"
    )


def test_cp_async_reading_one_global_line_a_row_cannot_be_fixed_by_the_banks():
    shared = [B + 64 * (lane // 4) + 16 * (lane % 4) for lane in LANES]
    sources = [(1 << 20) + 4096 * (lane // 4) + 16 * (lane % 4) for lane in LANES]
    fix = find_fix(record([shared], 16, "cp.async", sources=(tuple(sources),)))
    assert fix.kind == "none" and "global lines" in fix.words


# --- properties --------------------------------------------------------------------------------------


@st.composite
def strided_warps(draw):
    """Warps of a strided pattern (lane l at base + row_stride * f(l) + col_stride * g(l)) with some lanes off."""
    width = draw(st.sampled_from([4, 8, 16]))
    row = draw(st.sampled_from([32, 64, 128, 256, 512])) * max(1, width // 4)
    col = width * draw(st.integers(0, 3))
    rows_of = draw(st.sampled_from([lambda n: n, lambda n: n % 16, lambda n: n // 2, lambda n: n % 8]))
    warps = []
    for column in draw(st.lists(st.integers(0, 7), min_size=1, max_size=3)):
        off = draw(st.sets(st.integers(0, 31), max_size=8))
        at = [B + row * rows_of(lane) + (col * lane + width * column) % row for lane in LANES]
        warp = [None if lane in off else at[lane] for lane in LANES]
        if any(o is not None for o in warp):
            warps.append(warp)
    return record(warps or [[B + 4 * lane for lane in LANES]], width)


@fuzz(60)
@given(strided_warps())
def test_a_found_fix_is_conflict_free_on_every_recorded_warp(instruction):
    found = analyse(instruction)
    if not found.conflicting:
        assert found.fix is None
        return
    fix = found.fix
    assert fix is not None
    if fix.kind == "none":
        return
    after = serve_instruction(instruction, fix.warps(instruction.warps))
    assert all(w.wavefronts == w.ideal for w in after)
    assert fix.n_way_after == 1
    # the fix moves no two distinct bytes onto one, and keeps every lane aligned to its width
    moved = {(o, fix.offset(o)) for warp in instruction.warps for o in warp if o is not None}
    assert len({new for _, new in moved}) == len({old for old, _ in moved})
    assert all(new % instruction.width == 0 for _, new in moved)


@fuzz(60)
@given(
    st.sampled_from([4, 8, 16]),
    st.sampled_from([32, 64, 128, 256, 512]),
    st.sampled_from([32, 64, 128, 256, 512]),
    st.integers(1, 8),
)
def test_the_swizzle_is_one_to_one_over_the_array(chunk, row_bytes, line, rows):
    if line < 2 * chunk or (row_bytes % line and line % row_bytes):
        return
    size = max(row_bytes, line) * rows  # whole rows and whole lines
    moved = [swizzle_offset(B + o, B, row_bytes, chunk, line) for o in range(size)]
    assert sorted(moved) == list(range(B, B + size))
    # a chunk moves whole
    assert all(moved[o] - moved[o - o % chunk] == o % chunk for o in range(size))


@given(st.integers(0, 4096), st.sampled_from([64, 128, 256]), st.sampled_from([4, 8, 16]))
def test_padding_is_one_to_one_and_moves_row_y_by_y_pads(offset, row_bytes, pad):
    assert pad_offset(B + offset, B, row_bytes, pad) == B + offset + offset // row_bytes * pad
    assert pad_offset(B + offset + 1, B, row_bytes, pad) > pad_offset(B + offset, B, row_bytes, pad)
