"""`memlens banks -- COMMAND` on a CPU (collect/bank_trace.py): the library's lines into banks.json, the
setup errors, and the Sanitizer library built here and loaded by LD_PRELOAD into a program with no GPU
(where the CUDA Sanitizer API and a compiler are installed: the nvidia-cuda-sanitizer-api wheel of the test
extra, cuda.h from a toolkit). The GPU run is tests/collect/test_bank_trace_gpu.py."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.collect import bank_trace as bt
from memlens.collect import bank_trace_build as btb
from memlens.errors import SetupError
from memlens.io import cuda_tools
from memlens.model.banks_file import BankAccess, ExecutionTotals, parse_banks
from memlens.theory.bank_model import serve

B = 1024
LANES = range(32)


def record(pc, offsets, kind=bt.SHARED, size=4, flags=1, matrices=0, block=(0, 0, 0), warp=0, sources=None):
    entry = {
        "pc_offset": pc,
        "kind": kind,
        "size": size,
        "flags": flags,
        "matrices": matrices,
        "active": -1,
        "block": list(block),
        "warp": warp,
        "offsets": list(offsets),
    }
    if sources is not None:
        entry["sources"] = list(sources)
    return entry


def launch(kernel, *records):
    return {
        "event": "launch",
        "kernel": kernel,
        "grid": [4, 1, 1],
        "block": [32, 32, 1],
        "full": 0,
        "records": list(records),
    }


COLUMN = [B + 128 * lane for lane in LANES]
ROW = [B + 4 * lane for lane in LANES]


def test_the_first_n_warps_of_each_instruction_are_kept_across_launches_in_order():
    events = [
        {"event": "start", "pid": 1, "warps": 2, "slots": 2048},
        launch("_Z9transposePfPKf", record(0x170, COLUMN, block=(0, 0, 0)), record(0x1A0, ROW, flags=2)),
        launch(
            "_Z9transposePfPKf",
            record(0x170, [o + 4 for o in COLUMN], block=(1, 0, 0), warp=3),
            record(0x170, [o + 8 for o in COLUMN], block=(2, 0, 0)),
        ),
    ]
    banks = bt.banks_from_traces(
        events, 2, "NVIDIA H100 80GB HBM3", names={"_Z9transposePfPKf": "transpose(float *, const float *)"}
    )
    load, store = banks.instructions
    assert (load.kernel, load.pc_offset, load.access, load.width) == (
        "transpose(float *, const float *)",
        0x170,
        BankAccess.LOAD,
        4,
    )
    assert load.warps == (tuple(COLUMN), tuple(o + 4 for o in COLUMN))  # the third execution is past --warps 2
    assert load.extra == {"function": "_Z9transposePfPKf", "blocks": [[0, 0, 0], [1, 0, 0]], "warp_ids": [0, 3]}
    assert (store.access, store.warps) == (BankAccess.STORE, (tuple(ROW),))
    assert banks.gpu == "NVIDIA H100 80GB HBM3" and "TMA" in banks.extra["not_recorded"]
    assert parse_banks(banks.to_json(), "again") == banks  # what trace_program writes reads back whole


def test_kinds_and_flags_name_the_access():
    events = [
        launch(
            "k",
            record(0, ROW, flags=3),  # read and write: an atomic
            record(16, [B + 16 * lane for lane in LANES], kind=bt.MATRIX, size=16, flags=1, matrices=4),
            record(32, [B + 16 * lane for lane in LANES], kind=bt.MATRIX, size=16, flags=2, matrices=2),
            record(
                48,
                [B + 16 * lane for lane in LANES],
                kind=bt.MEMCPY_ASYNC,
                size=16,
                flags=2,
                sources=[4096 + 16 * lane for lane in LANES],
            ),
            record(64, [B + lane for lane in LANES], size=1),
        )
    ]
    found = bt.banks_from_traces(events, 4).instructions
    assert [(i.access, i.width, i.matrices) for i in found] == [
        (BankAccess.ATOMIC, 4, None),
        (BankAccess.LDMATRIX, 16, 4),
        (BankAccess.STMATRIX, 16, 2),
        (BankAccess.CP_ASYNC, 16, None),
        (BankAccess.LOAD, 1, None),
    ]
    assert found[3].sources == (tuple(4096 + 16 * lane for lane in LANES),)


def test_inactive_lanes_are_null_and_unknown_kinds_are_named_not_dropped_silently():
    half = [o if lane < 16 else None for lane, o in enumerate(ROW)]
    events = [
        launch("k", record(0, half), record(8, ROW, kind=9), record(12, ROW, size=32)),
        {
            "event": "module",
            "cubin_bytes": 100,
            "patched": {"shared": "SANITIZER_SUCCESS", "matrix": "SANITIZER_ERROR_NOT_SUPPORTED"},
        },
        {"event": "error", "what": "sanitizerAlloc", "result": "SANITIZER_ERROR_OUT_OF_MEMORY"},
    ]
    banks = bt.banks_from_traces(events, 4)
    assert banks.instructions[0].warps[0][15:17] == (B + 60, None)
    assert banks.extra["unsupported"] == {"kind 9 flags 1 of 4 bytes": 1, "kind 1 flags 1 of 32 bytes": 1}
    assert banks.extra["patching"] == {"shared": ["SANITIZER_SUCCESS"], "matrix": ["SANITIZER_ERROR_NOT_SUPPORTED"]}
    assert banks.extra["errors"] == ["sanitizerAlloc: SANITIZER_ERROR_OUT_OF_MEMORY"]


def test_k_keeps_the_kernels_it_matches_by_either_name():
    events = [launch("_Z1av", record(0, ROW)), launch("_Z1bv", record(0, ROW))]
    kept = bt.banks_from_traces(events, 4, pattern="^b", names={"_Z1av": "a()", "_Z1bv": "b()"}).instructions
    assert [i.kernel for i in kept] == ["b()"]


def test_a_line_cut_short_by_a_crash_is_left_out(tmp_path):
    (tmp_path / "trace.7.jsonl").write_text(json.dumps(launch("k", record(0, ROW))) + '\n{"event": "launch", "ker')
    assert [e["event"] for e in bt.read_trace_lines(tmp_path)] == ["launch"]


# --- setup ------------------------------------------------------------------------------------------


def fake_sanitizer(folder: Path) -> Path:
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "sanitizer.h").write_text("")
    (folder / btb.SANITIZER_LIBRARY).write_bytes(b"")
    return folder


def test_the_sanitizer_named_by_the_environment_comes_first(tmp_path):
    root = fake_sanitizer(tmp_path / "compute-sanitizer")
    found = btb.find_sanitizer({btb.SANITIZER_ENV: str(root), "PATH": ""})
    assert found.root == root and found.include == root / "include"


def test_no_sanitizer_no_compiler_no_cuda_h_are_one_line_setup_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(btb, "_candidates", lambda env: [tmp_path / "none"])
    with pytest.raises(SetupError, match=r"needs the CUDA Sanitizer API .*pip install \"memlens\[sanitizer\]\""):
        btb.find_sanitizer({})
    with pytest.raises(SetupError, match="found none: install g\\+\\+"):
        btb.find_compiler({"PATH": str(tmp_path)})
    sanitizer = btb.Sanitizer(fake_sanitizer(tmp_path / "a" / "b" / "compute-sanitizer"), "test")
    monkeypatch.setattr(cuda_tools, "DEFAULT_CUDA", tmp_path / "no-toolkit")
    with pytest.raises(SetupError, match="needs cuda.h"):
        btb.find_cuda_header(sanitizer, {})


def test_memlens_banks_without_a_sanitizer_exits_3_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(btb, "_candidates", lambda env: [])
    assert main(["banks", "--", "true"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: memlens banks needs the CUDA Sanitizer API") and err.count("\n") == 1


def test_the_trace_environment_preloads_the_library_before_the_programs_own():
    base = {"LD_PRELOAD": "x.so", "LD_LIBRARY_PATH": "/opt/lib"}
    env = bt.trace_environment(Path("/c/lib.so"), Path("/c/p.fatbin"), Path("/run/banktrace"), 8, base, Path("/s"))
    assert (env["LD_PRELOAD"], env["LD_LIBRARY_PATH"]) == ("/c/lib.so:x.so", "/s:/opt/lib")
    assert (env["MEMLENS_BANKS_PATCH"], env["MEMLENS_BANKS_OUT"], env["MEMLENS_BANKS_WARPS"]) == (
        "/c/p.fatbin",
        "/run/banktrace",
        "8",
    )
    assert (env["MEMLENS_BANKS_EVERY"], env["MEMLENS_BANKS_LAUNCHES"]) == ("1", "1")  # each kernel's first launch
    quick = bt.trace_environment(Path("/l.so"), Path("/p"), Path("/o"), 1, {}, every=False, launches=0)
    assert (quick["MEMLENS_BANKS_EVERY"], quick["MEMLENS_BANKS_LAUNCHES"]) == ("0", "0")
    assert "LD_LIBRARY_PATH" not in bt.trace_environment(Path("/c/lib.so"), Path("/p"), Path("/o"), 1, {})


# --- the library, built and loaded here -------------------------------------------------------------


def _sanitizer_or_skip() -> btb.Sanitizer:
    try:
        sanitizer = btb.find_sanitizer()
        btb.find_cuda_header(sanitizer)
        btb.find_compiler()
    except SetupError as exc:
        pytest.skip(f"cannot build the Sanitizer library here: {exc}")
    return sanitizer


def test_the_host_library_builds_once_into_the_cache_and_subscribes_when_preloaded(tmp_path):
    sanitizer = _sanitizer_or_skip()
    env = {"MEMLENS_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    library = btb.build_host_library(sanitizer, env)
    assert library.is_file() and library.parent.parent == tmp_path / "cache" / "banktrace"
    made = library.stat().st_mtime_ns
    assert btb.build_host_library(sanitizer, env) == library and library.stat().st_mtime_ns == made  # cached
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
    assert " T InitializeInjection" in symbols
    # preloaded outside memlens (no MEMLENS_BANKS_* variables): nothing happens, the program runs
    plain = subprocess.run(["/bin/echo", "ok"], env={"LD_PRELOAD": str(library)}, capture_output=True, text=True)
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, "ok\n", "")
    # under memlens: the static initializer subscribes before main (no GPU needed for that) and says so
    folder = tmp_path / "trace"
    folder.mkdir()
    traced = bt.trace_environment(library, tmp_path / "patch.fatbin", folder, 3, {})
    done = subprocess.run(["/bin/echo", "ok"], env=traced, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "ok\n")
    (start,) = bt.read_trace_lines(folder)
    assert (start["event"], start["warps"], start["launches"], start["slots"], start["every"]) == (
        "start",
        3,
        1,
        2048,
        1,
    )


def test_trace_program_writes_banks_json_even_when_the_program_fails(tmp_path, monkeypatch, capsys):
    sanitizer = _sanitizer_or_skip()
    monkeypatch.setenv("MEMLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(bt, "gpu_of_program", lambda: ("NVIDIA H100 80GB HBM3", "sm_90"))
    monkeypatch.setattr(bt, "device_patch", lambda s, arch, env=None: tmp_path / "patch.fatbin")
    assert sanitizer.library.is_file()
    path = bt.trace_program(["sh", "-c", "exit 5"], tmp_path / "runs", 4)
    assert path.name == "banks.json" and path.parent.parent == tmp_path / "runs"
    banks = parse_banks(json.loads(path.read_text()), str(path))
    assert (banks.gpu, banks.instructions) == ("NVIDIA H100 80GB HBM3", ())
    assert f"sh exited with 5; {path} holds what was recorded before" in capsys.readouterr().err


def test_the_device_patch_compiles_for_sm_90_where_nvcc_is(tmp_path):
    sanitizer = _sanitizer_or_skip()
    env = {"MEMLENS_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/local/cuda/bin"}
    try:
        patch = btb.device_patch(sanitizer, "sm_90", env)
    except SetupError as exc:
        pytest.skip(str(exc))
    assert patch.is_file() and patch.read_bytes()[:4] == bytes.fromhex("50ed55ba")  # a fatbin's magic


def test_without_nvcc_the_shipped_patch_of_the_arch_is_used_and_an_unshipped_arch_is_a_setup_error(
    tmp_path, monkeypatch
):
    sanitizer = btb.Sanitizer(fake_sanitizer(tmp_path / "compute-sanitizer"), "test")
    no_nvcc = {"PATH": str(tmp_path), "CUDA_HOME": str(tmp_path)}
    monkeypatch.setattr(cuda_tools, "DEFAULT_CUDA", tmp_path / "no-toolkit")
    assert btb.device_patch(sanitizer, "sm_90", no_nvcc) == btb.PATCHES / "banktrace_patch.sm_90.fatbin"
    with pytest.raises(SetupError, match="needs nvcc to build its device patch for sm_61"):
        btb.device_patch(sanitizer, "sm_61", no_nvcc)


def test_the_device_patch_takes_the_nvcc_of_the_toolkit_holding_the_sanitizer_and_never_a_wheels(tmp_path, monkeypatch):
    # a toolkit folder: bin/nvcc beside compute-sanitizer/; a wheel's nvcc is not looked for (io/cuda_tools.py)
    sanitizer = btb.Sanitizer(fake_sanitizer(tmp_path / "toolkit" / "compute-sanitizer"), "test")
    nvcc = tmp_path / "toolkit" / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    wheel = tmp_path / "wheels" / "cuda_nvcc" / "bin" / "nvcc"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(nvcc.read_bytes())
    wheel.chmod(0o755)
    monkeypatch.setattr(cuda_tools, "DEFAULT_CUDA", tmp_path / "no-toolkit")
    monkeypatch.setattr(cuda_tools, "wheel_roots", lambda: [tmp_path / "wheels"])
    built: list[str] = []
    monkeypatch.setattr(btb, "_compile", lambda argv, target, what: built.append(argv[0]))
    env = {"PATH": "", btb.CACHE_ENV: str(tmp_path / "cache")}
    assert btb.device_patch(sanitizer, "sm_90", env).name == "patch.sm_90.fatbin"
    assert built == [str(nvcc)]
    nvcc.unlink()
    assert btb.device_patch(sanitizer, "sm_90", env) == btb.PATCHES / "banktrace_patch.sm_90.fatbin"


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100"])
def test_a_patch_is_shipped_for_each_arch_from_turing_to_blackwell(arch):
    patch = btb.PATCHES / f"banktrace_patch.{arch}.fatbin"
    assert patch.read_bytes()[:4] == bytes.fromhex("50ed55ba")  # made by tools/build_bank_patches.sh


def test_every_executions_figures_are_summed_over_launches():
    totals = [{"pc_offset": 0x170, "executions": 3, "wavefronts": 96, "ideal": 3}]
    events = [launch("k", record(0x170, COLUMN)) | {"totals": totals}, launch("k") | {"totals": totals}]
    (found,) = bt.banks_from_traces(events, 4).instructions
    assert found.every == ExecutionTotals(6, 192, 6)
    assert parse_banks(bt.banks_from_traces(events, 4).to_json(), "again").instructions[0].every == found.every


MODEL_DRIVER = r"""
#include <stdio.h>
#include "banktrace_model.h"
int main() {
    unsigned size, group, active, offsets[32], wavefronts, ideal;
    while (scanf("%u %u %u", &size, &group, &active) == 3) {
        for (int lane = 0; lane < 32; ++lane) scanf("%u", &offsets[lane]);
        memlens_banks_serve(offsets, active, size, group, &wavefronts, &ideal);
        printf("%u %u\n", wavefronts, ideal);
    }
    return 0;
}
"""


def test_the_c_model_the_gpu_runs_on_every_execution_is_the_python_bank_model(tmp_path):
    # banktrace_model.h, compiled for the host, against theory/bank_model.serve on 400 warps of every width
    try:
        compiler = btb.find_compiler()
    except SetupError as exc:
        pytest.skip(str(exc))
    (tmp_path / "driver.c").write_text(MODEL_DRIVER)
    subprocess.run(
        [compiler, "-x", "c++", "-O2", f"-I{btb.SOURCES}", "-o", str(tmp_path / "driver"), str(tmp_path / "driver.c")],
        check=True,
    )
    rng = random.Random(50)
    cases, expected = [], []
    for n in range(400):
        size = (1, 2, 4, 8, 16)[n % 5]
        matrix = size == 16 and n % 2 == 0
        span = rng.choice([128, 512, 4096])
        offsets = [B + size * rng.randrange(span // size) for _ in LANES]
        active = rng.getrandbits(32) if n % 3 else 0xFFFFFFFF
        group = 8 if matrix else min(32, 128 // size)
        lanes = [o if active >> lane & 1 else None for lane, o in enumerate(offsets)]
        phases = serve(lanes, size, group)
        expected.append(f"{sum(p.wavefronts for p in phases)} {sum(p.ideal for p in phases)}")
        cases.append(f"{size} {group} {active} " + " ".join(map(str, offsets)))
    done = subprocess.run([str(tmp_path / "driver")], input="\n".join(cases) + "\n", capture_output=True, text=True)
    assert done.stdout.splitlines() == expected


def test_profile_banks_records_into_the_profiles_run_directory_after_ncu(tmp_path, monkeypatch, capsys):
    # the fake ncu replays a recording (tests/collect/test_program_run.py); the trace runs the program once more
    from tests.collect.test_program_run import OK_LOG, PROGRAMS
    from tests.support.fake import install_fake_ncu

    _sanitizer_or_skip()
    log = tmp_path / "ncu.log"
    log.write_text(OK_LOG)
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROGRAMS / "cuda_app.ncu-rep"),
        FAKE_NCU_LOG=str(log),
        FAKE_NCU_APP_EXIT="1",
    )
    monkeypatch.setenv("MEMLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(bt, "gpu_of_program", lambda: ("NVIDIA H100 80GB HBM3", "sm_90"))
    monkeypatch.setattr(bt, "device_patch", lambda s, arch, env=None: tmp_path / "patch.fatbin")
    argv = ["profile", "--banks", "--out", str(tmp_path / "runs"), "--clock-control", "none", "--", "sh", "-c", "true"]
    assert main(argv) == 0
    run = (tmp_path / "runs" / "latest").resolve()
    assert (run / "results.json").is_file() and (run / "banks.json").is_file()
    assert f"bank maps: {run / 'banks.json'}" in capsys.readouterr().out
    assert [e["event"] for e in bt.read_trace_lines(run / "banktrace")] == ["start"]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(["latest", run.name])  # no second run


def test_profile_banks_is_one_gpus(capsys):
    assert main(["profile", "--banks", "--gpus", "all"]) == 2
    assert (
        capsys.readouterr().err
        == "memlens: error: --banks records on this host's one GPU: leave out --gpus and --cluster\n"
    )


def test_records_that_never_hold_more_than_one_lane_of_full_warps_are_said_to_be_no_warp_accesses():
    one_lane = [o if lane == 0 else None for lane, o in enumerate(ROW)]
    alone = [record(16 * n, one_lane) | {"active": 1} for n in range(8)]
    assert "one active lane" in bt.banks_from_traces([launch("k", *alone)], 4).extra["warning"]
    together = [*alone, record(512, ROW) | {"active": 0xFFFFFFFF}]
    assert "warning" not in bt.banks_from_traces([launch("k", *together)], 4).extra
    small = launch("k", *alone) | {"block": [1, 1, 1]}  # one-thread blocks: one lane is all there is
    assert "warning" not in bt.banks_from_traces([small], 4).extra
