"""Programs held until the test lets them go on: the CPU suite's launches (MEMLENS_TEST_HOLD, see
tests/support/cpu_suite.py) and the fake bench's children (FAKE_BENCH_HOLD, tests/support/fake_bench.py)
wait until a file exists. A test that needs two programs mid-case at once, or a job still running when
its worker is killed, waits for exactly that instead of making every launch sleep long enough for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

HOLD = "MEMLENS_TEST_HOLD"
HOLD_S = 60.0  # the longest a held program waits: a test that never lets it go on fails, late


def wait_for(go_on: str | Path, deadline_s: float = HOLD_S) -> None:
    """In a held program: return once the file `go_on` exists, or after `deadline_s` regardless."""
    deadline = time.monotonic() + deadline_s
    while not Path(go_on).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def go_on_after(go_on: Path, action: Callable[[], object]) -> threading.Thread:
    """A started thread that runs `action` (a kill, a wait), then makes the file `go_on`: the held
    launches go on, also where `action` failed."""

    def run() -> None:
        try:
            action()
        finally:
            go_on.touch()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def go_on_when(go_on: Path, ready: Callable[[], bool], deadline_s: float = HOLD_S) -> threading.Thread:
    """A started thread that makes the file `go_on` once `ready()`, or after `deadline_s` regardless."""

    def wait() -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline and not ready():
            time.sleep(0.02)

    return go_on_after(go_on, wait)


def programs_took_units(folder: Path, count: int) -> Callable[[], bool]:
    """Whether `count` programs whose events files are under `folder` each took a unit (a case claimed)."""

    def took() -> bool:
        return sum('"claimed"' in _text(events) for events in folder.rglob("events.*.jsonl")) >= count

    return took


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
