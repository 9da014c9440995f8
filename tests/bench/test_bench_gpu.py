"""`memlens bench` on a real GPU: the built-in suite at its small sizes, and the event timing itself."""

from __future__ import annotations

import time

import pytest

from memlens.bench.results import TimeSummary, load_bench
from memlens.bench.timing import HOLD_SOURCE, CudaDevice, SameBytesCopies, measure_copy
from memlens.cli import main
from memlens.suite import load_suite
from tests.conftest import REPO

SUITE = REPO / "kernels"
pytestmark = pytest.mark.gpu


def _sleeper(microseconds: int):
    """A launch of a kernel that spins on the GPU for `microseconds`."""
    import cupy
    import numpy as np

    kernel = cupy.RawKernel(HOLD_SOURCE, "memlens_hold")
    return lambda: kernel((1,), (1,), (np.uint64(microseconds * 1000),))


def test_bench_builtin_suite_small(tmp_path):
    assert main(["bench", str(SUITE), "--small", "--repeats", "20", "--out", str(tmp_path / "runs")]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    results = load_bench(run)
    assert results.failures == ()
    assert [t.label for t in results.variants] == [v.label for v in load_suite(SUITE).variants()]
    assert results.copy.gb_per_s > 100  # any GPU this tool is for copies far faster
    assert results.info.l2_bytes > 0
    for timing in results.variants:
        assert len(timing.times.samples_ms) == 20
        assert timing.times.median_ms > 0, timing.label
        # each compared with a copy of its own bytes, timed the same way; at --small sizes both are
        # launch-bound, so the ratio says little, but it is a ratio of two real measurements
        copy = timing.copy
        assert copy is not None and timing.min_bytes is not None, timing.label
        assert copy.bytes_moved - timing.min_bytes in (0, 1) and len(copy.times.samples_ms) == 20, timing.label
        assert copy.input_sets >= 2 and copy.times.median_ms > 0, timing.label
        assert timing.pct_of_copy is not None and 0 < timing.pct_of_copy < 400, timing.label


def test_event_times_measure_the_kernel():
    device = CudaDevice()
    median = TimeSummary.of(device.time_launches([_sleeper(200)], 20)).median_ms
    assert 0.19 < median < 0.26  # 200 us spin, plus launch and event granularity


def test_host_launch_gaps_stay_off_the_clock():
    """A host that takes 1 ms to issue each 50 us launch: the GPU is held while the host queues."""
    device = CudaDevice()
    launch = _sleeper(50)

    def slow_host_launch() -> None:
        time.sleep(0.001)
        launch()

    median = TimeSummary.of(device.time_launches([slow_host_launch], 20)).median_ms
    assert median < 0.2


def test_same_bytes_copies_rotate_and_small_ones_read_slower():
    """A copy rotating over buffer pairs, as a variant's launches do; per launch fixed costs make a
    small copy far slower per byte than the GPU's 1 GiB copy (why variants compare with their own)."""
    device = CudaDevice()
    large = measure_copy(device, 20)
    copies = SameBytesCopies(device, 20)
    transpose = copies.of(2 * 4 * 8192 * 8192)  # the bytes of an 8192x8192 fp32 transpose: 537 MB
    assert copies.of(2 * 4 * 8192 * 8192) is transpose and len(copies.timed) == 1
    assert transpose.input_sets >= 2 and transpose.gb_per_s > 100
    small = copies.of(64 * 1024)
    assert small.input_sets > 2
    assert small.gb_per_s < 0.5 * large.gb_per_s


def test_copy_only_times_the_gpus_copy_alone_in_seconds(tmp_path):
    """`bench --copy-only`: the copy alone, in a few seconds, on the GPU nvidia-smi names: the DRAM
    ceiling the time at stake takes where it is measured (docs/time-at-stake.md)."""
    started = time.monotonic()
    assert main(["bench", "--copy-only", "--into", str(tmp_path), "--repeats", "20"]) == 0
    assert time.monotonic() - started < 60
    results = load_bench(tmp_path)
    assert (results.variants, results.failures) == ((), ())
    assert results.info.gpu_name and results.copy.buffer_bytes >= 1 << 30
    assert 100 < results.copy.gb_per_s < 10_000  # an H100's 3.35 TB/s peak, an H200's 4.8: never above
