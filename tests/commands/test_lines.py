"""profiling/commands/lines.py (`memlens lines`) on library kernels: named beside the kernel, told what the
user controls, never told to compile with line info (issue 45); the user's own kernels keep the hint.
(The lines themselves: tests/model/test_source_lines.py.)"""

from __future__ import annotations

import json

import pytest

from memlens.cli import main
from memlens.model.instruction_table import InstructionRecord
from memlens.model.kernel_lines import KernelLines
from memlens.model.results import KernelResult
from memlens.model.source_lines import SourceMap, roll_up
from memlens.output.findings import LinesFindings, findings
from tests.conftest import FIXTURES
from tests.support.packed import unpacked

TORCH = unpacked(
    FIXTURES / "nvidia_h100_80gb_hbm3" / "programs" / "torch_triton.ncu-rep.xz"
)  # no line info, cuBLAS and ATen
CUBLAS_ADVICE = (
    "cuBLAS's kernel: its code is not yours; what you control is the call -- shapes, dtype, layout, batching"
)


def _lines(capsys, *argv: str) -> str:
    assert main(["lines", *argv]) == 0
    return capsys.readouterr().out


def test_a_cublas_kernel_is_named_and_never_told_to_compile_with_line_info(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    out = _lines(capsys, str(TORCH), "-k", "bf16_matmul")
    assert out.startswith("torchapp@bf16_matmul  (nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT)  [cuBLAS]  [launch 1]\n")
    assert "stmatrix stores conflict-free (1-way)" in out  # its figures stay
    assert f"  note: {CUBLAS_ADVICE}\n" in out
    assert "hint:" not in out and "-lineinfo" not in out


def test_no_library_kernel_of_a_recording_is_hinted_at_line_info(capsys):
    data = json.loads(_lines(capsys, str(TORCH), "--json", "--top", "0"))
    libraries = {kernel["label"]: kernel["library"] for kernel in data["kernels"]}
    assert libraries == {
        "torchapp@triton_add": None,
        "torchapp@bf16_matmul": "cuBLAS",
        "torchapp@softmax": "PyTorch",
        "torchapp@transpose_copy": "PyTorch",
        "add/torch": "PyTorch",
        "add/triton": None,
    }
    for kernel in data["kernels"]:
        if kernel["library"]:
            assert kernel["hint"] is None, kernel["label"]
            assert kernel["notes"][0].startswith(f"{kernel['library']}'s kernel: its code is not yours")
        else:  # the program's own Triton kernels, in a report without line info
            assert kernel["hint"].startswith("no line info in this report: compile with -lineinfo")
    matmul = next(kernel for kernel in data["kernels"] if kernel["library"] == "cuBLAS")
    assert matmul["line_info"] is False and matmul["notes"][0] == CUBLAS_ADVICE and matmul["lines"]


def test_the_users_kernel_without_line_info_keeps_the_hint(capsys):
    data = json.loads(_lines(capsys, str(FIXTURES / "probe" / "probe.ncu-rep"), "-k", "transpose/conflict$", "--json"))
    (kernel,) = data["kernels"]
    assert kernel["library"] is None
    assert kernel["hint"].startswith("no line info in this report: compile with -lineinfo")


def _conflicting(name: str) -> KernelLines:
    record = InstructionRecord(
        0x40, "LDS R4, [R2]", "LDS", "shared", "ld", 32, executions=8.0, wavefronts=256.0, ideal=8.0
    )
    kernel = KernelResult(name, instructions=(record,))
    return KernelLines(kernel, tuple(roll_up(kernel.instructions, SourceMap(FIXTURES), name)), False)


def test_the_sarif_and_github_findings_of_a_library_kernel_say_whose_it_is():
    library, mine = _conflicting("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT"), _conflicting("my_kernel(float *)")
    found = findings("lines", LinesFindings((library, mine), source="run"))
    assert [f.properties.get("library") for f in found] == ["cuBLAS", None]
    assert found[0].message.endswith(f"248 excess wavefronts (100% of the kernel's); {CUBLAS_ADVICE}")
    assert "not yours" not in found[1].message


# --- a run directory with banks.json (`memlens profile --banks`): each conflicting line's recorded warp ---


def test_a_conflicting_line_shows_its_recorded_warps_bank_map_and_fix(tmp_path, capsys, monkeypatch):
    from tests.support.bank_runs import bank_probe_run

    run = bank_probe_run("nvidia_h100_80gb_hbm3", tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    text = _lines(capsys, str(run), "-k", "column_read_32x32", "--top", "1")
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if "bank map" in line)
    assert lines[start - 1].strip() == "out[blockIdx.x * 32 + LANE] = tile[LANE][3];"
    assert lines[start : start + 5] == [
        "      bank map, load at pc +0x6c0: 32-way: 128 wavefronts over an ideal of 4 (4",
        "        warps recorded; warp 0 drawn)",
        "           bank 0         1         2         3",
        "                01234567890123456789012345678901",
        "        wf  1   ...0............................",
    ]
    assert lines[start + 35] == "        wf 32   ...v............................"
    assert lines[start + 36].startswith(
        "      fix (pad, proved on the 4 recorded warps: 1-way): add 4 bytes after every"
    )
    assert all(len(line) <= 80 for line in lines)
    assert text.count("bank map,") == 1 and "bank maps: a cell: the lane" in text


def test_lines_json_carries_a_bank_map_on_the_conflicting_lines_only(tmp_path, capsys):
    from tests.support.bank_runs import bank_probe_run

    run = bank_probe_run("nvidia_h200", tmp_path)
    kernels = json.loads(_lines(capsys, str(run), "--json", "--top", "0"))["kernels"]
    mapped = [(k["kernel"], line) for k in kernels for line in k["lines"] if "bank_map" in line]
    assert len(mapped) == 12
    assert all(line["excess_wavefronts"] > 0 for _, line in mapped)
    assert all("bank_map" not in line for k in kernels for line in k["lines"] if not line["excess_wavefronts"])
    assert all(m["bank_map"]["n_way"] == m["bank_map"]["measured_n_way"] for _, m in mapped)
    first = mapped[0][1]["bank_map"]
    assert {key: first[key] for key in ("pc_offset", "access", "width", "n_way", "wavefronts", "ideal")} == {
        "pc_offset": 1728,
        "access": "load",
        "width": 4,
        "n_way": 32.0,
        "wavefronts": 128,
        "ideal": 4,
    }
    assert first["offsets"] == [1036 + 128 * lane for lane in range(32)]
    assert first["fix"]["kind"] == "pad" and first["fix"]["pad_bytes"] == 4 and first["fix"]["n_way_after"] == 1


def test_without_banks_json_lines_are_as_before(tmp_path, capsys):
    from tests.support.bank_runs import bank_probe_run

    run = bank_probe_run("nvidia_h200", tmp_path)
    with_maps = _lines(capsys, str(run), "--top", "0")
    (run / "banks.json").unlink()
    without = _lines(capsys, str(run), "--top", "0")
    assert "bank map" not in without and "bank_map" not in _lines(capsys, str(run), "--json")
    # the lines are the same, the maps and their legend apart
    kept = [
        line
        for line in with_maps.splitlines()
        if not line.startswith(("      bank map", "        ", "      fix", "      note: cp.async", "bank maps:"))
    ]
    assert "\n".join(kept).replace("\n\n\n", "\n\n").rstrip() == without.rstrip()


def _suite_run(tmp_path, gpu: str, bench: str | None):
    """A run directory holding `gpu`'s suite recording, and `bench` as its bench.json (None: none)."""
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / gpu / "suite.results.json", run / "results.json")
    if bench is not None:
        (run / "bench.json").write_text(bench)
    return run


H200_COPY = (FIXTURES / "nvidia_h200" / "copy" / "bench.json").read_text()
CEILING_NOTE = (
    "note: time at stake takes the kernel's DRAM bytes at the measured copy bandwidth, 4,244 GB/s (the run's "
    "bench.json), not at peak"
)


def test_a_bench_json_of_the_profiles_gpu_sets_the_dram_ceiling_of_the_time_at_stake(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    run = _suite_run(tmp_path, "nvidia_h200", H200_COPY)
    text = _lines(capsys, str(run), "-k", "fp16_transpose/dense")
    assert f"  {CEILING_NOTE}\n" in text
    data = json.loads(_lines(capsys, str(run), "-k", "fp16_transpose/dense", "--json"))
    (dense,) = data["kernels"]
    assert dense["dram_ceiling"]["at"] == "the measured copy bandwidth, 4,244 GB/s"
    assert dense["dram_ceiling"]["bytes_per_second"] == pytest.approx(4244.04e9, rel=1e-6)
    # 250,567,424 bytes at 4,244.04 GB/s: 59.0 µs of its 80.1 µs (at peak: 34.9%)
    assert dense["headroom"]["time_at_stake"] == pytest.approx(0.2626, abs=1e-4)
    assert "measured copy bandwidth, 4,244 GB/s: 59 µs of 80.1 µs" in dense["headroom"]["stake_bounded_by"]
    assert CEILING_NOTE.removeprefix("note: ") in dense["notes"]
    sarif = json.loads(_lines(capsys, str(run), "-k", "fp16_transpose/dense", "--format", "sarif"))
    bounds = {r["properties"]["stake_bounded_by"] for r in sarif["runs"][0]["results"]}
    assert bounds == {"its excess wavefronts' cycles in the busiest SM's shared-memory pipe"}


@pytest.mark.parametrize(
    ("gpu", "bench"),
    [
        ("nvidia_h100_80gb_hbm3", H200_COPY),  # the H200's copy: not this H100's ceiling
        ("nvidia_h200", "{"),  # damaged
        ("nvidia_h200", json.dumps({"format": "memlens-bench", "schema_version": 99})),
    ],
)
def test_a_bench_json_of_another_gpu_or_a_broken_one_leaves_lines_as_before(tmp_path, capsys, gpu, bench):
    run = _suite_run(tmp_path, gpu, None)
    outputs = [(), ("--json",), ("--format", "sarif"), ("--format", "github")]
    before = [_lines(capsys, str(run), "--top", "0", *argv) for argv in outputs]
    (run / "bench.json").write_text(bench)
    after = [_lines(capsys, str(run), "--top", "0", *argv) for argv in outputs]
    assert after == before
    assert "dram_ceiling" not in after[1] and "stake_bounded_by" not in after[2] and "measured copy" not in after[0]
