"""GPU tier of `memlens banks -- COMMAND` (issue 50): tests/fixtures/programs/bank_probe.cu run under the
Sanitizer library gives each kernel the n-way worked out on paper (tests/theory/test_recorded_banks.py), a
proved fix for every conflicting instruction, and, instruction by instruction, the n-way ncu measures
(per-instruction wavefronts over ideal from `memlens profile --all-kernels`): a third source of one figure.
Then a Python program with Numba, CuPy and Triton kernels and PyTorch loaded runs under the trace.

Run on the GPU machine (needs nvcc, ncu, compute-sanitizer; Python with numba-cuda, cupy, torch, triton):
    python -m pytest -m gpu tests/collect/test_bank_trace_gpu.py"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from memlens.model.banks_file import BankAccess
from memlens.model.results import RunResults
from memlens.readers import read_report
from memlens.theory.bank_analysis import BanksAnalysis, analyse_run
from memlens.theory.bank_matching import match_instructions
from tests.conftest import REPO
from tests.support.family_runs import memlens_env

pytestmark = pytest.mark.gpu
PROGRAMS = REPO / "tests" / "fixtures" / "programs"
CLOCK = os.environ.get("MEMLENS_CLOCK_CONTROL", "none")

# (kernel, access, width) -> the largest n-way among its instructions, on paper
EXPECTED = {
    ("column_read_32x32", "load", 4): 32,
    ("column_read_32x32", "store", 4): 1,
    ("column_read_padded", "load", 4): 1,
    ("column_read_swizzled", "load", 4): 1,
    ("column_read_double", "load", 8): 16,
    ("column_read_16x16", "load", 4): 8,
    ("half_warp_broadcast", "load", 4): 2,
    ("atomics_4_way", "atomic", 4): 4,
    ("store_32_way", "store", 4): 32,
    ("sub_word", "store", 2): 16,
    ("sub_word", "store", 1): 1,
    ("ldmatrix_64_byte_rows", "ldmatrix", 16): 4,
    ("cp_async_rows", "cp.async", 16): 2,
}


def function(name: str) -> str:
    """`void column_read_32x32(float *)` -> column_read_32x32; ncu's `tr<(int)0>` and c++filt's `tr<0>` -> tr<0>"""
    return re.sub(r"\((?:int|unsigned int|bool)\)(-?\d)", r"\1", name).split("(")[0].split()[-1]


def memlens(*argv: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memlens", *argv], capture_output=True, text=True, env=memlens_env(), timeout=timeout
    )


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    work = tmp_path_factory.mktemp("probe")
    subprocess.run(
        [nvcc, "-lineinfo", "-arch=sm_90", "-o", str(work / "bank_probe"), str(PROGRAMS / "bank_probe.cu")], check=True
    )
    return work / "bank_probe"


@pytest.fixture(scope="module")
def analysed(probe, tmp_path_factory):
    out = tmp_path_factory.mktemp("banks")
    done = memlens("banks", "--json", "--out", str(out), "--", str(probe))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_each_probe_kernel_has_its_paper_n_way(analysed):
    found: dict[tuple[str, str, int], float] = {}
    for entry in analysed["instructions"]:
        key = (function(entry["kernel"]), entry["access"], entry["width"])
        found[key] = max(found.get(key, 0), entry["n_way"])
    assert {key: found.get(key) for key in EXPECTED} == EXPECTED
    assert all(entry["warps_recorded"] == 4 for entry in analysed["instructions"])  # one warp of each of 4 blocks


def test_every_conflicting_bank_instruction_has_a_proved_fix(analysed):
    for entry in analysed["instructions"]:
        if entry["n_way"] > 1 and entry["access"] != "cp.async":
            assert entry["fix"]["kind"] in ("pad", "swizzle") and entry["fix"]["n_way_after"] == 1, entry


def every_n_way(results: RunResults, analysis: BanksAnalysis) -> dict[str, dict[int, tuple[float, float | None]]]:
    """kernel -> pc offset -> (the bank model's n-way over every warp-level execution, counted on the GPU, as
    ncu's per-instruction figure is over every one; ncu's), each recorded instruction matched to ncu's by
    theory/bank_matching.py (kernel and function-relative PC); ncu's None where it is not matched. cp.async's
    are its store phases', not ncu's (left out)."""
    matched = {id(m.banks): m for m in match_instructions(results.kernels, analysis)}
    found: dict[str, dict[int, tuple[float, float | None]]] = {}
    for entry in analysis.instructions:
        if entry.instruction.access is BankAccess.CP_ASYNC or entry.every_n_way is None:
            continue
        match = matched.get(id(entry))
        ncu = None if match is None else match.measured_n_way
        found.setdefault(function(entry.instruction.kernel), {})[entry.instruction.pc_offset] = (entry.every_n_way, ncu)
    return found


def test_the_bank_models_n_way_is_ncus_per_instruction(probe, tmp_path):
    # memlens profile --banks: ncu's run, then the trace's, into one run directory
    done = memlens(
        "profile", "--banks", "--all-kernels", "--out", str(tmp_path), "--clock-control", CLOCK, "--", str(probe)
    )
    assert done.returncode == 0, done.stderr
    run = (tmp_path / "latest").resolve()
    analysis = analyse_run(run)
    assert analysis is not None
    ours = every_n_way(read_report(run / "results.json"), analysis)
    for name, by_offset in ours.items():
        model = {offset: round(n_way, 3) for offset, (n_way, _) in by_offset.items()}
        ncu = {offset: -1 if n_way is None else round(n_way, 3) for offset, (_, n_way) in by_offset.items()}
        assert model == ncu, name


def test_a_python_program_with_numba_cupy_and_triton_kernels_and_pytorch_loaded(tmp_path):
    pytest.importorskip("numba.cuda")
    pytest.importorskip("cupy")
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    done = memlens(
        "banks", "--json", "--out", str(tmp_path), "--", sys.executable, str(PROGRAMS / "bank_python_app.py")
    )
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)["instructions"]
    names = {e["kernel"] for e in entries}
    assert any("numba_column_read" in n for n in names), names
    assert any("cupy_column_read" in n for n in names), names
    assert any("triton_matmul" in n for n in names), names
    for prefix in ("numba_column_read", "cupy_column_read"):
        worst = max((e for e in entries if prefix in e["kernel"]), key=lambda e: e["n_way"])
        assert worst["n_way"] == 32 and worst["fix"]["kind"] == "pad", worst


SUITE_PROGRAM = ["-m", "memlens.collect.profiled_program", "--suite", str(REPO / "kernels"), "--small"]


def test_every_conflicting_instruction_of_the_built_in_suite_has_its_picture_and_a_proved_fix(tmp_path):
    events = tmp_path / "events.jsonl"
    done = memlens(
        "banks", "--json", "--out", str(tmp_path), "--", sys.executable, *SUITE_PROGRAM, "--events", str(events)
    )
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)["instructions"]
    conflicting = [e for e in entries if e["n_way"] > 1]
    assert any(function(e["kernel"]).startswith("transpose_conflict") for e in conflicting), sorted(
        {e["kernel"] for e in entries}
    )
    assert [e for e in conflicting if e["access"] != "cp.async" and e["fix"]["kind"] == "none"] == []
    text = memlens("banks", str(next(tmp_path.glob("*/banks.json"))))
    assert text.returncode == 0 and "  wf  1   " in text.stdout


def test_the_suites_bank_model_n_way_is_ncus_per_instruction(tmp_path):
    events = tmp_path / "events.jsonl"
    done = memlens(
        "banks",
        "--json",
        "--out",
        str(tmp_path / "banks"),
        "--",
        sys.executable,
        *SUITE_PROGRAM,
        "--events",
        str(events),
    )
    assert done.returncode == 0, done.stderr
    profiled = memlens(
        "profile", str(REPO / "kernels"), "--small", "--out", str(tmp_path / "runs"), "--clock-control", CLOCK
    )
    assert profiled.returncode == 0, profiled.stderr
    results = read_report((tmp_path / "runs" / "latest").resolve() / "results.json")
    analysis = analyse_run(next((tmp_path / "banks").glob("*/banks.json")).parent)
    assert analysis is not None
    ours = every_n_way(results, analysis)
    measured = {function(k.kernel) for k in results.kernels if any(r.wavefronts for r in k.instructions)}
    both = sorted(name for name, by_offset in ours.items() if any(ncu is not None for _, ncu in by_offset.values()))
    assert len(both) >= len(measured) // 2, f"kernels matched: {both}; ncu's {sorted(measured)}; ours {sorted(ours)}"
    for name in both:
        pairs = {offset: pair for offset, pair in ours[name].items() if pair[1] is not None}
        assert {o: round(m, 3) for o, (m, _) in pairs.items()} == {o: round(n, 3) for o, (_, n) in pairs.items()}, name


@pytest.mark.parametrize("launches", ["first", "all"])
def test_each_kernels_first_launch_is_traced_and_the_module_unpatched_after(launches, tmp_path):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    binary = tmp_path / "relaunch_probe"
    subprocess.run(
        [nvcc, "-lineinfo", "-arch=sm_90", "-o", str(binary), str(PROGRAMS / "relaunch_probe.cu")], check=True
    )
    argv = ["banks", "--json", "--launches", launches, "--out", str(tmp_path / "runs"), "--", str(binary)]
    done = memlens(*argv)
    assert done.returncode == 0, done.stderr  # the program checks its own results: the unpatched code ran right
    n_way: dict[str, float] = {}
    for entry in json.loads(done.stdout)["instructions"]:
        name = function(entry["kernel"])
        n_way[name] = max(n_way.get(name, 0), entry["n_way"])
    assert n_way == {"column32": 32, "column16": 8}
    events = [
        json.loads(line) for line in next(tmp_path.glob("runs/*/banktrace/trace.*.jsonl")).read_text().splitlines()
    ]
    traced = [next(k for k in ("column32", "column16") if k in e["kernel"]) for e in events if e["event"] == "launch"]
    if launches == "first":
        # patched for column32's 1st, unpatched at its 2nd, patched for column16's 1st, unpatched at column32's 3rd
        assert traced == ["column32", "column16"]
        assert [e["unpatched"] for e in events if e["event"] == "launch"] == [0, 1]
        assert len([e for e in events if e["event"] == "module"]) == 1  # one module, reported at its first patch
    else:
        assert traced == ["column32", "column32", "column16", "column32", "column16", "column16"]
