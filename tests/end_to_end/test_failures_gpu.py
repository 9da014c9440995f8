"""GPU tier: the failure modes of `memlens profile` for real, under ncu, on the CuPy failure suite
(tests/failure_suites/gpu_failures.py): a variant raising mid-suite, a wrong result, a hang ended
by --timeout, and Ctrl-C. Each run is a `python -m memlens profile` subprocess with clocks left
alone; afterwards no process of the run may be alive. The CPU tier replays the same runs from the
recordings of tests/fixtures/record_failures.sh (tests/end_to_end/test_reliability.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from memlens.collect.ncu import find_ncu
from memlens.errors import ProfilerError
from tests.conftest import REPO
from tests.support.fake import GPU_FAILURES, MARKER, alive, marked_processes

pytestmark = pytest.mark.gpu
TIMEOUT_S = 45  # --timeout for the hang: `first` (CuPy import, NVRTC, ncu) ends well before it


@pytest.fixture(scope="module", autouse=True)
def ncu_present() -> None:
    try:
        find_ncu()
    except ProfilerError as exc:
        pytest.skip(f"needs Nsight Compute: {exc}")


def argv(out: Path, pattern: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "memlens",
        "profile",
        str(GPU_FAILURES),
        "-k",
        pattern,
        "--out",
        str(out),
        "--clock-control",
        "none",
        "--small",
        "--fast",
        *extra,
    ]


def environment(tag: str) -> dict[str, str]:
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": pythonpath, MARKER: tag}


def results(out: Path) -> dict:
    return json.loads((out / "latest" / "results.json").read_text())


def app_pid(out: Path) -> int:
    events = (out / "latest" / "events.jsonl").read_text().splitlines()
    return next(json.loads(line)["pid"] for line in events if '"plan"' in line)


def assert_nothing_left(tag: str, out: Path) -> None:
    pid = app_pid(out)
    deadline = time.monotonic() + 10
    while (marked_processes(tag) or alive(pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marked_processes(tag) == [] and not alive(pid)


def profile(tmp_path: Path, pattern: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path, str]:
    tag, out = uuid.uuid4().hex, tmp_path / "runs"
    done = subprocess.run(
        argv(out, pattern, *extra), cwd=REPO, env=environment(tag), capture_output=True, text=True, timeout=300
    )
    return done, out, tag


def test_mid_suite_raise_keeps_the_variants_before_it(tmp_path):
    done, out, tag = profile(tmp_path, "^failures/(first|second|raises|after)$")
    assert done.returncode == 3, done.stderr
    assert "first failures/raises: failed: RuntimeError: injected failure; results in" in done.stderr.splitlines()[-1]
    data = results(out)
    assert [(o["variant"], o["status"]) for o in data["outcomes"]] == [
        ("first", "ok"),
        ("second", "ok"),
        ("raises", "failed"),
        ("after", "not_run"),
    ]
    assert [k["variant"] for k in data["kernels"]] == ["first", "second"]
    assert data["complete"] is True  # ncu ran to its end: the report holds every kernel that ran
    assert_nothing_left(tag, out)


def test_wrong_result_is_reported_and_not_measured(tmp_path):
    done, out, tag = profile(tmp_path, "^failures/(first|second|wrong)$")
    assert done.returncode == 3, done.stderr
    assert "first failures/wrong: wrong: wrong result at index 3: got" in done.stderr.splitlines()[-1]
    data = results(out)
    assert [(o["variant"], o["status"]) for o in data["outcomes"]] == [
        ("first", "ok"),
        ("second", "ok"),
        ("wrong", "wrong"),
    ]  # suite order
    assert [k["variant"] for k in data["kernels"]] == ["first", "second"]
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nname = "ran"\nselect = "failures/*"\nmetric = "duration"\nmin = 0\n')
    gate = subprocess.run(
        [sys.executable, "-m", "memlens", "gate", str(out / "latest"), "--rules", str(rules)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gate.returncode == 1 and "failures/wrong" in gate.stdout
    assert_nothing_left(tag, out)


def test_timeout_ends_ncu_and_the_app_and_keeps_partial_results(tmp_path):
    started = time.monotonic()
    done, out, tag = profile(tmp_path, "^failures/(first|hangs)$", "--timeout", str(TIMEOUT_S))
    assert time.monotonic() - started < TIMEOUT_S + 60
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        f"memlens: error: ncu ran past the {TIMEOUT_S} s timeout while failures/hangs was running; partial results in"
    )
    data = results(out)
    assert data["complete"] is False
    assert [(o["variant"], o["status"]) for o in data["outcomes"]] == [("first", "ok"), ("hangs", "failed")]
    assert [k["variant"] for k in data["kernels"]] in (["first"], [])  # [] where ncu writes no report when stopped
    assert_nothing_left(tag, out)


def test_ctrl_c_saves_partial_results_and_leaves_nothing(tmp_path):
    tag, out = uuid.uuid4().hex, tmp_path / "runs"
    process = subprocess.Popen(
        argv(out, "^failures/(first|hangs|after)$"),
        cwd=REPO,
        env=environment(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            events = list(out.glob("*/events.jsonl"))
            if events and '"event": "start", "variant": "failures/hangs"' in events[0].read_text():
                break
            time.sleep(0.2)
        time.sleep(1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 3
    assert err.splitlines()[-1].startswith("memlens: interrupted") and "Traceback" not in err
    data = results(out)
    assert data["complete"] is False
    assert [(o["variant"], o["status"], o["message"]) for o in data["outcomes"]] == [
        ("first", "ok", ""),
        ("hangs", "failed", "interrupted while running"),
        ("after", "not_run", "not run: the suite stopped earlier"),
    ]
    assert_nothing_left(tag, out)
