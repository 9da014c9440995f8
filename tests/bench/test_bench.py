"""`memlens bench` on the CPU: statistics, rotation arithmetic, bench.json, and the command end to end
with a stand-in for the GPU (the NumPy suite's launches run for real; the device returns set times)."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
import textwrap
from pathlib import Path

import pytest

import memlens.bench.timing as bench_module
from memlens.bench.results import BENCH_FILE, BenchResults, CopyBandwidth, TimeSummary, find_bench, load_bench
from memlens.bench.timing import (
    MAX_SETS,
    MEMORY_SHARE,
    SameBytesCopies,
    copy_buffer_bytes,
    input_set_count,
    same_bytes_buffer,
    set_bytes_of,
)
from memlens.cli import main
from memlens.errors import InputError, ProfilerError
from tests.conftest import _gpu_present
from tests.support.fake import CPU_SUITE

MIB = 1 << 20
GIB = 1 << 30
FAKE_L2 = 48 * 1024
FAKE_FREE = 64 * GIB
COPY_FIXED_MS = 0.004  # a copy's fixed cost per launch in the fake timer ...
COPY_BYTES_PER_MS = 4e9  # ... then 4 TB/s: a small copy reads slower than a large one


def copy_ms(buffer_bytes: int) -> float:
    """The fake timer's time of a copy of `buffer_bytes` (it moves twice that)."""
    return COPY_FIXED_MS + 2 * buffer_bytes / COPY_BYTES_PER_MS


def copy_gb_per_s(buffer_bytes: int) -> float:
    return 2 * buffer_bytes / copy_ms(buffer_bytes) / 1e6


class FakeDevice:
    """Runs every launch it is given; launch i takes i + 1 ms, a copy `copy_ms(buffer_bytes)`."""

    name = "Fake GPU"
    l2_bytes = FAKE_L2
    cuda_driver_version = "13.0"

    def __init__(self) -> None:
        self.rotations: list[int] = []
        self.copies: list[tuple[int, int, int]] = []  # (buffer bytes, repeats, sets) of each copy timed

    def free_bytes(self) -> int:
        return FAKE_FREE

    def time_launches(self, runs, repeats):
        self.rotations.append(len(set(runs)))
        for index in range(repeats):
            runs[index % len(runs)]()
        return [float(index + 1) for index in range(repeats)]

    def copy_times(self, buffer_bytes, repeats, sets=1):
        self.copies.append((buffer_bytes, repeats, sets))
        return [copy_ms(buffer_bytes)] * repeats

    def release(self) -> None:
        pass


@pytest.fixture
def device(monkeypatch) -> FakeDevice:
    fake = FakeDevice()
    monkeypatch.setattr(bench_module, "open_device", lambda: fake)
    return fake


def bench_cli(tmp_path: Path, suite: Path = CPU_SUITE, *extra: str) -> int:
    return main(["bench", str(suite), "--out", str(tmp_path / "runs"), "--repeats", "20", *extra])


def only_run(tmp_path: Path) -> Path:
    (run,) = (tmp_path / "runs").iterdir()
    return run


def table_rows(out: str) -> list[list[str]]:
    """The cells of each row of a rich table printed to `out`."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]


# --- statistics and arithmetic ---------------------------------------------------------------------


def test_summary_of_odd_count_is_order_free():
    samples = [float(v) for v in range(1, 22)]
    random.Random(1).shuffle(samples)
    summary = TimeSummary.of(samples)
    assert (summary.median_ms, summary.min_ms, summary.max_ms) == (11.0, 1.0, 21.0)
    assert (summary.p10_ms, summary.p90_ms) == (3.0, 19.0)  # linear between sorted samples
    assert summary.samples_ms == tuple(samples)


def test_summary_of_even_count_interpolates():
    summary = TimeSummary.of([4.0, 1.0, 3.0, 2.0])
    assert summary.median_ms == 2.5
    assert summary.p10_ms == pytest.approx(1.3)
    assert summary.p90_ms == pytest.approx(3.7)


@pytest.mark.parametrize("samples", [[], [1.0, float("nan")], [1.0, -0.5], [float("inf")]])
def test_summary_rejects_empty_or_invalid_samples(samples):
    with pytest.raises(ValueError):
        TimeSummary.of(samples)


@pytest.mark.parametrize(
    ("set_bytes", "l2_bytes", "budget", "expected"),
    [
        (16 * MIB, 50 * MIB, None, 13),  # ceil(4 * 50 / 16)
        (50 * MIB, 50 * MIB, None, 4),  # exactly 4x L2
        (512 * MIB, 60 * MIB, None, 2),  # one set is already 8x L2: still never the same buffers twice in a row
        (24 * 1024, 50 * MIB, None, MAX_SETS),  # tiny sets: capped
        (16 * MIB, 50 * MIB, 100 * MIB, 6),  # only 6 fit in the memory budget
        (16 * MIB, 50 * MIB, 8 * MIB, 1),  # not even one fits: try one (preparing it will say)
    ],
)
def test_input_set_count(set_bytes, l2_bytes, budget, expected):
    assert input_set_count(set_bytes, l2_bytes, budget) == expected


def test_input_set_count_rejects_empty_sets():
    with pytest.raises(ValueError):
        input_set_count(0, 50 * MIB)


@pytest.mark.parametrize(
    ("l2_bytes", "free_bytes", "expected"),
    [
        (50 * MIB, 80 * GIB, GIB),
        (128 * MIB, 80 * GIB, 2 * GIB),
        (50 * MIB, 2 * GIB, 512 * MIB),
        (50 * MIB, 2 * GIB + 3, 512 * MIB),
    ],
)
def test_copy_buffer_is_far_larger_than_l2_and_fits(l2_bytes, free_bytes, expected):
    assert copy_buffer_bytes(l2_bytes, free_bytes) == expected


@pytest.mark.parametrize(
    ("min_bytes", "expected"),
    [(2 * 4 * 8192 * 8192, 4 * 8192 * 8192), (24, 12), (7, 4), (1, 1)],  # odd: one byte more, never less
)
def test_same_bytes_buffer_is_half_read_half_written(min_bytes, expected):
    assert same_bytes_buffer(min_bytes) == expected


@pytest.mark.parametrize("min_bytes", [0, -8])
def test_same_bytes_buffer_rejects_no_bytes(min_bytes):
    with pytest.raises(ValueError):
        same_bytes_buffer(min_bytes)


def test_same_bytes_copies_time_each_byte_count_once_rotated_like_a_variant():
    device = FakeDevice()
    copies = SameBytesCopies(device, repeats=25)
    budget = int(MEMORY_SHARE * FAKE_FREE)
    first = copies.of(8192)
    assert copies.of(8192) is first and copies.of(8191) is first  # cached by byte count (8191: 4096 each way)
    assert device.copies == [(4096, 25, input_set_count(8192, FAKE_L2, budget))]
    assert first == CopyBandwidth(4096, TimeSummary.of([copy_ms(4096)] * 25), input_sets=24)  # ceil(4 x 48 KiB / 8 KiB)
    assert first.bytes_moved == 8192 and first.gb_per_s == pytest.approx(copy_gb_per_s(4096))
    second = copies.of(1 << 20)
    assert second.buffer_bytes == 1 << 19 and second.input_sets == 2  # 1 MiB a pair: already 21x L2, still 2
    assert copies.of(1 << 20) is second
    assert [c[0] for c in device.copies] == [4096, 1 << 19]
    assert copies.timed == (first, second)


def test_same_bytes_copies_rotation_fits_the_memory_budget():
    device = FakeDevice()
    device.l2_bytes = 64 * MIB
    device.free_bytes = lambda: 40 * MIB  # half for the copy: 20 MiB, two pairs of 4 MiB + 4 MiB
    copy = SameBytesCopies(device, repeats=20).of(8 * MIB)
    assert (copy.buffer_bytes, copy.input_sets) == (4 * MIB, 2)


def test_a_failed_same_bytes_copy_is_a_profiler_error_naming_the_bytes():
    device = FakeDevice()

    def broken(buffer_bytes, repeats, sets=1):
        raise RuntimeError("cudaErrorIllegalAddress")

    device.copy_times = broken
    with pytest.raises(ProfilerError, match="copy of 8192 bytes failed: RuntimeError: cudaErrorIllegalAddress"):
        SameBytesCopies(device, repeats=20).of(8192)


def test_set_bytes_count_inputs_and_output():
    import numpy as np

    inputs = {"a": np.zeros((64, 48), np.float32), "b": np.zeros(10, np.float64)}
    assert set_bytes_of(inputs, np.zeros((48, 64), np.float32)) == 64 * 48 * 4 + 80 + 48 * 64 * 4


# --- the command end to end, on the CPU suite ------------------------------------------------------


def test_bench_writes_bench_json_and_prints_table(device, tmp_path, capsys):
    assert bench_cli(tmp_path) == 0
    run = only_run(tmp_path)
    data = json.loads((run / BENCH_FILE).read_text())
    assert (data["format"], data["schema_version"]) == ("memlens-bench", 3)
    assert data["info"]["gpu_name"] == "Fake GPU"
    assert data["info"]["repeats"] == 20
    assert data["copy"]["buffer_bytes"] == GIB  # max(1 GiB, 16 x 48 KiB)
    assert data["copy"]["input_sets"] == 1
    assert data["copy"]["gb_per_s"] == pytest.approx(copy_gb_per_s(GIB))
    assert device.copies == [(GIB, 20, 1)]  # no family of the CPU suite declares min_bytes: no same-bytes copy
    labels = [f"{v['family']}/{v['variant']}" for v in data["variants"]]
    assert labels == [
        "transpose/conflict",
        "transpose/padded",
        "transpose/swizzled",
        "running_mean/register",
        "running_mean/local",
    ]
    transpose = data["variants"][0]
    assert transpose["size"] == {"m": 64, "n": 48}
    assert transpose["set_bytes"] == 64 * 48 * 4 * 2
    assert transpose["times"]["median_ms"] == 10.5
    assert len(transpose["times"]["samples_ms"]) == 20
    assert transpose["min_bytes"] is None and transpose["gb_per_s"] is None  # the CPU suite declares none
    assert transpose["copy"] is None and transpose["pct_of_copy"] is None
    assert data["failures"] == []
    assert not (tmp_path / "runs" / "latest").exists()  # latest stays with the last profile
    out = capsys.readouterr().out
    gpu_copy = f"{copy_gb_per_s(GIB):,.0f}"
    assert f"Fake GPU: device-to-device copy {gpu_copy} GB/s (1.07 GB buffer); median of 20 launches" in out
    assert "transpose/conflict" in out and "10.5 ms" in out
    assert "GB/s: n/a where the family declares no min_bytes" in out
    assert "% of copy: of" not in out  # no variant has one
    assert {cells[0]: cells[7] for cells in table_rows(out)}["transpose/conflict"] == "n/a"


def test_sets_rotate_to_several_times_l2(device, tmp_path, capsys):
    assert bench_cli(tmp_path) == 0
    # transpose 64x48 float32 in + out = 24 KiB: ceil(4 x 48 KiB / 24 KiB) = 8 sets;
    # running_mean n=256: 2 KiB a set -> 96 wanted, capped at MAX_SETS
    assert device.rotations == [8, 8, 8, MAX_SETS, MAX_SETS]
    data = json.loads((only_run(tmp_path) / BENCH_FILE).read_text())
    assert [v["input_sets"] for v in data["variants"]] == [8, 8, 8, MAX_SETS, MAX_SETS]
    # 32 sets of 2 KiB are under 4x the 48 KiB L2: marked, and said once
    out = capsys.readouterr().out
    sets = {cells[0]: cells[2] for cells in table_rows(out)}
    assert sets["transpose/padded"] == "8" and sets["running_mean/local"] == f"{MAX_SETS}*"
    assert out.count("* the input sets together hold less than 4x the L2 cache (49.2 KB)") == 1


MIN_BYTES_SUITE = """
import numpy as np
from memlens.suite import Family, Launch

copy = Family("copy", "a host copy", lambda rng, s: {"x": rng.random(s["n"], dtype=np.float32)},
              lambda inputs, s: inputs["x"].copy(), default_size={"n": 1024}, small_size={"n": 512},
              min_bytes=lambda s: s["n"] * 4 * 2)
PREPARED = []

@copy.variant("plain", demonstrates="a copy")
def prepare(inputs, size):
    PREPARED.append(size["n"])
    wrong = len(PREPARED) == int(__import__("os").environ.get("BENCH_TEST_WRONG_SET", "0"))
    out = {}
    def run():
        out["y"] = inputs["x"] + (1 if wrong else 0)
    return Launch(run=run, output=lambda: out["y"])
"""


@pytest.fixture
def min_bytes_suite(tmp_path) -> Path:
    path = tmp_path / "suite" / "copy_suite.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(MIN_BYTES_SUITE))
    return path


def test_bandwidth_and_pct_of_copy_from_min_bytes(device, tmp_path, min_bytes_suite):
    assert bench_cli(tmp_path, min_bytes_suite, "--small", "--size", "n=2048") == 0  # --size wins over --small
    results = load_bench(only_run(tmp_path))
    timing = results.lookup("copy", "plain")
    assert timing is not None and timing.size == {"n": 2048}
    assert timing.min_bytes == 2048 * 8
    assert timing.gb_per_s == pytest.approx(2048 * 8 / 10.5 / 1e6)
    # compared with a copy of the same 16 KiB (8 KiB read, 8 KiB written), not with the GPU's 1 GiB copy
    assert timing.copy is not None and timing.copy.bytes_moved == timing.min_bytes
    assert timing.pct_of_copy == pytest.approx(100 * timing.gb_per_s / copy_gb_per_s(2048 * 4))
    assert results.copy.buffer_bytes == GIB and timing.copy != results.copy
    # timed the same way: the same repeats, rotating over as many buffer sets as the variant's input sets
    assert device.copies == [(GIB, 20, 1), (2048 * 4, 20, timing.input_sets)]
    assert timing.copy.input_sets == timing.input_sets == 12  # x and y: 16 KiB a set; ceil(4 x 48 KiB / 16 KiB)
    assert len(timing.copy.times.samples_ms) == 20


SAME_BYTES_SUITE = """
import numpy as np
from memlens.suite import Family, Launch

def family(name, n, min_bytes):
    return Family(name, "host copies", lambda rng, s: {"x": rng.random(s["n"], dtype=np.float32)},
                  lambda inputs, s: inputs["x"].copy(), default_size={"n": n}, min_bytes=min_bytes)

def plain(inputs, size):
    out = {}
    def run():
        out["y"] = inputs["x"].copy()
    return Launch(run=run, output=lambda: out["y"])

small = family("small", 1024, lambda s: s["n"] * 8)
large = family("large", 4096, lambda s: s["n"] * 8)
twin = family("twin", 1024, lambda s: s["n"] * 8)  # the same bytes as small: its copy again
none = family("none", 1024, None)
for f in (small, large, twin, none):
    f.variant("a", demonstrates="a copy")(plain)
for f in (small, large):
    f.variant("b", demonstrates="another copy")(plain)
del f  # the loader reads each family from one name
"""


@pytest.fixture
def same_bytes_suite(tmp_path) -> Path:
    path = tmp_path / "suite" / "same_bytes_suite.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(SAME_BYTES_SUITE))
    return path


def test_each_variant_is_compared_with_a_copy_of_its_bytes_timed_once_per_byte_count(
    device, tmp_path, same_bytes_suite, capsys
):
    assert bench_cli(tmp_path, same_bytes_suite) == 0
    results = load_bench(only_run(tmp_path))
    # the GPU's copy first, then one copy per distinct byte count, when a variant first needs it
    assert device.copies == [(GIB, 20, 1), (4096, 20, 24), (16384, 20, 6)]
    by_label = {t.label: t for t in results.variants}
    small, large = by_label["small/a"].copy, by_label["large/a"].copy
    assert small is not None and large is not None
    assert (small.bytes_moved, large.bytes_moved) == (8192, 32768)
    assert by_label["small/b"].copy == by_label["twin/a"].copy == small
    assert by_label["large/b"].copy == large
    assert by_label["none/a"].copy is None and by_label["none/a"].pct_of_copy is None
    for label in ("small/a", "small/b", "twin/a", "large/a", "large/b"):
        timing = by_label[label]
        assert timing.copy.input_sets == timing.input_sets  # the same rotation as the variant
        assert timing.pct_of_copy == pytest.approx(100 * timing.gb_per_s / timing.copy.gb_per_s)
    # the table shows each variant's copy; a note says what % of copy is of
    out = capsys.readouterr().out
    rows = {cells[0]: cells for cells in table_rows(out)}
    assert rows["small/a"][7] == f"{copy_gb_per_s(4096):,.1f}" and rows["large/b"][7] == f"{copy_gb_per_s(16384):,.1f}"
    assert rows["none/a"][7] == "n/a" and rows["none/a"][8] == "n/a"
    (header,) = [[c.strip() for c in line.split("┃")[1:-1]] for line in out.splitlines() if line.startswith("┃")]
    assert header[6:] == ["GB/s", "copy GB/s (same bytes)", "% of copy"]
    assert (
        "% of copy: of 'copy GB/s (same bytes)', a device-to-device copy of the variant's min_bytes "
        "(half read, half written) timed the same way as the variant; not of the header's copy"
    ) in out
    # bench.json records the copy of each variant: its bytes, median and GB/s
    data = json.loads((only_run(tmp_path) / BENCH_FILE).read_text())
    recorded = {f"{v['family']}/{v['variant']}": v["copy"] for v in data["variants"]}
    assert recorded["none/a"] is None
    assert recorded["large/b"]["buffer_bytes"] == 16384 and recorded["large/b"]["bytes_moved"] == 32768
    assert recorded["large/b"]["input_sets"] == 6
    assert recorded["large/b"]["times"]["median_ms"] == pytest.approx(copy_ms(16384))
    assert recorded["large/b"]["gb_per_s"] == pytest.approx(copy_gb_per_s(16384))


def test_every_prepared_set_is_verified(device, tmp_path, min_bytes_suite, monkeypatch, capsys):
    monkeypatch.setenv("BENCH_TEST_WRONG_SET", "3")  # the third of 12 sets computes a wrong result
    assert bench_cli(tmp_path, min_bytes_suite) == 3
    results = load_bench(only_run(tmp_path))
    assert results.variants == ()
    (failure,) = results.failures
    assert (failure.family, failure.variant, failure.status) == ("copy", "plain", "wrong")
    assert "copy/plain: wrong result at index 0" in failure.message
    assert device.rotations == []  # nothing was timed
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "memlens: error: 1 of 1 variants were not timed, first copy/plain: wrong"
    )


ACCUMULATING_SUITE = """
import numpy as np
from memlens.suite import Family, Launch

acc = Family("acc", "adds into its output", lambda rng, s: {"x": rng.random(s["n"], dtype=np.float32)},
             lambda inputs, s: inputs["x"].copy(), default_size={"n": 256})

@acc.variant("plus_equals", demonstrates="out += x: right once, wrong when repeated")
def prepare(inputs, size):
    out = np.zeros_like(inputs["x"])
    def run():
        out[:] += inputs["x"]
    def reset():
        out[:] = 0
    return Launch(run=run, output=lambda: out.copy(), reset=reset)
"""


def test_output_is_verified_again_after_timing(device, tmp_path):
    suite = tmp_path / "acc_suite.py"
    suite.write_text(textwrap.dedent(ACCUMULATING_SUITE))
    assert bench_cli(tmp_path, suite) == 3
    (failure,) = load_bench(only_run(tmp_path)).failures
    assert failure.status == "wrong" and failure.message.startswith("acc/plus_equals: wrong result at index 0")
    assert device.rotations == [MAX_SETS]  # every set verified before timing; wrong only after


def test_wrong_variant_is_recorded_and_the_rest_timed(device, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_TEST_WRONG", "transpose/padded")
    assert bench_cli(tmp_path) == 3
    results = load_bench(only_run(tmp_path))
    assert [t.variant for t in results.variants] == ["conflict", "swizzled", "register", "local"]
    assert [(f.variant, f.status) for f in results.failures] == [("padded", "wrong")]


def test_an_error_stops_the_bench_and_keeps_what_was_timed(device, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_TEST_RAISE", "transpose/swizzled")
    assert bench_cli(tmp_path) == 3
    results = load_bench(only_run(tmp_path))
    assert [t.variant for t in results.variants] == ["conflict", "padded"]
    assert [(f.variant, f.status) for f in results.failures] == [
        ("swizzled", "failed"),
        ("register", "not_run"),
        ("local", "not_run"),
    ]
    assert "RuntimeError: launch of transpose/swizzled failed (test)" in results.failures[0].message
    assert "3 of 5 variants were not timed" in capsys.readouterr().err


def test_bad_min_bytes_is_a_failure_of_that_family(device, tmp_path, min_bytes_suite):
    min_bytes_suite.write_text(min_bytes_suite.read_text().replace('s["n"] * 4 * 2', "0"))
    assert bench_cli(tmp_path, min_bytes_suite) == 3
    (failure,) = load_bench(only_run(tmp_path)).failures
    assert failure.status == "failed"
    assert failure.message == "family 'copy': min_bytes({'n': 1024}) returned 0, not a positive int"


def test_into_writes_beside_a_profile(device, tmp_path):
    run = tmp_path / "runs" / "20261121-120000-1"
    run.mkdir(parents=True)
    (run / "results.json").write_text("{}")
    assert main(["bench", str(CPU_SUITE), "--into", str(run), "-k", "^transpose/padded$", "--repeats", "25"]) == 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [run.name]  # no new run directory
    results = find_bench(run)
    assert results is not None
    assert [t.label for t in results.variants] == ["transpose/padded"]
    assert len(results.variants[0].times.samples_ms) == 25


def test_copy_only_times_the_gpus_copy_alone_with_no_suite(device, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no ./kernels here: --copy-only needs no suite
    into = tmp_path / "copy"
    into.mkdir()
    assert main(["bench", "--copy-only", "--into", str(into), "--repeats", "20"]) == 0
    assert device.copies == [(GIB, 20, 1)]  # the GPU's copy, nothing else timed
    results = load_bench(into)
    assert (results.variants, results.failures) == ((), ())
    assert results.info.gpu_name == "Fake GPU" and results.info.suite is None and results.info.suite_commit is None
    assert results.copy.gb_per_s == pytest.approx(copy_gb_per_s(GIB))
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"Fake GPU: device-to-device copy {copy_gb_per_s(GIB):,.0f} GB/s (1.07 GB buffer); median of 20 launches",
        f"written: {into / BENCH_FILE}",
    ]  # no empty table of variants


@pytest.mark.parametrize(
    ("extra", "option"),
    [([str(CPU_SUITE)], "SUITE"), (["-k", "transpose"], "-k"), (["--small"], "--small"), (["--gpus", "all"], "--gpus")],
)
def test_copy_only_with_an_option_that_chooses_variants_exits_2(tmp_path, capsys, monkeypatch, extra, option):
    monkeypatch.setattr(bench_module, "open_device", lambda: pytest.fail("the GPU was opened"))
    assert main(["bench", "--copy-only", "--out", str(tmp_path / "runs"), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"memlens: error: --copy-only times the GPU's copy alone, no variants: drop {option}"]
    assert not (tmp_path / "runs").exists()


# --- usage and environment errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--repeats", "19"], "--repeats 19: at least 20 launches make a median"),
        (["--size", "m=big"], "bad --size 'm=big': expected NAME=POSITIVE_INTEGER"),
        (["--size", "nosuch=5"], "--size nosuch: no selected family has that size"),
        (["-k", "nothing"], "matches -k 'nothing'"),
        (["-k", "("], "bad -k pattern '('"),
        (["--into", "/nonexistent/run"], "--into /nonexistent/run: not a run directory"),
    ],
)
def test_usage_errors_exit_2_before_touching_the_gpu(tmp_path, capsys, extra, message, monkeypatch):
    monkeypatch.setattr(bench_module, "open_device", lambda: pytest.fail("the GPU was opened"))
    argv = ["bench", str(CPU_SUITE), *extra] + ([] if "--into" in extra else ["--out", str(tmp_path / "runs")])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.skipif(_gpu_present(), reason="checks the error on a machine with no GPU")
def test_a_size_no_family_has_exits_2_on_a_machine_with_no_gpu(tmp_path, capsys):
    """Checked with the selection, before the GPU is looked for: not exit 3 for "no GPU"."""
    assert bench_cli(tmp_path, CPU_SUITE, "--size", "nosuch=5") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--size nosuch: no selected family has that size" in err[0]


@pytest.mark.skipif(_gpu_present(), reason="checks the error on a machine with no GPU")
def test_no_gpu_is_one_line_and_exit_3(tmp_path, capsys):
    assert bench_cli(tmp_path) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    if importlib.util.find_spec("cupy") is None:
        needs = "memlens bench needs CuPy (No module named 'cupy'): pip install 'memlens[cuda13]'"
        assert err[0] == f"memlens: error: {needs}"
    else:
        assert err[0].startswith("memlens: error: no usable CUDA GPU: cudaError")
    assert not (tmp_path / "runs").exists()


# --- bench.json ------------------------------------------------------------------------------------


def test_round_trip_and_lookup(device, tmp_path):
    assert bench_cli(tmp_path) == 0
    run = only_run(tmp_path)
    results = load_bench(run)
    assert load_bench(run / BENCH_FILE) == results
    assert BenchResults.from_json(json.loads(json.dumps(results.to_json()))) == results
    assert results.info.sizes == () and results.info.memlens_version
    padded = results.lookup("transpose", "padded")
    assert padded is not None and padded.times.median_ms == 10.5 and padded.input_sets == 8
    assert results.lookup("transpose", "missing") is None
    assert results.lookup(None, None) is None
    assert find_bench(tmp_path) is None  # a folder with no bench.json


def test_round_trip_keeps_each_variants_copy(device, tmp_path, same_bytes_suite):
    assert bench_cli(tmp_path, same_bytes_suite) == 0
    results = load_bench(only_run(tmp_path))
    assert BenchResults.from_json(json.loads(json.dumps(results.to_json()))) == results
    assert [t.copy.buffer_bytes if t.copy else None for t in results.variants] == [4096, 4096, 16384, 16384, 4096, None]


def _valid(tmp_path: Path, version: int = 2) -> dict:
    """The least a bench.json holds: schema 2 records each variant's copy, schema 1 one copy for all."""
    copy = {"buffer_bytes": GIB, "times": {"samples_ms": [0.5] * 20}}
    variant = {
        "family": "f",
        "variant": "v",
        "size": {"n": 4},
        "min_bytes": 32,
        "input_sets": 2,
        "set_bytes": 32,
        "times": {"samples_ms": [1.0] * 20},
    }
    if version >= 2:
        variant["copy"] = {"buffer_bytes": 16, "input_sets": 2, "times": {"samples_ms": [0.25] * 20}}
    return {
        "format": "memlens-bench",
        "schema_version": version,
        "info": {"gpu_name": "G", "l2_bytes": MIB, "repeats": 20},
        "copy": copy,
        "variants": [variant],
    }


def test_minimal_file_loads_with_derived_figures(tmp_path):
    path = tmp_path / BENCH_FILE
    path.write_text(json.dumps(_valid(tmp_path)))
    results = load_bench(path)
    (timing,) = results.variants
    assert timing.gb_per_s == pytest.approx(32 / 1.0 / 1e6)
    assert timing.copy == CopyBandwidth(16, TimeSummary.of([0.25] * 20), input_sets=2)
    assert timing.pct_of_copy == pytest.approx(100 * (32 / 1e6) / (32 / 0.25 / 1e6))  # of its own copy: 25%
    assert results.copy == CopyBandwidth(GIB, TimeSummary.of([0.5] * 20))  # input_sets: 1 when not given


def test_a_schema_2_files_command_is_read_as_the_memlens_command(tmp_path):
    data = _valid(tmp_path)
    data["info"]["command"] = "memlens bench -k transpose"
    results = BenchResults.from_json(data)
    assert results.info.memlens_command == "memlens bench -k transpose"
    rewritten = json.loads(json.dumps(results.to_json()))
    assert rewritten["schema_version"] == 3 and "command" not in rewritten["info"]
    assert rewritten["info"]["memlens_command"] == "memlens bench -k transpose"
    assert BenchResults.from_json(rewritten) == results


def test_schema_1_files_are_read_with_their_one_copy(tmp_path):
    """A bench.json as memlens wrote it before schema 2: every variant compared with the one 1 GiB copy."""
    data = _valid(tmp_path, version=1)
    data["copy"].update({"bytes_moved": 2 * GIB, "gb_per_s": 2 * GIB / 0.5 / 1e6})  # derived: read again
    data["variants"][0].update({"gb_per_s": 1.0, "pct_of_copy": 1.0})
    data["variants"].append({**data["variants"][0], "variant": "w", "min_bytes": None})
    path = tmp_path / BENCH_FILE
    path.write_text(json.dumps(data))
    results = load_bench(path)
    timing, unsized = results.variants
    assert timing.copy == results.copy == CopyBandwidth(GIB, TimeSummary.of([0.5] * 20))
    assert timing.pct_of_copy == pytest.approx(100 * (32 / 1e6) / (2 * GIB / 0.5 / 1e6))
    assert unsized.copy is None and unsized.pct_of_copy is None
    rewritten = json.loads(json.dumps(results.to_json()))  # written again: schema 3, with the copy of each variant
    assert rewritten["schema_version"] == 3 and rewritten["variants"][0]["copy"]["buffer_bytes"] == GIB
    assert rewritten["variants"][1]["copy"] is None
    assert BenchResults.from_json(rewritten) == results


def _set(data: dict, dotted: str, value) -> dict:
    *parents, last = dotted.split(".")
    node = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("format", "memlens-report"), "a JSON report (`memlens report --format json`), not a memlens bench file"),
        (("schema_version", 99), "unsupported schema_version 99"),
        (("copy", KeyError), "malformed bench results (KeyError: 'copy')"),
        (("info.unknown", 1), "malformed bench results (TypeError"),
        (("variants.0.times.samples_ms", []), "malformed bench results (ValueError: no time samples)"),
        (("variants.0.times.samples_ms", [1.0, -2.0]), "finite and not negative"),
        (("variants.0.times.samples_ms", ["1.0"]), "samples_ms must be a list of numbers"),
        (("variants.0.min_bytes", 0), "expected a positive integer, got 0"),
        (("variants.0.size", {"n": True}), "expected a positive integer, got True"),
        (("copy.times.samples_ms", [0.0] * 20), "copy median time is 0"),
        (("variants.0.copy", KeyError), "malformed bench results (KeyError: 'copy')"),  # schema 2: required
        (("variants.0.copy", None), "f/v: a bandwidth with no copy to compare it with"),
        (("variants.0.copy.times.samples_ms", [0.0] * 20), "copy median time is 0"),
        (("variants.0.copy.buffer_bytes", 0), "expected a positive integer, got 0"),
        (("variants.0.copy.input_sets", 1.5), "expected a positive integer, got 1.5"),
    ],
)
def test_bad_bench_files_raise_input_error(tmp_path, change, message):
    path = tmp_path / BENCH_FILE
    path.write_text(json.dumps(_set(_valid(tmp_path), *change)))
    with pytest.raises(InputError) as info:
        load_bench(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"{not json", "invalid JSON at line 1 column 2"),
        (b"[1, 2]", "not a memlens bench"),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
)
def test_unreadable_bench_files_raise_input_error(tmp_path, content, message):
    path = tmp_path / BENCH_FILE
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        load_bench(tmp_path)  # a run directory: its bench.json


def test_bench_command_exit_code_for_bad_into_file(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("")
    assert main(["bench", str(CPU_SUITE), "--into", str(target)]) == 2
    assert "not a run directory" in capsys.readouterr().err


SHARED_SETS_SUITE = """
import numpy as np
from memlens.suite import Family, Launch

MADE, SEEN = [], []

def make(rng, s):
    MADE.append(s["n"])
    return {"x": rng.random(s["n"], dtype=np.float32)}

copy = Family("copy", "a host copy", make, lambda inputs, s: inputs["x"].copy(), default_size={"n": 1024})

for name in ("first", "second"):
    @copy.variant(name, demonstrates="a copy")
    def prepare(inputs, size):
        SEEN.append(id(inputs["x"]))
        return Launch(run=lambda: None, output=lambda: inputs["x"].copy())
"""


def test_a_familys_variants_share_its_input_sets_made_once(device, tmp_path):
    path = tmp_path / "suite" / "shared_sets.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(SHARED_SETS_SUITE))
    assert bench_cli(tmp_path, path) == 0
    module = next(m for name, m in sys.modules.items() if name.endswith("_shared_sets"))
    sets = load_bench(only_run(tmp_path)).variants[0].input_sets
    assert sets > 1 and len(module.MADE) == sets  # one family's sets made once, not once a variant
    assert module.SEEN[:sets] == module.SEEN[sets:]  # the second variant runs on the very same arrays


class _DeviceArray:
    """A stand-in for a CuPy array: it has the CUDA array interface and the values it was made from."""

    __cuda_array_interface__: dict = {}

    def __init__(self, values) -> None:
        self.values = values


def test_input_sets_copy_each_reference_to_the_gpu_once_a_family(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU output is checked against one device copy of its set's reference, whatever the number of
    variants that check it; a host output against the host reference; the next family copies its own."""
    uploads: list[object] = []
    fake_cupy = type(sys)("cupy")
    fake_cupy.asarray = lambda values: uploads.append(values) or _DeviceArray(values)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    families = {
        case.variant.family.name: case.variant.family
        for case in bench_module.select_variants(str(CPU_SUITE), None, [], [], True).cases()
    }
    first, second = list(families.values())[:2]
    sets = bench_module.InputSets()
    size = first.size(small=True)
    _, expected = sets.get(first, size, 1, seed=3)
    on_device = sets.expected_like(1, _DeviceArray(None))
    assert isinstance(on_device, _DeviceArray) and on_device.values is expected
    for _ in range(3):  # three more variants' checks of set 1
        assert sets.expected_like(1, _DeviceArray(None)) is on_device
    assert sets.expected_like(1, expected.copy()) is expected  # a host output: the host reference
    assert uploads == [expected]
    _, next_expected = sets.get(second, second.size(small=True), 0, seed=4)
    assert sets.expected_like(0, _DeviceArray(None)).values is next_expected
    assert uploads == [expected, next_expected]
