"""`memlens profile -- COMMAND` on the CPU: the fake ncu (tests/support/fake_ncu.py) runs the program
for real and replays the recording of tests/fixtures/programs/cuda_app.cu made on an H100."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from profiling.cli import main
from profiling.errors import ConfigError
from profiling.program_run import validate_filter
from tests.conftest import FIXTURES
from tests.support.fake import install_fake_ncu

PROGRAMS = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3"
OK_LOG = "==PROF== Connected to process 615 (cuda_app)\n==PROF== Disconnected from process 615\n"


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    log = tmp_path / "ncu.log"
    log.write_text(OK_LOG)
    return install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_REPORT=str(PROGRAMS / "cuda_app.ncu-rep"),
                            FAKE_NCU_LOG=str(log), FAKE_NCU_APP_EXIT="1")  # fmt: skip


def program(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def profile(tmp_path: Path, *options: str, command: list[str] | None = None) -> int:
    return main(["profile", "--out", str(tmp_path / "runs"), "--clock-control", "none", *options, "--",
                 *(command or program("print('app ran')"))])  # fmt: skip


def ncu_argv(tmp_path: Path) -> list[str]:
    return shlex.split((tmp_path / "runs" / "latest" / "ncu-command.txt").read_text())


def test_program_run_writes_the_suite_run_directory(fake_ncu, tmp_path, capsys):
    assert profile(tmp_path) == 0
    run = (tmp_path / "runs" / "latest").resolve()
    assert (run / "profile.ncu-rep").read_bytes() == (PROGRAMS / "cuda_app.ncu-rep").read_bytes()
    data = json.loads((run / "results.json").read_text())
    assert data["complete"] is True and data["outcomes"] == []
    assert data["info"]["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert data["info"]["command"].startswith("memlens ")
    labels = [(k["family"], k["variant"], k["nvtx"]) for k in data["kernels"]]
    assert labels[0] == ("transpose", "conflict", "iteration > transpose/conflict")
    assert len(labels) == 6
    assert "6 kernels profiled" in capsys.readouterr().out
    # the run directory serves report, metrics and gate like a suite run's
    assert main(["report", str(run), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "### family `transpose`" in (tmp_path / "r.md").read_text()


def filter_args(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == option]


def test_default_filters_every_push_pop_range_of_every_domain(fake_ncu, tmp_path):
    assert profile(tmp_path) == 0
    argv = ncu_argv(tmp_path)
    app = argv.index("--log-file") + 2
    assert argv[app:] == program("print('app ran')")
    # the default domain, then every named one ("torchapp@...", "cudaapp@...")
    assert filter_args(argv, "--nvtx-include") == ["regex:.*/", "regex:.*@.*/"]
    assert "--nvtx-exclude" not in argv
    assert "--nvtx" in argv and "--launch-count" not in argv
    assert argv[argv.index("--replay-mode") + 1] == "kernel"


def test_excludes_pass_through_after_the_includes(fake_ncu, tmp_path):
    assert profile(tmp_path, "--nvtx-exclude", "regex:NCCL@.*/", "--nvtx-exclude", "warmup/") == 0
    argv = ncu_argv(tmp_path)
    assert filter_args(argv, "--nvtx-include") == ["regex:.*/", "regex:.*@.*/"]  # still the default
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
    assert profile(tmp_path, "--all-kernels", "--launch-count", "25") == 0
    argv = ncu_argv(tmp_path)
    assert "--nvtx-include" not in argv and "--nvtx" in argv
    assert argv[argv.index("--launch-count") + 1] == "25"
    assert profile(tmp_path, "--all-kernels") == 0
    argv = ncu_argv(tmp_path)
    assert argv[argv.index("--launch-count") + 1] == "100"


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
    assert "ncu profiled no kernel: --nvtx-include 'regex:mine@.*/' matched no push/pop range" in err
    assert profile(tmp_path) == 3
    assert "--nvtx-include 'regex:.*/' --nvtx-include 'regex:.*@.*/' (the default) matched" in capsys.readouterr().err
    assert profile(tmp_path, "--nvtx-exclude", "step/") == 3
    assert "(the default) --nvtx-exclude 'step/' matched no push/pop range" in capsys.readouterr().err
    assert profile(tmp_path, "--all-kernels", "--nvtx-exclude", "step/") == 3
    assert "the program launched none outside --nvtx-exclude 'step/';" in capsys.readouterr().err


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
