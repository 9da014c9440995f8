"""profiling/model/results.py: a kernel's figures and why one is missing, results.json both ways, the DataFrame."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, replace
from typing import Any

import pytest

import memlens
from memlens.errors import InputError, ProfilerError, SetupError
from memlens.model.catalogue import CATALOGUE
from memlens.model.instruction_table import InstructionRecord
from memlens.model.ncu_settings import NcuSettings
from memlens.model.results import Expect, KernelResult, MetricValue, RunInfo, RunResults, VariantOutcome, printable
from memlens.readers import read_report
from tests.conftest import FIXTURES
from tests.support.results_json import TRANSPOSE_TEMPORARY, VALID_RESULTS, assert_one_line, with_field

SUITE = FIXTURES / "nvidia_h200"
PROGRAM = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"
CUDA_APP_CSV = PROGRAM.with_suffix(".csv")


# --- a kernel's figures ------------------------------------------------------------------------------


def test_cached_figures_leave_the_dataclass_as_it_was() -> None:
    raw = {"duration": 2000.0, "dram_read_bytes": 1e6, "dram_write_bytes": None}
    kernel = KernelResult(kernel="k", launch_id=3, raw=dict(raw), missing={"dram_write_bytes": "n/a in the report"})
    fresh = KernelResult(kernel="k", launch_id=3, raw=dict(raw), missing={"dram_write_bytes": "n/a in the report"})
    before = (asdict(kernel), repr(kernel))
    first = kernel.metric("dram_bandwidth")
    assert first.value is None and first.missing_reason == "needs dram__bytes_write.sum: n/a in the report"
    assert kernel.metric("dram_bandwidth") is first  # worked out once
    assert kernel.values() == fresh.values() and kernel.values() is not kernel.values()  # a copy each call
    assert (asdict(kernel), repr(kernel)) == before
    assert kernel == fresh and replace(kernel, launch_id=4).launch_id == 4
    assert RunResults(RunInfo(), (kernel,)).to_json() == RunResults(RunInfo(), (fresh,)).to_json()
    assert replace(kernel, raw={**raw, "dram_write_bytes": 1e6}).metric("dram_bandwidth").value == pytest.approx(1e12)


def test_value_is_the_metrics_value_without_making_it() -> None:
    kernels = [*read_report(SUITE / "suite_fast.results.json").kernels, *read_report(PROGRAM).kernels]
    kernels.append(KernelResult(kernel="k", raw={"duration": math.inf, "dram_read_bytes": math.nan}))
    for kernel in kernels:
        assert {key: kernel.value(key) for key in CATALOGUE} == {key: kernel.metric(key).value for key in CATALOGUE}
    assert kernels[-1].value("duration") is None and kernels[-1].value("dram_read_bytes") is None
    assert kernels[0].value("duration") == kernels[0].raw["duration"] > 0
    with pytest.raises(KeyError):
        kernels[0].value("no_such_metric")


def test_a_label_is_family_and_variant_else_the_range_else_the_kernels_name() -> None:
    numba = "memlens_suite_1_x::matmul[abi:v1,cw51cXTLSUwv1sDUaKthoaNgqamjgOR3ggACy6QqFRb0bYFL8AAAA](Array<float>)"
    kernels = [
        KernelResult("void tr<0>(float *)", "transpose", "conflict", nvtx="step > transpose/conflict"),
        KernelResult("void tr<0>(float *)", nvtx="step > fwd"),
        KernelResult("void tr<0>(float *)"),
        KernelResult(numba),
    ]
    assert [k.label for k in kernels] == ["transpose/conflict", "step > fwd", "void tr<0>(float *)", "matmul"]
    assert kernels[1].identity() == {
        "label": "step > fwd",
        "kernel": "void tr<0>(float *)",
        "family": None,
        "variant": None,
        "nvtx": "step > fwd",
        "launch_id": 0,
    }


def test_a_missing_figure_names_the_input_it_lacks() -> None:
    kernel = KernelResult(
        "k",
        raw={"duration": 0.0, "dram_read_bytes": 1e6, "dram_write_bytes": 1e6, "local_ld_sectors": 3.0},
        missing={"shared_wavefronts": "n/a in the report"},
    )
    local_st = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"  # local_st_sectors: in neither raw nor missing
    assert kernel.metric("local_bytes") == MetricValue(
        "local_bytes", None, "byte", f"needs {local_st}: not in the report"
    )
    assert kernel.metric("local_ld_bytes").value == 96.0 and kernel.metric("local_ld_bytes").unit == "byte"
    assert kernel.missing_reason("shared_wavefronts") == "n/a in the report"
    excess = kernel.metric("exact_excess_wavefronts")
    assert excess.missing_reason == f"needs {CATALOGUE['shared_wavefronts'].ncu}: n/a in the report"
    assert kernel.metric("dram_bandwidth").missing_reason == "an input is zero or missing"  # a duration of 0
    assert kernel.metric("duration").value == 0.0 and kernel.metric("duration").unit == "ns"


def test_names_and_messages_read_from_a_file_are_made_printable() -> None:
    assert printable("a\x1b[31mb\x07\tc\nd\x7f\x9b") == "a\ufffd[31mb\ufffd\tc\nd\ufffd\ufffd"
    assert printable("kernel_\u202eevil") == "kernel_<U+202E>evil"
    data = with_field(VALID_RESULTS, ("kernels", 0, "kernel"), "k\x1b]0;title\x07\u202e", False)
    assert RunResults.from_json(data).kernels[0].kernel == "k\ufffd]0;title\ufffd<U+202E>"


# --- results.json ---------------------------------------------------------------------------------


def test_results_json_sources_round_trip_and_are_checked(tmp_path):
    results = RunResults.from_json(json.loads((FIXTURES / "nvidia_h200" / "suite.results.json").read_text()))
    kept = results.embedded_sources  # the run kept its sources: CuPy's 4 temporary .cu files and matmul.py
    assert len(kept) == 5 and sum(name.endswith(".cubin.cu") for name in kept) == 4
    assert kept[next(n for n in kept if n.endswith(TRANSPOSE_TEMPORARY))].startswith("// Matrix transpose through")
    assert any(name.endswith("kernels/matmul.py") for name in kept)
    assert results.to_json()["sources"] == kept
    assert RunResults.from_json(results.to_json()).embedded_sources == kept
    data = results.to_json()
    del data["sources"]  # a run recorded before runs kept their sources: none, and no key
    assert RunResults.from_json(data).embedded_sources == {} and "sources" not in RunResults.from_json(data).to_json()
    data["sources"] = {"a.cu": "int x;\n"}
    assert RunResults.from_json(data).embedded_sources == {"a.cu": "int x;\n"}
    data["sources"] = {"a.cu": 3}
    with pytest.raises(Exception, match="sources must map file names to their text"):
        RunResults.from_json(data)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("schema_version",), 99, "unsupported schema_version 99 (this memlens reads 1, 2, 3)"),
        (("schema_version",), True, "unsupported schema_version True"),
        (("info", "wall_seconds"), "abc", 'info.wall_seconds must be a finite number or null, not "abc"'),
        (("kernels", 0, "launch_id"), 1e400, "kernels[0].launch_id must be an integer, not inf"),
        (("kernels", 0), [1], "kernels[0] must be an object, not [1]"),
        (("kernels", 0, "raw"), [], "kernels[0].raw must map metric keys to finite numbers or null"),
        (("kernels", 0, "raw", "duration"), float("nan"), "kernels[0].raw must map metric keys to finite"),
        (("kernels", 0, "kernel"), 5, "kernels[0].kernel must be text, not 5"),
        (("outcomes", 0, "status"), "exploded", 'outcomes[0].status "exploded" is not one of ok, wrong'),
        (("outcomes", 0, "expect"), {"bank_conflicts": "yes"}, "outcomes[0].expect.bank_conflicts must be true"),
        (("complete",), "false", 'complete must be true or false, not "false"'),
        (("info", "gpu"), "H200", "info: unknown field 'gpu'"),
    ],
)
def test_bad_fields_name_where_they_are(path: tuple, value: Any, message: str) -> None:
    with pytest.raises(InputError) as info:
        RunResults.from_json(with_field(VALID_RESULTS, path, value, False), "r.json")
    assert message in str(info.value)
    assert_one_line(info.value)


def test_every_field_of_a_run_comes_back_from_results_json() -> None:
    record = InstructionRecord(
        0x1A0, "LDS R19, [R17]", "LDS", "shared", "ld", 32, "kernels/transpose.cu", 40, 32768.0, 1_048_576.0, 32768.0
    )
    kernel = KernelResult(
        "void tr<0>(float *)",
        "transpose",
        "conflict@rows=64",
        7,
        {"duration": 1500.0, "dram_read_bytes": None},
        {"dram_read_bytes": "n/a in the report"},
        instructions=(record,),
        gpu_index=1,
        gpu_name="NVIDIA H200",
        nvtx="step > transpose",
        sweep_size="rows",
        sweep_value=64,
        range_runs=10,
    )
    outcome = VariantOutcome(
        "transpose",
        "conflict@rows=64",
        "wrong",
        "index 3",
        "column reads",
        Expect(bank_conflicts=True, note="32-way", excess_wavefronts=31),
        True,
        ("kernels/transpose.cu",),
        1,
    )
    info = RunInfo(
        gpu_name="NVIDIA H200",
        ncu_version="2025.3.1",
        ncu_settings=NcuSettings(fast=True),
        launches="first",
        warm_up=2,
        ranges_not_profiled={"loop/": 3},
        peak_dram_bandwidth=4.8e12,
    )
    results = RunResults(info, (kernel,), (outcome,), complete=False, embedded_sources={"kernels/transpose.cu": "x"})
    data = json.loads(json.dumps(results.to_json()))
    assert sorted(data) == ["complete", "info", "kernels", "outcomes", "schema_version", "sources"]
    assert (data["schema_version"], data["complete"], len(data["kernels"][0])) == (3, False, 14)
    again = RunResults.from_json(data)
    assert again == results and again.embedded_sources == {"kernels/transpose.cu": "x"}
    assert again.kernels[0].instructions == (record,) and again.outcomes[0].expect.excess_wavefronts == 31
    assert again.info.ranges_not_profiled == {"loop/": 3} and again.kernels[0].range_runs == 10


def test_a_schema_1_file_loads_without_the_keys_memlens_retired() -> None:
    old = with_field(VALID_RESULTS, ("schema_version",), 1, False)
    old = with_field(old, ("kernels", 0, "raw", "local_ld_requests"), 5.0, False)
    old = with_field(old, ("kernels", 0, "missing", "local_st_requests"), "n/a in the report", False)
    kernel = RunResults.from_json(old).kernels[0]
    assert "local_ld_requests" not in kernel.raw and "local_st_requests" not in kernel.missing
    kinds = {key: value for key, value in kernel.raw.items() if key not in VALID_RESULTS["kernels"][0]["raw"]}
    assert {key: value for key, value in kernel.raw.items() if key not in kinds} == VALID_RESULTS["kernels"][0]["raw"]
    # written before the kinds' figures: summed from its instructions (fp16_transpose/dense's ldmatrix: 4,194,304
    # wavefronts over an ideal of 1,048,576, its 16-byte LDS at their ideal)
    assert (
        len(kinds) == 14
        and kernel.value("exact_ldmatrix_ways") == 4.0
        and kernel.value("exact_shared_loads_ways") == 1.0
    )
    unknown = with_field(VALID_RESULTS, ("kernels", 0, "raw", "local_ld_request"), 5.0, False)
    with pytest.raises(InputError, match=r"kernels\[0\]: unknown metric keys \['local_ld_request'\]"):
        RunResults.from_json(unknown, "r.json")


def test_dataframe_one_row_per_launch():
    pytest.importorskip("pandas")
    frame = memlens.load(CUDA_APP_CSV).dataframe()
    assert list(frame.columns[:6]) == ["label", "kernel", "family", "variant", "nvtx", "launch_id"]
    assert len(frame) == 6
    row = frame.set_index("label").loc["transpose/conflict"]
    assert row["exact_excess_wavefronts (wavefront)"] == 4_063_232 and row["nvtx"] == "iteration > transpose/conflict"
    # issue 46 (9): each figure's column says its unit, as `memlens metrics --csv`'s header does
    assert "duration (ns)" in frame.columns and "dram_read_bytes (byte)" in frame.columns
    assert all(" (" in column for column in frame.columns[6:]), list(frame.columns)
    assert frame.attrs["units"]["duration (ns)"] == "ns" and frame.attrs["keys"]["duration (ns)"] == "duration"


def test_dataframe_without_pandas_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(SetupError, match=r"memlens\[pandas\]") as raised:
        memlens.load(CUDA_APP_CSV).dataframe()
    assert raised.value.exit_code == 3 and not isinstance(raised.value, ProfilerError)  # not "the profiler failed"
