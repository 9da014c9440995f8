"""`memlens profile --gpus` on the CPU: two stand-in GPUs, the fake ncu replaying a recording for each."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import socket
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from memlens.cli import main
from memlens.collect.gpus import Gpu, choose_gpus, parse_gpu_list, parse_gpus_option
from memlens.collect.profile_run import ProfileOptions
from memlens.collect.run_dir import Machine
from memlens.collect.scheduler import plan_jobs
from memlens.collect.several_gpus import (
    CASE_SECONDS,
    COST_DECLARED,
    COST_EQUAL,
    COST_PART_PREVIOUS,
    COST_PREVIOUS,
    SECONDS_PER_BYTE,
    SECONDS_PER_FLOP,
    Part,
    case_costs,
    expected_costs,
    merge,
    share_arguments,
    sizes_for,
    split,
    unit_costs,
    units,
)
from memlens.errors import ConfigError
from memlens.model.results import RunInfo, RunResults, VariantOutcome
from memlens.selection import select_variants
from tests.conftest import FIXTURES
from tests.support.fake import CPU_SUITE, IN_THE_PROBE, PROBE_SELECTION, REPO, install_fake_ncu, recorded
from tests.support.hold import HOLD, go_on_when, programs_took_units

PROBE = FIXTURES / "probe"
KERNELS = REPO / "kernels"  # the built-in suite
SWEEP_40 = ("transpose.rows=2048,4096,8192,16384",)  # with the whole suite: issue 37's 40 cases
ISSUE_37_SUITE = "^(?!tensor_matmul/)"  # the suite as issue 37 measured it: tensor_matmul came later
GPUS = (
    Gpu(0, "NVIDIA H200", "GPU-aaaaaaaa-0000-0000-0000-000000000000", "00000000:19:00.0"),
    Gpu(1, "NVIDIA H200", "GPU-bbbbbbbb-1111-1111-1111-111111111111", "00000000:3B:00.0"),
)
# the CPU suite's variants, in suite order; with equal costs GPU 0 gets 1st, 3rd, 5th, GPU 1 2nd, 4th
LABELS = ["transpose/conflict", "transpose/padded", "transpose/swizzled", "running_mean/register", "running_mean/local"]
SHARE = {
    0: ["transpose/conflict", "transpose/swizzled", "running_mean/local"],
    1: ["transpose/padded", "running_mean/register"],
}  # variants one each: round robin
# profile's units, one a case: running_mean whole (2, within a GPU's share of 2.5), transpose (3) apart
UNIT_SHARE = {
    0: ["transpose/swizzled", "running_mean/register", "running_mean/local"],
    1: ["transpose/conflict", "transpose/padded"],
}


@pytest.fixture
def two_gpus(tmp_path, monkeypatch):
    """The fake ncu on PATH (recording each run's argv and environment) and two GPUs to choose from."""
    record = tmp_path / "ncu-runs.jsonl"
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
        FAKE_NCU_RECORD=str(record),
    )
    monkeypatch.setattr("memlens.collect.gpus.list_gpus", lambda: GPUS)
    return record


def profile_cli(tmp_path: Path, *extra: str) -> int:
    return main(["profile", str(CPU_SUITE), "--out", str(tmp_path / "runs"), "--clock-control", "none", *extra])


def test_each_gpu_gets_its_own_ncu_and_takes_units_from_one_folder(two_gpus, tmp_path):
    assert profile_cli(tmp_path, "--gpus", "all", *PROBE_SELECTION) == 0
    run = (tmp_path / "runs" / "latest").resolve()
    runs = sorted(recorded(two_gpus), key=lambda r: r["CUDA_VISIBLE_DEVICES"])
    assert [r["CUDA_VISIBLE_DEVICES"] for r in runs] == [GPUS[0].uuid, GPUS[1].uuid]
    folders = set()
    for gpu, ncu_run in zip(GPUS, runs, strict=True):
        argv = ncu_run["argv"]
        assert argv[argv.index("--export") + 1] == str(run / f"profile.gpu{gpu.index}")
        assert argv[argv.index("--log-file") + 1] == str(run / f"ncu.gpu{gpu.index}.log")
        pattern = argv[len(argv) - 1 - argv[::-1].index("-k") + 1]  # the profiled program's -k
        assert [label for label in LABELS if re.search(pattern, label)] == list(IN_THE_PROBE)  # any unit may be its
        folders.add(argv[argv.index("--claims") + 1])
        assert argv[argv.index("--tag") + 1] == f"job{gpu.index}"
        assert f"memlens-gpu{gpu.index}-" in ncu_run["TMPDIR"]  # a folder of its own, removed afterwards
        assert not Path(ncu_run["TMPDIR"]).exists()
        assert f"profile.gpu{gpu.index}" in (run / f"ncu-command.gpu{gpu.index}.txt").read_text()
        assert (run / f"events.gpu{gpu.index}.jsonl").is_file()
    (folder,) = folders  # one folder both take units from, removed with the run
    assert not Path(folder).exists()


def both_take_units(tmp_path: Path, monkeypatch) -> None:
    """The run's launches wait until both its programs took a unit (the first unit's launches outlast the
    other program's start): each GPU takes some."""
    monkeypatch.setenv(HOLD, str(tmp_path / "go-on"))
    go_on_when(tmp_path / "go-on", programs_took_units(tmp_path / "runs", 2))


def placed(data: dict) -> dict[str, int]:
    return {f"{o['family']}/{o['variant']}": o["gpu_index"] for o in data["outcomes"]}


def test_the_merged_run_has_every_variant_once_and_each_kernels_gpu(two_gpus, tmp_path, capsys, monkeypatch):
    both_take_units(tmp_path, monkeypatch)
    assert profile_cli(tmp_path, "--gpus", "0,1", *PROBE_SELECTION) == 0
    run = (tmp_path / "runs" / "latest").resolve()
    names = sorted(p.name for p in run.iterdir())
    assert names == [
        "events.gpu0.jsonl",
        "events.gpu1.jsonl",
        "ncu-command.gpu0.txt",
        "ncu-command.gpu1.txt",
        "ncu.gpu0.log",
        "ncu.gpu1.log",
        "profile.gpu0.ncu-rep",
        "profile.gpu1.ncu-rep",
        "results.json",
    ]
    data = json.loads((run / "results.json").read_text())
    assert [f"{o['family']}/{o['variant']}" for o in data["outcomes"]] == list(IN_THE_PROBE)  # suite order, once
    where = placed(data)
    assert set(where.values()) == {0, 1}  # both GPUs took units
    # each kernel kept from the report of the GPU that ran it
    kernels = [(f"{k['family']}/{k['variant']}", k["gpu_index"], k["gpu_uuid"]) for k in data["kernels"]]
    assert kernels == [(label, where[label], GPUS[where[label]].uuid) for label in IN_THE_PROBE]
    assert data["complete"] is True
    assert data["info"]["source"] == "profile.gpu0.ncu-rep, profile.gpu1.ncu-rep"
    assert data["info"]["gpu_name"] == "NVIDIA H200"
    info = data["info"]  # what a merge of runs from several hosts needs (docs/several-gpus.md)
    assert info["host"] == socket.gethostname() and info["ncu_version"] == "2025.3.1.0"
    assert {"driver_version", "suite_commit", "memlens_command", "started_at", "memlens_version"} <= set(info)
    assert "3 kernels from 3 variants profiled" in capsys.readouterr().out
    assert main(["report", str(run), "--format", "md", "-o", "-"]) == 0  # the merged run's one report
    said = [f"{n} variant{'s' if n != 1 else ''}" for n in (list(where.values()).count(i) for i in (0, 1))]
    gpus_line = f"| GPUs | GPU 0 (NVIDIA H200): {said[0]}; GPU 1 (NVIDIA H200): {said[1]} on {socket.gethostname()} |"
    assert gpus_line in capsys.readouterr().out


def test_a_gpu_that_finds_every_unit_taken_profiles_nothing_and_fails_nothing(two_gpus, tmp_path, monkeypatch):
    go_on = tmp_path / "go-on"  # GPU 1's program starts once GPU 0's ran all: GPU 0's ncu wrote its report
    monkeypatch.setenv("FAKE_NCU_APP_AFTER", f"{GPUS[1].uuid}={go_on}")
    go_on_when(go_on, lambda: any((tmp_path / "runs").rglob("profile.gpu0.ncu-rep")))
    assert profile_cli(tmp_path, "--gpus", "all") == 0
    run = (tmp_path / "runs" / "latest").resolve()
    data = json.loads((run / "results.json").read_text())
    assert set(placed(data).values()) == {0} and data["complete"] is True and len(data["kernels"]) == 3
    assert not (run / "profile.gpu1.ncu-rep").exists()  # as ncu: no kernel profiled, no report
    assert "No kernels were profiled" in (run / "ncu.gpu1.log").read_text()


def test_a_failing_gpu_keeps_the_others_results_and_is_named(two_gpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_TEST_RAISE", "transpose/conflict")
    assert profile_cli(tmp_path, "--gpus", "all") == 3  # as for a failure on one GPU
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    status = {o["variant"]: o["status"] for o in data["outcomes"]}
    # transpose goes out variant by variant (3 of 5 cases: more than a GPU's half): the program that took
    # conflict stopped there, and the other took every unit left
    assert status == {"conflict": "failed", "padded": "ok", "swizzled": "ok", "register": "ok", "local": "ok"}
    failed_on = placed(data)["transpose/conflict"]
    err = capsys.readouterr().err
    assert f"1 of 5 variants did not profile cleanly, first transpose/conflict on GPU {failed_on}: failed:" in err
    assert [k["variant"] for k in data["kernels"]] == ["padded", "local"]


def test_an_error_of_one_gpus_ncu_names_that_gpu(two_gpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_TEST_SLEEP", "30")
    assert profile_cli(tmp_path, "--gpus", "all", "--timeout", "2") == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.match(r"memlens: error: GPU 0 \(NVIDIA H200\): ncu ran past the 2 s timeout while \w+/\w+ was", err)
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert data["complete"] is False


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0,7", "memlens: error: --gpus 0,7: no GPU 7 on this machine (its GPUs: 0, 1)"),
        ("one", "memlens: error: --gpus 'one': expected 'all' or GPU indices such as 0,1"),
        ("1,1", "memlens: error: --gpus '1,1': a GPU is named twice"),
    ],
)
def test_a_wrong_gpus_value_is_one_line_and_exit_2_before_ncu_starts(two_gpus, tmp_path, capsys, value, message):
    assert profile_cli(tmp_path, "--gpus", value) == 2
    assert capsys.readouterr().err == message + "\n"
    assert recorded(two_gpus) == [] and not (tmp_path / "runs").exists()


def test_one_gpu_is_todays_run_on_that_gpu(two_gpus, tmp_path):
    assert profile_cli(tmp_path, "--gpus", "1") == 0
    run = (tmp_path / "runs" / "latest").resolve()
    assert (run / "profile.ncu-rep").is_file() and not list(run.glob("*.gpu*"))
    (ncu_run,) = recorded(two_gpus)
    assert ncu_run["CUDA_VISIBLE_DEVICES"] == GPUS[1].uuid
    data = json.loads((run / "results.json").read_text())
    assert {k["gpu_index"] for k in data["kernels"]} == {1} and len(data["outcomes"]) == 5


def test_without_gpus_nothing_changes(two_gpus, tmp_path):
    assert profile_cli(tmp_path) == 0
    (ncu_run,) = recorded(two_gpus)
    assert ncu_run["CUDA_VISIBLE_DEVICES"] == os.environ.get("CUDA_VISIBLE_DEVICES")  # memlens's own
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert {k["gpu_index"] for k in data["kernels"]} == {None}


# --- the split ------------------------------------------------------------------------------------


def test_split_gives_the_largest_first_to_the_least_loaded():
    variants = select_variants(CPU_SUITE, None).variants
    costs = dict(zip(LABELS, [10.0, 1.0, 1.0, 1.0, 8.0], strict=True))
    shares = split(variants, costs, 2)
    assert [[v.label for v in share] for share in shares] == [
        ["transpose/conflict", "running_mean/register"],  # 10 + 1
        ["transpose/padded", "transpose/swizzled", "running_mean/local"],  # 8 + 1 + 1, then the tie goes to GPU 0
    ]
    equal = split(variants, dict.fromkeys(LABELS, 1.0), 2)
    assert [[v.label for v in share] for share in equal] == [SHARE[0], SHARE[1]]  # round robin
    assert [len(s) for s in split(variants, dict.fromkeys(LABELS, 1.0), 7)] == [1, 1, 1, 1, 1, 0, 0]


def test_the_split_evens_out_what_largest_first_leaves_apart():
    variants = select_variants(CPU_SUITE, None).variants
    costs = dict(zip(LABELS, [5.0, 4.0, 3.0, 3.0, 3.0], strict=True))
    # largest first alone: 5 + 3 against 4 + 3 + 3; one swap (4 for 3) makes it 9 against 9
    shares = split(variants, costs, 2)
    assert [[v.label for v in share] for share in shares] == [
        ["transpose/conflict", "transpose/padded"],  # 5 + 4
        ["transpose/swizzled", "running_mean/register", "running_mean/local"],  # 3 + 3 + 3
    ]
    # the 40-case sweep's units as a run on two H200s measured them: largest first alone gave 14.8 s against 13.5 s
    found = {
        "matmul": 6.7,
        "rows=16384": 6.7,
        "rows=8192": 4.3,
        "fp16": 3.7,
        "rows=4096": 3.0,
        "rows=2048": 2.5,
        "running_mean": 1.4,
    }
    items = [SimpleNamespace(label=label) for label in found]  # all split reads of a unit
    loads = sorted(round(sum(found[i.label] for i in share), 1) for share in split(items, found, 2))
    assert loads == [14.0, 14.3]
    assert [round(sum(found[i.label] for i in share), 1) for share in split(items, found, 3)] == [9.7, 9.2, 9.4]


def previous_run(runs: Path, seconds: dict[str, float] | None = None) -> Path:
    """A previous run, `runs`'s latest; with `seconds`, one program's events in it: each case started 10 s
    after the one before and done its seconds later."""
    previous = runs / "20260101-000000-1"
    previous.mkdir(parents=True)
    (runs / "latest").symlink_to(previous.name)
    if seconds is not None:
        lines = []
        for index, (label, took) in enumerate(seconds.items()):
            lines += [
                {"event": "start", "variant": label, "time": 10.0 * index},
                {"event": "done", "variant": label, "status": "ok", "time": 10.0 * index + took},
            ]
        (previous / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return previous


def test_costs_come_from_the_previous_run_else_min_bytes_else_equal(tmp_path):
    selection = select_variants(CPU_SUITE, None)
    costs, source = expected_costs(selection, False, tmp_path / "runs")
    assert source == COST_EQUAL and set(costs.values()) == {1.0}
    previous = previous_run(tmp_path / "runs")
    lines = []
    for index, label in enumerate(LABELS):
        lines += [
            {"event": "start", "variant": label, "time": 100.0 + 10 * index},
            {"event": "done", "variant": label, "status": "ok", "time": 100.0 + 10 * index + index + 1},
        ]
    (previous / "events.gpu0.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines[:6]) + "junk\n")
    (previous / "events.gpu1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines[6:]))
    costs, source = expected_costs(selection, False, tmp_path / "runs")
    # each program's first case (conflict on GPU 0, register on GPU 1) also paid for that program's start:
    # it costs the median of its family's other cases instead (padded and swizzled: 2.5; local: 5)
    assert source == COST_PREVIOUS and costs == dict(zip(LABELS, [2.5, 2.0, 3.0, 5.0, 5.0], strict=True))
    (previous / "events.gpu1.jsonl").unlink()  # the previous run lacks some: estimated in its scale
    costs, source = expected_costs(selection, False, tmp_path / "runs")
    assert source == COST_PART_PREVIOUS  # 2.5, 2 and 3 s against 1 each estimated: the rest 2.5 s each
    assert costs == dict(zip(LABELS, [2.5, 2.0, 3.0, 2.5, 2.5], strict=True))


def test_a_programs_first_case_alone_in_its_family_is_estimated_in_the_runs_scale(tmp_path):
    selection = select_variants(CPU_SUITE, "transpose/conflict|running_mean", (), (), False)
    seconds = {"transpose/conflict": 4.0, "running_mean/register": 1.0, "running_mean/local": 3.0}
    previous_run(tmp_path / "runs", seconds)
    costs, source = expected_costs(selection, False, tmp_path / "runs")
    # conflict ran first, its program's start in its 4 s, and no other transpose case ran: it is estimated
    # (1, as each is), in the scale of the measured cases (4 s against 2 estimated: 2 s)
    assert source == COST_PART_PREVIOUS
    assert costs == {"transpose/conflict": 2.0, "running_mean/register": 1.0, "running_mean/local": 3.0}


def test_costs_from_min_bytes_where_every_family_declares_it():
    selection = select_variants(KERNELS, "transpose|running_mean")
    costs, source = expected_costs(selection, True, Path("/nonexistent"))
    assert source == COST_DECLARED
    family = selection.variants[0].family
    moved = family.min_bytes(family.size(selection.sizes, True))
    assert costs[selection.variants[0].label] == pytest.approx(CASE_SECONDS + SECONDS_PER_BYTE * moved)


def test_costs_count_the_flops_of_a_family_that_declares_them(monkeypatch):
    selection = select_variants(KERNELS, "matmul|running_mean")
    matmul = selection.variants[0].family
    size = matmul.size(selection.sizes)
    moved, done = matmul.min_bytes(size), matmul.min_flops(size)
    assert done == 2 * 2048**3
    costs, source = case_costs(selection, False, Path("/nonexistent"))
    assert source == COST_DECLARED
    assert costs["matmul/naive"] == pytest.approx(CASE_SECONDS + SECONDS_PER_BYTE * moved + SECONDS_PER_FLOP * done)
    monkeypatch.setattr(matmul, "min_bytes", None)  # FLOPs alone are enough for the model
    costs, source = case_costs(selection, False, Path("/nonexistent"))
    assert source == COST_DECLARED and costs["matmul/naive"] == pytest.approx(CASE_SECONDS + SECONDS_PER_FLOP * done)
    monkeypatch.setattr(matmul, "min_flops", None)  # a family declaring neither: one each
    assert case_costs(selection, False, Path("/nonexistent")) == ({c.label: 1.0 for c in selection.cases()}, COST_EQUAL)


def test_the_split_of_the_transpose_sweep_is_even_in_the_seconds_it_took():
    """issue 37: each unit's seconds under ncu in the 40-case sweep on one H200
    (tests/benchmarks/results/sweep_one_gpu_events_h200.jsonl; fp16_transpose's first case, which held the
    program's start, at the median of the others). By bytes alone the shares took 18.1 s and 11.7 s: the
    four 2048^3 matmuls took 5.9 s, where their bytes say 1.4 s."""
    took = {
        "fp16_transpose": 1.60,
        "matmul": 5.87,
        "running_mean": 1.35,
        "transpose@rows=2048": 2.94,
        "transpose@rows=4096": 3.13,
        "transpose@rows=8192": 5.62,
        "transpose@rows=16384": 9.25,
    }
    selection = select_variants(KERNELS, ISSUE_37_SUITE, (), SWEEP_40, False)
    costs, _ = case_costs(selection, False, Path("/nonexistent"))
    found = units(selection, costs, 2)
    loads = [sum(took[unit.label] for unit in share) for share in split(found, unit_costs(found, costs), 2)]
    assert max(loads) / min(loads) < 1.15, loads


def test_each_share_gets_only_the_sizes_of_its_families():
    variants = select_variants(CPU_SUITE, None).variants
    transposes = [v for v in variants if v.family.name == "transpose"]
    items = ["m=32", "n=16", "running_mean.n=64", "transpose.m=8"]
    assert sizes_for(transposes, items) == ("m=32", "n=16", "transpose.m=8")


# --- the GPUs of the host --------------------------------------------------------------------------


def test_nvidia_smi_lines_become_gpus():
    text = (
        "0, NVIDIA H100 80GB HBM3, GPU-aaaaaaaa-0000-0000-0000-000000000000, 00000000:19:00.0\n"
        "1, NVIDIA H200, GPU-bbbbbbbb-1111-1111-1111-111111111111, 00000000:3B:00.0\n"
        "No devices were found\n"
    )
    assert parse_gpu_list(text) == (
        Gpu(0, "NVIDIA H100 80GB HBM3", "GPU-aaaaaaaa-0000-0000-0000-000000000000", "00000000:19:00.0"),
        Gpu(1, "NVIDIA H200", "GPU-bbbbbbbb-1111-1111-1111-111111111111", "00000000:3B:00.0"),
    )


def test_gpus_option():
    assert parse_gpus_option("all") is None and parse_gpus_option("1, 0") == (1, 0)
    assert choose_gpus("1", GPUS) == (GPUS[1],) and choose_gpus("all", GPUS) == GPUS
    with pytest.raises(ConfigError, match="expected 'all' or GPU indices"):
        parse_gpus_option("")
    assert GPUS[0].environment({"PATH": "/bin"}) == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": GPUS[0].uuid}


# --- memlens bench --gpus --------------------------------------------------------------------------


def test_bench_child_argv_selects_its_share_and_sizes(tmp_path):
    from memlens.bench.gpus import child_argv
    from memlens.bench.timing import BenchOptions

    share = [v for v in select_variants(CPU_SUITE, None).variants if v.label in SHARE[1]]
    options = BenchOptions(repeats=30, sizes=("running_mean.n=64", "transpose.m=8"), small=True)
    argv = child_argv(options, CPU_SUITE, share, tmp_path)
    assert argv[1:] == [
        "-m",
        "memlens",
        "bench",
        str(CPU_SUITE),
        "-k",
        r"^(?:transpose/padded|running_mean/register)$",
        "--repeats",
        "30",
        "--out",
        str(tmp_path),
        "--size",
        "running_mean.n=64",
        "--size",
        "transpose.m=8",
        "--small",
    ]


def test_bench_on_two_gpus_merges_one_bench_json_and_names_a_failed_gpu(tmp_path, monkeypatch, capsys):
    from memlens.bench import gpus as bench_gpus
    from tests.reports.test_report_bench import RUNNING_MEAN, TRANSPOSE, bench_results
    from tests.support.json_file import write_json

    def children(options, suite, plan, run_dir, scratch):
        """GPU 0's bench writes its bench.json; GPU 1's stops before it writes one."""
        assert [(gpu.index, [v.label for v in share]) for gpu, share in plan] == [(0, SHARE[0]), (1, SHARE[1])]
        timed = {
            "transpose": (TRANSPOSE, 8, {"conflict": 0.3, "swizzled": 0.16}),
            "running_mean": (RUNNING_MEAN, 8, {"local": 0.48}),
        }
        (scratch / "gpu0" / "run").mkdir(parents=True)
        write_json(scratch / "gpu0" / "run" / "bench.json", bench_results(timed=timed, failures=()).to_json())
        (run_dir / "bench.gpu1.log").write_text("memlens: error: no usable CUDA GPU: test\n")
        return [0, 3]

    monkeypatch.setattr("memlens.collect.gpus.list_gpus", lambda: GPUS)
    monkeypatch.setattr(bench_gpus, "_run_children", children)
    out = tmp_path / "runs"
    assert main(["bench", str(CPU_SUITE), "--out", str(out), "--gpus", "all"]) == 3
    (run,) = [p for p in out.iterdir()]
    merged = json.loads((run / "bench.json").read_text())
    assert [f"{v['family']}/{v['variant']}" for v in merged["variants"]] == SHARE[0]
    assert [(f["variant"], f["status"]) for f in merged["failures"]] == [("padded", "failed"), ("register", "failed")]
    assert merged["failures"][0]["message"] == (
        "GPU 1 (NVIDIA H200): memlens: error: no usable CUDA GPU: test; see bench.gpu1.log"
    )
    assert (run / "bench.gpu0.json").is_file() and not (run / "bench.gpu1.json").exists()
    err = capsys.readouterr().err
    assert "2 of 5 variants were not timed, first transpose/padded: failed: GPU 1 (NVIDIA H200)" in err


def test_bench_children_run_at_once_and_a_machine_without_gpus_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("memlens.collect.gpus.list_gpus", lambda: GPUS)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    out = tmp_path / "runs"
    assert main(["bench", str(CPU_SUITE), "--out", str(out), "--gpus", "0,1"]) == 3
    (run,) = [p for p in out.iterdir()]
    err = capsys.readouterr().err.strip()
    assert err.startswith("memlens: error: no GPU timed anything, first transpose/conflict: GPU 0 (NVIDIA H200): ")
    assert err.endswith(f"see bench.gpu0.log; logs in {run}")
    for index in (0, 1):  # each child's own output, ending in its one-line error
        assert (run / f"bench.gpu{index}.log").read_text().strip().splitlines()[-1].startswith("memlens: error: ")


def test_no_gpu_listed_is_an_environment_error(tmp_path, monkeypatch, capsys):
    from memlens.io.processes import Finished

    failed = Finished(("nvidia-smi",), 9, "", "NVIDIA-SMI has failed because it couldn't communicate with the driver")
    monkeypatch.setattr("memlens.collect.gpus.run_command", lambda argv, timeout: failed)
    assert profile_cli(tmp_path, "--gpus", "all") == 3
    assert capsys.readouterr().err == (
        "memlens: error: --gpus: nvidia-smi lists no GPU (nvidia-smi exited with code 9: NVIDIA-SMI has failed "
        "because it couldn't communicate with the driver)\n"
    )
    assert not (tmp_path / "runs").exists()


# --- Ctrl-C and SIGTERM over several GPUs: every GPU's ncu stopped, what each did saved -------------

FAKE_SMI = f"""#!/bin/sh
case "$*" in
  *pci.bus_id*) printf '%s\\n' {" ".join(f"'{g.index}, {g.name}, {g.uuid}, {g.pci_bus_id}'" for g in GPUS)} ;;
  *) echo 580.159.04 ;;
esac
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_stops_every_gpu_and_saves_what_each_did(tmp_path, signum):
    from tests.support.fake import MARKER, fake_ncu_env, interrupt_when

    tag = uuid.uuid4().hex
    env = fake_ncu_env(tmp_path / "bin", MEMLENS_TEST_SLEEP="60", **{MARKER: tag})
    (tmp_path / "bin" / "nvidia-smi").write_text(FAKE_SMI)
    (tmp_path / "bin" / "nvidia-smi").chmod(0o755)
    runs = tmp_path / "runs"
    argv = [
        sys.executable,
        "-m",
        "memlens",
        "profile",
        str(CPU_SUITE),
        "--out",
        str(runs),
        "--gpus",
        "all",
        "--clock-control",
        "none",
    ]

    def both_started() -> bool:
        return len([p for p in runs.glob("*/events.gpu*.jsonl") if '"start"' in p.read_text()]) == 2

    done = interrupt_when(argv, tmp_path, env, both_started, signum)
    assert done.returncode == 3 and "Traceback" not in done.err
    # each program hangs in the first launch of its share (transpose goes out variant by variant: GPU 0 has
    # swizzled and running_mean, GPU 1 conflict and padded); nobody took the others
    assert re.match(
        r"memlens: interrupted GPU 0 \(NVIDIA H200\): while transpose/swizzled was", done.err.splitlines()[-1]
    )
    data = json.loads((runs / "latest" / "results.json").read_text())
    assert data["complete"] is False
    outcomes = {o["variant"]: (o["status"], o["gpu_index"]) for o in data["outcomes"]}
    assert [o["variant"] for o in data["outcomes"]] == ["conflict", "padded", "swizzled", "register", "local"]
    assert outcomes == {
        "conflict": ("failed", 1),
        "padded": ("not_run", None),  # where it would have run: unknown
        "swizzled": ("failed", 0),
        "register": ("not_run", None),
        "local": ("not_run", None),
    }
    assert done.left == []  # no ncu and no program left running on any GPU


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--repeats", "5"], "--repeats 5: at least 20 launches make a median"),
        (["-k", "nothing"], "matches -k 'nothing'"),
    ],
)
def test_bench_on_gpus_refuses_bad_options_before_any_child(tmp_path, monkeypatch, capsys, extra, message):
    monkeypatch.setattr("memlens.collect.gpus.list_gpus", lambda: GPUS)
    assert main(["bench", str(CPU_SUITE), "--out", str(tmp_path / "runs"), "--gpus", "all", *extra]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "runs").exists()


def test_a_swept_variant_costs_all_its_values():
    selection = select_variants(KERNELS, "transpose|running_mean", (), ("transpose.rows=64,128,256",), True)
    costs, source = expected_costs(selection, True, Path("/nonexistent"))
    assert source == COST_DECLARED
    transpose = next(v.family for v in selection.variants if v.family.name == "transpose")
    cols = transpose.size({}, True)["cols"]
    moved = sum(transpose.min_bytes({"rows": r, "cols": cols}) for r in (64, 128, 256))
    assert costs["transpose/conflict"] == pytest.approx(3 * CASE_SECONDS + SECONDS_PER_BYTE * moved)
    running_mean = next(v.family for v in selection.variants if v.family.name == "running_mean")
    moved = running_mean.min_bytes(running_mean.size({}, True))
    assert costs["running_mean/local"] == pytest.approx(CASE_SECONDS + SECONDS_PER_BYTE * moved)


def test_the_split_weighs_each_case_as_well_as_its_bytes_and_keeps_families_whole():
    """issue 37: the transpose sweep split by bytes alone gave two H200s 11 and 29 cases of equal bytes,
    18.3 s and 23.3 s of ncu, and fp16_transpose and matmul went to both (each made its inputs twice)."""
    selection = select_variants(KERNELS, ISSUE_37_SUITE, (), SWEEP_40, False)
    costs, source = case_costs(selection, False, Path("/nonexistent"))
    assert source == COST_DECLARED
    found = units(selection, costs, 2)
    assert [unit.label for unit in found] == [
        "fp16_transpose",
        "matmul",
        "running_mean",
        "transpose@rows=2048",
        "transpose@rows=4096",
        "transpose@rows=8192",
        "transpose@rows=16384",
    ]
    loads = [sum(unit_costs(share, costs).values()) for share in split(found, unit_costs(found, costs), 2)]
    assert max(loads) / min(loads) < 1.05, loads


@pytest.mark.parametrize("count", [2, 3, 4, 8])
def test_every_case_runs_once_whatever_the_number_of_gpus(count):
    """What each job's program runs (its variants, at its sweep's values where its family is swept) is
    the job's cases, and every case of the selection is in exactly one job."""
    options = ProfileOptions(suite=str(KERNELS), sweeps=SWEEP_40)
    selection = select_variants(KERNELS, None, (), options.sweeps, False)
    ran = []
    for job in plan_jobs(options, selection, count):
        values = {item.split(".")[0]: item.split("=")[1].split(",") for item in job.sweeps}
        runs = [f"{label}@rows={value}" for label in job.labels for value in values.get(label.split("/")[0], [])]
        runs += [label for label in job.labels if label.split("/")[0] not in values]
        assert sorted(runs) == sorted(job.cases), job
        ran += runs
    assert sorted(ran) == sorted(case.label for case in selection.cases())


def test_a_family_too_costly_for_one_gpus_share_goes_out_variant_by_variant():
    selection = select_variants(KERNELS, "^transpose/", (), (), False)  # one family of 7 variants, no sweep
    costs, _ = case_costs(selection, False, Path("/nonexistent"))
    assert [unit.label for unit in units(selection, costs, 1)] == ["transpose"]
    apart = units(selection, costs, 2)
    assert [unit.label for unit in apart] == [variant.label for variant in selection.variants]
    assert [len(share) for share in split(apart, unit_costs(apart, costs), 2)] == [4, 3]


def test_a_value_added_to_a_sweep_is_estimated_in_the_previous_runs_scale(tmp_path):
    selection = select_variants(KERNELS, "transpose/conflict|running_mean/local", (), ("transpose.rows=2048,4096",))
    estimated, source = case_costs(selection, False, tmp_path / "runs")
    assert source == COST_DECLARED
    seconds = {
        "transpose/padded@rows=2048": 0.4,  # first: its program's start in it (not selected here)
        "transpose/conflict@rows=2048": 0.54,
        "running_mean/local": 0.36,
    }  # rows=4096 is new
    previous_run(tmp_path / "runs", seconds)
    costs, source = case_costs(selection, False, tmp_path / "runs")
    assert source == COST_PART_PREVIOUS
    scale = 0.9 / (estimated["transpose/conflict@rows=2048"] + estimated["running_mean/local"])
    assert costs["transpose/conflict@rows=2048"] == pytest.approx(0.54) and costs[
        "running_mean/local"
    ] == pytest.approx(0.36)
    assert costs["transpose/conflict@rows=4096"] == pytest.approx(estimated["transpose/conflict@rows=4096"] * scale)


def test_a_swept_variant_costs_the_seconds_of_all_its_values_in_the_previous_run(tmp_path):
    selection = select_variants(CPU_SUITE, "transpose/conflict|running_mean/local", (), ("transpose.m=8,16",), False)
    assert expected_costs(selection, False, tmp_path / "runs") == (
        {"transpose/conflict": 2.0, "running_mean/local": 1.0},
        COST_EQUAL,
    )  # one a value
    seconds = {
        "transpose/padded@m=8": 1.0,  # first: its program's start in it (not selected here)
        "transpose/conflict@m=8": 1.5,
        "transpose/conflict@m=16": 2.5,
        "running_mean/local": 0.5,
    }
    previous_run(tmp_path / "runs", seconds)
    assert expected_costs(selection, False, tmp_path / "runs") == (
        {"transpose/conflict": 4.0, "running_mean/local": 0.5},
        COST_PREVIOUS,
    )


def test_a_swept_run_over_two_gpus_merges_in_suite_order():
    selection = select_variants(CPU_SUITE, None, (), ("transpose.m=8,16",), False)
    cases = [case.label for case in selection.cases()]
    assert cases[:3] == ["transpose/conflict@m=8", "transpose/padded@m=8", "transpose/swizzled@m=8"]
    parts = []
    for gpu in GPUS:  # each GPU's outcomes in its own order, as its share ran
        mine = [label for position, label in enumerate(cases) if position % 2 == gpu.index]
        outcomes = tuple(VariantOutcome(*label.split("/"), "ok", gpu_index=gpu.index) for label in reversed(mine))
        parts.append(Part(gpu, RunResults(RunInfo(), (), outcomes, True), None))
    results, error = merge(parts, selection, Machine(None, None), "memlens profile", dt.datetime.now(dt.timezone.utc))
    assert error is None
    assert [f"{o.family}/{o.variant}" for o in results.outcomes] == cases


def test_a_swept_family_is_shared_out_by_value_and_each_gpu_runs_only_its_values():
    selection = select_variants(CPU_SUITE, None, (), ("transpose.m=8,16,32",), False)
    cases, _ = case_costs(selection, False, Path("/nonexistent"))  # the CPU suite declares no min_bytes: 1 a case
    found = units(selection, cases, 2)
    assert [u.label for u in found] == ["transpose@m=8", "transpose@m=16", "transpose@m=32", "running_mean"]
    costs = unit_costs(found, cases)
    assert costs == {"transpose@m=8": 3.0, "transpose@m=16": 3.0, "transpose@m=32": 3.0, "running_mean": 2.0}
    shares = split(found, costs, 2)
    assert [[u.label for u in share] for share in shares] == [
        ["transpose@m=8", "transpose@m=32"],
        ["transpose@m=16", "running_mean"],
    ]
    options = ProfileOptions(suite=str(CPU_SUITE), sizes=("running_mean.n=64",), sweeps=("transpose.m=8,16,32",))
    assert share_arguments(shares[0], options) == (tuple(LABELS[:3]), (), ("transpose.m=8,32",))
    assert share_arguments(shares[1], options) == (tuple(LABELS), ("running_mean.n=64",), ("transpose.m=16",))


def test_a_gpu_done_with_every_unit_takes_the_last_cases_of_one_another_runs(two_gpus, tmp_path, monkeypatch):
    """The previous run says transpose at m=8 costs ten times the others: GPU 0's share is that unit alone,
    GPU 1's the other two values. Both programs start their first case together (held until both took
    it), and each case takes the same 0.5 s, so GPU 0 is done when GPU 1 starts its second unit, and
    takes that unit's last case: 4 and 5 cases, not 3 and 6."""
    monkeypatch.setenv("MEMLENS_TEST_SLEEP", "0.25")  # each of a case's two launches
    both_take_units(tmp_path, monkeypatch)
    seconds = {
        f"transpose/{v}@m={m}": 10.0 if m == 8 else 1.0 for m in (8, 16, 32) for v in ("conflict", "padded", "swizzled")
    }
    previous_run(tmp_path / "runs", seconds)
    swept = ("-k", "transpose", "--sweep", "transpose.m=8,16,32")
    assert profile_cli(tmp_path, "--gpus", "all", *swept) == 3  # the probe holds no swept kernel; the outcomes kept
    where = placed(json.loads((tmp_path / "runs" / "latest" / "results.json").read_text()))
    assert [where[f"transpose/{v}@m=8"] for v in ("conflict", "padded", "swizzled")] == [0, 0, 0]
    assert sorted(list(where.values()).count(gpu) for gpu in (0, 1)) == [4, 5], where


def test_each_value_of_a_swept_family_is_a_unit_one_gpu_runs_from_the_front(two_gpus, tmp_path, monkeypatch):
    both_take_units(tmp_path, monkeypatch)
    profile_cli(tmp_path, "--gpus", "all", "--sweep", "transpose.m=8,16")  # the probe holds no swept kernel
    for ncu_run in recorded(two_gpus):  # any unit is its to take: the whole sweep
        argv = ncu_run["argv"]
        assert [argv[i + 1] for i, arg in enumerate(argv) if arg == "--sweep"] == ["transpose.m=8,16"]
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    where = placed(data)
    assert len(where) == 8 and set(where.values()) == {0, 1}
    for value in (8, 16):  # its inputs made on the GPU that took it, and only the tail of it taken over elsewhere
        ran = [where[f"transpose/{v}@m={value}"] for v in ("conflict", "padded", "swizzled")]
        assert ran == sorted(ran, key=lambda gpu: gpu != ran[0]), ran
