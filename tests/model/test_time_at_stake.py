"""Time at stake (model/time_at_stake.py): the bound worked on paper for made-up kernels, then against the time
that fixes recorded before and after saved (the suite's and stake_probe.cu's, H100 and H200), DRAM taken at each
GPU's measured copy where tests/fixtures/<gpu>/copy/bench.json holds it (else at the peak)."""

from __future__ import annotations

import json

import pytest

from memlens.bench.results import bench_beside, copy_ceiling, load_bench
from memlens.model.instruction_kinds import KINDS
from memlens.model.instruction_table import KindTotals, SideFigures
from memlens.model.results import KernelResult
from memlens.model.source_lines import LineRecord
from memlens.model.time_at_stake import (
    DramCeiling,
    dram_ceiling,
    kernel_floor,
    kernel_stake,
    line_stake,
    lines_stake,
    pipe_share,
    sm_count,
    stake_words,
)
from memlens.readers import read_lines
from tests.benchmarks.time_at_stake import FIXES, FIXTURES, checked, measured_copy

# 1,000 cycles of 100 SMs: 1 µs at 1 GHz
CLOCKED = {"duration": 1000.0, "sm_clock": 1e9, "sm_count": 100.0, "grid_size": 100.0}
# 3 MB at a 4 TB/s peak (4,000 bytes a DRAM cycle at 1 GHz): 0.75 µs of the 1 µs
DRAM = {"dram_read_bytes": 2e6, "dram_write_bytes": 1e6, "peak_dram_bytes_per_cycle": 4000.0, "dram_clock": 1e9}
H100, H200 = "nvidia_h100_80gb_hbm3", "nvidia_h200"
# what the fixes below cannot bring under the 1.5x-or-15-points bound, and why: the kernels' fixes stop short of
# the DRAM ceiling (the GPU's measured copy: 4,244 GB/s on the H200, 88% of its peak; the H100's peak until its
# copy is recorded), which the counters cannot see past
LOOSE = {  # the excess sectors of gather<1> were L1 hits: 4,194,304 sectors went from L1 to L2 before and after
    ("H100", "gather<1>"): "the fixed kernel reads at 70% of the measured copy; the excess sectors were L1 hits",
    ("H200", "gather<1>"): "the fixed kernel reads at 56% of the measured copy; the excess sectors were L1 hits",
    ("H200", "window<1>"): "local memory has no pipe of its own to count: the floor bounds it (1.51x the saving)",
}
if measured_copy(H100) is None:  # at its peak (3,352 GB/s) the kernel's conflicts, hidden behind DRAM, look costly
    LOOSE[("H100", "fp16_transpose/dense")] = "DRAM at 80% of peak before and after: the conflicts were hidden by it"
# at the copy recorded by record_copy.sh (4,244 GB/s): 26.3% at stake for 11.0% saved, 0.3 points past the band
# (at bench_h200.json's 4,217 GB/s from an earlier run it was 25.8%, inside it: the band's edge is the copy's noise)
LOOSE[("H200", "fp16_transpose/dense")] = "a partial fix (xor_row keeps 2-way conflicts) at 65% of DRAM peak"
LOOSE_WITHIN_NOISE = {("H200", "gather<1>")}  # loose even against the saving plus its timing noise (40.6%)


def kernel(**raw: float | None) -> KernelResult:
    return KernelResult("k", None, None, 0, {**CLOCKED, **raw})


def shared_line(excess: float, ideal: float = 1000.0) -> LineRecord:
    figures = KindTotals(KINDS["LDS"], ("LDS",), 100.0, ideal + excess, ideal, None, None)
    return LineRecord(
        None,
        None,
        None,
        False,
        SideFigures(100.0, ideal + excess, ideal),
        SideFigures(),
        None,
        None,
        ("LDS",),
        kinds=(figures,),
    )


def test_excess_wavefronts_cost_at_most_their_cycles_on_the_busiest_sm():
    # 100 blocks on 100 SMs: 20,000 excess wavefronts are 200 a block, 200 of 1,000 cycles
    assert pipe_share(kernel(), 20_000) == pytest.approx(0.2)
    # 150 blocks: the busiest SM runs 2 of them, 2 x 20,000 / 150 cycles
    assert pipe_share(kernel(grid_size=150.0), 20_000) == pytest.approx(2 * 20_000 / 150 / 1000)
    # 50 blocks on 100 SMs: one a busy SM, 400 cycles
    assert pipe_share(kernel(grid_size=50.0), 20_000) == pytest.approx(0.4)


def test_a_conflict_is_capped_by_what_the_kernel_still_needs_at_peak_dram():
    # 3 MB at a 4 TB/s peak is 0.75 µs of the 1 µs: at most 25% to save
    stake = line_stake(kernel(**DRAM), shared_line(50_000))  # its pipe share alone: 50%
    assert stake is not None
    assert stake.fraction == pytest.approx(0.25)
    assert stake.seconds == pytest.approx(0.25e-6)
    assert "DRAM bytes at peak" in stake.by
    # without the DRAM bytes, the pipe bounds it
    alone = line_stake(kernel(), shared_line(50_000))
    assert alone is not None and alone.fraction == pytest.approx(0.5) and "shared-memory pipe" in alone.by


def test_several_lines_are_bounded_together_and_a_clean_line_has_nothing_at_stake():
    both = lines_stake(kernel(), [shared_line(20_000), shared_line(30_000)])
    assert both is not None and both.fraction == pytest.approx(0.5)
    clean = line_stake(kernel(), shared_line(0))
    assert clean is not None and clean.fraction == 0.0 and stake_words(clean) == ""
    assert stake_words(both) == "at most 50% of the kernel's time at stake"


def test_without_a_duration_or_a_clock_the_stake_is_unknown_not_a_guess():
    assert line_stake(kernel(duration=None), shared_line(20_000)) is None
    assert line_stake(kernel(sm_clock=None), shared_line(20_000)) is None
    assert kernel_stake(kernel()) is None  # no DRAM bytes and no FLOPs: no floor to measure headroom by


def test_the_sm_count_of_an_older_results_json_comes_from_the_ffma_peak():
    older = KernelResult("k", None, None, 0, {"peak_ffma_per_cycle": 16896.0})
    assert sm_count(older, "9.0") == 132  # 128 FP32 lanes an SM (the CUDA guide's throughput table)
    assert sm_count(older, "8.0") == 264  # 64 on an A100: its peak 6,912 gives its 108
    assert sm_count(older, None) is None


@pytest.mark.parametrize("case", checked(), ids=lambda c: f"{c.gpu}-{c.fix.before}")
def test_the_time_at_stake_brackets_the_time_each_recorded_fix_saved(case):
    assert case.holds, f"{case.fix.what}: saved {case.saving:.3f}, at stake {case.stake:.3f}"
    reason = LOOSE.get((case.gpu, case.fix.before))
    assert case.tight is (reason is None), reason or f"{case.saving:.3f} saved, {case.stake:.3f} at stake"
    loose_within_noise = (case.gpu, case.fix.before) in LOOSE_WITHIN_NOISE
    assert case.tight_within_noise is not loose_within_noise, f"{case.saving:.3f} ±{case.noise:.3f} saved"


def test_every_fix_was_checked_on_both_gpus():
    cases = checked()
    assert {c.gpu for c in cases} == {"H100", "H200"}
    assert len([c for c in cases if c.gpu == "H100"]) == len([c for c in cases if c.gpu == "H200"]) == len(FIXES)


def test_a_measured_ceiling_below_the_peak_raises_the_floor():
    # 3 MB at a measured 3.75 TB/s is 0.8 µs of the 1 µs: at most 20% (at the 4 TB/s peak: 25%)
    ceiling = DramCeiling(3.75e12, "the measured copy bandwidth")
    stake = line_stake(kernel(**DRAM), shared_line(50_000), ceiling=ceiling)
    assert stake is not None and stake.fraction == pytest.approx(0.2)
    assert stake.by == "the kernel's floor (DRAM bytes at the measured copy bandwidth, 3,750 GB/s: 0.8 µs of 1 µs)"
    headroom = kernel_stake(kernel(**DRAM), ceiling)
    assert headroom is not None and headroom.fraction == pytest.approx(0.2)
    # a ceiling above the peak (a copy mis-timed, or another GPU's) is never taken: the peak bounds it
    above = kernel_stake(kernel(**DRAM), DramCeiling(5e12, "the measured copy bandwidth"))
    assert above == kernel_stake(kernel(**DRAM)) and above is not None
    assert above.fraction == pytest.approx(0.25) and "DRAM bytes at peak:" in above.by
    assert kernel_floor(kernel(**DRAM), ceiling).dram_at == "the measured copy bandwidth, 3,750 GB/s"


def test_the_ceiling_is_never_below_what_a_kernel_of_the_run_reached():
    # 1 and 3.5 TB/s over 1 µs
    slow, fast = kernel(dram_read_bytes=1e6, dram_write_bytes=0.0), kernel(dram_read_bytes=3.5e6, dram_write_bytes=0.0)
    assert dram_ceiling(3e12, [slow]) == DramCeiling(3e12, "the measured copy bandwidth")
    raised = dram_ceiling(3e12, [slow, fast])
    assert raised == DramCeiling(pytest.approx(3.5e12), "the run's fastest kernel's DRAM throughput")
    # the fastest kernel's floor is its own time: nothing at stake, never a floor above its duration
    at_peak = {k: v for k, v in DRAM.items() if k.startswith(("peak", "dram_clock"))}
    headroom = kernel_stake(kernel(dram_read_bytes=3.5e6, dram_write_bytes=0.0, **at_peak), raised)
    assert headroom is not None and headroom.fraction == pytest.approx(0.0, abs=1e-12)
    for broken in (None, 0.0, -1.0, float("nan"), float("inf")):
        assert dram_ceiling(broken, [slow]) is None


def test_fp16_dense_on_the_h200_at_its_measured_copy_worked_on_paper():
    # 250,567,424 DRAM bytes (ncu's dram__bytes) in 80.064 µs; the H200's 1 GiB copy: 4,244.04 GB/s (bench.json);
    # floor 250,567,424 / 4,244.04e9 = 59.04 µs, at most 1 - 59.04 / 80.064 = 26.3% to save (at its 4,808 GB/s
    # peak: 52.11 µs, 34.9%); the suite's fastest kernel reached 4,032 GB/s, below the copy
    results = read_lines(str(FIXTURES / H200 / "suite.results.json"))
    dense = next(k for k in results.kernels if k.label == "fp16_transpose/dense")
    assert (dense.value("dram_bytes"), dense.value("duration")) == (250_567_424.0, 80_064.0)
    ceiling = copy_ceiling(load_bench(FIXTURES / H200 / "copy" / "bench.json"), results)
    assert ceiling is not None and ceiling.what == "the measured copy bandwidth"
    assert ceiling.gb_per_s == pytest.approx(4244.04, abs=0.01)
    headroom = kernel_stake(dense, ceiling)
    assert headroom is not None and headroom.fraction == pytest.approx(1 - 59.0399e-6 / 80.064e-6, abs=1e-5)
    assert headroom.fraction == pytest.approx(0.2626, abs=1e-4)
    assert headroom.by == "the kernel's floor (DRAM bytes at the measured copy bandwidth, 4,244 GB/s: 59 µs of 80.1 µs)"
    at_peak = kernel_stake(dense)
    assert at_peak is not None and at_peak.fraction == pytest.approx(0.349, abs=1e-3)
    (case,) = [c for c in checked() if (c.gpu, c.fix.before) == ("H200", "fp16_transpose/dense")]
    assert case.stake == pytest.approx(headroom.fraction)  # its lines together are bounded by the same floor
    assert case.ceiling == "the measured copy bandwidth, 4,244 GB/s"


def test_a_bench_of_another_gpu_or_a_broken_one_leaves_the_peak(tmp_path):
    h100 = read_lines(str(FIXTURES / H100 / "suite.results.json"))
    h200_bench = load_bench(FIXTURES / H200 / "copy" / "bench.json")
    assert copy_ceiling(h200_bench, h100) is None  # timed on an H200: not this H100's ceiling
    assert copy_ceiling(None, h100) is None
    for text in ("{", json.dumps({"format": "memlens-bench", "schema_version": 3}), "[]"):
        (tmp_path / "bench.json").write_text(text)
        assert bench_beside(tmp_path) is None
    assert bench_beside(tmp_path / "nowhere") is None


def test_every_recorded_fix_takes_its_gpus_measured_copy_where_there_is_one():
    for case in checked():
        folder = H100 if case.gpu == "H100" else H200
        copy = measured_copy(folder)
        if copy is None:
            assert case.ceiling == "peak", case
        else:
            assert case.ceiling == f"the measured copy bandwidth, {copy.copy.gb_per_s:,.0f} GB/s", case
