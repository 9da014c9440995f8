"""profiling/collect/ncu.py: finding ncu and its version, the argv it runs, its log read for failures."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlens.collect import ncu
from memlens.collect.ncu import Ncu, NcuTimeout, ProfileRequest, check_log, find_ncu, first_error, profile_argv
from memlens.errors import ConfigError, ProfilerError
from memlens.model.ncu_settings import NcuSettings
from tests.conftest import FIXTURES
from tests.support.fake import PERMISSION_LOG, install_fake_ncu

NCU = Ncu(Path("/opt/nsight/ncu"), (2025, 3, 1, 0))


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    probe = FIXTURES / "probe"
    return install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(probe / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(probe / "probe.log"),
    )


def test_argv_puts_launch_filters_and_count_before_the_metrics_and_the_app_last(tmp_path) -> None:
    request = ProfileRequest(
        metrics=["gpu__time_duration.sum", "dram__bytes_read.sum"],
        report=tmp_path / "r",
        log=tmp_path / "l",
        nvtx_include=(),
        settings=NcuSettings(cache_control="none"),
        launch_count=5,
        launch_filter=("--kernel-name-base", "function", "--launch-skip", "2"),
    )
    assert profile_argv(NCU, request, ["./app", "--metrics", "x"]) == [
        "/opt/nsight/ncu",
        "--clock-control",
        "base",
        "--cache-control",
        "none",
        "--replay-mode",
        "kernel",
        "--nvtx",
        "--kernel-name-base",
        "function",
        "--launch-skip",
        "2",
        "--launch-count",
        "5",
        "--metrics",
        "gpu__time_duration.sum,dram__bytes_read.sum",
        "--export",
        str(tmp_path / "r"),
        "--log-file",
        str(tmp_path / "l"),
        "./app",
        "--metrics",
        "x",
    ]


@pytest.mark.parametrize(
    "option, message",
    [
        ({"settings": {"clock_control": "boost"}}, "clock control 'boost' is not one of base, none"),
        ({"settings": {"cache_control": "some"}}, "cache control 'some' is not one of all, none"),
        ({"replay_mode": "range"}, "replay mode 'range' is not one of kernel, application"),
    ],
)
def test_a_request_refuses_what_ncu_would_not_take(tmp_path, option: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        if "settings" in option:
            option = {"settings": NcuSettings(**option["settings"])}
        ProfileRequest(metrics=[], report=tmp_path / "r", log=tmp_path / "l", nvtx_include=(), **option)


def test_ncu_is_found_by_option_then_environment_then_path(tmp_path, monkeypatch) -> None:
    on_path = install_fake_ncu(tmp_path / "bin", monkeypatch)
    assert find_ncu() == Ncu(on_path, (2025, 3, 1, 0)) and find_ncu().version_text == "2025.3.1.0"
    monkeypatch.setenv("MEMLENS_NCU", str(tmp_path / "env" / "ncu"))
    with pytest.raises(ProfilerError, match=f"^ncu not found at {tmp_path / 'env' / 'ncu'}$"):
        find_ncu()  # the environment names it: PATH is not searched
    assert find_ncu(str(on_path)).path == on_path  # the option before the environment
    monkeypatch.delenv("MEMLENS_NCU")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ProfilerError, match=r"^ncu \(Nsight Compute\) not found: install it or pass --ncu PATH$"):
        find_ncu()


def test_a_lookup_started_soon_is_find_ncus_answer_once_and_its_error_is_raised_where_asked(
    tmp_path, monkeypatch
) -> None:
    """looked_up_soon: `ncu --version` runs in a thread while memlens imports; find_ncu takes its answer once
    (the next find_ncu looks again), raises its error only when called, and waits for, then drops, a lookup
    nobody asked for."""
    on_path = install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_VERSION_TEXT="Version 2025.3.1.0\n")
    with ncu.looked_up_soon(None):
        _lookups_done()
        monkeypatch.setenv("FAKE_NCU_VERSION_TEXT", "Version 2025.1.0.0\n")  # only a new lookup sees it
        assert find_ncu() == Ncu(on_path, (2025, 3, 1, 0))
        assert find_ncu() == Ncu(on_path, (2025, 1, 0, 0))  # taken once: this one looked again
    with ncu.looked_up_soon(None):
        unasked = next(iter(ncu._soon.values())).thread  # nobody asks
    assert not unasked.is_alive()  # waited for on exit: no `ncu --version` outlives the block
    assert find_ncu() == Ncu(on_path, (2025, 1, 0, 0)) and not ncu._soon
    missing = str(tmp_path / "nowhere" / "ncu")
    with ncu.looked_up_soon(missing):
        _lookups_done()  # it failed, and said nothing
        with pytest.raises(ProfilerError, match=f"^ncu not found at {missing}$"):
            find_ncu(missing)
    with ncu.looked_up_soon(None):
        assert find_ncu(str(on_path)) == Ncu(on_path, (2025, 1, 0, 0))  # another --ncu: looked up again


def _lookups_done() -> None:
    for lookup in ncu._soon.values():
        lookup.thread.join()


@pytest.mark.parametrize(
    "printed, expected",
    [
        ("Version 2025.3.1.0 (build 36398880) (public-release)\n", (2025, 3, 1, 0)),
        ("NVIDIA (R) Nsight Compute\nVersion 2023.1 (build 1)\n", (2023, 1)),
        ("Version 2022.4.1.0 (build 1)\n", "ncu 2022.4.1.0 is older than 2023.1, the oldest memlens reads"),
        ("Nsight Compute, no version here\n", "--version printed no version (exit code 0)"),
    ],
)
def test_the_version_is_read_and_an_old_one_refused(monkeypatch, printed: str, expected) -> None:
    def answer(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        assert argv == ["/opt/nsight/ncu", "--version"] and timeout == 60
        return subprocess.CompletedProcess(argv, 0, printed, "")

    monkeypatch.setattr(ncu, "run_command", answer)
    if isinstance(expected, tuple):
        assert ncu.query_version(NCU.path) == expected
    else:
        with pytest.raises(ProfilerError, match=expected.replace("(", r"\(").replace(")", r"\)")):
            ncu.query_version(NCU.path)


def test_the_log_says_what_failed_though_ncu_exited_0() -> None:
    with pytest.raises(ProfilerError, match="ERR_NVGPUCTRPERM.*run as root"):
        check_log(PERMISSION_LOG.read_text())  # the permission first, though nothing was profiled either
    with pytest.raises(ProfilerError, match=r"^ncu profiled no kernel \(the NVTX filter matched no range\)$"):
        check_log((FIXTURES / "probe" / "nomatch.log").read_text())
    with pytest.raises(ProfilerError, match="^ncu profiled no kernel$"):
        check_log("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")
    check_log("==PROF== Connected to process 1\n==PROF== Disconnected from process 1\n")  # a good log: nothing


def test_first_error_is_ncus_first_error_line_without_its_prefix() -> None:
    log = "==PROF== Connected\n==ERROR== The application returned an error code (1).\n==ERROR== later\n"
    assert first_error(log) == "The application returned an error code (1)."
    assert first_error(PERMISSION_LOG.read_text()).startswith("ERR_NVGPUCTRPERM - The user does not have permission")
    assert first_error("==PROF== Connected\n==ERROR==\n") is None and first_error("") is None


def test_run_ncu_keeps_the_exit_code_and_the_log(tmp_path) -> None:
    log = tmp_path / "ncu.log"
    script = f"open({str(log)!r}, 'w').write('==PROF== done\\n'); raise SystemExit(4)"
    run = ncu.run_ncu([sys.executable, "-c", script], timeout=60, log=log)
    assert (run.returncode, run.log_text, run.argv[1]) == (4, "==PROF== done\n", "-c") and run.seconds < 60


def test_run_ncu_ends_a_run_past_its_timeout(tmp_path) -> None:
    started = time.monotonic()
    with pytest.raises(NcuTimeout, match=r"^ncu ran past the 0.5 s timeout$") as stopped:
        ncu.run_ncu([sys.executable, "-c", "import time; time.sleep(20)"], timeout=0.5)
    assert stopped.value.seconds == 0.5 and time.monotonic() - started < 10


def test_old_ncu_is_refused(tmp_path, monkeypatch):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_VERSION_TEXT="Version 2019.5.0 (build 1)\n")
    with pytest.raises(Exception, match="ncu 2019.5.0 is older than 2023.1"):
        find_ncu()


def test_argv_filters_memlens_ranges_and_exports_report(fake_ncu, tmp_path):
    request = ProfileRequest(
        metrics=["gpu__time_duration.sum"],
        report=tmp_path / "r",
        log=tmp_path / "l",
        nvtx_include="regex:memlens@.*/",
        settings=NcuSettings("none"),
    )
    argv = profile_argv(find_ncu(), request, ["python", "app.py"])
    assert argv[1:] == [
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--replay-mode",
        "kernel",
        "--nvtx",
        "--nvtx-include",
        "regex:memlens@.*/",
        "--metrics",
        "gpu__time_duration.sum",
        "--export",
        str(tmp_path / "r"),
        "--log-file",
        str(tmp_path / "l"),
        "python",
        "app.py",
    ]


def test_argv_application_replay_and_excludes(fake_ncu, tmp_path):
    request = ProfileRequest(
        metrics=["gpu__time_duration.sum"],
        report=tmp_path / "r",
        log=tmp_path / "l",
        nvtx_include=("regex:.*/", "regex:.*@.*/"),
        nvtx_exclude=("regex:NCCL@.*/",),
        replay_mode="application",
    )
    argv = profile_argv(find_ncu(), request, ["app"])
    assert argv[argv.index("--replay-mode") : argv.index("--metrics")] == [
        "--replay-mode",
        "application",
        "--nvtx",
        "--nvtx-include",
        "regex:.*/",
        "--nvtx-include",
        "regex:.*@.*/",
        "--nvtx-exclude",
        "regex:NCCL@.*/",
    ]
    with pytest.raises(ConfigError, match="replay mode 'range' is not one of kernel, application"):
        ProfileRequest(metrics=[], report=tmp_path / "r", log=tmp_path / "l", nvtx_include=(), replay_mode="range")
