"""`memlens metrics`, called through profiling.cli.main as a user would."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from profiling.catalogue import CATALOGUE
from profiling.cli import main

PROBE = Path(__file__).resolve().parent / "fixtures" / "probe"
pytestmark = pytest.mark.skipif(not (PROBE / "probe.ncu-rep").exists(), reason="probe fixtures not recorded")


def metrics(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["metrics", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table_from_a_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = metrics(capsys, str(PROBE / "probe.ncu-rep"))
    assert (code, err) == (0, "")
    assert "probe.ncu-rep (NVIDIA H200, cc 9.0)" in out
    for text in ("transpose/conflict", "transpose/padded", "running_mean/local",  # labels
                 "85.4 µs", "0.532 ms",  # durations in human units
                 "16,252,928 (31/ld)", "32.25",  # exact excess and n-way of the conflicting transpose
                 "HW conflict", "40,231",  # the hardware counter, non-zero for the padded one
                 "1.07 GB / 1.07 GB",  # local loads / stores of the running mean
                 "4.00 KiB", "4.12 KiB", "16,384 x 256", "1,333.9", "27.7%"):
        assert text in out, text
    assert "n/a" not in out


def test_fast_recording_says_why_exact_excess_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = metrics(capsys, str(PROBE / "probe_fast.csv"))
    assert code == 0
    notes = [line for line in out.splitlines() if line.startswith("exact excess wavefronts: n/a — ")]
    assert len(notes) == 1  # once, not once per kernel
    assert "run without --fast" in notes[0]
    assert out.count("n/a") == 3 + 1  # three cells and the note


def test_filter_by_label(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = metrics(capsys, str(PROBE / "probe.csv"), "-k", "padded")
    assert code == 0
    assert "transpose/padded" in out and "transpose/conflict" not in out


def test_filter_matching_nothing_or_bad_regex_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = metrics(capsys, str(PROBE / "probe.csv"), "-k", "nothing_like_this")
    assert (code, out) == (2, "")
    assert err.startswith("memlens: error: no kernel in") and err.count("\n") == 1
    code, _, err = metrics(capsys, str(PROBE / "probe.csv"), "-k", "(")
    assert code == 2 and "bad -k pattern" in err


def test_json_has_every_catalogue_metric(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = metrics(capsys, str(PROBE / "probe_fast.ncu-rep"), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["info"]["gpu_name"] == "NVIDIA H200"
    kernel = data["kernels"][0]
    assert (kernel["label"], kernel["kernel"]) == ("transpose/conflict", "void tr<0>(float *, const float *, int)")
    assert set(kernel["metrics"]) == set(CATALOGUE)
    assert kernel["metrics"]["duration"]["unit"] == "ns"
    assert kernel["metrics"]["duration"]["value"] > 0
    excess = kernel["metrics"]["exact_excess_wavefronts"]
    assert excess["value"] is None and "--fast" in excess["reason"]


def test_csv_one_row_a_kernel_with_units_in_the_header(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = metrics(capsys, str(PROBE / "probe.ncu-rep"), "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 3
    assert "duration (ns)" in rows[0] and "dram_bandwidth (byte/second)" in rows[0]
    assert len(rows[0]) == 5 + len(CATALOGUE)
    assert rows[0]["exact_excess_wavefronts (wavefront)"] == "16252928"
    assert rows[0]["excess_wavefronts_per_shared_ld (wavefront/inst)"] == "31"
    assert rows[2]["shared_ld_ways (wavefront/inst)"] == ""  # the running mean has no shared loads


def test_json_and_csv_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["metrics", str(PROBE / "probe.csv"), "--json", "--csv"])
    assert info.value.code == 2
    capsys.readouterr()


def test_default_is_the_latest_run(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = metrics(capsys)
    assert (code, out) == (2, "")
    assert "runs/latest: no run yet" in err
    run = tmp_path / "runs" / "20261121-1"
    run.mkdir(parents=True)
    shutil.copy(PROBE / "probe.ncu-rep", run / "profile.ncu-rep")
    (tmp_path / "runs" / "latest").symlink_to(run.name)
    code, out, _ = metrics(capsys)
    assert code == 0 and "transpose/conflict" in out


def test_plain_ncu_csv_names_kernels_and_prints_them_as_text(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    header = '"ID","Kernel Name","gpu__time_duration.sum","launch__registers_per_thread"\n"","","usecond",""\n'
    path = tmp_path / "plain.csv"
    path.write_text(header + '"0","void f<[bold]a[/bold], 32 & 1>(T1 *)","1,500.5","40"\n', encoding="utf-8")
    code, out, _ = metrics(capsys, str(path))
    assert code == 0
    assert "void f<[bold]a[/bold], 32 & 1>(T1 *)" in out
    assert "1.50 ms" in out
    assert "DRAM GB/s: n/a — " in out  # no DRAM bytes in this export
    assert "shared ld n-way: n/a — needs shared_ld_instructions: not in the report" in out


@pytest.mark.parametrize("data", [b"", b"\x00\xffjunk", b"hello\n"])
def test_unreadable_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 data: bytes) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    code, out, err = metrics(capsys, str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"memlens: error: {path}: ") and err.count("\n") == 1
    assert "Traceback" not in err
