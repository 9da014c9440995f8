"""A Dask cluster started as docs/cluster.md starts one by hand, for tests of a scheduler that goes away:
`dask scheduler` and one `dask worker` a GPU (one thread, GPU=1, no nanny), each its own process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from pathlib import Path


def _start(argv: list[str], env: Mapping[str, str]) -> subprocess.Popen:
    return subprocess.Popen(argv, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextlib.contextmanager
def external_cluster(
    folder: Path, env: Mapping[str, str], worker_envs: Sequence[Mapping[str, str]]
) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """The scheduler's address, and the processes (the scheduler first), once every worker has joined;
    each worker's environment is `env` updated by its own. Every process is killed at the end."""
    from distributed import Client

    address_file = folder / "scheduler.json"
    python = [sys.executable, "-m"]
    processes = [
        _start(
            [
                *python,
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(address_file),
            ],
            env,
        )
    ]
    try:
        deadline = time.monotonic() + 30
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(address_file.read_text())["address"]
        for own in worker_envs:
            processes.append(
                _start(
                    [
                        *python,
                        "distributed.cli.dask_worker",
                        address,
                        "--nthreads",
                        "1",
                        "--resources",
                        "GPU=1",
                        "--no-dashboard",
                        "--no-nanny",
                        "--death-timeout",
                        "10",
                    ],
                    {**env, **own},
                )
            )
        with Client(address, timeout=30) as client:
            client.wait_for_workers(len(worker_envs), timeout=60)
        yield address, processes
    finally:
        for process in processes:
            process.kill()


@contextlib.contextmanager
def scheduler_killed_once(scheduler: subprocess.Popen, folder: Path, pattern: str) -> Iterator[None]:
    """While the block runs, a thread kills `scheduler` once a file matching `pattern` is under `folder`
    (a job or share back), or after 60 s."""

    def kill_once_one_is_back() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(folder.glob(pattern)):
            time.sleep(0.1)
        scheduler.kill()

    killer = threading.Thread(target=kill_once_one_is_back, daemon=True)
    killer.start()
    try:
        yield
    finally:
        killer.join()


Records = Callable[[], list[dict]]  # what each process a job started recorded: its pid and its parent's (ppid)


Ready = Callable[[dict], object]  # returns once a recorded process may be killed (e.g. it has taken work)


def kill_worker_of(records: Records, which: int, deadline_s: float = 60, ready: Ready | None = None) -> dict:
    """SIGKILL the worker process that started the `which`-th recorded process (its ppid), and that process's
    group (orphaned by the worker's death), once `ready` returns for it; its record."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and len(records()) <= which:
        time.sleep(0.1)
    record = records()[which]
    if ready is not None:
        ready(record)
    os.kill(record["ppid"], signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(record["pid"], signal.SIGKILL)
    return record


def kill_worker_twice(
    records: Records, job: Callable[[dict], Hashable], killed: list[dict], ready: Ready | None = None
) -> None:
    """Kill the worker of the first recorded process, then the worker of its retry (a later record of the
    same `job`), each once `ready` returns for it, appending each killed record to `killed`; within 60 s."""
    first = kill_worker_of(records, 0, ready=ready)
    killed.append(first)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        retry = [i for i, record in enumerate(records()) if i > 0 and job(record) == job(first)]
        if retry:
            killed.append(kill_worker_of(records, retry[0], ready=ready))
            return
        time.sleep(0.1)
