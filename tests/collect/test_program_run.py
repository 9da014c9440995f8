"""`memlens profile -- COMMAND` on the CPU: the fake ncu (tests/support/fake_ncu.py) runs the program
for real and replays the recording of tests/fixtures/programs/cuda_app.cu made on an H100."""

from __future__ import annotations

import json
import shlex
import socket
import sys
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.collect.program_run import validate_filter
from memlens.errors import ConfigError, InputError
from tests.conftest import FIXTURES
from tests.support.fake import install_fake_ncu

PROGRAMS = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3"
OTHER = "^([^CN].*|C|C[^C].*|CC|CC[^C].*|CCC|CCC[^L].*|CCCL..*|N|N[^C].*|NC|NC[^C].*|NCC|NCC[^L].*|NCCL..*)$"
DEFAULTS = ["regex:.*/", f"regex:{OTHER}@.*/", "regex:.*", f"regex:{OTHER}@.*"]
OK_LOG = "==PROF== Connected to process 615 (cuda_app)\n==PROF== Disconnected from process 615\n"


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    log = tmp_path / "ncu.log"
    log.write_text(OK_LOG)
    return install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROGRAMS / "cuda_app.ncu-rep"),
        FAKE_NCU_LOG=str(log),
        FAKE_NCU_APP_EXIT="1",
    )


def program(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def profile(tmp_path: Path, *options: str, command: list[str] | None = None) -> int:
    return main(
        [
            "profile",
            "--out",
            str(tmp_path / "runs"),
            "--clock-control",
            "none",
            *options,
            "--",
            *(command or program("print('app ran')")),
        ]
    )


def ncu_argv(tmp_path: Path) -> list[str]:
    return shlex.split((tmp_path / "runs" / "latest" / "ncu-command.txt").read_text())


def test_program_run_writes_the_suite_run_directory(fake_ncu, tmp_path, capsys):
    assert profile(tmp_path) == 0
    run = (tmp_path / "runs" / "latest").resolve()
    assert (run / "profile.ncu-rep").read_bytes() == (PROGRAMS / "cuda_app.ncu-rep").read_bytes()
    data = json.loads((run / "results.json").read_text())
    assert data["complete"] is True and data["outcomes"] == []
    assert data["info"]["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert data["info"]["memlens_command"].startswith("memlens ")
    # the provenance a suite run records (collect/run_dir.take_provenance), the host among it
    assert data["info"]["host"] == socket.gethostname() and data["info"]["memlens_version"] == "0.1.0"
    labels = [(k["family"], k["variant"], k["nvtx"]) for k in data["kernels"]]
    assert labels[0] == ("transpose", "conflict", "iteration > transpose/conflict")
    assert len(labels) == 6
    assert "6 kernels profiled" in capsys.readouterr().out
    # the run directory serves report, metrics and gate like a suite run's
    assert main(["report", str(run), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    # a program's ranges shaped family/variant: grouped, but no suite declared them (no speedups between them)
    assert "### ranges `transpose/…` (a program's ranges: no speedups between them)" in (tmp_path / "r.md").read_text()


def filter_args(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == option]


def test_default_filters_every_push_pop_range_of_every_domain(fake_ncu, tmp_path):
    assert profile(tmp_path) == 0
    argv = ncu_argv(tmp_path)
    app = argv.index("--log-file") + 2
    assert argv[app:] == program("print('app ran')")
    # push/pop ranges of the default domain, then of every named one but CCCL and NCCL ("torchapp@...",
    # "cudaapp@..."), then start/end ranges of the same
    assert filter_args(argv, "--nvtx-include") == DEFAULTS
    assert "--nvtx-exclude" not in argv
    assert "--nvtx" in argv and "--launch-count" not in argv
    # each distinct kernel once by default, with ncu's own filters (launch_sampling.py)
    assert argv[argv.index("--filter-mode") + 1] == "per-launch-config"
    assert argv[argv.index("--kernel-id") + 1] == "::regex:.*:1"
    assert argv[argv.index("--replay-mode") + 1] == "kernel"


def test_excludes_pass_through_after_the_includes(fake_ncu, tmp_path):
    assert profile(tmp_path, "--nvtx-exclude", "regex:NCCL@.*/", "--nvtx-exclude", "warmup/") == 0
    argv = ncu_argv(tmp_path)
    assert filter_args(argv, "--nvtx-include") == DEFAULTS  # still the default
    assert filter_args(argv, "--nvtx-exclude") == ["regex:NCCL@.*/", "warmup/"]
    assert argv.index("--nvtx-exclude") > max(i for i, arg in enumerate(argv) if arg == "--nvtx-include")
    assert profile(tmp_path, "--nvtx-include", "app@step/", "--nvtx-exclude", "app@step/warmup/") == 0
    argv = ncu_argv(tmp_path)
    assert filter_args(argv, "--nvtx-include") == ["app@step/"]
    assert filter_args(argv, "--nvtx-exclude") == ["app@step/warmup/"]
    # with --all-kernels: every kernel but those in the excluded ranges
    assert profile(tmp_path, "--all-kernels", "--nvtx-exclude", "regex:NCCL@.*/") == 0
    argv = ncu_argv(tmp_path)
    assert "--nvtx-include" not in argv and filter_args(argv, "--nvtx-exclude") == ["regex:NCCL@.*/"]


def test_filters_pass_through_as_written_in_order(fake_ncu, tmp_path):
    assert profile(tmp_path, "--nvtx-include", "regex:cudaapp@.*/", "--nvtx-include", "transpose/conflict/") == 0
    argv = ncu_argv(tmp_path)
    filters = [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"]
    assert filters == ["regex:cudaapp@.*/", "transpose/conflict/"]


def test_all_kernels_with_a_launch_limit(fake_ncu, tmp_path):
    assert profile(tmp_path, "--all-kernels", "--launches", "all", "--launch-count", "25") == 0
    argv = ncu_argv(tmp_path)
    assert "--nvtx-include" not in argv and "--nvtx" in argv
    assert argv[argv.index("--launch-count") + 1] == "25"
    assert "--kernel-id" not in argv and "--filter-mode" not in argv
    assert profile(tmp_path, "--all-kernels", "--launches", "all") == 0
    argv = ncu_argv(tmp_path)
    assert argv[argv.index("--launch-count") + 1] == "100"
    assert profile(tmp_path, "--all-kernels", "--launch-count", "7") == 0  # a cap alone means every launch
    argv = ncu_argv(tmp_path)
    assert argv[argv.index("--launch-count") + 1] == "7" and "--kernel-id" not in argv
    # each distinct kernel once needs no cap: the program's distinct kernels are few
    assert profile(tmp_path, "--all-kernels", "--launches", "first") == 0
    argv = ncu_argv(tmp_path)
    assert "--launch-count" not in argv and argv[argv.index("--kernel-id") + 1] == "::regex:.*:1"


@pytest.mark.parametrize(
    ("nvtx_filter", "message"),
    [
        ("mine/v1", "ends in '/'"),
        ("cudaapp@*", "did you mean 'cudaapp@*/'"),
        ("@x/", "empty domain"),
        ("regex:(/", "bad regular expression"),
        ("regex:/", "names no range"),
    ],
)
@pytest.mark.parametrize("option", ["--nvtx-include", "--nvtx-exclude"])
def test_bad_filters_are_refused_before_ncu_starts(fake_ncu, tmp_path, capsys, nvtx_filter, message, option):
    assert profile(tmp_path, option, nvtx_filter) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert f"{option} {nvtx_filter!r}" in err  # names the option it came with
    assert not (tmp_path / "runs").exists()  # nothing started


def test_good_filters_validate():
    for nvtx_filter in ("mine/v1/", "regex:.*/", "regex:.*@.*/", "regex:cudaapp@.*/", "app@step/", "a/b/c/"):
        assert validate_filter(nvtx_filter) == nvtx_filter
        assert validate_filter(nvtx_filter, "--nvtx-exclude") == nvtx_filter
    with pytest.raises(ConfigError, match="^--nvtx-exclude 'regex:\\[@.\\*/': bad regular expression"):
        validate_filter("regex:[@.*/", "--nvtx-exclude")


def test_failing_program_names_its_status_and_last_stderr_line(fake_ncu, tmp_path, capsys):
    code = "import sys; print('a', file=sys.stderr); print('CUDA error: out of memory', file=sys.stderr); sys.exit(4)"
    assert profile(tmp_path, command=program(code)) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("memlens: error: the program ")
    assert "exited with status 4: CUDA error: out of memory" in err[-1]
    run = (tmp_path / "runs" / "latest").resolve()
    assert (run / "profile.ncu-rep").exists()  # the raw report is kept
    assert (run / "program.stderr").read_text().splitlines() == ["a", "CUDA error: out of memory"]
    assert json.loads((run / "results.json").read_text())["complete"] is False


def test_filter_matching_nothing_says_which_filter(tmp_path, monkeypatch, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_LOG=str(FIXTURES / "probe" / "nomatch.log"))
    assert profile(tmp_path, "--nvtx-include", "regex:mine@.*/") == 3
    err = capsys.readouterr().err
    assert "ncu profiled no kernel: --nvtx-include 'regex:mine@.*/' matched no NVTX range" in err
    assert profile(tmp_path) == 3
    defaults = " ".join(f"--nvtx-include {f!r}" for f in DEFAULTS)
    assert f"{defaults} (the default) matched" in capsys.readouterr().err
    assert profile(tmp_path, "--nvtx-exclude", "step/") == 3
    assert "(the default) --nvtx-exclude 'step/' matched no NVTX range" in capsys.readouterr().err
    assert profile(tmp_path, "--all-kernels", "--nvtx-exclude", "step/") == 3
    assert "the program launched none outside --nvtx-exclude 'step/';" in capsys.readouterr().err
    assert profile(tmp_path, "--launches", "first", "--warm-up", "2") == 3
    assert "(or each kernel ran --warm-up 2 times or fewer) matched no NVTX range" in capsys.readouterr().err


def test_ncu_missing_is_exit_3(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_NCU", str(tmp_path / "no-ncu"))
    assert profile(tmp_path) == 3
    assert "ncu not found" in capsys.readouterr().err


def test_program_not_found_and_option_mixups_are_usage_errors(fake_ncu, tmp_path, capsys):
    assert profile(tmp_path, command=["./no-such-program"]) == 2
    assert "cannot run './no-such-program': not an executable file" in capsys.readouterr().err
    assert main(["profile", "--nvtx-include", "x/"]) == 2
    assert "-- COMMAND" in capsys.readouterr().err
    assert main(["profile", "--nvtx-exclude", "x/"]) == 2
    assert "-- COMMAND" in capsys.readouterr().err
    assert main(["profile", "-k", "x", "--", "true"]) == 2
    assert "-k select suite variants" in capsys.readouterr().err
    assert profile(tmp_path, "--all-kernels", "--nvtx-include", "x/") == 2
    assert profile(tmp_path, "--launch-count", "0") == 2


FILTER = ["--filter-mode", "per-launch-config", "--kernel-name-base", "mangled", "--kernel-id"]


@pytest.mark.parametrize(
    ("options", "ncu_filter"),
    [
        ((), [*FILTER, "::regex:.*:1"]),  # first by default
        (("--launches", "first"), [*FILTER, "::regex:.*:1"]),
        (("--launches", "first", "--warm-up", "1"), [*FILTER, "::regex:.*:2"]),
        (("--launches", "3", "--warm-up", "2"), [*FILTER, "::regex:.*:^(3|4|5)$"]),
        (("--launches", "all"), []),
    ],
)
def test_each_launches_mode_is_its_ncu_filter(fake_ncu, tmp_path, capsys, options, ncu_filter):
    assert profile(tmp_path, *options) == 0
    argv = ncu_argv(tmp_path)
    start = argv.index("--filter-mode") if ncu_filter else None
    assert (argv[start : start + len(ncu_filter)] if start is not None else []) == ncu_filter
    assert ("--kernel-id" in argv) == bool(ncu_filter) and "--launch-count" not in argv
    out = capsys.readouterr().out
    info = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())["info"]
    if ncu_filter:
        assert "of each distinct kernel (function, grid, block, shared memory)" in out
        assert info["launch_counts"].startswith("unknown: ncu reports only the launches it profiled")
    else:
        assert "distinct kernel" not in out and info["launch_counts"] == "every launch profiled"
    assert info["launches"] == (options[1] if options else "first")
    assert info["warm_up"] == (int(options[3]) if len(options) > 2 else 0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--launches", "0"), "--launches '0': give first, all, or a number of launches of each kernel from 1 to 100"),
        (("--launches", "some"), "--launches 'some': give first, all"),
        (("--warm-up", "-1"), "--warm-up -1: give 0 or more launches"),
        (("--launches", "all", "--warm-up", "1"), "--warm-up leaves out launches of each kernel: it needs --launches"),
        (
            ("--launches", "first", "--launch-count", "5"),
            "--launch-count counts every launch: give it with --launches all",
        ),
    ],
)
def test_bad_launches_options_are_refused_before_ncu_starts(fake_ncu, tmp_path, capsys, options, message):
    assert profile(tmp_path, *options) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_launches_options_need_a_program(tmp_path, capsys):
    assert main(["profile", "--launches", "all"]) == 2
    assert "--launches, --each-range and --warm-up profile a program" in capsys.readouterr().err


RANGES_PROGRAM = """
import memlens
for step in range(50):
    with memlens.range("transpose/conflict"):
        pass
with memlens.range("iteration"), memlens.range("transpose/padded"):
    pass
"""


def test_results_say_how_often_the_range_of_each_profiled_kernel_ran(fake_ncu, tmp_path, capsys):
    """The program's memlens.range counts its runs into the run directory (the fake ncu runs it for
    real); each kernel of the recording gets the count of the range it was launched in, found by its
    innermost range where the program's paths differ from the recording's."""
    assert profile(tmp_path, command=program(RANGES_PROGRAM)) == 0
    run = (tmp_path / "runs" / "latest").resolve()
    assert json.loads((run / "ranges.json").read_text()) == {
        "ranges": {"transpose/conflict": 50, "iteration": 1, "iteration > transpose/padded": 1}
    }
    kernels = json.loads((run / "results.json").read_text())["kernels"]
    runs = {k["nvtx"]: k.get("range_runs") for k in kernels}
    assert runs["iteration > transpose/conflict"] == 50
    assert runs["iteration > transpose/padded"] == 1
    assert all(
        "range_runs" not in k
        for k in kernels
        if k["nvtx"].split(" > ")[-1] not in ("transpose/conflict", "transpose/padded")
    )


def test_metrics_and_report_say_one_profiled_of_how_many(fake_ncu, tmp_path, capsys):
    assert profile(tmp_path, "--launches", "first", "--warm-up", "1", command=program(RANGES_PROGRAM)) == 0
    run = (tmp_path / "runs" / "latest").resolve()
    capsys.readouterr()
    assert main(["metrics", str(run)]) == 0
    out = capsys.readouterr().out
    assert (
        "launches: one launch of each distinct kernel (function, grid, block, shared memory) after 1 warm-up "
        "launch profiled, in the first range it ran in (--launches first; --each-range profiles it in each "
        "named range; --launches all profiles every launch)"
    ) in " ".join(out.split())
    assert "  1 profiled of the 50 runs of its range: transpose/conflict\n" in out  # labels, as in the table
    assert "  1 profiled of the 1 run of its range: transpose/padded\n" in out
    assert "how many launches each profiled one stands for: unknown" in out  # the kernels of other ranges
    assert main(["metrics", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["info"]["launches"] == "first" and data["info"]["warm_up"] == 1
    assert {k["nvtx"]: k["range_runs"] for k in data["kernels"]}["iteration > transpose/conflict"] == 50
    assert main(["report", str(run), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "1 profiled of the 50 runs of its range: transpose/conflict" in (tmp_path / "r.md").read_text()
    # a run of every launch says nothing of the kind
    assert profile(tmp_path, "--launches", "all") == 0
    capsys.readouterr()
    assert main(["metrics", str(tmp_path / "runs" / "latest")]) == 0
    assert "launches:" not in capsys.readouterr().out


def test_a_range_that_ran_with_no_profiled_launch_is_named(fake_ncu, tmp_path, capsys, monkeypatch):
    """ncu keys a kernel without its range: a memlens.range whose kernels were all profiled in another
    range (or that launched none) holds no profiled launch. memlens runs the program once more selecting
    that range by name; where that profiles nothing either (here: eval launched no kernel), the run says
    which range, how often it ran, why."""
    command = program(RANGES_PROGRAM + "for _ in range(3):\n    with memlens.range('eval'):\n        pass\n")
    launches = [{"kernel": "transpose_conflict", "push_pop": {"<default domain>": ["iteration", "transpose/conflict"]}}]
    monkeypatch.setenv("FAKE_NCU_LAUNCHES", json.dumps(launches))
    monkeypatch.setenv("FAKE_NCU_PROFILED", str(tmp_path / "profiled.jsonl"))
    assert profile(tmp_path, command=command) == 0
    captured = capsys.readouterr()
    assert "ranges ran with no launch profiled in them (eval): running the program once more" in captured.err
    assert (
        "ranges that ran with no launch profiled in them, even by a second pass selecting them by name "
        "(--nvtx-include 'regex:^eval$/'): eval (3 runs). They launched no kernel"
    ) in captured.out
    assert (tmp_path / "profiled.jsonl").read_text().splitlines() == ["[0]", "[]"]
    run = (tmp_path / "runs" / "latest").resolve()
    info = json.loads((run / "results.json").read_text())["info"]
    assert info["ranges_not_profiled"] == {"eval": 3} and info["ranges_second_pass"] == "--nvtx-include 'regex:^eval$/'"
    assert info["source"] == "profile.ncu-rep" and not (run / "profile.ranges.ncu-rep").exists()
    assert main(["metrics", str(run)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # wrapped to the terminal
    assert "ranges that ran with no launch profiled in them, even by a second pass" in out
    assert "--launches all profiles every launch in every range" in out
    # without a second pass (a results.json of before), the line names both fixes
    from memlens.collect.launch_sampling import not_profiled_line

    assert not_profiled_line({"eval": 3}).endswith(
        "--launches all profiles every launch in every range, and --nvtx-include 'regex:^eval$/' each distinct "
        "kernel of that range once"
    )
    assert main(["report", str(run), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "by name (--nvtx-include 'regex:^eval$/'): eval (3 runs)" in (tmp_path / "r.md").read_text()
    # every launch profiled: a range with none launched none, nothing to say
    assert profile(tmp_path, "--launches", "all", command=command) == 0
    info = json.loads(((tmp_path / "runs" / "latest").resolve() / "results.json").read_text())["info"]
    assert info["ranges_not_profiled"] is None


def test_ranges_not_profiled_must_map_names_to_counts():
    from memlens.model.results import RunResults

    data = {"schema_version": 1, "info": {"ranges_not_profiled": {"eval": "three"}}, "kernels": []}
    with pytest.raises(InputError, match="ranges_not_profiled must be an object of integers or null"):
        RunResults.from_json(data)


def test_a_range_whose_kernels_ran_in_an_earlier_range_is_profiled_by_a_second_pass(tmp_path, monkeypatch, capsys):
    """The compare builds' recording stands for the first pass (its ranges compare/...); the program's
    memlens.range transpose/padded launched the same kernel as compare/swizzle, so the first pass profiled none
    in it; the second pass, selecting it by name, replays cuda_app's recording (its ranges transpose/...). Its
    launches join the first pass's, their IDs after them; transpose/padded is no longer named."""
    code = (
        "import memlens\nwith memlens.range('compare/swizzle'):\n    pass\n"
        "with memlens.range('transpose/padded'):\n    pass\n"
    )
    launches = [
        {"kernel": "swizzle_read", "push_pop": {"<default domain>": ["compare/swizzle"]}},
        {"kernel": "swizzle_read", "push_pop": {"<default domain>": ["transpose/padded"]}},
    ]
    log = tmp_path / "ncu.log"
    log.write_text(OK_LOG)
    first = FIXTURES / "nvidia_h100_80gb_hbm3" / "compare" / "compare_v1.ncu-rep"
    second = {"regex:^transpose.padded$/": str(PROGRAMS / "cuda_app.ncu-rep")}
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(first),
        FAKE_NCU_LOG=str(log),
        FAKE_NCU_LAUNCHES=json.dumps(launches),
        FAKE_NCU_PROFILED=str(tmp_path / "profiled.jsonl"),
        FAKE_NCU_REPORT_WHEN=json.dumps(second),
    )
    app = tmp_path / "app.py"
    app.write_text(code)
    assert profile(tmp_path, command=[sys.executable, str(app)]) == 0
    assert (tmp_path / "profiled.jsonl").read_text().splitlines() == ["[0]", "[1]"]  # each pass its own copy
    run = (tmp_path / "runs" / "latest").resolve()
    commands = (run / "ncu-command.txt").read_text().splitlines()
    assert len(commands) == 2 and "--nvtx-include 'regex:^transpose.padded$/'" in commands[1]
    assert shlex.split(commands[1]).count("--nvtx-include") == 1 and "::regex:.*:1" in commands[1]
    assert (run / "profile.ranges.ncu-rep").is_file() and (run / "ncu.ranges.log").is_file()
    data = json.loads((run / "results.json").read_text())
    assert [k["launch_id"] for k in data["kernels"]] == list(range(9))  # 3 of the first pass, then 6
    assert data["kernels"][3]["nvtx"] == "iteration > transpose/conflict"
    assert data["info"]["source"] == "profile.ncu-rep, profile.ranges.ncu-rep"
    assert data["info"]["ranges_not_profiled"] is None
    assert data["info"]["ranges_second_pass"] == "--nvtx-include 'regex:^transpose.padded$/'"
    assert "9 kernels profiled" in capsys.readouterr().out


def test_each_range_runs_passes_leaving_out_the_ranges_profiled_until_one_profiles_nothing(tmp_path, monkeypatch):
    """--each-range for plain NVTX ranges (two_ranges.cu's case: nothing counts them). Pass 1 replays the
    compare builds' recording (ranges compare/four_way, compare/swizzle, compare/vector); pass 2 leaves those
    out by name and finds the swizzle kernel again in transpose/padded (it replays cuda_app's recording);
    pass 3 leaves those out too and profiles nothing, which ends the passes."""
    ranges = (["compare/swizzle"], ["transpose/padded"], ["iteration", "transpose/padded"])
    launches = [{"kernel": "swizzle_read", "push_pop": {"<default domain>": stack}} for stack in ranges]
    log = tmp_path / "ncu.log"
    log.write_text(OK_LOG)
    first = FIXTURES / "nvidia_h100_80gb_hbm3" / "compare" / "compare_v1.ncu-rep"
    second = {"regex:^compare.swizzle$/": str(PROGRAMS / "cuda_app.ncu-rep")}  # an exclude of pass 2 (and 3)
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(first),
        FAKE_NCU_LOG=str(log),
        FAKE_NCU_LAUNCHES=json.dumps(launches),
        FAKE_NCU_PROFILED=str(tmp_path / "profiled.jsonl"),
        FAKE_NCU_REPORT_WHEN=json.dumps(second),
    )
    assert profile(tmp_path, "--each-range") == 0
    assert (tmp_path / "profiled.jsonl").read_text().splitlines() == ["[0]", "[1]", "[]"]
    run = (tmp_path / "runs" / "latest").resolve()
    commands = [shlex.split(line) for line in (run / "ncu-command.txt").read_text().splitlines()]
    assert len(commands) == 3 and filter_args(commands[0], "--nvtx-exclude") == []
    assert filter_args(commands[1], "--nvtx-exclude") == [
        "regex:^compare.four_way$/",
        "regex:^compare.four_way$",
        "regex:^compare.swizzle$/",
        "regex:^compare.swizzle$",
        "regex:^compare.vector$/",
        "regex:^compare.vector$",
    ]
    assert "regex:^transpose.padded$/" in filter_args(commands[2], "--nvtx-exclude")
    assert "regex:^cudaapp$@^spill.capped$/" in filter_args(commands[2], "--nvtx-exclude")  # its domain, by name
    assert all(filter_args(c, "--nvtx-include") == DEFAULTS for c in commands)
    assert (run / "profile.ranges.ncu-rep").is_file() and not (run / "profile.ranges2.ncu-rep").exists()
    data = json.loads((run / "results.json").read_text())
    assert [k["launch_id"] for k in data["kernels"]] == list(range(9))
    assert data["info"]["ranges_second_pass"].startswith("--each-range: 2 more passes, the last leaving out ")


def test_each_range_needs_first_or_n_launches(tmp_path, capsys):
    assert profile(tmp_path, "--each-range", "--launches", "all") == 2
    assert "--each-range profiles each distinct kernel once in each named range" in capsys.readouterr().err


def test_a_counted_range_outside_the_users_own_filters_is_named_not_profiled(fake_ncu, tmp_path, capsys):
    command = program(RANGES_PROGRAM + "for _ in range(3):\n    with memlens.range('eval'):\n        pass\n")
    assert profile(tmp_path, "--nvtx-include", "regex:.*/", command=command) == 0
    captured = capsys.readouterr()
    assert "running the program once more" not in captured.err
    assert "ranges that ran with no launch profiled in them: eval (3 runs). Either" in captured.out
    assert (tmp_path / "runs" / "latest" / "ncu-command.txt").read_text().count("/bin/ncu ") == 1
