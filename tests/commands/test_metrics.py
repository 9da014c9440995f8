"""profiling/commands/metrics.py (`memlens metrics`), called through cli.main as a user would."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len

from memlens.cli import main
from memlens.model.catalogue import CATALOGUE
from memlens.model.results import KernelResult, RunInfo, RunResults
from memlens.output.kernel_metrics import COLUMNS, KIND_COLUMNS, csv_header, print_table
from memlens.readers import read_report

PROBE = Path(__file__).resolve().parents[1] / "fixtures" / "probe"
SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_h200"
PROGRAM = Path(__file__).resolve().parents[1] / "fixtures" / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"
pytestmark = pytest.mark.skipif(not (PROBE / "probe.ncu-rep").exists(), reason="probe fixtures not recorded")


def metrics(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["metrics", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table_from_a_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = metrics(capsys, str(PROBE / "probe.ncu-rep"))
    assert (code, err) == (0, "")
    assert "probe.ncu-rep (NVIDIA H200, cc 9.0)" in out
    for text in (
        "transpose/conflict",
        "transpose/padded",
        "running_mean/local",  # labels
        "85.4 µs",
        "0.532 ms",  # durations in human units
        # exact excess and n-way (wavefronts over the ideal) of the conflict; the probe was recorded
        # without per-instruction executions (inst_executed), so the excess per load is over the
        # hardware counter's loads (16,252,928 / 524,288), marked "*" as a fallback
        "16,252,928 (31/ld*)",
        "32.00",
        "HW ld + st",
        "40,231",  # the hardware counter, non-zero for the padded one
        "1.07 GB / 1.07 GB",  # local loads / stores of the running mean
        "4,096 B",
        "4,224 B",
        "16,384 x 256",
        "1,333.9",
        "27.7%",
    ):
        assert text in out, text
    assert "n/a" not in out
    assert (
        "exact excess wavefronts: * per instruction of the hardware counter (this report has no "
        "per-instruction figures)" in out
    )


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
    assert len(rows[0]) == 6 + len(CATALOGUE)  # label, kernel, family, variant, nvtx, launch_id
    assert rows[0]["exact_excess_wavefronts (wavefront)"] == "16252928"
    # per load: over the per-instruction executions, which the probe (no inst_executed) lacks; no "*" in a CSV,
    # so no fallback figure either (the table's is marked)
    assert rows[0]["shared_ld_executions (inst)"] == rows[0]["excess_wavefronts_per_shared_ld (wavefront/inst)"] == ""
    code, out, _ = metrics(capsys, str(SUITE / "suite.results.json"), "-k", "transpose/conflict$", "--csv")
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["exact_excess_wavefronts_ld (wavefront)"] == "65011712"
    assert row["shared_ld_executions (inst)"] == "2097152"
    assert row["excess_wavefronts_per_shared_ld (wavefront/inst)"] == "31"
    assert rows[2]["shared_ld_ways (wavefront/inst)"] == ""  # the running mean has no shared loads


def test_json_and_csv_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["metrics", str(PROBE / "probe.csv"), "--json", "--csv"])
    assert info.value.code == 2
    capsys.readouterr()


def test_default_is_the_latest_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_plain_ncu_csv_names_kernels_and_prints_them_as_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    header = '"ID","Kernel Name","gpu__time_duration.sum","launch__registers_per_thread"\n"","","usecond",""\n'
    path = tmp_path / "plain.csv"
    path.write_text(header + '"0","void f<[bold]a[/bold], 32 & 1>(T1 *)","1,500.5","40"\n', encoding="utf-8")
    code, out, _ = metrics(capsys, str(path))
    assert code == 0
    assert "void f<[bold]a[/bold], 32 & 1>(T1 *)" in out
    assert "1.50 ms" in out
    assert "DRAM GB/s: n/a — " in out  # no DRAM bytes in this export
    assert "shared ld n-way: n/a — needs smsp__inst_executed_op_shared_ld.sum: not in the report" in out


@pytest.mark.parametrize("data", [b"", b"\x00\xffjunk", b"hello\n"])
def test_unreadable_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    code, out, err = metrics(capsys, str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"memlens: error: {path}: ") and err.count("\n") == 1
    assert "Traceback" not in err


# --- large reports: the fast printer -------------------------------------------------------------


def many_launches(directory: Path, launches: int = 1008) -> Path:
    """suite.csv's kernel rows repeated with new IDs up to `launches` rows (as record_many's report)."""
    header, units, *rows = list(csv.reader(io.StringIO((SUITE / "suite.csv").read_text(encoding="utf-8"))))
    path = directory / "many.csv"
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerows([header, units])
        writer.writerows([str(n), *rows[n % len(rows)][1:]] for n in range(launches))
    return path


@pytest.mark.skipif(not (SUITE / "suite.csv").exists(), reason="suite fixtures not recorded")
def test_large_report_keeps_every_row_and_every_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    path = many_launches(tmp_path)
    shutil.copy(SUITE / "check.json", tmp_path)  # the suite's ptxas figures, beside its launches as beside suite.csv
    labels = [k.label for k in read_report(SUITE / "suite.csv").kernels]
    code, small, _ = metrics(capsys, str(SUITE / "suite.csv"))
    assert code == 0
    code, out, err = metrics(capsys, str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == str(path) + " (NVIDIA H200, cc 9.0)"
    small_lines = small.splitlines()
    assert lines[1:5] == small_lines[1:5]  # the same border, header and columns
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == 1008
    # one line a kernel, every column but the kinds' n-ways, which a CSV cannot carry
    assert all(line.count("│") == len(COLUMNS) - len(KIND_COLUMNS) + 1 for line in body)
    assert [line.split("│")[1].strip() for line in body] == [labels[n % len(labels)] for n in range(1008)]
    assert body[: len(labels)] == [line for line in small_lines if line.startswith("│")]
    assert lines[-len(small_lines) + 5 + len(labels) :] == small_lines[5 + len(labels) :]  # bottom border, notes

    code, out, _ = metrics(capsys, str(path), "--csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and rows[0] == csv_header() and len(rows) == 1 + 1008
    assert [row[rows[0].index("launch_id")] for row in rows[1:]] == [str(n) for n in range(1008)]
    assert all(len(row) == len(rows[0]) for row in rows)

    code, out, _ = metrics(capsys, str(path), "--json")
    kernels = json.loads(out)["kernels"]
    assert code == 0 and [k["launch_id"] for k in kernels] == list(range(1008))
    assert all(set(k["metrics"]) == set(CATALOGUE) for k in kernels)
    assert out == json.dumps(json.loads(out), indent=2) + "\n"  # json.dumps's own layout


def awkward_kernels() -> list[KernelResult]:
    names = [
        "",
        " lead",
        "trail ",
        "tab\there",
        "bell\x07",
        "emoji :smile: code",
        "wide 漢字漢字",
        "a" * 300,
        "x  y",
        "void ns::k<" + ", ".join(f"int{i}" for i in range(40)) + ">(float *, const float *, int)",
    ]
    raw = {"duration": 1500.0, "grid_size": 16384.0, "block_size": 256.0, "shared_ld_instructions": 0.0}
    return [KernelResult(kernel=name, launch_id=n, raw={**raw, "duration": 1500.0 * n}) for n, name in enumerate(names)]


@pytest.mark.parametrize("columns", ["240", "120", "60"])
def test_fast_table_prints_what_rich_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    reports = [
        read_report(path)
        for path in (
            PROBE / "probe.ncu-rep",
            PROBE / "probe_fast.csv",
            SUITE / "suite.csv",
            SUITE / "plain_ncu.csv",
            PROGRAM,
        )
        if path.exists()
    ]
    reports += [RunResults(RunInfo(source="awkward"), tuple(awkward_kernels())), RunResults(RunInfo(), ())]
    assert len(reports) == 7  # the five recordings (all in the checkout) and the two built here
    for results in reports:
        printed = []
        for fast in (False, True):
            print_table(results, list(results.kernels), fast=fast)
            printed.append(capsys.readouterr().out)
        assert printed[0] == printed[1], results.info.source


@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_a_narrow_terminal_never_cuts_a_figure_or_a_label(columns, monkeypatch, capsys):
    """--wide: every column, the table wider than the screen rather than a figure cut (the columns that
    fit by default: tests/io/test_terminal_width.py)."""
    monkeypatch.setenv("COLUMNS", columns)
    argv = ["metrics", str(SUITE / "suite.results.json"), "-k", "transpose/(conflict|tile64_swizzled)$", "--wide"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for text in (
        "transpose/conflict",
        "transpose/tile64_swizzled",
        "65,011,712",
        "66,028,141",
        "0.307 ms",
        "1,687.4",
        "16,384 x 512 │",
    ):
        assert text in out, text
    table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert len({cell_len(line) for line in table}) == 1 and all(line[-1] in "┓┃┩│┘" for line in table)  # edge whole


def test_every_output_names_a_kernel_by_the_same_fields(capsys: pytest.CaptureFixture[str]) -> None:
    """results.IDENTITY, in the same order, in metrics --json, metrics --csv and lines --json."""
    from memlens.model.results import IDENTITY

    assert main(["metrics", str(PROGRAM), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["kernels"]
    assert main(["metrics", str(PROGRAM), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert main(["lines", str(PROGRAM), "--json"]) == 0
    lines = json.loads(capsys.readouterr().out)["kernels"]
    assert len(metrics) == len(rows) == len(lines) == 6
    for entry, row, line in zip(metrics, rows, lines, strict=True):
        assert list(entry)[: len(IDENTITY)] == list(line)[: len(IDENTITY)] == list(IDENTITY)
        assert [row[field] for field in IDENTITY] == ["" if entry[f] is None else str(entry[f]) for f in IDENTITY]
        assert entry["nvtx"] and line["nvtx"] == entry["nvtx"]


# --- footnotes agree with their table (issue 33, item 8) -----------------------------------------------

H200_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_h200"


def _notes(out: str) -> list[str]:
    """The lines below the table, each as one line (a note wrapped by the terminal joined again)."""
    below = out[out.rindex("┘") + 1 :].strip().splitlines()
    notes: list[str] = []
    for line in below:
        if notes and line.startswith(" "):
            notes[-1] += " " + line.strip()
        else:
            notes.append(line.strip())
    return notes


def test_a_csvs_fallback_n_way_gives_the_csvs_reason_not_the_fast_runs(monkeypatch, capsys):
    """`metrics suite.csv` said "(no exact pass in this report) ... profile without --fast" beside an exact column."""
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["metrics", str(H200_RUNS / "suite.csv")]) == 0
    out = capsys.readouterr().out
    assert "65,011,712" in out  # the exact excess, from the CSV's totals
    notes = [n for n in _notes(out) if n.startswith("shared ld n-way")]
    assert notes and all("--fast" not in n and "no exact pass" not in n for n in notes), notes
    assert all("a CSV cannot carry per-instruction values" in n for n in notes), notes


def test_a_fast_runs_fallback_n_way_names_the_fast_run(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["metrics", str(H200_RUNS / "suite_fast.results.json")]) == 0
    notes = [n for n in _notes(capsys.readouterr().out) if n.startswith("shared ld n-way: *")]
    assert len(notes) == 1 and "run without --fast" in notes[0]


def test_no_footnote_for_a_column_left_out(monkeypatch, capsys):
    """At 80 columns "shared ld n-way: - — no shared-memory loads" was printed with that column dropped."""
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["metrics", str(H200_RUNS / "suite.results.json")]) == 0
    out = capsys.readouterr().out
    header = "".join(line for line in out.splitlines() if line.startswith("┃"))
    notes = _notes(out)
    assert "n-way" not in header and not [n for n in notes if n.startswith("shared ld n-way")], notes


def test_a_fast_run_says_once_which_figures_on_paper_were_not_measured(monkeypatch, capsys):
    """A --fast run printed 19 separate "on paper N, measured n/a" lines."""
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["metrics", str(H200_RUNS / "suite_fast.results.json")]) == 0
    below = " ".join(capsys.readouterr().out.rsplit("┘", 1)[1].split())
    assert below.count("on paper") == 1 and "measured n/a" not in below, below
    assert "exact excess wavefronts on paper, not measured in this run (19 of 19): fp16_transpose/dense," in below
    assert "transpose/conflict" in below.split("not measured in this run")[1]


def test_a_library_kernel_shows_its_library_beside_it_in_the_table_and_json(capsys, monkeypatch):
    """issue 45: torch_triton (H200, record_programs.sh), its cuBLAS GEMM and ATen kernels at 80 columns."""
    torch = SUITE / "programs" / "torch_triton.csv"
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = metrics(capsys, str(torch))
    assert code == 0 and max(cell_len(line) for line in out.splitlines()) <= 80
    assert "│   [cuBLAS] nvjet_sm90_tst_128x64_6…z_NNT │" in out
    assert "│   [PyTorch] <…>::softmax_warp_forward<…> │" in out
    assert "│   add_kernel " in out  # the program's own Triton kernel: no library
    code, out, _ = metrics(capsys, str(torch), "--json")
    libraries = {k["label"]: k["library"] for k in json.loads(out)["kernels"]}
    assert libraries["torchapp@bf16_matmul"] == "cuBLAS" and libraries["torchapp@softmax"] == "PyTorch"
    assert libraries["torchapp@triton_add"] is None and libraries["add/triton"] is None
    code, out, _ = metrics(capsys, str(SUITE / "suite.results.json"), "--json")
    assert {k["library"] for k in json.loads(out)["kernels"]} == {None}  # the suite's kernels are the user's


def test_a_library_kernel_outside_any_range_gets_its_library_below_its_name(capsys, monkeypatch, tmp_path):
    from tests.support.outputs import results_file

    monkeypatch.setenv("COLUMNS", "80")
    path = results_file(tmp_path, "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT", "my_kernel(float *)")
    code, out, _ = metrics(capsys, str(path))
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert code == 0 and rows == ["nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT", "[cuBLAS]", "my_kernel(float *)"]


def test_each_kind_of_shared_access_a_run_has_gets_its_own_n_way(monkeypatch, capsys):
    """The suite's "shared ld n-way" blended fp16_transpose/dense's ldmatrix (4,194,304 wavefronts over an ideal
    of 1,048,576: 4-way) with its conflict-free LDS.128 into 2.50; each kind now has its column, and only the
    kinds the run has (no atomics or tensor-core reads in the suite)."""
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["metrics", str(H200_RUNS / "suite.results.json")]) == 0
    out = capsys.readouterr().out
    header = [line for line in out.splitlines() if line.startswith("┃")]
    assert [
        word in header[0] + header[1]
        for word in ("ldmatrix", "stmatrix", "cp.async", "shared st", "shared atom", "tensor-core")
    ] == [True] * 4 + [False] * 2
    dense = next(line for line in out.splitlines() if line.startswith("│ fp16_transpose/dense "))
    # shared ld (LDS.128), ldmatrix, shared st (none), stmatrix, cp.async
    assert [cell.strip() for cell in dense.split("│")[5:10]] == ["1.00", "4.00", "-", "4.00", "2.00"]
    conflict = next(line for line in out.splitlines() if line.startswith("│ transpose/conflict "))
    assert [cell.strip() for cell in conflict.split("│")[5:10]] == ["32.00", "-", "1.00", "-", "-"]
    assert (
        "shared ld n-way, ldmatrix n-way, shared st n-way, stmatrix n-way, cp.async n-way: - — the kernel has no"
        " access of that kind"
    ) in _notes(out)


def test_a_kernels_32_way_atomics_beside_its_conflict_free_loads(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "250")
    kinds = SUITE / "kinds" / "memory_kinds.ncu-rep"
    assert main(["metrics", str(kinds), "-k", "atomics_one_bank"]) == 0
    out = capsys.readouterr().out
    header = "".join(line for line in out.splitlines() if line.startswith("┃"))
    assert "shared atom" in header and "ldmatrix" not in header
    row = next(line for line in out.splitlines() if line.startswith("│ atomics_one_bank"))
    assert [cell.strip() for cell in row.split("│")[5:8]] == ["1.00", "1.00", "32.00"]  # loads, stores, atomics
    assert main(["metrics", str(kinds), "-k", "atomics_one_bank", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["kernels"][0]["metrics"]
    assert figures["exact_shared_atomics_ways"] == {"value": 32.0, "unit": "wavefront/ideal"}
    assert figures["exact_ldmatrix_ways"] == {"value": None, "unit": "wavefront/ideal", "reason": "no ldmatrix loads"}
    assert "exact_shared_atomics_ways (wavefront/ideal)" in csv_header()


@pytest.mark.parametrize("gpu", ["nvidia_h200", "nvidia_h100_80gb_hbm3"])
def test_a_plain_sourcecounters_report_shows_its_local_executions(capsys: pytest.CaptureFixture[str], gpu: str):
    """issue 46 (8): a plain `--section SourceCounters` report showed local memory "n/a / n/a", "needs
    l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", while its per-instruction table counts the local loads."""
    report = SUITE.parent / gpu / "kinds" / "memory_kinds_sourcecounters.ncu-rep"
    code, out, _ = metrics(capsys, str(report), "--wide")
    assert code == 0
    rows = {line.split("│")[1].strip(): line.split("│") for line in out.splitlines() if line.startswith("│")}
    header = next(line for line in out.splitlines() if line.startswith("┃") and "ld / st" in line).split("┃")
    local = next(index for index, cell in enumerate(header) if "ld / st" in cell)  # the columns the run has
    assert rows["spill_launch_bounds(float *, const float *, int)"][local].strip() == "978,944 / 970,752 inst"
    assert rows["struct_array_runtime_index(float *, const int *, int)"][local].strip() == "200,704 / 131,072 inst"
    assert rows["global_coalesced(float *, const float *)"][local].strip() == "0 / 0 inst"
    assert "local ld / st: n/a" not in out
    assert (
        "local ld / st: inst — warp-level local load / store instructions executed, from the report's "
        "per-instruction table (it has no local sector counters, so no bytes)"
    ) in " ".join(out.split())
    assert "spill_launch_bounds(float *, const float *, int): local memory: register spill" in " ".join(out.split())
    assert main(["report", str(report), "--format", "md", "-o", "-"]) == 0
    assert "local memory: 978,944 local load and 970,752 local store instructions executed: register spill" in (
        capsys.readouterr().out
    )
