"""The bank model on recorded warps (theory/recorded_banks.py, bank_analysis.py): each case worked out
by hand in its comment first. Offsets start at 1,024, as the Sanitizer gives them on sm_90 (the shared
window's first KB is reserved); 1,024 is bank 0, so the banks are those of the array's own offsets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlens.model.banks_file import BankAccess, RecordedInstruction
from memlens.theory.bank_analysis import analyse
from memlens.theory.bank_model import serve
from memlens.theory.recorded_banks import CP_ASYNC_NO_SOURCES, conflict_free, serve_warp
from tests.support.fuzz import fuzz

B = 1024
LANES = range(32)


def record(warps, width=4, access="load", **fields) -> RecordedInstruction:
    warps = tuple(tuple(w) for w in warps)
    return RecordedInstruction("k", 0, width, BankAccess(access), warps, **fields)


def figures(warp, width=4, access="load", **fields) -> tuple[int, int, float]:
    found = analyse(record([warp], width, access, **fields))
    return found.wavefronts, found.ideal, found.n_way


def test_32x32_fp32_column_read_is_32_way():
    # tile[lane][3] of float tile[32][32]: lane l at 128 l + 12, word 32 l + 3, all in bank 3: 32 distinct
    # words in one bank, one a wavefront: 32 wavefronts; 32 words in all fit one wavefront: ideal 1.
    assert figures([B + 128 * lane + 12 for lane in LANES]) == (32, 1, 32.0)


def test_padded_33_column_read_is_conflict_free():
    # tile[lane][3] of float tile[32][33]: word 33 l + 3, bank (l + 3) % 32: 32 banks, one word each: 1.
    assert figures([B + 132 * lane + 12 for lane in LANES]) == (1, 1, 1.0)


def test_xor_swizzled_column_read_is_conflict_free():
    # tile[lane][3 ^ lane] of float tile[32][32]: word 32 l + (3 ^ l), bank 3 ^ l: l -> 3 ^ l is one-to-one: 1.
    assert figures([B + 128 * lane + 4 * (3 ^ lane) for lane in LANES]) == (1, 1, 1.0)


def test_8_byte_column_read_is_16_way():
    # double tile[16][32], tile[lane % 16][2]: 8-byte lanes are served a half-warp at a time. Lane l at
    # 256 (l % 16) + 16: words 64 (l % 16) + 4 and + 5, banks 4 and 5 for every lane. Each half-warp: 16
    # distinct words in bank 4 (and 16 in bank 5): 16 wavefronts; 32 words: ideal 1. Warp: 32 over 2.
    assert figures([B + 256 * (lane % 16) + 16 for lane in LANES], width=8) == (32, 2, 16.0)


def test_16x16_column_read_is_8_way():
    # float tile[16][16] read tile[tx][5] by a 16x16 block's warp 0 (tx = l % 16, ty = l // 16): word
    # 16 tx + 5, bank 5 for even tx and 21 for odd: 8 distinct words each (ty's two halves share them):
    # 8 wavefronts; 16 distinct words: ideal 1.
    assert figures([B + 64 * (lane % 16) + 20 for lane in LANES]) == (8, 1, 8.0)


def test_half_warp_broadcast_is_2_way():
    # lanes 0-15 read word 0, lanes 16-31 word 32: both in bank 0, each word shared by 16 lanes: 2
    # wavefronts for 2 distinct words (ideal 1).
    assert figures([B + (0 if lane < 16 else 128) for lane in LANES]) == (2, 1, 2.0)


def test_whole_warp_on_one_address_is_one_wavefront():
    # a broadcast: 1 word, 1 wavefront; and atomics on one address likewise (NOTES.md 2026-11-26: 32 lanes
    # on one address took the ideal's wavefronts).
    assert figures([B + 64] * 32) == (1, 1, 1.0)
    assert figures([B + 64] * 32, access="atomic") == (1, 1, 1.0)


def test_atomics_on_four_addresses_of_one_bank_are_4_way():
    # atomicAdd(&hist[32 * (lane % 4)]): 4 distinct words of bank 0, 8 lanes on each (merged): 4 over 1.
    assert figures([B + 128 * (lane % 4) for lane in LANES], access="atomic") == (4, 1, 4.0)


def test_32_lanes_on_32_words_of_one_bank_atomic_is_32_way():
    # NOTES.md 2026-11-26: 32 lanes on 32 addresses of one bank gave 32 over an ideal of 1.
    assert figures([B + 128 * lane for lane in LANES], access="atomic") == (32, 1, 32.0)


def test_sub_word_lanes_sharing_a_word_are_merged():
    # u8 lanes 0-31 on bytes 0-31: words 0-7, one lane group of 4 per word: 8 banks, 1 wavefront.
    assert figures([B + lane for lane in LANES], width=1) == (1, 1, 1.0)
    # u16 lanes at 2 l: words 0-15, two lanes a word: 1 wavefront.
    assert figures([B + 2 * lane for lane in LANES], width=2) == (1, 1, 1.0)
    # u16 lanes 64 bytes apart: word 16 l, banks 0 and 16, 16 distinct words each: 16 over 1.
    assert figures([B + 64 * lane for lane in LANES], width=2) == (16, 1, 16.0)
    # u8 lanes 128 bytes apart with pairs on one word: lane l at 128 (l // 2) + l % 2: 16 words of bank 0: 16.
    assert figures([B + 128 * (lane // 2) + lane % 2 for lane in LANES], width=1) == (16, 1, 16.0)


def test_an_array_off_a_128_byte_boundary_keeps_its_n_way():
    # the same column read from an array that starts 4 bytes past a 128-byte line: every lane one bank on
    # (bank 4), still 32 words in one bank.
    assert figures([B + 4 + 128 * lane + 12 for lane in LANES]) == (32, 1, 32.0)
    # 16-byte lanes whose quarter-warp straddles a 128-byte line: lane l at 16 l + 16: a phase's 8 chunks are
    # words 4..35 of phase 0, banks 4-31 and 0-3: all distinct: 1 wavefront a phase, 4 over 4.
    assert figures([B + 16 * lane + 16 for lane in LANES], width=16) == (4, 4, 1.0)


def test_inactive_lanes_are_left_out_and_a_half_warp_alone_has_an_ideal_of_one():
    # only lanes 0-15 of an 8-byte contiguous read: one half-warp, 16 lanes on 32 distinct words: 1 over 1.
    warp = [B + 8 * lane if lane < 16 else None for lane in LANES]
    assert figures(warp, width=8) == (1, 1, 1.0)
    # an odd lane's column read with the even lanes off: 16 words in bank 0: 16 over 1.
    assert figures([B + 128 * lane if lane % 2 else None for lane in LANES]) == (16, 1, 16.0)


def test_ldmatrix_serves_one_matrix_a_phase():
    # ldmatrix.x4 on 64-byte rows (fp16 tile[.][32]): lane l gives row l at 64 l. A phase is one matrix, 8
    # rows: rows at 0, 64, ..., 448: banks 0-3 for even rows, 16-19 for odd: 4 rows each: 4 wavefronts a
    # phase, 16 in all over an ideal of 4 (one a phase): 4-way.
    assert figures([B + 64 * lane for lane in LANES], width=16, access="ldmatrix", matrices=4) == (16, 4, 4.0)
    # 80-byte rows (padded): row r at 80 r, word 20 r: banks 20 r % 32 in steps of 4 hit 8 distinct bank
    # groups in 8 rows: 1 a phase.
    assert figures([B + 80 * lane for lane in LANES], width=16, access="stmatrix", matrices=4) == (4, 4, 1.0)


def test_ldmatrix_x1_and_x2_read_only_their_matrices_row_addresses():
    # .x1: lanes 0-7 alone; the other lanes' (conflicting) addresses are not read: 1 phase, conflict-free.
    warp = [B + 16 * lane if lane < 8 else B + 128 * lane for lane in LANES]
    assert figures(warp, width=16, access="ldmatrix", matrices=1) == (1, 1, 1.0)
    # .x2: lanes 0-15: 2 phases; lanes 8-15's rows 128 bytes apart all in banks 0-3: 8 wavefronts; 9 over 2.
    assert figures(warp, width=16, access="ldmatrix", matrices=2) == (9, 2, 4.5)


def test_cp_async_with_global_addresses_takes_the_global_lines_wavefronts():
    # 8 rows of 64 bytes, 4 lanes a row, each row from its own 128-byte global line (kernels/fp16_transpose.cu's
    # cp.async): 8 lines, one 128-byte shared segment each: 8 wavefronts over a 16-byte store's ideal of 4.
    shared = [B + 64 * (lane // 4) + 16 * (lane % 4) for lane in LANES]
    sources = [(1 << 20) + 4096 * (lane // 4) + 16 * (lane % 4) for lane in LANES]
    instruction = record([shared], 16, "cp.async", sources=(tuple(sources),))
    assert (analyse(instruction).wavefronts, analyse(instruction).ideal) == (8, 4)
    # without the global addresses: the banks as a store of its width (contiguous: 4 over 4), and it says so
    plain = analyse(record([shared], 16, "cp.async"))
    assert (plain.wavefronts, plain.ideal, plain.note) == (4, 4, CP_ASYNC_NO_SOURCES)


def test_n_way_is_the_ratio_of_sums_over_the_recorded_warps():
    # a 32-way warp (32 over 1) and a conflict-free one (1 over 1): 33 over 2, 16.5-way; the worst is drawn.
    found = analyse(record([[B + 4 * lane for lane in LANES], [B + 128 * lane for lane in LANES]]))
    assert (found.wavefronts, found.ideal, found.n_way, found.worst.index) == (33, 2, 16.5, 1)


def test_the_phase_rows_name_the_lanes_each_bank_serves():
    # the half-warp broadcast: one row a word, the 16 lanes sharing it in bank 0's cell
    phases = serve([B + (0 if lane < 16 else 128) for lane in LANES], 4)
    assert [row[0] for row in phases[0].rows] == [tuple(range(16)), tuple(range(16, 32))]
    assert all(cell is None for row in phases[0].rows for cell in row[1:])
    # an 8-byte lane fills two banks of its row
    served = serve_warp(record([[B + 8 * lane for lane in LANES]], 8), [B + 8 * lane for lane in LANES])
    assert [len(p.rows) for p in served.phases] == [1, 1]
    assert served.phases[1].rows[0][:3] == ((16,), (16,), (17,))


@pytest.mark.parametrize("width", [4, 8, 16])
def test_contiguous_accesses_are_conflict_free_at_every_width(width):
    # lane l at width * l: each phase asks for 128 contiguous bytes, 32 banks once: 1 a phase.
    found = analyse(record([[B + width * lane for lane in LANES]], width))
    assert found.wavefronts == found.ideal == width // 4 and found.fix is None


@fuzz(200)
@given(st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from(["load", "atomic", "ldmatrix"]), st.data())
def test_the_quick_conflict_free_test_is_the_models(width, access, data):
    # the fix search asks "no bank asked for two words in a phase"; the model says wavefronts == ideal
    if access == "ldmatrix":
        width = 16
    if access == "atomic" and width < 4:
        width = 4
    span = data.draw(st.sampled_from([64, 256, 4096]))
    warp = [
        None if data.draw(st.booleans()) and lane % 3 == 0 else B + width * data.draw(st.integers(0, span // width))
        for lane in LANES
    ]
    instruction = record([warp], width, access, **({"matrices": 4} if access == "ldmatrix" else {}))
    served = serve_warp(instruction, warp)
    assert conflict_free(instruction, [warp]) == (served.wavefronts == served.ideal)
