"""Time at stake (model/time_at_stake.py): the bound worked on paper for made-up kernels, then against the time
that fixes recorded before and after saved (the suite's and stake_probe.cu's, H100 and H200)."""

from __future__ import annotations

import pytest

from memlens.model.instruction_kinds import KINDS
from memlens.model.instruction_table import KindTotals, SideFigures
from memlens.model.results import KernelResult
from memlens.model.source_lines import LineRecord
from memlens.model.time_at_stake import kernel_stake, line_stake, lines_stake, pipe_share, sm_count, stake_words
from tests.benchmarks.time_at_stake import FIXES, checked

# 1,000 cycles of 100 SMs: 1 µs at 1 GHz
CLOCKED = {"duration": 1000.0, "sm_clock": 1e9, "sm_count": 100.0, "grid_size": 100.0}
# what the fixes below cannot bring under the 1.5x-or-15-points bound, and why: the bound takes DRAM at its
# peak, and these kernels' fixes stop at 64-80% of it (the counters do not say where a kernel's DRAM tops out)
LOOSE = {
    ("H100", "fp16_transpose/dense"): "DRAM at 80% of peak before and after: the conflicts were hidden behind it",
    ("H200", "fp16_transpose/dense"): "a partial fix (xor_row keeps 2-way conflicts) of a kernel at 65% of DRAM peak",
    ("H100", "gather<1>"): "the fixed kernel reads at 64% of DRAM peak; the excess sectors were L2 hits",
}


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
    # 3 MB at a 4 TB/s peak (4,000 bytes a DRAM cycle at 1 GHz) is 0.75 µs of the 1 µs: at most 25% to save
    dram = {"dram_read_bytes": 2e6, "dram_write_bytes": 1e6, "peak_dram_bytes_per_cycle": 4000.0, "dram_clock": 1e9}
    stake = line_stake(kernel(**dram), shared_line(50_000))  # its pipe share alone: 50%
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


def test_every_fix_was_checked_on_both_gpus():
    cases = checked()
    assert {c.gpu for c in cases} == {"H100", "H200"}
    assert len([c for c in cases if c.gpu == "H100"]) == len(FIXES)
