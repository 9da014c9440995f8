"""`memlens profile` end to end on the CPU: a NumPy suite, and a fake ncu replaying a real recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.collect.profile_run import Events
from tests.conftest import FIXTURES
from tests.support.fake import CPU_SUITE, PERMISSION_LOG, install_fake_ncu

PROBE = FIXTURES / "probe"


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    return install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
    )


def profile_cli(tmp_path: Path, *extra: str) -> int:
    return main(["profile", str(CPU_SUITE), "--out", str(tmp_path / "runs"), "--clock-control", "none", *extra])


def test_profile_writes_run_directory_with_raw_report_and_results(fake_ncu, tmp_path, capsys):
    assert profile_cli(tmp_path) == 0
    latest = tmp_path / "runs" / "latest"
    assert latest.is_symlink()
    run = latest.resolve()
    assert (run / "profile.ncu-rep").read_bytes() == (PROBE / "probe.ncu-rep").read_bytes()
    data = json.loads((run / "results.json").read_text())
    assert data["schema_version"] == 3
    assert data["info"]["ncu_version"] == "2025.3.1.0"
    assert data["info"]["ncu_settings"]["clock_control"] == "none"
    assert data["info"]["gpu_name"] == "NVIDIA H200"
    assert [o["status"] for o in data["outcomes"]] == ["ok"] * 5
    # the probe recording holds transpose.conflict, transpose.padded and running_mean.local
    labels = sorted(f"{k['family']}/{k['variant']}" for k in data["kernels"])
    assert labels == ["running_mean/local", "transpose/conflict", "transpose/padded"]
    assert "3 kernels from 5 variants profiled" in capsys.readouterr().out


def test_profile_filter_runs_only_matching_variants(fake_ncu, tmp_path):
    assert profile_cli(tmp_path, "-k", "transpose/(padded|swizzled)") == 0
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert [o["variant"] for o in data["outcomes"]] == ["padded", "swizzled"]
    assert [k["variant"] for k in data["kernels"]] == ["padded"]


def test_wrong_variant_is_reported_and_its_kernel_dropped(fake_ncu, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_TEST_WRONG", "transpose/padded")
    assert profile_cli(tmp_path) == 3
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    status = {o["variant"]: o["status"] for o in data["outcomes"]}
    assert status == {"conflict": "ok", "padded": "wrong", "swizzled": "ok", "register": "ok", "local": "ok"}
    assert "padded" not in [k["variant"] for k in data["kernels"]]
    err = capsys.readouterr().err
    assert "transpose/padded: wrong result at index (" in err


def test_failure_mid_suite_keeps_earlier_variants(fake_ncu, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_TEST_RAISE", "transpose/swizzled")
    assert profile_cli(tmp_path) == 3
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    status = [(o["variant"], o["status"]) for o in data["outcomes"]]
    assert status == [
        ("conflict", "ok"),
        ("padded", "ok"),
        ("swizzled", "failed"),
        ("register", "not_run"),
        ("local", "not_run"),
    ]
    assert data["complete"] is True
    assert sorted(k["variant"] for k in data["kernels"]) == ["conflict", "padded"]
    assert "RuntimeError: launch of transpose/swizzled failed (test)" in capsys.readouterr().err


def test_nothing_profiled_is_an_error(tmp_path, monkeypatch, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_LOG=str(PROBE / "nomatch.log"))
    assert profile_cli(tmp_path) == 3
    assert "ncu profiled no kernel (the NVTX filter matched no range)" in capsys.readouterr().err


def test_timeout_names_the_running_variant_and_keeps_partial_results(fake_ncu, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_TEST_SLEEP", "30")
    assert profile_cli(tmp_path, "--timeout", "2") == 3
    assert "ran past the 2 s timeout while transpose/conflict was running" in capsys.readouterr().err
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert data["complete"] is False


def test_ncu_missing_is_an_environment_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("MEMLENS_NCU", str(tmp_path / "nowhere" / "ncu"))
    assert profile_cli(tmp_path) == 3
    assert capsys.readouterr().err.strip() == f"memlens: error: ncu not found at {tmp_path / 'nowhere' / 'ncu'}"


def test_two_runs_get_different_directories(fake_ncu, tmp_path):
    assert profile_cli(tmp_path, "-k", "padded") == 0
    assert profile_cli(tmp_path, "-k", "padded") == 0
    runs = [p for p in (tmp_path / "runs").iterdir() if not p.is_symlink()]
    assert len(runs) == 2


# --- environment failures: each one line, exit code 3 ----------------------------------------------


def test_old_ncu_is_exit_3_and_one_line(tmp_path, monkeypatch, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_VERSION_TEXT="Version 2022.4.1.0 (build 1)\n")
    assert profile_cli(tmp_path) == 3
    assert capsys.readouterr().err == "memlens: error: ncu 2022.4.1.0 is older than 2023.1, the oldest memlens reads\n"
    assert not (tmp_path / "runs").exists()  # refused before a run directory was made


@pytest.mark.skipif(Path("/usr/local/cuda/bin/ncu").exists(), reason="this machine has ncu in /usr/local/cuda/bin")
def test_ncu_nowhere_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    assert profile_cli(tmp_path) == 3
    assert capsys.readouterr().err == "memlens: error: ncu (Nsight Compute) not found: install it or pass --ncu PATH\n"


@pytest.mark.parametrize("exit_code", ["0", "1"])  # ncu's exit code here is not documented: the log decides
def test_no_counter_permission_says_how_to_grant_it(tmp_path, monkeypatch, capsys, exit_code):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_LOG=str(PERMISSION_LOG), FAKE_NCU_EXIT=exit_code)
    assert profile_cli(tmp_path) == 3
    err = capsys.readouterr().err.splitlines()[-1]  # under progress lines, one per variant
    assert err.startswith("memlens: error: ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM)")
    assert "NVreg_RestrictProfilingToAdminUsers=0" in err and "https://developer.nvidia.com/ERR_NVGPUCTRPERM" in err
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert data["complete"] is False and data["kernels"] == []


def test_exit_0_without_a_report_is_an_error(tmp_path, monkeypatch, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_LOG=str(PROBE / "probe.log"))
    assert profile_cli(tmp_path, "-k", "padded") == 3
    err = capsys.readouterr().err
    assert "ncu exited with code 0 and wrote no report" in err and "profile.ncu-rep" in err
    assert json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())["complete"] is False


def test_a_report_without_the_suites_kernels_is_an_error(tmp_path, monkeypatch, capsys):
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
        FAKE_NCU_REPORT=str(FIXTURES / "nvidia_h200" / "plain_ncu.ncu-rep"),
    )
    assert profile_cli(tmp_path) == 3
    assert "ncu's report holds no kernel of the 5 variants that ran" in capsys.readouterr().err
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert data["complete"] is False and data["kernels"] == []
    assert [o["status"] for o in data["outcomes"]] == ["ok"] * 5


def test_suite_that_never_started_names_ncus_error(tmp_path, monkeypatch, capsys):
    log = tmp_path / "ncu.log"
    log.write_text("==PROF== Connected to process 9\n==ERROR== Failed to prepare kernel for profiling\n")
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_MODE="no-app", FAKE_NCU_LOG=str(log), FAKE_NCU_EXIT="1")
    assert profile_cli(tmp_path) == 3
    err = capsys.readouterr().err
    assert "the suite never started under ncu (ncu exit code 1 (Failed to prepare kernel for profiling))" in err
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert {o["status"] for o in data["outcomes"]} == {"not_run"} and data["complete"] is False


def test_unusable_out_folder_is_exit_2(tmp_path, fake_ncu, capsys):
    (tmp_path / "file").write_text("not a folder")
    assert main(["profile", str(CPU_SUITE), "--out", str(tmp_path / "file" / "runs"), "--clock-control", "none"]) == 2
    assert capsys.readouterr().err.startswith(f"memlens: error: --out {tmp_path / 'file' / 'runs'}: cannot create")


def test_timeout_before_the_suite_starts_says_so(tmp_path, monkeypatch, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_MODE="hang")
    assert profile_cli(tmp_path, "--timeout", "1") == 3
    assert "ncu ran past the 1 s timeout before any variant started; partial results in" in capsys.readouterr().err
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert data["complete"] is False and {o["status"] for o in data["outcomes"]} == {"not_run"}


def test_events_file_with_junk_lines_is_read_around_them(tmp_path):
    events = Events(tmp_path / "events.jsonl")
    (tmp_path / "events.jsonl").write_bytes(
        b'{"event": "plan", "variants": ["a/b"], "pid": 7}\nnot json\n\xff\xfe\n'
        b'[1, 2]\n{"event": "start", "variant": "a/b"}\n{"event": "do'
    )
    assert [e["event"] for e in events.poll()] == ["plan", "start"]
    assert events.app_pid == 7 and events.running == "a/b"
    with (tmp_path / "events.jsonl").open("ab") as handle:
        handle.write(b'ne", "variant": "a/b", "status": "ok"}\n')
    assert [e["event"] for e in events.poll()] == ["done"]
    assert events.done["a/b"]["status"] == "ok" and events.where() == "after a/b finished"


def test_ncu_failing_after_every_variant_verified_is_an_error(tmp_path, monkeypatch, capsys):
    log = tmp_path / "ncu.log"
    log.write_text((PROBE / "probe.log").read_text() + "==ERROR== An error was reported by the driver\n")
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(log),
        FAKE_NCU_EXIT="9",
    )
    assert profile_cli(tmp_path) == 3
    assert "ncu exited with code 9 (An error was reported by the driver); see" in capsys.readouterr().err
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert data["complete"] is False and len(data["kernels"]) == 3  # what it measured is kept


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("-k", "nothing"), "matches -k 'nothing'"),
        (("--size", "bogus=5"), "--size bogus: no selected family has that size"),
    ],
)
def test_a_wrong_selection_stops_ncu_and_leaves_no_run(fake_ncu, tmp_path, capsys, extra, message):
    """memlens imports the suite while ncu starts; a selection that is wrong ends ncu and the app
    (which refuses it too, before launching anything) and removes the run directory it made."""
    assert profile_cli(tmp_path, *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_wrong_selection_is_said_before_a_missing_ncu(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    assert profile_cli(tmp_path, "-k", "nothing") == 2
    assert "matches -k 'nothing'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["-k", "nothing"], "matches -k 'nothing'"), (["--size", "bogus=5"], "--size bogus: no selected family")],
)
def test_the_app_refuses_a_wrong_selection_before_launching(tmp_path, extra, message):
    from memlens.collect.profiled_program import main as app_main

    events = tmp_path / "events.jsonl"
    assert app_main(["--suite", str(CPU_SUITE), "--events", str(events), *extra]) == 2
    (event,) = [json.loads(line) for line in events.read_text().splitlines()]
    assert event["event"] == "error" and message in event["message"]
