"""`memlens check`: the real suite compiled for sm_90 with no GPU, its figures, and gating them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.errors import ConfigError
from memlens.static import toolchain
from memlens.static.check import (
    StaticResults,
    check_suite,
    entry_body,
    load_static,
    numba_cc,
    ptx_local_bytes,
)
from memlens.suite import load_suite
from tests.support.fake import CPU_SUITE

# One worker compiles the whole suite once: under pytest-xdist each worker would set the module's fixture up again.
pytestmark = pytest.mark.xdist_group("static_check")

REPO = Path(__file__).resolve().parents[2]
SWAPPED = REPO / "tests" / "gate_suites" / "swapped_padded.py"
HAVE_CUDA_COMPILER = toolchain.find_nvcc() is not None or toolchain.nvrtc_version() is not None
needs_compiler = pytest.mark.skipif(
    not (HAVE_CUDA_COMPILER and toolchain.find_ptxas() is not None),
    reason="no nvcc or NVRTC, or no ptxas: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12 (the test extra)",
)


@pytest.fixture(scope="module")
def suite_results() -> StaticResults:
    return check_suite(load_suite(REPO / "kernels"))


def by_label(results: StaticResults) -> dict[str, object]:
    return {k.label: k for k in results.kernels}


@needs_compiler
def test_whole_suite_compiles(suite_results: StaticResults) -> None:
    assert suite_results.failures == ()
    assert suite_results.arch == "sm_90"
    assert sorted(by_label(suite_results)) == [
        "fp16_transpose/dense",
        "fp16_transpose/padded",
        "fp16_transpose/pitch128",
        "fp16_transpose/xor_128b",
        "fp16_transpose/xor_row",
        "matmul/naive",
        "matmul/tiled",
        "matmul/tiled_article",
        "matmul/tiled_pmpp",
        "running_mean/local",
        "running_mean/register",
        "running_mean/spill",
        "tensor_matmul/conflict",
        "tensor_matmul/padded",
        "tensor_matmul/swizzled",
        "transpose/conflict",
        "transpose/padded",
        "transpose/swizzled",
        "transpose/tile64_padded",
        "transpose/tile64_swizzled",
        "transpose/vec4_padded",
        "transpose/vec4_swizzled",
    ]
    for item in suite_results.kernels:
        assert 0 < item.registers <= 255, item
        spills = item.spill_store_bytes > 0 and item.spill_load_bytes > 0
        assert spills == (item.label == "running_mean/spill"), item  # the one capped at 32 registers


@needs_compiler
def test_local_memory_shows_in_ptx_and_stack_frame(suite_results: StaticResults) -> None:
    kernels = by_label(suite_results)
    local, register = kernels["running_mean/local"], kernels["running_mean/register"]
    assert local.ptx_local and local.ptx_local_bytes == 128 and local.stack_frame_bytes == 128  # float[32]
    assert not register.ptx_local and register.ptx_local_bytes == 0 and register.stack_frame_bytes == 0
    assert local.metric("static.ptx_local").value == 1.0 and register.metric("static.ptx_local").value == 0.0


@needs_compiler
def test_static_shared_memory_per_block(suite_results: StaticResults) -> None:
    shared = {label: k.shared_bytes for label, k in by_label(suite_results).items()}
    assert shared["transpose/conflict"] == 4096  # float[32][32]
    assert shared["transpose/padded"] == 4224  # float[32][33]
    assert shared["transpose/swizzled"] == 4096
    assert shared["matmul/tiled"] == shared["matmul/tiled_article"] == shared["matmul/tiled_pmpp"] == 2048
    assert shared["matmul/naive"] == shared["running_mean/local"] == 0


@needs_compiler
def test_entries_are_matched_by_symbol(suite_results: StaticResults) -> None:
    kernels = by_label(suite_results)
    assert kernels["transpose/padded"].symbol == "transpose_padded"  # extern "C"
    assert kernels["matmul/tiled_pmpp"].kernel == "matmul_pmpp<16>"
    assert kernels["matmul/tiled_pmpp"].symbol.startswith("_Z11matmul_pmppILi16EE")  # the template instance
    assert kernels["matmul/tiled"].language == "numba" and kernels["matmul/tiled"].symbol.startswith("_ZN")


@needs_compiler
def test_nvrtc_route_matches(suite_results: StaticResults) -> None:
    """CI has NVRTC and ptxas from pip wheels but no nvcc: that route must give the same picture."""
    if toolchain.nvrtc_version() is None:
        pytest.skip("NVRTC not loadable")
    nvrtc = check_suite(load_suite(REPO / "kernels"), "^(transpose|running_mean)/", prefer="nvrtc")
    assert "nvrtc" in nvrtc.compiler and nvrtc.failures == ()
    figures = {k.label: (k.shared_bytes, k.stack_frame_bytes, k.ptx_local) for k in nvrtc.kernels}
    assert figures == {
        "running_mean/register": (0, 0, False),
        "running_mean/local": (0, 128, True),
        "running_mean/spill": (0, 112, False),
        "transpose/conflict": (4096, 0, False),
        "transpose/padded": (4224, 0, False),
        "transpose/swizzled": (4096, 0, False),
        "transpose/tile64_padded": (16640, 0, False),
        "transpose/tile64_swizzled": (16384, 0, False),
        "transpose/vec4_padded": (17408, 0, False),
        "transpose/vec4_swizzled": (16384, 0, False),
    }


@needs_compiler
def test_check_json_then_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    assert main(["check", str(REPO / "kernels"), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "running_mean/local" in table and "yes (128 B)" in table and "4224" in table
    data = json.loads(out.read_text())
    assert data["kind"] == "memlens-static-check" and data["complete"] is True and len(data["kernels"]) == 22
    assert load_static(out).kernels[0].values()["static.spill_bytes"] == 0
    assert main(["gate", str(out), "--rules", str(REPO / "kernels" / "gates-static.toml")]) == 0
    assert "PASSED: 77 checks (77 pass)" in capsys.readouterr().out


@needs_compiler
def test_format_json_prints_what_json_dash_prints(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", str(REPO / "kernels"), "-k", "^transpose/conflict$"]
    assert main([*argv, "--format", "json"]) == 0
    document = capsys.readouterr().out
    assert json.loads(document)["kind"] == "memlens-static-check"
    assert main([*argv, "--json", "-"]) == 0
    assert capsys.readouterr().out == document
    assert main([*argv, "--format", "json", "--json", "-"]) == 2  # one document on standard output
    assert "are one file" in capsys.readouterr().err


@needs_compiler
def test_swapped_padded_transpose_fails_the_static_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "swapped.json"
    assert main(["check", str(SWAPPED), "-k", "^transpose/", "--json", str(out)]) == 0
    capsys.readouterr()
    code = main(["gate", str(out), "--rules", str(REPO / "kernels" / "gates-static.toml")])
    captured = capsys.readouterr()
    assert code == 1
    assert "static.shared_bytes = 4,096 B, expected == 4,224 B" in captured.out
    assert "selects no kernel" in captured.out  # -k left out matmul and running_mean
    assert captured.err.startswith("memlens: error: gate FAILED")


@needs_compiler
def test_compile_error_is_exit_3_and_recorded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "broken.cu").write_text('extern "C" __global__ void broken(float* x) { x[0] = undefined_name; }\n')
    (tmp_path / "broken.py").write_text(
        "from pathlib import Path\n"
        "from memlens.suite import CudaKernel, Family\n"
        "broken = Family('broken', 'does not compile', lambda rng, size: {}, lambda inputs, size: None, {})\n"
        "@broken.variant('v', demonstrates='a compile error',"
        " kernels=(CudaKernel(Path(__file__).with_name('broken.cu'), 'broken'),))\n"
        "def v(inputs, size):\n    raise NotImplementedError\n"
    )
    out = tmp_path / "check.json"
    assert main(["check", str(tmp_path / "broken.py"), "--json", str(out)]) == 3
    err = capsys.readouterr().err
    assert "memlens: broken/v (broken):" in err and "undefined_name" in err
    assert err.endswith("memlens: error: 1 of 1 kernels did not compile\n")
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["failures"][0]["label"] == "broken/v"
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\nname = "r"\nselect = "*"\nmetric = "static.registers"\nmax = 64\n')
    assert main(["gate", str(out), "--rules", str(rules)]) == 1
    assert "did not compile" in capsys.readouterr().out


def test_no_compiler_is_exit_3(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: None)
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: None)
    assert main(["check", str(REPO / "kernels"), "-k", "^transpose/padded$"]) == 3
    err = capsys.readouterr().err
    assert "neither nvcc nor NVRTC found" in err and err.endswith("1 of 1 kernels did not compile\n")


def test_bad_arch_and_empty_selection_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(REPO / "kernels"), "--arch", "hopper"]) == 2
    assert "bad --arch 'hopper'" in capsys.readouterr().err
    assert main(["check", str(REPO / "kernels"), "-k", "no_such_variant"]) == 2
    assert "no variant of suite" in capsys.readouterr().err


def test_arch_to_compute_capability() -> None:
    assert numba_cc("sm_90") == (9, 0) and numba_cc("sm_90a") == (9, 0) and numba_cc("sm_100a") == (10, 0)
    assert numba_cc("sm_120") == (12, 0) and numba_cc("sm_86") == (8, 6)
    with pytest.raises(ConfigError):
        numba_cc("compute_90")


PTX = """\
.version 8.8
.target sm_90
.address_size 64

.weak .entry _Z1kILi1EEvPf(
\t.param .u64 _Z1kILi1EEvPf_param_0
)
{
\t.local .align 16 .b8 \t__local_depot0[128];
\t.local .u32 spare;
\tst.local.f32 \t[%rd1], %f1;
\tret;
}

.visible .entry plain(
\t.param .u64 plain_param_0
)
{
\tld.local.f32 %f1, [%rd1];
\tret;
}
.func helper()
{
\t.local .align 4 .b8 __local_depot2[64];
}
"""


def test_ptx_local_declarations_per_entry() -> None:
    templated = entry_body(PTX, "_Z1kILi1EEvPf")
    assert templated.startswith(".weak .entry _Z1kILi1EEvPf(") and "plain" not in templated
    assert ptx_local_bytes(templated) == (True, 128 + 4)
    plain = entry_body(PTX, "plain")
    assert ".func" not in plain and ptx_local_bytes(plain) == (False, 0)  # an ld.local is not a declaration
    assert entry_body(PTX, "absent") == ""


def test_static_figures_regress_against_a_static_baseline(tmp_path: Path) -> None:
    from memlens.gate.baseline import compatibility, from_measurements, load_baseline, save_baseline
    from memlens.gate.evaluate import evaluate, from_static
    from memlens.gate.rules import parse_rules
    from memlens.static.check import StaticKernel

    def results(registers: int, arch: str = "sm_90") -> StaticResults:
        item = StaticKernel(
            "t", "padded", "transpose_padded", "transpose_padded", "cuda", registers, 0, 0, 0, 4224, 0, False
        )
        return StaticResults(arch, "nvrtc 12.9", "kernels", (item,))

    path = tmp_path / "static-baseline.json"
    save_baseline(from_measurements(from_static(results(32))), path)
    baseline = load_baseline(path)
    assert baseline.environment.arch == "sm_90" and baseline.value("t/padded", "static.registers") == 32
    rules = parse_rules('[[rule]]\nname = "regs"\nselect = "*"\nmetric = "static.registers"\nmax_regression = 4\n')
    verdicts = [evaluate(rules, from_static(results(n)), baseline).verdicts[0].status for n in (30, 36, 37)]
    assert verdicts == ["pass", "pass", "fail"]
    with pytest.raises(ConfigError, match="baseline arch sm_90, run sm_100"):
        compatibility(baseline, from_static(results(32, "sm_100")))


def test_check_of_a_suite_without_kernels_is_a_clear_usage_error(capsys):
    assert main(["check", str(CPU_SUITE)]) == 2
    captured = capsys.readouterr()
    assert "declares its kernels" in captured.err and "nothing to compile" in captured.err
    assert "no compiler used" not in captured.out
