"""Local memory named truthfully: register spill, an array indexed at run time, an array too large
for registers, or cause unknown, from `memlens check`'s figures of each variant's kernels (compiled
here for sm_90, no GPU) merged into a run directory as check.json."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from memlens.cli import main
from memlens.model.results import RunResults
from memlens.reports.build import build_report
from memlens.static import toolchain
from memlens.static.check import (
    CHECK_FILE,
    REGISTER_FILE_BYTES,
    StaticKernel,
    StaticResults,
    check_suite,
    find_static,
    local_memory_cause,
)
from memlens.suite import load_suite
from tests.reports.test_report_samples import INFO, LOCAL, REGISTERS, kernel, outcome
from tests.static.test_check import needs_compiler

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "fixtures" / "nvidia_h200"
CUDA_APP_PTXAS = REPO / "tests" / "fixtures" / "nvidia_h100_80gb_hbm3" / "programs" / "cuda_app.ptxas.txt"
UNKNOWN = "(cause unknown: run `memlens check` or compile with -Xptxas -v)"


@pytest.fixture(scope="module")
def running_mean() -> StaticResults:
    return check_suite(load_suite(REPO / "kernels"), "running_mean/")


def figures(results: StaticResults) -> dict[str, StaticKernel]:
    return {k.label: k for k in results.kernels}


def running_mean_run() -> RunResults:
    """register (no local memory), local and spill (local traffic), as a profile run records them."""
    kernels = (
        kernel("running_mean_register", "running_mean", "register", REGISTERS, 1),
        kernel("running_mean_local", "running_mean", "local", LOCAL, 2),
        kernel("running_mean_spill", "running_mean", "spill", {**LOCAL, "local_ld_sectors": 1_048_576.0}, 3),
    )
    outcomes = (
        outcome("running_mean", "register", False, False, baseline=True),
        outcome("running_mean", "local", False, True),
        outcome("running_mean", "spill", False, True),
    )
    return RunResults(INFO, kernels, outcomes)


def verdicts(results: RunResults, static: StaticResults | None) -> dict[str, str]:
    report = build_report([("run", results)], statics=[static])
    return {row.label: row.verdict_text for row in report.runs[0].variants}


@needs_compiler
def test_the_spill_variant_spills_and_declares_no_local_array(running_mean: StaticResults) -> None:
    found = figures(running_mean)
    spill = found["running_mean/spill"]
    assert spill.registers == 32  # __launch_bounds__(256, 8): 65,536 / 2,048 threads
    assert spill.spill_store_bytes > 0 and spill.spill_load_bytes > 0
    assert not spill.ptx_local and spill.ptx_local_bytes == 0
    assert local_memory_cause([spill]) == "spill"
    assert local_memory_cause([found["running_mean/local"]]) == "indexed_array"
    assert local_memory_cause([found["running_mean/register"]]) == "none"


@needs_compiler
def test_the_report_names_spill_and_array_indexed_at_run_time(running_mean: StaticResults) -> None:
    spill = figures(running_mean)["running_mean/spill"]
    found = verdicts(running_mean_run(), running_mean)
    assert found["running_mean/spill"] == (
        "no shared-memory accesses; local memory: 33.6 MB of local loads and 1.07 GB of local stores:"
        f" register spill (ptxas: {spill.spill_store_bytes:,} B of spill stores and {spill.spill_load_bytes:,} B"
        " of spill loads per thread at 32 registers)"
    )
    assert found["running_mean/local"] == (
        "no shared-memory accesses; local memory: 1.07 GB of local loads and 1.07 GB of local stores:"
        " an array indexed at run time (128 B stack frame per thread, no spills)"
    )
    assert found["running_mean/register"] == "no shared-memory accesses, no local memory"


def test_without_a_static_check_the_cause_is_unknown_with_the_hint() -> None:
    found = verdicts(running_mean_run(), None)
    assert found["running_mean/spill"].endswith(f"1.07 GB of local stores {UNKNOWN}")
    assert found["running_mean/local"].endswith(f"1.07 GB of local stores {UNKNOWN}")


def test_a_variant_the_static_check_lacks_is_cause_unknown() -> None:
    only_local = StaticResults("sm_90", "nvcc 13.0", "kernels", (static_kernel("local", stack=128, ptx_local=128),))
    found = verdicts(running_mean_run(), only_local)
    assert found["running_mean/spill"].endswith(UNKNOWN)
    assert found["running_mean/local"].endswith(
        ": an array indexed at run time (128 B stack frame per thread, no spills)"
    )


def static_kernel(
    variant: str, stack: int = 0, spill_st: int = 0, spill_ld: int = 0, ptx_local: int = 0, registers: int = 40
) -> StaticKernel:
    name = f"running_mean_{variant}"
    return StaticKernel(
        "running_mean", variant, name, name, "cuda", registers, stack, spill_st, spill_ld, 0, ptx_local, ptx_local > 0
    )


def test_an_array_larger_than_the_registers_is_named_so() -> None:
    large = static_kernel("local", stack=4096, ptx_local=4096)
    assert local_memory_cause([large]) == "large_array"
    assert local_memory_cause([static_kernel("local", stack=REGISTER_FILE_BYTES, ptx_local=0)]) == "indexed_array"
    static = StaticResults("sm_90", "nvcc 13.0", "kernels", (large,))
    assert verdicts(running_mean_run(), static)["running_mean/local"].endswith(
        ": an array too large for registers (4,096 B stack frame per thread, more than 255 registers hold; no spills)"
    )


def test_spills_beside_an_array_are_called_spills() -> None:
    both = static_kernel("local", stack=256, spill_st=64, spill_ld=64, ptx_local=128, registers=24)
    assert local_memory_cause([both]) == "spill"
    static = StaticResults("sm_90", "nvcc 13.0", "kernels", (both,))
    assert verdicts(running_mean_run(), static)["running_mean/local"].endswith(
        ": register spill (ptxas: 64 B of spill stores and 64 B of spill loads per thread at 24 registers)"
    )


def test_static_figures_without_local_memory_say_the_binary_differs() -> None:
    static = StaticResults("sm_90", "nvcc 13.0", "kernels", (static_kernel("local"),))
    assert verdicts(running_mean_run(), static)["running_mean/local"].endswith(
        " (cause unknown: `memlens check` found no spills, stack frame or .local in running_mean_local:"
        " the profiled binary was compiled differently)"
    )


def test_a_compiled_binarys_ptxas_report_tells_spill_from_array() -> None:
    # nvcc -Xptxas -v of tests/fixtures/programs/cuda_app.cu, recorded by record_programs.sh on an H100
    resources = toolchain.parse_ptxas_log(CUDA_APP_PTXAS.read_text())
    capped, local = resources["_Z12spill_cappedPfPKfi"], resources["_Z17running_sum_localPfPKfi"]
    assert (capped.registers, capped.spill_store_bytes, capped.spill_load_bytes) == (32, 588, 760)

    def as_static(name: str, item: toolchain.KernelResources) -> StaticKernel:
        return StaticKernel(
            "cuda_app",
            name,
            name,
            item.symbol,
            "cuda",
            item.registers,
            item.stack_bytes,
            item.spill_store_bytes,
            item.spill_load_bytes,
            item.shared_bytes,
            0,
            False,
        )

    assert local_memory_cause([as_static("spill_capped", capped)]) == "spill"
    assert local_memory_cause([as_static("running_sum_local", local)]) == "indexed_array"


def test_plain_kernels_are_matched_by_name() -> None:
    static = StaticResults("sm_90", "nvcc 13.0", "kernels", (static_kernel("spill", 112, 240, 360, registers=32),))
    assert [k.kernel for k in static.for_kernel("running_mean_spill", "running_mean_spill")] == ["running_mean_spill"]
    assert static.for_kernel("other", "other") == ()


# --- through the command line: memlens check --into RUN, then report and metrics ----------------


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(running_mean_run().to_json()))
    return run


@needs_compiler
def test_check_into_a_run_names_the_spill_in_report_and_metrics(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(REPO / "kernels"), "-k", "running_mean/", "--into", str(run_dir)]) == 0
    static = find_static(run_dir)
    assert static is not None and static.arch == "sm_90"
    assert sorted(k.label for k in static.kernels) == [
        "running_mean/local",
        "running_mean/register",
        "running_mean/spill",
    ]
    capsys.readouterr()
    assert main(["report", str(run_dir), "--format", "md", "-o", "-"]) == 0
    markdown = capsys.readouterr().out
    assert "register spill (ptxas:" in markdown and "an array indexed at run time (128 B stack frame" in markdown
    assert main(["metrics", str(run_dir)]) == 0
    table = capsys.readouterr().out
    assert "running_mean/spill: local memory: register spill (ptxas:" in table
    assert "running_mean/local: local memory: an array indexed at run time (128 B stack frame per thread" in table
    assert "running_mean/register:" not in table
    assert main(["metrics", str(run_dir / "results.json"), "--json"]) == 0
    kernels = {k["label"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert kernels["running_mean/spill"]["local_memory_cause"].startswith("register spill (ptxas:")
    assert "local_memory_cause" not in kernels["running_mean/register"]


def test_metrics_without_a_static_check_say_cause_unknown(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(run_dir), "-k", "spill"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "running_mean/spill: local memory: cause unknown: run `memlens check` or compile with -Xptxas -v"
    )


def test_the_recorded_run_without_a_static_check_names_the_cause_from_the_sass(tmp_path: Path) -> None:
    from memlens.readers import read_report

    results = read_report(str(H200 / "suite.results.json"))
    found = verdicts(results, None)
    # no check.json: the SASS tells, running_mean_local's STL [R19] at computed addresses and
    # running_mean_spill's STL [R1+0x48] at fixed stack offsets (issue 32)
    local, spill = found["running_mean/local"], found["running_mean/spill"]
    assert (
        "local memory: 2.08 GB of local loads and 2.15 GB of local stores: array indexed at run time (from the"
        " SASS: local addresses computed at run time"
    ) in local
    assert (
        "local memory: 755 MB of local loads and 503 MB of local stores: register spill (from the SASS: loads and"
        " stores at fixed stack offsets"
    ) in spill
    assert UNKNOWN not in local + spill


def test_check_into_a_missing_directory_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(REPO / "kernels"), "--into", str(tmp_path / "absent")]) == 2
    assert capsys.readouterr().err.strip() == f"memlens: error: --into {tmp_path / 'absent'}: not a run directory"


def test_a_damaged_check_json_is_an_input_error(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / CHECK_FILE).write_text('{"kind": "memlens-static-check", "schema_version": 1}')
    assert main(["report", str(run_dir), "--format", "md", "-o", "-"]) == 2
    assert "check.json: malformed static-check results" in capsys.readouterr().err


def test_the_report_reads_a_runs_check_json(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    static = StaticResults("sm_90", "nvcc 13.0", "kernels", (static_kernel("spill", 112, 240, 360, registers=32),))
    (run_dir / CHECK_FILE).write_text(json.dumps(static.to_json()))
    assert main(["report", str(run_dir / "results.json"), "--format", "json", "-o", "-"]) == 0
    rows = {r["label"]: r for r in json.loads(capsys.readouterr().out)["runs"][0]["families"][0]["variants"]}
    assert rows["running_mean/spill"]["verdict_text"].endswith(
        ": register spill (ptxas: 240 B of spill stores and 360 B of spill loads per thread at 32 registers)"
    )
    assert rows["running_mean/local"]["verdict_text"].endswith(UNKNOWN)  # not in this check.json


@needs_compiler
def test_the_static_gate_catches_a_dropped_register_cap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernels = tmp_path / "kernels"
    shutil.copytree(REPO / "kernels", kernels)
    source = kernels / "running_mean.cu"
    capped = "__launch_bounds__(SPILL_BLOCK, 8)"
    assert capped in source.read_text()
    source.write_text(source.read_text().replace(capped, ""))
    out = tmp_path / "check.json"
    assert main(["check", str(kernels), "-k", "running_mean/spill", "--json", str(out)]) == 0
    capsys.readouterr()
    assert main(["gate", str(out), "--rules", str(REPO / "kernels" / "gates-static.toml")]) == 1
    failed = capsys.readouterr().out
    assert "capped running mean spills registers" in failed and "static.spill_store_bytes = 0 B" in failed


# --- the spill variant's launch: every output written once, every load inside x ------------------


def emulate_spill_kernel(x: np.ndarray, n: int) -> np.ndarray:
    """running_mean_spill as running_mean.cu writes it, thread by thread, in fp32 (launched as
    kernels/running_mean.py launches it)."""
    from running_mean import BLOCK, OUTPUTS_PER_THREAD, WINDOW  # kernels/ on sys.path below

    out = np.full(n, np.nan, dtype=np.float32)
    blocks = math.ceil(math.ceil(n / OUTPUTS_PER_THREAD) / BLOCK)
    last = n + WINDOW - 2
    for thread in range(blocks * BLOCK):
        first = thread * OUTPUTS_PER_THREAD
        if first >= n:
            continue
        window = x[np.minimum(first + np.arange(WINDOW + OUTPUTS_PER_THREAD - 1), last)]
        for k in range(OUTPUTS_PER_THREAD):
            total = np.float32(0)
            for value in window[k : k + WINDOW]:
                total = np.float32(total + value)
            if first + k < n:
                assert np.isnan(out[first + k])
                out[first + k] = total * np.float32(1 / WINDOW)
    return out


@pytest.mark.parametrize("n", [1000, 2048, 7])
def test_the_spill_variant_computes_the_running_mean(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "kernels"))
    import running_mean

    source = (REPO / "kernels" / "running_mean.cu").read_text()
    assert f"#define R {running_mean.OUTPUTS_PER_THREAD}u" in source
    assert f"#define SPILL_BLOCK {running_mean.BLOCK}" in source
    family = load_suite(REPO / "kernels").family("running_mean")
    size = {"n": n}
    inputs = family.make_inputs(np.random.default_rng(n), size)
    np.testing.assert_allclose(emulate_spill_kernel(inputs["x"], n), family.reference(inputs, size), rtol=family.rtol)
