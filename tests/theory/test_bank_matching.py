"""banks.json matched to the profile (theory/bank_matching.py), on the real recordings of one program,
tests/fixtures/programs/bank_probe.cu, on the H100 and the H200: bank_probe.ncu-rep is its profile,
bank_probe.banks.json its run under the trace. ncu correlates absolute PCs; the reader's pc_offset is
the PC less the launch's function start (`launch__function_pcs`), the trace's offset."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memlens.model.banks_file import BankAccess, read_banks_file
from memlens.model.kernel_names import short_kernel
from memlens.readers import read_with_instructions
from memlens.theory.bank_analysis import analyse_file
from memlens.theory.bank_matching import conflicting_at, function_key, match_instructions
from tests.conftest import FIXTURES

GPUS = ("nvidia_h100_80gb_hbm3", "nvidia_h200")
# kernel -> (access, pc offset, ncu's n-way) of each instruction ncu measured conflicting, the same on both GPUs
CONFLICTING = {
    ("column_read_32x32", "load", 1728, 32.0),
    ("column_read_double", "load", 1008, 16.0),
    ("column_read_16x16", "load", 1712, 8.0),
    ("half_warp_broadcast", "load", 320, 2.0),
    ("atomics_4_way", "atomic", 656, 4.0),
    ("store_32_way", "store", 208, 32.0),
    ("store_32_way", "load", 256, 32.0),
    ("sub_word", "store", 240, 16.0),
    ("sub_word", "load", 320, 16.0),
    ("ldmatrix_64_byte_rows", "ldmatrix", 1488, 4.0),
    ("cp_async_rows", "cp.async", 400, 2.0),
    ("cp_async_rows", "load", 480, 4.0),
}


@pytest.fixture(scope="module", params=GPUS)
def probe(request):
    folder = FIXTURES / request.param / "banks"
    results = read_with_instructions(folder / "bank_probe.ncu-rep")
    analysis = analyse_file(read_banks_file(folder / "bank_probe.banks.json"), "bank_probe.banks.json")
    return results, analysis


def test_the_readers_offset_is_the_pc_less_the_function_start(probe):
    results, _ = probe
    first = next(k for k in results.kernels if k.kernel.startswith("column_read_32x32"))
    record = first.instructions[0]
    # STS at absolute PC ...0x...0f0, the function's first instruction 240 bytes before it (both GPUs)
    assert (record.sass, record.pc_offset) == ("STS [R3+UR4+0x80], R6", 240)
    assert all(r.pc_offset is not None and 0 <= r.pc_offset < r.pc for k in results.kernels for r in k.instructions)


def test_every_recorded_instruction_is_matched_once(probe):
    results, analysis = probe
    matched = match_instructions(results.kernels, analysis)
    assert len(analysis.instructions) == 155
    assert len(matched) == 155
    assert len({id(m.banks) for m in matched}) == 155
    # every shared instruction of the profile with a wavefront is one the trace recorded; the 18 left are
    # stores whose warps never had an active lane (predicated off, or not reached): no address to record
    left = [
        r
        for k in results.kernels
        for r in k.instructions
        if r.space == "shared" and r not in {m.record for m in matched}
    ]
    assert len(left) == 18 and all(r.wavefronts == 0 for r in left)


def test_every_conflicting_instruction_is_matched_and_its_recorded_n_way_is_ncus(probe):
    results, analysis = probe
    matched = match_instructions(results.kernels, analysis)
    conflicting = [m for m in matched if (m.record.excess or 0) > 0]
    assert {
        (function_key(m.kernel.kernel), str(m.banks.instruction.access), m.record.pc_offset, m.measured_n_way)
        for m in conflicting
    } == CONFLICTING
    measured = sum(1 for k in results.kernels for r in k.instructions if (r.excess or 0) > 0)
    assert measured == len(conflicting) == 12
    # the third source of one figure: the n-way of the recorded addresses is ncu's, for every pair
    assert [m for m in matched if not m.agrees] == []
    assert all(m.banks.fix is not None for m in conflicting)


def test_another_binary_is_not_matched(probe):
    # the same offsets, but ncu's instructions a width apart (another build ran under the trace): none match
    results, analysis = probe
    wider = [
        replace(k, instructions=tuple(replace(r, width_bits=2 * r.width_bits) for r in k.instructions))
        for k in results.kernels
    ]
    assert match_instructions(wider, analysis) == ()
    # and a results.json written before the reader kept the offset matches nothing either
    older = [
        replace(k, instructions=tuple(replace(r, pc_offset=None) for r in k.instructions)) for k in results.kernels
    ]
    assert match_instructions(older, analysis) == ()


def test_conflicting_at_takes_the_kernels_own_conflicting_instructions(probe):
    results, analysis = probe
    matched = match_instructions(results.kernels, analysis)
    store = next(k for k in results.kernels if k.kernel.startswith("store_32_way"))
    pcs = [r.pc for r in store.instructions]
    assert [m.record.pc_offset for m in conflicting_at(matched, store, pcs)] == [208, 256]
    other = next(k for k in results.kernels if k.kernel.startswith("column_read_padded"))
    assert conflicting_at(matched, other, pcs) == []


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("column_read_32x32(float *)", "column_read_32x32"),
        ("cp_async_rows(float4 const*, float*)", "cp_async_rows"),
        ("void ns::tr<(int)0, float>(float *)", "ns::tr<0,float>"),
        ("ns::tr<0, float>(float*)", "ns::tr<0,float>"),
        ("numba_column_read", "numba_column_read"),
        # a Numba kernel as ncu names it, and as the trace's demangler does (its ABI tags apart), in two runs
        # whose import of the suite file differs in its hash
        (
            "memlens_suite_1eec8e54c97027f5_matmul::matmul_tiled[abi:v3,cw51cX](Array<float, 2, C>)",
            "matmul_tiled[abi:v3,cw51cX]",
        ),
        (
            "memlens_suite_60586d0f45c525e9_matmul::matmul_tiled[abi:v3][abi:cw51cX](Array<float, 2, C>)",
            "matmul_tiled[abi:v3,cw51cX]",
        ),
        (
            "__main__::numba_column_read[abi:v1][abi:cw51cX](Array<float, 1, C>)",
            "__main__::numba_column_read[abi:v1,cw51cX]",
        ),
        (
            "__main__::numba_column_read[abi:v1,cw51cX](Array<float, 1, C>)",
            "__main__::numba_column_read[abi:v1,cw51cX]",
        ),
    ],
)
def test_function_key(name, key):
    assert function_key(name) == key


def test_numba_kernels_match_the_trace_of_another_run_and_agree_with_ncu():
    """The H200 suite's profile and its bank trace (two runs of the suite): the Numba matmuls' shared-memory
    instructions are matched as the CUDA C++ kernels' are, and every one's n-way is ncu's."""
    results = read_with_instructions(FIXTURES / "nvidia_h200" / "suite.ncu-rep")
    banks = FIXTURES / "nvidia_h200" / "banks" / "suite.banks.json"
    matched = match_instructions(results.kernels, analyse_file(read_banks_file(banks), banks.name))
    numba = [m for m in matched if "[abi:" in m.kernel.kernel]
    assert sorted({short_kernel(m.kernel.kernel) for m in numba}) == ["matmul_tiled", "matmul_tiled_article"]
    assert len(numba) == 44 and all(m.agrees for m in numba)
    conflicting = {(short_kernel(m.kernel.kernel), m.measured_n_way) for m in numba if (m.record.excess or 0.0) > 0}
    assert conflicting == {("matmul_tiled_article", 4.0), ("matmul_tiled_article", 8.0)}
    assert len(matched) - len(numba) == 84  # the CUDA C++ kernels' matches, as before


def test_the_n_way_over_every_execution_is_ncus_but_cp_asyncs(probe):
    # the trace's bank model run over every warp-level execution on the GPU (`every_execution`) gives ncu's figure
    # too, but for cp.async: served there as a store of its width (1-way), where ncu counts the global lines it
    # reads (2-way); the recorded warps, with their global addresses, give ncu's 2-way (above)
    results, analysis = probe
    matched = match_instructions(results.kernels, analysis)
    others = [m for m in matched if m.banks.instruction.access is not BankAccess.CP_ASYNC]
    assert len(others) == 154
    assert [m for m in others if round(m.banks.every_n_way, 3) != round(m.measured_n_way, 3)] == []
    (cp_async,) = [m for m in matched if m.banks.instruction.access is BankAccess.CP_ASYNC]
    assert (cp_async.banks.every_n_way, cp_async.measured_n_way, cp_async.banks.n_way) == (1.0, 2.0, 2.0)
