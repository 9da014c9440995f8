"""profiling/readers/: ncu CSV and .ncu-rep -> RunResults, on text built here and on recordings from the GPU."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from memlens.errors import InputError
from memlens.model import shared_figures
from memlens.model.catalogue import BY_NCU_NAME, PER_INSTRUCTION_METRICS, RAW_METRICS
from memlens.model.kernel_names import kernel_name
from memlens.model.results import KernelResult, RunInfo, RunResults
from memlens.readers import read_report, reader_processes
from memlens.readers.metric_values import FAST_SKIPPED, INSTRUMENTED_ABSENT, NOT_IN_REPORT, ROOFLINE_SKIPPED
from memlens.readers.ncu_csv import parse_csv
from tests.support.fuzz import fuzz

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBE = FIXTURES / "probe"
REPO = FIXTURES.parent.parent
NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
START_END = "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
IDENTITY = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    NVTX,
    START_END,
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
]
TEMPLATE_NAME = "void transpose<float, 32, 32, 0>(T1 *, const T1 *, int) [&]"


def nvtx_cell(*ranges: str, domain: str = "memlens") -> str:
    """An NVTX cell as ncu 2025.3 writes it: the thread id, then one quoted string per open range."""
    quoted = "  ".join(f'"{domain}:{r}:none:none:RGB:0xff:REGISTERED:{r}"' for r in ranges)
    return f"1346  {quoted} " if ranges else ""


def raw_csv(
    kernels: list[dict[str, str]],
    units: dict[str, str] | None = None,
    prelude: str = "==PROF== Connected to process 1346 (/usr/bin/python3)\n",
    units_row: bool = True,
) -> str:
    """`ncu --csv --page raw` text: names row, units row, one row a kernel (values as given)."""
    units = units or {}
    metrics = sorted({name for k in kernels for name in k if name not in IDENTITY})
    out = io.StringIO()
    out.write(prelude)
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(IDENTITY + metrics)
    if units_row:
        writer.writerow([""] * len(IDENTITY) + [units.get(m, "") for m in metrics])
    for index, kernel in enumerate(kernels):
        base = {
            "ID": str(index),
            "Process ID": "1346",
            "Process Name": "python3",
            "Host Name": "127.0.0.1",
            "Kernel Name": "k",
            "Context": "1",
            "Stream": "7",
            "Block Size": "(32, 8, 1)",
            "Grid Size": "(128, 128, 1)",
            "Device": "0",
            "CC": "9.0",
        }
        row = {**base, **kernel}
        writer.writerow([row.get(c, "") for c in IDENTITY + metrics])
    out.write("==PROF== Disconnected from process 1346\n")
    return out.getvalue()


def all_metrics(**overrides: str) -> dict[str, str]:
    values = {name: "1" for name in BY_NCU_NAME}
    values.update(
        {
            "device__attribute_display_name": "NVIDIA H200",
            "device__attribute_compute_capability_major": "9",
            "device__attribute_compute_capability_minor": "0",
        }
    )
    values.update(overrides)
    return values


def one(text: str) -> KernelResult:
    results = parse_csv(text, "t.csv")
    assert len(results.kernels) == 1
    return results.kernels[0]


# --- the CSV reader on text built here -----------------------------------------------------------


def test_thousands_separators_units_row_and_base_units() -> None:
    kernel = one(
        raw_csv(
            [
                all_metrics(
                    **{
                        "gpu__time_duration.sum": "85.44",
                        "dram__bytes_read.sum": "65,335,765",
                        "launch__shared_mem_per_block_static": "4.224",
                        "dram__throughput.avg.pct_of_peak_sustained_elapsed": "27.74",
                    }
                )
            ],
            units={
                "gpu__time_duration.sum": "usecond",
                "dram__bytes_read.sum": "byte",
                "launch__shared_mem_per_block_static": "Kbyte/block",
                "dram__throughput.avg.pct_of_peak_sustained_elapsed": "%",
            },
        )
    )
    assert kernel.raw["duration"] == pytest.approx(85_440)
    assert kernel.raw["dram_read_bytes"] == 65_335_765
    assert kernel.raw["static_shared_per_block"] == pytest.approx(4224)
    assert kernel.raw["dram_pct_of_peak"] == 27.74
    # a CSV holds every catalogue metric but the per-instruction split of the exact excess
    csv_reason = "a CSV cannot carry per-instruction values: read the .ncu-rep"
    assert kernel.missing == {key: csv_reason for key in PER_INSTRUCTION}
    shared = {
        figure
        for side in ("ld", "st", "atom", "mma")
        for figure in (
            f"exact_excess_wavefronts_{side}",
            f"exact_shared_{side}_wavefronts",
            f"exact_shared_{side}_ideal",
            f"shared_{side}_executions",
        )
    }
    global_ = {
        figure
        for side in ("ld", "st", "atom")
        for figure in (
            f"exact_global_{side}_sectors",
            f"exact_global_{side}_sectors_ideal",
            f"global_{side}_executions",
        )
    }
    local = {"remote_shared_executions", "local_ld_executions", "local_st_executions"}
    kinds = {
        f"exact_{kind}_{sum_}"
        for kind in (
            "shared_loads",
            "ldmatrix",
            "shared_stores",
            "stmatrix",
            "cp_async",
            "shared_atomics",
            "tensor_core_reads",
        )
        for sum_ in ("wavefronts", "ideal")
    }
    assert PER_INSTRUCTION == shared | global_ | local | kinds


def test_without_units_row_values_are_taken_as_base_units() -> None:
    kernel = one(raw_csv([all_metrics(**{"gpu__time_duration.sum": "1,234"})], units_row=False))
    assert kernel.raw["duration"] == 1234


def test_prof_warning_lines_and_junk_before_the_header() -> None:
    prelude = (
        "probe ok\n==WARNING== Note: Running with unmodified GPU clocks.\n"
        'some "quoted" junk, with commas\n==PROF== Report: out/probe.ncu-rep\n'
    )
    text = raw_csv([all_metrics(), all_metrics()], prelude=prelude)
    lines = text.splitlines()
    lines.insert(len(lines) - 1, '==PROF== Profiling "tr" - 1: 0%....50%....100% - 6 passes')
    results = parse_csv("\n".join(lines), "t.csv")
    assert [k.launch_id for k in results.kernels] == [0, 1]


def test_quoted_kernel_names_are_kept_as_text() -> None:
    kernel = one(raw_csv([all_metrics(**{"Kernel Name": TEMPLATE_NAME})]))
    assert kernel.kernel == TEMPLATE_NAME
    assert kernel.label == TEMPLATE_NAME
    assert kernel.family is None and kernel.variant is None


@pytest.mark.parametrize("value", ["n/a", "N/A", ""])
def test_na_values_are_missing_with_a_reason(value: str) -> None:
    kernel = one(raw_csv([all_metrics(**{"launch__registers_per_thread": value})]))
    assert kernel.raw["registers_per_thread"] is None
    assert kernel.missing["registers_per_thread"] == "n/a in the report"
    assert kernel.metric("registers_per_thread").missing_reason == "n/a in the report"


def test_memlens_nvtx_range_names_family_and_variant() -> None:
    kernel = one(raw_csv([all_metrics(**{NVTX: nvtx_cell("transpose.conflict")})]))
    assert (kernel.family, kernel.variant, kernel.label) == ("transpose", "conflict", "transpose/conflict")


def test_innermost_memlens_range_wins_and_other_domains_are_ignored() -> None:
    cell = nvtx_cell("suite.outer", "matmul.tiled") + nvtx_cell("other.range", domain="probe")
    kernel = one(raw_csv([all_metrics(**{NVTX: cell})]))
    assert (kernel.family, kernel.variant) == ("matmul", "tiled")
    cell = '1  "<default domain>:gemma:model.layers.0:none:none:none:none:none:none"'
    kernel = one(raw_csv([all_metrics(**{NVTX: cell})]))
    assert kernel.family is None


def test_missing_columns_get_reasons() -> None:
    values = all_metrics()
    for name in ("memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal", "launch__registers_per_thread"):
        del values[name]
    memlens = one(raw_csv([{**values, NVTX: nvtx_cell("transpose.conflict")}]))
    assert memlens.missing["shared_wavefronts"] == FAST_SKIPPED
    assert memlens.missing["registers_per_thread"] == NOT_IN_REPORT
    assert "--fast" in memlens.metric("exact_excess_wavefronts").missing_reason
    plain = one(raw_csv([values]))
    assert plain.missing["shared_wavefronts"] == INSTRUMENTED_ABSENT


def test_run_info_from_device_attributes() -> None:
    results = parse_csv(raw_csv([all_metrics()]), "t.csv")
    assert results.info == RunInfo(gpu_name="NVIDIA H200", compute_capability="9.0", source="t.csv")


def test_compute_capability_falls_back_to_the_cc_column() -> None:
    values = all_metrics()
    del values["device__attribute_compute_capability_major"]
    results = parse_csv(raw_csv([{**values, "CC": "8.6"}]), "t.csv")
    assert results.info.compute_capability == "8.6"


def test_a_unit_of_the_wrong_kind_makes_the_metric_missing() -> None:
    kernel = one(raw_csv([all_metrics()], units={"gpu__time_duration.sum": "byte"}))
    assert kernel.raw["duration"] is None
    assert "not a time" in kernel.missing["duration"]


def test_long_layout_one_row_per_metric() -> None:
    header = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
        '"Metric Name","Metric Unit","Metric Value"\n'
    )
    rows = [
        ("0", "gpu__time_duration.sum", "usecond", "12.50"),
        ("0", "dram__bytes_read.sum", "Kbyte", "1,024"),
        ("0", "device__attribute_display_name", "", "NVIDIA H100"),
        ("1", "gpu__time_duration.sum", "ns", "7"),
    ]
    body = "".join(
        f'"{i}","1","python","host","vector_add(float const*, float*)","1","7","Cmd","{m}","{u}","{v}"\n'
        for i, m, u, v in rows
    )
    results = parse_csv("==PROF== Connected to process 123\n" + header + body, "long.csv")
    first, second = results.kernels
    assert first.raw["duration"] == pytest.approx(12_500)
    assert first.raw["dram_read_bytes"] == pytest.approx(1_024_000)
    assert second.raw["duration"] == 7
    assert results.info.gpu_name == "NVIDIA H100"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ("   \n\n", "empty file"),
        ("==PROF== Connected\n==WARNING== No kernels were profiled.\n", "no ncu CSV header"),
        ('"Process ID","Kernel Name"\n"1","k"\n', "no ncu CSV header"),
        ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n', "no kernel rows"),
        ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n"0","k","1,0', "malformed CSV"),
        ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n"0","k"\n', "truncated"),
        ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n"0","k","fast"\n', "is not a number"),
        ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n"x","k","1"\n', "not a launch number"),
    ],
)
def test_bad_csv_text_is_one_input_error(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_csv(text, "bad.csv")
    assert str(info.value).startswith("bad.csv: ")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"\x00\x01\x02binary junk\xff", "binary data"),
        (b'"ID","Kernel Name"\n\xff\xfe\xfa', "not UTF-8"),
    ],
)
def test_bad_csv_files_are_one_input_error(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message) as info:
        read_report(path)
    assert str(info.value).startswith(str(path))


def test_utf8_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + raw_csv([all_metrics()], prelude="").encode())
    assert len(read_report(path).kernels) == 1


# --- fuzzing: only InputError may escape ---------------------------------------------------------

VALID = raw_csv(
    [
        all_metrics(**{NVTX: nvtx_cell("transpose.conflict"), "Kernel Name": TEMPLATE_NAME}),
        all_metrics(**{"dram__bytes_read.sum": "65,335,765"}),
    ],
    units={"gpu__time_duration.sum": "usecond"},
)


def _parse_or_input_error(text: str) -> None:
    try:
        results = parse_csv(text, "fuzz.csv")
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert results.kernels


@fuzz(300)
@given(st.text())
def test_fuzz_arbitrary_text(text: str) -> None:
    _parse_or_input_error(text)


@fuzz(300)
@given(st.integers(0, len(VALID)), st.integers(0, 40), st.text(max_size=20))
def test_fuzz_cut_and_spliced_csv(cut: int, drop: int, insert: str) -> None:
    _parse_or_input_error(VALID[:cut] + insert + VALID[cut + drop :])


@fuzz(200)
@given(
    st.lists(
        st.sampled_from(["", "n/a", "1,234", "-5", "1e400", "nan", "0x10", "1,2,3", '"', "µs", "12 (0: 12)"]),
        min_size=len(BY_NCU_NAME),
        max_size=len(BY_NCU_NAME),
    ),
    st.sampled_from(["", "ns", "usecond", "byte", "Kbyte/block", "%", "furlong", "register/thread"]),
)
def test_fuzz_cell_values_and_units(values: list[str], unit: str) -> None:
    cells = dict(zip(BY_NCU_NAME, values, strict=True))
    _parse_or_input_error(raw_csv([cells], units=dict.fromkeys(BY_NCU_NAME, unit)))


@fuzz(100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from(["x.csv", "x.ncu-rep", "x.json", "x"]))
def test_fuzz_files_of_any_bytes(tmp_path: Path, data: bytes, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    try:
        read_report(path)
    except InputError as exc:
        assert "\n" not in str(exc)


# --- read_report: what a path is -----------------------------------------------------------------


def _results() -> RunResults:
    kernel = KernelResult(
        "void tr<0>(float *, const float *, int)", "transpose", "conflict", 0, {m.key: 1.0 for m in RAW_METRICS}, {}
    )
    return RunResults(RunInfo(gpu_name="NVIDIA H200", source="profile.ncu-rep"), (kernel,))


def test_results_json_and_run_directory(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps(_results().to_json()), encoding="utf-8")
    shutil.copy(PROBE / "probe.ncu-rep", tmp_path / "profile.ncu-rep")
    assert read_report(tmp_path / "results.json") == _results()
    assert read_report(tmp_path) == _results()  # results.json wins over the report beside it
    (tmp_path / "results.json").unlink()
    assert len(read_report(tmp_path).kernels) == 3


def test_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no results.json, .ncu-rep or ncu CSV"):
        read_report(tmp_path)
    shutil.copy(PROBE / "probe.ncu-rep", tmp_path / "a.ncu-rep")
    shutil.copy(PROBE / "probe.ncu-rep", tmp_path / "b.ncu-rep")
    with pytest.raises(InputError, match="several reports"):
        read_report(tmp_path)


def test_missing_path_and_sniffing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_report(tmp_path / "nope.csv")
    (tmp_path / "report").write_bytes((PROBE / "probe.ncu-rep").read_bytes())
    (tmp_path / "export").write_text((PROBE / "probe.csv").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "results").write_text(json.dumps(_results().to_json()), encoding="utf-8")
    assert len(read_report(tmp_path / "report").kernels) == 3
    assert len(read_report(tmp_path / "export").kernels) == 3
    assert read_report(tmp_path / "results") == _results()


@pytest.mark.parametrize("size", [0, 100, 1000, 50_000, -500, -7])
def test_empty_junk_and_truncated_ncu_rep(tmp_path: Path, size: int) -> None:
    data = (PROBE / "probe.ncu-rep").read_bytes()
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(data[:size])
    with pytest.raises(InputError) as info:
        read_report(path)
    assert str(info.value).startswith(str(path))


@pytest.mark.parametrize("size", [100, 1000])
def test_a_report_cut_before_its_first_kernel_is_called_truncated(tmp_path: Path, size: int) -> None:
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes((PROBE / "probe.ncu-rep").read_bytes()[:size])
    with pytest.raises(InputError, match="truncated or damaged Nsight Compute report"):
        read_report(path)


def test_text_named_ncu_rep_is_not_a_report(tmp_path: Path) -> None:
    path = tmp_path / "text.ncu-rep"
    path.write_text("not a report\n", encoding="utf-8")
    with pytest.raises(InputError, match="no profiled kernels"):
        read_report(path)


# --- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("void tr<(int)0>(float *, const float *, int)", "void tr<0>(float *, const float *, int)"),
        ("void f<(int)-1, (int)32>(T1 *)", "void f<-1, 32>(T1 *)"),
        ("void tr<0>(float *, const float *, int)", "void tr<0>(float *, const float *, int)"),
        ("rm_local", "rm_local"),
        ("void g<(unsigned int)5, a && b>(int &)", "void g<(unsigned int)5, a && b>(int &)"),
    ],
)
def test_kernel_name_matches_ncu_csv(name: str, shown: str) -> None:
    assert kernel_name(name) == shown


# --- the recordings from the GPU machine (tests/fixtures/probe, see its README) ------------------

probe = pytest.mark.skipif(not (PROBE / "probe.ncu-rep").exists(), reason="probe fixtures not recorded")
# ncu's CSV prints the non-counts (percentages, and the clocks: averages per second) to 2 decimals;
# counts and durations exactly
CSV_ROUNDED = {m.key for m in RAW_METRICS if m.unit in ("%", "hz")}
# only a .ncu-rep carries per-instruction values: a CSV has the total exact excess, not its split
PER_INSTRUCTION = {m.key for m in PER_INSTRUCTION_METRICS}


def without_split(mapping: dict) -> dict:
    return {k: v for k, v in mapping.items() if k not in PER_INSTRUCTION}


def by_label(results: RunResults) -> dict[str, KernelResult]:
    return {k.label: k for k in results.kernels}


@probe
@pytest.mark.parametrize("stem", ["probe", "probe_fast"])
def test_ncu_rep_and_csv_of_one_recording_agree(stem: str) -> None:
    rep, exported = read_report(PROBE / f"{stem}.ncu-rep"), read_report(PROBE / f"{stem}.csv")
    assert rep.info.gpu_name == exported.info.gpu_name
    assert rep.info.compute_capability == exported.info.compute_capability
    assert len(rep.kernels) == len(exported.kernels) == 3
    for a, b in zip(rep.kernels, exported.kernels, strict=True):
        assert (a.kernel, a.family, a.variant, a.launch_id) == (b.kernel, b.family, b.variant, b.launch_id)
        assert without_split(a.missing) == without_split(b.missing)
        for key in without_split(a.raw):
            if key in CSV_ROUNDED:
                assert a.raw[key] == pytest.approx(b.raw[key], abs=0.005)
            else:
                assert a.raw[key] == b.raw[key], key


@probe
def test_probe_names_and_device() -> None:
    results = read_report(PROBE / "probe.ncu-rep")
    assert results.info.gpu_name == "NVIDIA H200"
    assert results.info.compute_capability == "9.0"
    assert [(k.label, k.kernel) for k in results.kernels] == [
        ("transpose/conflict", "void tr<0>(float *, const float *, int)"),
        ("transpose/padded", "void tr<1>(float *, const float *, int)"),
        ("running_mean/local", "rm_local"),
    ]


@probe
@pytest.mark.parametrize("name", ["probe.ncu-rep", "probe.csv"])
def test_probe_physics(name: str) -> None:
    kernels = by_label(read_report(PROBE / name))
    conflict, padded, local = kernels["transpose/conflict"], kernels["transpose/padded"], kernels["running_mean/local"]
    # column reads of a 32x32 float tile: every warp load touches one bank 32 times -> 31 extra wavefronts
    # (a CSV holds only the total: which instructions, loads or stores, it cannot say)
    per_load = shared_figures.excess_per_access(conflict, "ld")  # the probe holds no per-instruction executions
    assert (per_load.value, per_load.exact) == ((None, True) if name.endswith(".csv") else (31, False))
    assert conflict.metric("exact_excess_wavefronts").value == 31 * conflict.raw["shared_ld_instructions"]
    # padding removes every conflict, though the hardware counter still counts some
    assert padded.metric("exact_excess_wavefronts").value == 0
    assert padded.raw["hw_ld_bank_conflicts"] > 0
    # a 32-float array indexed with (j + i) % 32 lives in local memory
    assert local.raw["local_ld_sectors"] > 0
    assert local.metric("local_ld_bytes").value == 32 * local.raw["local_ld_sectors"]
    assert conflict.raw["local_ld_sectors"] == padded.raw["local_ld_sectors"] == 0
    assert conflict.raw["static_shared_per_block"] == 32 * 32 * 4
    assert padded.raw["static_shared_per_block"] == 32 * 33 * 4


@probe
@pytest.mark.parametrize("name", ["probe_fast.ncu-rep", "probe_fast.csv"])
def test_fast_recording_has_no_exact_excess(name: str) -> None:
    kernels = read_report(PROBE / name).kernels
    assert len(kernels) == 3  # the probe's two transposes and its running mean
    for kernel in kernels:
        metric = kernel.metric("exact_excess_wavefronts")
        assert metric.value is None
        assert "--fast" in (metric.missing_reason or "")
        assert kernel.raw["hw_ld_bank_conflicts"] is not None  # the rest was collected


@probe
def test_plain_ncu_csv_without_memlens_ranges(tmp_path: Path) -> None:
    rows = list(csv.reader(io.StringIO((PROBE / "probe.csv").read_text(encoding="utf-8"))))
    column = rows[0].index(NVTX)
    for row in rows[2:]:
        row[column] = ""
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    kernels = parse_csv(out.getvalue(), "plain.csv").kernels
    assert [k.label for k in kernels] == [
        "void tr<0>(float *, const float *, int)",
        "void tr<1>(float *, const float *, int)",
        "rm_local",
    ]
    assert all(k.family is None and k.variant is None for k in kernels)
    assert kernels[0].metric("excess_wavefronts_per_shared_ld").value is None  # a CSV: no split
    assert kernels[0].metric("exact_excess_wavefronts").value == 31 * kernels[0].raw["shared_ld_instructions"]


# --- the suite recordings of tests/fixtures/record.sh (tests/fixtures/<gpu>/), when present ------

RECORDINGS = sorted(p.parent for p in FIXTURES.glob("*/suite.ncu-rep"))
recordings = pytest.mark.parametrize(
    "where",
    RECORDINGS or [pytest.param(None, marks=pytest.mark.skip(reason="suite fixtures not recorded yet"))],
    ids=lambda p: p.name if p else "none",
)


def assert_agree(rep: RunResults, exported: RunResults) -> None:
    assert len(rep.kernels) == len(exported.kernels) > 0
    for a, b in zip(rep.kernels, exported.kernels, strict=True):
        assert (a.kernel, a.family, a.variant, a.launch_id) == (b.kernel, b.family, b.variant, b.launch_id)
        assert without_split(a.missing) == without_split(b.missing)
        for key in without_split(a.raw):
            expected = pytest.approx(b.raw[key], abs=0.005) if key in CSV_ROUNDED else b.raw[key]
            assert a.raw[key] == expected, (a.label, key)


@recordings
@pytest.mark.parametrize("stem", ["suite", "suite_fast", "plain_ncu"])
def test_suite_ncu_rep_and_csv_agree(where: Path, stem: str) -> None:
    assert_agree(read_report(where / f"{stem}.ncu-rep"), read_report(where / f"{stem}.csv"))


@recordings
def test_suite_results_json_holds_the_report_kernels(where: Path) -> None:
    measured = {k.launch_id: k for k in read_report(where / "suite.ncu-rep").kernels}
    stored = read_report(where / "suite.results.json").kernels
    assert stored
    # per-instruction figures: from the report, not in schema 1 (nor the executions in earlier recordings)
    split = {m.key for m in PER_INSTRUCTION_METRICS} | {f"excess_wavefronts_per_shared_{s}" for s in ("ld", "st")}
    for kernel in stored:
        fresh = measured[kernel.launch_id]
        # Metrics the catalogue gained after the recording: in neither file (the report lacks them too).
        newer = set(fresh.raw) - set(kernel.raw) - split - {"sm_count"}
        # ... but a device attribute every report holds, read since: in the report, not in the results.json
        assert fresh.raw["sm_count"] == 132 and "sm_count" not in kernel.raw
        absent = ("not in the report", ROOFLINE_SKIPPED)
        assert all(fresh.raw[k] is None and fresh.missing[k] in absent for k in newer)
        # ratios the recording stored (n-ways) are derived from per-instruction sums now: compare the values
        both = [k for k in kernel.raw if k in fresh.raw]
        assert {k: kernel.raw[k] for k in both} == {k: fresh.raw[k] for k in both}
        assert all(kernel.value(k) == fresh.value(k) for k in kernel.raw if k.startswith("exact_shared_"))


@recordings
def test_suite_physics(where: Path) -> None:
    kernels = by_label(read_report(where / "suite.ncu-rep"))

    def excess(label: str) -> float | None:
        return kernels[label].metric("exact_excess_wavefronts").value

    assert kernels["transpose/conflict"].metric("excess_wavefronts_per_shared_ld").value == 31
    for label in ("transpose/padded", "transpose/swizzled"):
        assert excess(label) == 0  # no conflict at all ...
        assert kernels[label].metric("hw_bank_conflicts").value > 0  # ... though the counter counts some
    assert kernels["running_mean/local"].raw["local_ld_sectors"] > 0
    assert kernels["running_mean/register"].raw["local_ld_sectors"] == 0
    if "matmul/tiled" in kernels:
        assert excess("matmul/tiled_article") > 0
        assert excess("matmul/tiled") == 0


@recordings
def test_suite_fast_has_no_exact_excess(where: Path) -> None:
    kernels = read_report(where / "suite_fast.ncu-rep").kernels
    assert len(kernels) == 19  # every variant of the suite as recorded
    for kernel in kernels:
        metric = kernel.metric("exact_excess_wavefronts")
        assert metric.value is None and "--fast" in (metric.missing_reason or ""), kernel.label


@recordings
def test_plain_ncu_report_names_kernels(where: Path) -> None:
    kernels = read_report(where / "plain_ncu.ncu-rep").kernels
    assert all(k.family is None and k.variant is None and k.label == k.kernel for k in kernels)
    assert any("transpose" in k.kernel for k in kernels)


# --- a .ncu-rep read by two processes (ncu_rep's helper, on here for reports of any size) ----------
# Each read with a helper runs in a fresh process, as `memlens` does: ncu_report's disassembler starts a
# thread, and a process forked after that hangs on its first disassembly, so memlens forks only a
# process of one thread (reader_processes.can_fork), and disassembles the launch it reads first after forking.

HELPED = """
import json, os, sys
from memlens.errors import InputError
from memlens.readers import reader_processes, ncu_rep, read_report
ncu_rep.PARALLEL_MIN_ACTIONS = 2
handed = []
result = reader_processes.Helper.result
def recorded(helper):
    handed.append(result(helper))
    return handed[-1]
reader_processes.Helper.result = recorded
if sys.argv[2] == "fail":
    reader_processes.help_and_exit = lambda *_: os._exit(3)
try:
    data = read_report(sys.argv[1]).to_json()
except InputError as exc:
    data = {"error": str(exc)}
reader_processes.reap_helpers(wait=True)
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
print(json.dumps({"results": data, "helpers": [h is not None for h in handed], "child_left": left}))
"""


def read_with_helper(path: Path, mode: str = "ok") -> dict:
    argv = [sys.executable, "-c", HELPED, str(path), mode]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@recordings
@pytest.mark.parametrize("stem", ["suite", "suite_fast", "plain_ncu"])
def test_helper_reads_what_one_process_reads(where: Path, stem: str) -> None:
    path = where / f"{stem}.ncu-rep"
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(reader_processes, "can_fork", lambda: False)
        expected = read_report(path)
    assert len(expected.kernels) == {"suite": 19, "suite_fast": 19, "plain_ncu": 4}[stem]
    helped = read_with_helper(path)
    assert helped["results"] == json.loads(json.dumps(expected.to_json()))
    assert helped["helpers"] == [True]  # a forked helper read its share
    assert not helped["child_left"]


@recordings
def test_a_failed_helper_share_is_read_here(where: Path) -> None:
    expected = read_report(where / "suite.ncu-rep")
    assert len(expected.kernels) == 19
    helped = read_with_helper(where / "suite.ncu-rep", "fail")
    assert helped["results"] == json.loads(json.dumps(expected.to_json()))
    assert helped["helpers"] == [False]
    assert not helped["child_left"]


@probe
@pytest.mark.parametrize("percent", [50, 70, 90, 99])  # the damaged launch: the first, here, or the helper's
def test_truncated_report_errors_alike_with_a_helper(tmp_path: Path, percent: int) -> None:
    data = (PROBE / "probe.ncu-rep").read_bytes()
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(data[: len(data) * percent // 100])
    with pytest.raises(InputError) as alone:
        read_report(path)
    helped = read_with_helper(path)
    assert helped["results"] == {"error": str(alone.value)}
    assert not helped["child_left"]


def _run_without_lines(tmp_path: Path, raw: bytes) -> Path:
    """A run directory as an older memlens wrote it: results.json without the kernels' instructions,
    with range_runs as only results.json knows them, beside its profile.ncu-rep."""
    measured = read_report(FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep", instructions=True)
    kernels = tuple(replace(k, instructions=(), range_runs=7) for k in measured.kernels)
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(RunResults(measured.info, kernels).to_json()))
    (run / "profile.ncu-rep").write_bytes(raw)
    return run


def test_lines_of_an_older_run_come_from_its_report_and_its_figures_from_results_json(tmp_path):
    from memlens.readers import read_lines, read_with_instructions

    pytest.importorskip("ncu_report")
    raw = (FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep").read_bytes()
    results = read_with_instructions(_run_without_lines(tmp_path / "a", raw))
    assert len(results.kernels) == 6 and all(k.instructions for k in results.kernels)
    assert {k.range_runs for k in results.kernels} == {7}  # results.json's kernels, lines added
    assert len(read_lines(tmp_path / "a" / "run").kernels) == 6
    damaged = read_with_instructions(_run_without_lines(tmp_path / "b", b"NVIDIA Nsight Compute, cut short"))
    assert len(damaged.kernels) == 6 and not any(k.instructions for k in damaged.kernels)  # figures stand
    with pytest.raises(InputError, match="no per-instruction values"):
        read_lines(tmp_path / "b" / "run")
