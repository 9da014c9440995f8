"""`memlens compare` and noise: a duration (or a bandwidth) is better or worse only beyond the runs' noise,
the stated floor or the two runs' bench p10-p90; counts stay exact. Two copies of the recorded H200 suite
whose transpose/padded launch is given the durations of the case in issue 45 (3.46 -> 3.68 us)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from memlens.bench.results import BENCH_FILE, TimeSummary
from memlens.cli import main
from tests.conftest import FIXTURES
from tests.reports.test_report_bench import bench_results
from tests.support.json_file import write_json

SUITE = FIXTURES / "nvidia_h200" / "suite.results.json"
LABEL = "transpose/padded"


def run_with(
    directory: Path, duration_ns: float, local_sectors: float = 0.0, bench_spread: float | None = None
) -> Path:
    """A run directory: the recorded suite with transpose/padded's duration (and local load sectors) set;
    with `bench_spread`, a bench.json whose transpose/padded launches spread that fraction p10 to p90."""
    data = json.loads(SUITE.read_text())
    for kernel in data["kernels"]:
        if f"{kernel['family']}/{kernel['variant']}" == LABEL:
            kernel["raw"]["duration"], kernel["raw"]["local_ld_sectors"] = duration_ns, local_sectors
    directory.mkdir(parents=True)
    write_json(directory / "results.json", data)
    if bench_spread is not None:
        bench = bench_results()
        median = duration_ns / 1e6
        spread = [median * (1 + bench_spread * (i - 10) / 16) for i in range(21)]  # p10-p90: 16 steps of 21
        variants = tuple(replace(v, times=TimeSummary.of(spread)) if v.label == LABEL else v for v in bench.variants)
        write_json(directory / BENCH_FILE, replace(bench, variants=variants).to_json())
    return directory


def compare(capsys, base: Path, head: Path) -> tuple[list[str], dict[str, dict]]:
    assert main(["compare", str(base), str(head), "-k", f"^{LABEL}$", "--all", "--wide"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert main(["compare", str(base), str(head), "-k", f"^{LABEL}$", "--json"]) == 0
    figures = {f["key"]: f for f in json.loads(capsys.readouterr().out)["kernels"][0]["figures"]}
    return text, figures


def test_a_short_kernels_change_inside_the_floor_is_the_same(tmp_path, capsys):
    text, figures = compare(capsys, run_with(tmp_path / "a", 3460.0), run_with(tmp_path / "b", 3680.0))
    assert "  duration: 3.46 µs -> 3.68 µs (same (within noise: ±8.7%), +6.4%)" in text
    assert figures["duration"]["direction"] == "same"
    assert figures["duration"]["noise"] == {"fraction": 300 / 3460, "source": "floor"}
    assert figures["dram_bandwidth"]["direction"] == "same" and figures["dram_bandwidth"]["noise"]["source"] == "floor"
    assert figures["local_ld_bytes"]["noise"] is None  # a count: exact


def test_a_change_far_beyond_the_floor_is_worse_and_counts_are_exact(tmp_path, capsys):
    text, figures = compare(capsys, run_with(tmp_path / "a", 3460.0), run_with(tmp_path / "b", 5000.0, 1.0))
    assert "  duration: 3.46 µs -> 5.00 µs (worse, +44.5%, beyond noise ±8.7%)" in text
    assert figures["duration"]["direction"] == "worse" and figures["dram_bandwidth"]["direction"] == "worse"
    assert "  local loads: 0 B -> 32 B (worse, was 0)" in text  # one sector more: worse, no band


def test_with_both_runs_bench_timings_the_band_follows_their_p10_p90(tmp_path, capsys):
    # bench p10-p90 of 20% in each run: a band of ±20%, wider than the floor (±3% of a 100 us kernel)
    base, head = (
        run_with(tmp_path / "a", 100_000.0, bench_spread=0.2),
        run_with(tmp_path / "b", 115_000.0, bench_spread=0.2),
    )
    text, figures = compare(capsys, base, head)
    assert figures["duration"]["direction"] == "same"
    assert figures["duration"]["noise"]["source"] == "bench"
    assert abs(figures["duration"]["noise"]["fraction"] - 0.2) < 1e-9
    assert "  duration: 0.100 ms -> 0.115 ms (same (within noise: ±20.0%), +15.0%)" in text
    assert figures["bench_median"]["direction"] == "same" and figures["bench_median"]["noise"]["source"] == "bench"
    # without the bench the same change is beyond the floor
    _, floor = compare(capsys, run_with(tmp_path / "c", 100_000.0), run_with(tmp_path / "d", 115_000.0))
    assert floor["duration"]["direction"] == "worse" and floor["duration"]["noise"]["fraction"] == 0.03
