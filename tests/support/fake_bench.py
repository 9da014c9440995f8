"""A stand-in for the GPU in the `memlens bench` child processes that bench --gpus and bench --cluster
start (the in-process bench is faked by patching bench.timing.open_device, tests/bench/test_bench.py).

`fake_bench_env(folder, names)` writes a sitecustomize.py into `folder` and returns the environment
(PYTHONPATH, FAKE_BENCH_GPUS) under which every Python process started imports it: it replaces
open_device with a device named as `names` names the GPU of its CUDA_VISIBLE_DEVICES (a UUID), whose
launches run for real and take set times; a GPU not in `names` is "no usable CUDA GPU" (exit 3).
With FAKE_BENCH_RECORD set, each child appends its pid, parent pid, GPU and -k to that JSON-lines file when it
opens the device; with FAKE_BENCH_SLEEP, it then sleeps that many seconds; with FAKE_BENCH_HOLD, it then
waits until that file exists (tests/support/hold.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.fake import REPO
from tests.support.hold import wait_for

ENV = "FAKE_BENCH_GPUS"
SITE = f"""import os
if os.environ.get("{ENV}"):
    from tests.support.fake_bench import install
    install()
"""


class ChildDevice:
    """Launch i of a rotation takes i + 1 ms; a copy of n bytes 0.004 ms + 2n bytes at 4 TB/s."""

    l2_bytes = 48 * 1024
    cuda_driver_version = "13.0"

    def __init__(self, name: str) -> None:
        self.name = name

    def free_bytes(self) -> int:
        return 64 << 30

    def time_launches(self, runs: list[Callable[[], None]], repeats: int) -> list[float]:
        for index in range(repeats):
            runs[index % len(runs)]()
        return [float(index + 1) for index in range(repeats)]

    def copy_times(self, buffer_bytes: int, repeats: int, sets: int = 1) -> list[float]:
        return [0.004 + 2 * buffer_bytes / 4e9] * repeats

    def release(self) -> None:
        pass


def open_fake_device() -> ChildDevice:
    from memlens.errors import ProfilerError

    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if os.environ.get("FAKE_BENCH_RECORD"):
        with open(os.environ["FAKE_BENCH_RECORD"], "a", encoding="utf-8") as record:
            k = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
            record.write(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "gpu": visible, "k": k}) + "\n")
    time.sleep(float(os.environ.get("FAKE_BENCH_SLEEP", "0")))
    if os.environ.get("FAKE_BENCH_HOLD"):
        wait_for(os.environ["FAKE_BENCH_HOLD"])
    names = json.loads(os.environ[ENV])
    if visible not in names:
        raise ProfilerError(f"no usable CUDA GPU: {visible} is none of the fake bench's GPUs")
    return ChildDevice(names[visible])


def install() -> None:
    import memlens.bench.timing

    memlens.bench.timing.open_device = open_fake_device  # type: ignore[assignment]


def fake_bench_env(folder: Path, names: dict[str, str]) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITE)
    return {"PYTHONPATH": f"{folder}{os.pathsep}{REPO}", ENV: json.dumps(names)}
