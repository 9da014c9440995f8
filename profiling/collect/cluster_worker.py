"""What a cluster worker runs for one job (`run_remote`): the pipeline a local run takes (scheduler.run_job)
on the worker's GPU, into a scratch folder there; then the job's raw report, ncu log, ncu command, the
program's events and its results come back to the client as `Shipped` (a few hundred KB a job).

The worker's GPU is the first device of its CUDA_VISIBLE_DEVICES (a UUID or an index), named by
nvidia-smi: start one worker per GPU with that variable set (`--cluster local` does; so does dask-cuda's
`dask cuda worker`). ncu is found on the worker as a local run finds it (--ncu, $MEMLENS_NCU, PATH), once a
worker process; `--cluster local` hands its workers the client's ncu and GPUs (SameHost) instead. The
suite must be at the same path on every worker (a shared file system or the same checkout), or be the
built-in one. While the job runs, the program's events go to the client through the scheduler (topic
`memlens-<run>`), and the run's stop event (`memlens-stop-<run>`, set on Ctrl-C) stops ncu as a Ctrl-C
would: the job then ships back what it profiled so far.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from memlens.collect.gpus import Gpu, list_gpus
from memlens.collect.job_runner import ClusterJobs, stop_event, stop_event_name
from memlens.collect.ncu import Ncu, find_ncu
from memlens.collect.profile_run import ProfileOptions
from memlens.collect.run_dir import machine_of
from memlens.collect.scheduler import Job, RunContext, Where, host_name, run_job, select
from memlens.errors import ConfigError, InputError, MemlensError, OutputError, ProfilerError, SetupError
from memlens.model.run_layout import ProfileFiles, profile_files
from memlens.suite_path import suite_root

ERRORS = {kind.__name__: kind for kind in (ConfigError, InputError, OutputError, ProfilerError, SetupError)}


@dataclass(frozen=True)
class Shipped:
    """One job's outcome as it crosses the network: where it ran, its results (results.json's text,
    encoded once here and decoded once by the client), its error (kind and message), and its files
    (name suffix -> bytes: `ncu-rep`, `log`, `command`, `events`)."""

    where: Where  # its gpu None where the worker found none
    results: bytes  # empty where the job never started
    error: tuple[str, str] | None
    files: dict[str, bytes] = field(default_factory=dict)

    def raised(self) -> BaseException | None:
        """The job's error as memlens raises it (its kind, hence its exit code, kept)."""
        if self.error is None:
            return None
        kind, message = self.error
        if kind == "KeyboardInterrupt":
            return KeyboardInterrupt(message)
        return ERRORS.get(kind, ProfilerError)(message)


def worker_gpu(visible: str | None, gpus: tuple[Gpu, ...]) -> Gpu:
    """The GPU a worker runs on: the first device of CUDA_VISIBLE_DEVICES (UUID or index) among
    nvidia-smi's; where unset, the host's only GPU."""
    first = (visible or "").split(",")[0].strip()
    if not first:
        if len(gpus) == 1:
            return gpus[0]
        raise ProfilerError(
            f"worker on {host_name()}: CUDA_VISIBLE_DEVICES is not set and the host has "
            f"{len(gpus)} GPUs; start one worker per GPU, each with its own"
        )
    for gpu in gpus:
        if first in (gpu.uuid, str(gpu.index)):
            return gpu
    raise ProfilerError(f"worker on {host_name()}: CUDA_VISIBLE_DEVICES={first} is none of nvidia-smi's GPUs")


@dataclass(frozen=True)
class SameHost:
    """What the client found on its own host, for the workers of `--cluster local`: its ncu and GPUs,
    so that a job starts ncu without looking them up again (nvidia-smi and `ncu --version`)."""

    ncu: Ncu
    gpus: tuple[Gpu, ...]


def run_remote(
    options: ProfileOptions,
    job: Job,
    run_id: str,
    started: dt.datetime,
    run_dir: str,
    same_host: SameHost | None = None,
) -> Shipped:
    """Run `job` on this worker's GPU (a Dask task: see the module's notes); what it says of its files
    names them where the client writes them, in `run_dir`."""
    stop, events = stop_event(stop_event_name(ClusterJobs.PREFIX, run_id)), _event_sender(run_id, job.number)
    scratch = Path(tempfile.mkdtemp(prefix=f"memlens-job{job.number}-"))
    gpu = None
    background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memlens-job")
    try:
        selection = background.submit(select, options)  # the suite imports while ncu starts
        machine = background.submit(machine_of, suite_root(options.suite))
        gpu = worker_gpu(os.environ.get("CUDA_VISIBLE_DEVICES"), same_host.gpus if same_host else _gpus())
        ncu = (
            same_host.ncu
            if same_host
            else _ncu(options.ncu_settings.path, os.environ.get("MEMLENS_NCU"), os.environ.get("PATH"))
        )
        context = RunContext(options, selection, machine, scratch, started, events, stop)
        files = profile_files(scratch, job=job.number)
        part = run_job(context, ncu, job, files, gpu)
        error = None
        if part.error is not None:
            error = (type(part.error).__name__, str(part.error).replace(str(scratch), run_dir))
        results = orjson.dumps(part.results.to_json()).replace(str(scratch).encode(), run_dir.encode())
        where = Where(part.host, gpu, machine.result().driver_version, ncu.version_text)
        return Shipped(where, results, error, _read(files))
    except MemlensError as exc:  # the worker's setup (no GPU, no ncu, no suite): nothing profiled to ship
        return Shipped(Where(host_name(), gpu), b"", (type(exc).__name__, str(exc)))
    finally:
        stop.set()  # ends the poller
        background.shutdown(wait=True)
        shutil.rmtree(scratch, ignore_errors=True)


def dask_setup(worker) -> None:  # noqa: ANN001 - Dask's preload hook (`--cluster local`'s workers)
    """A Ctrl-C at the terminal reaches the local cluster's worker processes too (one process group):
    they leave it to memlens, which stops their jobs through the run's stop event and then closes
    them. A handler, not SIG_IGN, so ncu and the program they start still take SIGINT."""
    import signal

    signal.signal(signal.SIGINT, lambda number, frame: None)


@functools.lru_cache(maxsize=4)
def _ncu(explicit: str | None, environment: str | None, search_path: str | None) -> Ncu:
    """find_ncu, once a worker process of a cluster of its own (the first job of a run there); the
    environment it looks in is part of the key, and an error is never kept."""
    return find_ncu(explicit)


@functools.lru_cache(maxsize=1)
def _gpus() -> tuple[Gpu, ...]:
    """nvidia-smi's GPUs, once a worker process (they do not change while it lives)."""
    return list_gpus(f"a cluster worker on {host_name()}")


def _read(files: ProfileFiles) -> dict[str, bytes]:
    found = {"ncu-rep": files.report, "log": files.log, "command": files.command, "events": files.events}
    return {kind: path.read_bytes() for kind, path in found.items() if path.is_file()}


def _event_sender(run_id: str, job: int):
    """Sends each event of the profiled program to the client (the run's progress display)."""
    from distributed import get_worker

    worker = get_worker()

    def send(event: dict) -> None:
        try:
            worker.log_event(f"memlens-{run_id}", {**event, "job": job})
        except Exception:  # noqa: BLE001 - progress only: never the job's failure
            pass

    return send
