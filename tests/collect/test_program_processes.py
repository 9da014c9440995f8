"""Which launches a program run selects (issue 34), on the CPU: the fake ncu (tests/support/fake_ncu.py)
runs the program for real and selects among declared launches as ncu's documented NVTX and kernel-id
filters do, so the ncu command memlens builds is judged by what it would profile."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.collect.program_run import ANY_RANGE_FILTERS, OWN_RANGE_FILTERS
from memlens.model.nvtx_names import domains_other_than
from memlens.readers.metric_values import ProgramLabel, program_label
from tests.conftest import FIXTURES
from tests.support.fake import install_fake_ncu

PROGRAMS = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3"
DEFAULT = "<default domain>"
OK_LOG = "==PROF== Connected to process 615 (cuda_app)\n==PROF== Disconnected from process 615\n"
# a CuPy row sum warmed up outside the program's range, inside CCCL's own, then run inside memlens.range
WARM_UP_THEN_MINE = [
    {"kernel": "DeviceSegmentedReduceKernel", "push_pop": {"CCCL": ["cub::DeviceSegmentedReduce::Sum"]}},
    {
        "kernel": "DeviceSegmentedReduceKernel",
        "push_pop": {DEFAULT: ["cupy/rowsum"], "CCCL": ["cub::DeviceSegmentedReduce::Sum"]},
        "start_end": {DEFAULT: ["cupy/rowsum"]},
    },
]


def install(tmp_path, monkeypatch, launches: list[dict] | None = None) -> Path:
    log = tmp_path / "ncu.log"
    log.write_text(OK_LOG)
    env = {"FAKE_NCU_REPORT": str(PROGRAMS / "cuda_app.ncu-rep"), "FAKE_NCU_LOG": str(log)}
    if launches is not None:
        env |= {"FAKE_NCU_LAUNCHES": json.dumps(launches), "FAKE_NCU_PROFILED": str(tmp_path / "profiled.jsonl")}
    install_fake_ncu(tmp_path / "bin", monkeypatch, **env)
    return tmp_path / "profiled.jsonl"


def profile(tmp_path: Path, *options: str) -> int:
    return main(
        [
            "profile",
            "--out",
            str(tmp_path / "runs"),
            "--clock-control",
            "none",
            *options,
            "--",
            sys.executable,
            "-c",
            "print('app ran')",
        ]
    )


def ncu_argv(tmp_path: Path) -> list[str]:
    return shlex.split((tmp_path / "runs" / "latest" / "ncu-command.txt").read_text().splitlines()[-1])


def option(argv: list[str], name: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == name]


def profiled(record: Path) -> list[list[int]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.mark.parametrize(
    ("options", "scope"),
    [
        ((), "process"),
        (("--nvtx-push-pop-scope", "process"), "process"),
        (("--nvtx-push-pop-scope", "thread"), "thread"),
    ],
)
def test_the_ncu_command_of_each_scope_option(tmp_path, monkeypatch, capsys, options, scope):
    install(tmp_path, monkeypatch)
    assert profile(tmp_path, *options) == 0
    argv = ncu_argv(tmp_path)
    assert option(argv, "--nvtx-push-pop-scope") == [scope]
    assert argv.index("--nvtx-push-pop-scope") == argv.index("--nvtx") + 1
    assert option(argv, "--target-processes") == ["all"]  # child processes: a multiprocessing worker, a rank
    info = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())["info"]
    assert info["push_pop_scope"] == scope
    assert info["processes"] == {"615 (cuda_app)": 1}
    assert main(["metrics", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    covered = "every thread's launches" if scope == "process" else "the launches of the thread that pushed them only"
    assert f"push/pop ranges cover {covered} (--nvtx-push-pop-scope {scope})" in out


def test_a_bad_scope_is_refused_before_ncu_starts(tmp_path, monkeypatch, capsys):
    install(tmp_path, monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        profile(tmp_path, "--nvtx-push-pop-scope", "gpu")
    assert exit_info.value.code == 2 and "invalid choice: 'gpu'" in capsys.readouterr().err
    assert main(["profile", "--nvtx-push-pop-scope", "thread"]) == 2
    assert "--nvtx-push-pop-scope" in capsys.readouterr().err and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("semantics", [re.fullmatch, re.search], ids=["full-match", "search"])
def test_the_domain_regex_takes_every_domain_but_the_libraries(semantics):
    other = domains_other_than(["CCCL", "NCCL"])
    for domain in ("CCCL", "NCCL"):
        assert semantics(other, domain) is None
    for domain in ("C", "CC", "CCC", "CCCLx", "xCCCL", "N", "NCC", "NCCL2", "CCCl", "mine", "torchapp", DEFAULT, "a b"):
        assert semantics(other, domain) is not None, domain
    assert not set("@,/+") & set(other)  # none of ncu's own NVTX syntax
    assert domains_other_than(["ab", "abc"]) == "^([^a].*|a|a[^b].*|ab[^c].*|abc..*)$"
    assert OWN_RANGE_FILTERS == ("regex:.*/", f"regex:{other}@.*/", "regex:.*", f"regex:{other}@.*")


def test_a_warm_up_in_a_library_range_never_stands_for_the_launch_in_the_program_range(tmp_path, monkeypatch, capsys):
    record = install(tmp_path, monkeypatch, WARM_UP_THEN_MINE)
    assert profile(tmp_path) == 0
    assert profiled(record) == [[1]]  # the launch inside cupy/rowsum, not the warm-up
    assert "running it once more" not in capsys.readouterr().err
    # what the filters of before selected: the warm-up, by CCCL's range, and nothing in the program's range
    assert profile(tmp_path, "--nvtx-include", "regex:.*/", "--nvtx-include", "regex:.*@.*/") == 0
    assert profiled(record)[-1] == [0]
    info = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())["info"]
    assert info["ranges_selected"].startswith("the ranges of --nvtx-include 'regex:.*/'")


def test_without_a_library_domain_the_program_ranges_are_selected_once(tmp_path, monkeypatch, capsys):
    launches = [
        {"kernel": "k", "push_pop": {DEFAULT: ["step"]}},
        {"kernel": "k", "push_pop": {DEFAULT: ["step"]}},
        {"kernel": "g", "push_pop": {"mine": ["step", "gemm"]}},
        {"kernel": "outside"},
    ]
    record = install(tmp_path, monkeypatch, launches)
    assert profile(tmp_path) == 0
    assert profiled(record) == [[0, 2]]
    info = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())["info"]
    assert info["ranges_selected"] == (
        "the program's own ranges; those of CCCL, NCCL (libraries' domains) only add "
        "to the label of a launch inside them"
    )
    assert f"ranges: {info['ranges_selected']}" in capsys.readouterr().out


def test_a_program_with_only_library_ranges_is_run_again_selecting_them(tmp_path, monkeypatch, capsys):
    launches = [{"kernel": "reduce", "push_pop": {"CCCL": ["cub::DeviceReduce::Sum"]}}, {"kernel": "outside"}]
    record = install(tmp_path, monkeypatch, launches)
    assert profile(tmp_path) == 0
    assert profiled(record) == [[], [0]]  # none of its own; then every range of every domain, CCCL's included
    err = capsys.readouterr().err
    assert "the program opened no NVTX range of its own that launched a kernel: running it once more" in err
    run = (tmp_path / "runs" / "latest").resolve()
    commands = (run / "ncu-command.txt").read_text().splitlines()
    assert len(commands) == 2 and option(shlex.split(commands[1]), "--nvtx-include") == list(ANY_RANGE_FILTERS)
    assert "No kernels were profiled" in (run / "ncu.own-ranges.log").read_text()
    info = json.loads((run / "results.json").read_text())["info"]
    assert info["ranges_selected"].startswith(
        "every range of every domain, the libraries' included: the program opened no NVTX range of its own"
    )
    assert main(["report", str(run), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "ranges: every range of every domain" in (tmp_path / "r.md").read_text()


def test_a_program_with_no_ranges_at_all_fails_after_both(tmp_path, monkeypatch, capsys):
    record = install(tmp_path, monkeypatch, [{"kernel": "outside"}])
    assert profile(tmp_path) == 3
    assert profiled(record) == [[], []]
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "ncu profiled no kernel:" in err and "(--all-kernels profiles every kernel)" in err
    # a filter of the user's own is not second-guessed: one run
    assert profile(tmp_path, "--nvtx-include", "step/") == 3
    assert profiled(record) == [[], [], []]


def test_a_library_range_inside_a_program_range_only_adds_to_the_label():
    inside = program_label([("CCCL", "cub::DeviceSegmentedReduce::Sum"), (DEFAULT, "cupy/rowsum")])
    assert inside == ProgramLabel("cupy/rowsum > CCCL@cub::DeviceSegmentedReduce::Sum", "cupy", "rowsum")
    # a library's range shaped family/variant never makes the family
    assert program_label([(DEFAULT, "step"), ("NCCL", "all/reduce")]) == ProgramLabel("step > NCCL@all/reduce")
    assert program_label([("CCCL", "cub::DeviceReduce::Sum")]) == ProgramLabel("CCCL@cub::DeviceReduce::Sum")
    # other named domains keep the report's order
    assert program_label([("mine", "outer"), (DEFAULT, "a/b")]).nvtx == "mine@outer > a/b"


TWO_PROCESSES_LOG = (
    "==PROF== Connected to process 615 (/usr/bin/python3.12)\n"
    "==PROF== Connected to process 640 (/usr/bin/python3.12)\n"
    "==PROF== Disconnected from process 640\n==PROF== Disconnected from process 615\n"
)


def test_launches_of_child_processes_are_labelled_with_their_process(tmp_path, monkeypatch, capsys):
    """ncu --target-processes all follows a multiprocessing worker or a torchrun rank: where its log names
    two processes, memlens asks ncu's CSV export which process launched each kernel, and numbers them."""
    log = tmp_path / "two.log"
    log.write_text(TWO_PROCESSES_LOG)
    export = tmp_path / "export.csv"
    rows = "".join(f'"{i}","{615 if i < 2 else 640}","python3.12","host","(1, 1, 1)"\n' for i in range(6))
    export.write_text('"ID","Process ID","Process Name","Host Name","launch__grid_size"\n"","","","",""\n' + rows)
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROGRAMS / "cuda_app.ncu-rep"),
        FAKE_NCU_LOG=str(log),
        FAKE_NCU_IMPORT_CSV=str(export),
    )
    assert profile(tmp_path) == 0
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert data["info"]["processes"] == {"615 (/usr/bin/python3.12)": 1, "640 (/usr/bin/python3.12)": 2}
    assert [k["process"] for k in data["kernels"]] == [1, 1, 2, 2, 2, 2]
    capsys.readouterr()
    assert main(["metrics", str(tmp_path / "runs"), "--json"]) == 0
    labels = [k["label"] for k in json.loads(capsys.readouterr().out)["kernels"]]
    assert labels[:3] == [
        "transpose/conflict (process 1)",
        "transpose/padded (process 1)",
        "transpose/store_conflict (process 2)",
    ]
    assert main(["metrics", str(tmp_path / "runs")]) == 0
    assert (
        "processes (each launch's label names its own): 1: 615 (/usr/bin/python3.12), 2: 640 (/usr/bin/python3.12)"
    ) in capsys.readouterr().out


def test_one_process_needs_no_export_and_an_export_ncu_refuses_leaves_labels_alone(tmp_path, monkeypatch):
    from memlens.collect.program_processes import connected_processes, parse_launch_pids

    assert connected_processes(OK_LOG) == {"615 (cuda_app)": 1}
    assert connected_processes("no process\n") is None
    assert parse_launch_pids('"ID","Process ID"\n"","",\n"0","12"\n"x","13"\n') == {0: "12"}
    log = tmp_path / "two.log"
    log.write_text(TWO_PROCESSES_LOG)
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROGRAMS / "cuda_app.ncu-rep"),
        FAKE_NCU_LOG=str(log),
        FAKE_NCU_IMPORT_CSV=str(tmp_path / "missing.csv"),
    )
    assert profile(tmp_path) == 0  # the export failed: the run stands, its kernels without their process
    kernels = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())["kernels"]
    assert all("process" not in k for k in kernels)


# tests/fixtures/programs/two_ranges.cu: `copy` (one grid and block) in ranges copy/aligned and copy/misaligned,
# then `scale` in range step, three times
TWO_RANGES = [
    {"kernel": "copy", "push_pop": {DEFAULT: ["copy/aligned"]}},
    {"kernel": "copy", "push_pop": {DEFAULT: ["copy/misaligned"]}},
    *[{"kernel": "scale", "push_pop": {DEFAULT: ["step"]}}] * 3,
]


def test_a_range_whose_kernel_ran_in_an_earlier_range_is_profiled_by_its_own_filter(tmp_path, monkeypatch):
    """--launches first keys a kernel without its range (the second copy is not profiled); the --nvtx-include
    that the run names for such a range (launch_sampling.not_profiled_line) profiles its kernels once. The fake
    filters as ncu documents it; tests/fixtures/record_ranges.sh confirms it on a GPU."""
    record = install(tmp_path, monkeypatch, TWO_RANGES)
    assert profile(tmp_path) == 0
    assert profiled(record) == [[0, 2]]  # copy in copy/aligned, scale in its first step
    assert profile(tmp_path, "--nvtx-include", "regex:^copy.misaligned$/") == 0
    assert profiled(record)[-1] == [1]
    assert profile(tmp_path, "--nvtx-include", "copy/misaligned/") == 3  # ncu: range misaligned nested in copy
    assert profiled(record)[-1] == []
