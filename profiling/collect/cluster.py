"""`memlens profile --cluster ADDRESS|local`: the scheduler interface's cluster backend, on Dask distributed
(the `cluster` extra, imported only here, only when asked for).

Each job (scheduler.plan_jobs: as many as the cluster has GPUs, balanced by expected cost) is a Dask
task that needs the resource `GPU=1`: Dask hands it to a worker with a free GPU, and a worker that
declares `GPU=1` runs one at a time, so there is at most one ncu per GPU. The worker runs
cluster_worker.run_remote and ships the job's files and results back; they are written into the run
directory as they come (`profile.job<n>.ncu-rep`, `ncu.job<n>.log`, `ncu-command.job<n>.txt`,
`events.job<n>.jsonl`) and merged into one results.json, each case with its host, GPU and versions.

Faults: a job whose worker dies (Dask's KilledWorker) is submitted once more, to another worker where
there is one; should that die too, its cases are failed and `job<n>.failed.txt` says what happened to
each attempt. A scheduler that goes away ends the run with what finished (incomplete, exit 3). Ctrl-C
sets the run's stop event: the running jobs stop their ncu and ship what they profiled (for up to
STOP_GRACE_S), the others are cancelled, and what came back is saved.

`local` starts a cluster of this host's GPUs (nvidia-smi's): one worker process per GPU (forked from
memlens where that is safe: start_method) with CUDA_VISIBLE_DEVICES=<its UUID>, one thread, `GPU=1`, no
dashboard (the scheduler's HTTP server on a free port: no warning where 8787 is taken), and a scheduler
that gives up on a job after its first worker death (memlens retries it itself). A process forked
before Dask's import imports the suite and plans the run meanwhile (plan_aside), so the jobs go out
as soon as the workers are up.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from memlens.collect.claims import release, taken_by
from memlens.collect.cluster_worker import SameHost
from memlens.collect.gpus import Gpu, list_gpus
from memlens.collect.job_runner import Attempt, ClusterJobs, SchedulerGone
from memlens.collect.job_runner import distributed as _distributed
from memlens.collect.ncu import find_ncu
from memlens.collect.profile_run import ProfileOptions
from memlens.collect.scheduler import (
    BackendStopped,
    Job,
    Plan,
    RunContext,
    claims_folder,
    plan_run,
    profile_jobs,
    select,
)
from memlens.collect.several_gpus import Part
from memlens.errors import ConfigError, MemlensError, OutputError, ProfilerError
from memlens.io.files import write_new_bytes, write_output
from memlens.model.results import RunInfo, RunResults, VariantOutcome
from memlens.model.run_layout import ProfileFiles, profile_files

LOCAL = "local"
ASKED_BY_LOCAL = "--cluster local"  # what names the error where this host's GPUs cannot be listed
CONNECT_TIMEOUT_S = 20.0
WORKERS_TIMEOUT_S = 60.0  # for a worker with a GPU to join
STOP_GRACE_S = 30.0  # after Ctrl-C, for the running jobs to ship what they profiled
POLL_S = 0.2


def profile_on_cluster(options: ProfileOptions, address: str, on_event=None) -> tuple[Path, RunResults]:
    """Profile the selection on the cluster at `address` (or `local`): one run directory. A wrong selection
    is the first thing said; on `local` the suite is imported in a process of its own while the workers start
    (plan_aside), and here once the jobs are off."""
    if options.suite is not None:  # the workers find the suite at the same path
        options = _with_absolute_suite(options)
    if address != LOCAL:
        selection = select(options)
        with connect(address) as client:
            return profile_jobs(options, DaskBackend(client), on_event, selection)
    with contextlib.ExitStack() as stack:
        try:
            gpus = list_gpus(ASKED_BY_LOCAL)
            same_host = SameHost(find_ncu(options.ncu_settings.path), gpus)  # found once, for every worker
            claims = Path(stack.enter_context(claims_folder()))
            planned = stack.enter_context(plan_aside(options, len(gpus), claims))  # while Dask starts
            client = stack.enter_context(connect(address, gpus))
        except MemlensError:
            select(options)  # a wrong selection is said first
            raise
        return profile_jobs(options, DaskBackend(client, same_host), on_event, plan=planned())


@contextlib.contextmanager
def plan_aside(options: ProfileOptions, count: int, claims: Path) -> Iterator[Callable[[], Plan]]:
    """The run's plan over `count` GPUs taking units from `claims`, as a function that returns it (or
    raises the selection's error). Made in a process forked from this one where that is safe
    (start_method): the suite is imported there while this process imports Dask and starts its workers,
    which must fork before this process imports the suite. Elsewhere, made here when asked for."""
    if start_method() != "fork":
        yield lambda: _plan(options, count, claims)
        return
    forked = multiprocessing.get_context("fork")
    receiving, sending = forked.Pipe(duplex=False)
    planner = forked.Process(target=_send_plan, args=(sending, options, count, claims), name="memlens-plan")
    planner.start()
    sending.close()

    def plan() -> Plan:
        try:
            made = receiving.recv()
        except EOFError:  # it died (a signal): say why
            planner.join()
            raise ProfilerError(f"the process planning the run ended with exit code {planner.exitcode}") from None
        if isinstance(made, BaseException):
            raise made
        return made

    try:
        yield plan
    finally:
        receiving.close()
        if planner.is_alive():  # a setup error or Ctrl-C before its plan was asked for
            planner.kill()
        planner.join()


def _plan(options: ProfileOptions, count: int, claims: Path) -> Plan:
    return plan_run(options, select(options), count, claims)


def _send_plan(sending: Any, options: ProfileOptions, count: int, claims: Path) -> None:
    """In the forked planner: the plan, or the error that stopped it, sent to memlens."""
    try:
        made: Plan | BaseException = _plan(options, count, claims)
    except KeyboardInterrupt:  # Ctrl-C reached the whole process group: memlens says what happened
        return
    except MemlensError as exc:
        made = exc
    except BaseException as exc:  # noqa: BLE001 - said in one line by memlens, as any setup error
        made = ProfilerError(f"planning the run failed: {type(exc).__name__}: {exc}")
    sending.send(made)
    sending.close()


def _with_absolute_suite(options: ProfileOptions) -> ProfileOptions:
    from dataclasses import replace

    assert options.suite is not None  # a suite run's
    return replace(options, suite=str(Path(options.suite).resolve()))


@contextlib.contextmanager
def connect(address: str, gpus: Sequence[Gpu] | None = None) -> Iterator[Any]:
    """A Dask client of the scheduler at `address`, or of a cluster of this host's GPUs (`local`: `gpus`,
    else nvidia-smi's); ProfilerError (exit 3) where none answers or no worker declares a GPU."""
    distributed = _distributed()
    with contextlib.ExitStack() as stack:
        if address == LOCAL:
            cluster = stack.enter_context(local_cluster(list_gpus(ASKED_BY_LOCAL) if gpus is None else gpus))
            address = cluster.scheduler_address
        elif "://" not in address and ":" not in address:
            raise ConfigError(f"--cluster {address!r}: expected a scheduler address (tcp://HOST:8786) or 'local'")
        try:
            client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ProfilerError(f"--cluster {address}: no scheduler answers there ({exc})") from None
        try:
            _wait_for_gpus(client, address)
            yield client
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=5)


def _wait_for_gpus(client: Any, address: str) -> None:
    deadline = time.monotonic() + WORKERS_TIMEOUT_S
    while gpu_slots(client) == 0:
        if time.monotonic() > deadline:
            raise ProfilerError(
                f"--cluster {address}: no worker declares a GPU resource after "
                f"{WORKERS_TIMEOUT_S:g} s (start each with --resources GPU=1)"
            )
        time.sleep(POLL_S)


def gpu_slots(client: Any) -> int:
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    return int(sum(w.get("resources", {}).get("GPU", 0) for w in workers))


@contextlib.contextmanager
def local_cluster(gpus: Sequence[Gpu]) -> Iterator[Any]:
    """A Dask cluster of this host: the scheduler in this process, one worker process per GPU."""
    distributed = _distributed()
    import dask  # with distributed

    workers = {
        f"gpu{gpu.index}": {
            "cls": distributed.Nanny,
            "options": {
                "nthreads": 1,
                "resources": {"GPU": 1},
                "env": {"CUDA_VISIBLE_DEVICES": gpu.uuid},
                "dashboard_address": None,
                "silence_logs": logging.CRITICAL,
                "preload": ["memlens.collect.cluster_worker"],
            },  # Ctrl-C: see dask_setup there
        }
        for gpu in gpus
    }
    scheduler = {
        "cls": distributed.Scheduler,
        "options": {"dashboard": False, "dashboard_address": ":0", "allowed_failures": 0},
    }
    # no GPU panel for a dashboard nobody opens, and none of the one-thread settings a Nanny gives its worker
    # (OMP_NUM_THREADS=1, ...): each job's program runs in the environment a local run gives it
    quiet = {
        "distributed.diagnostics.nvml": False,
        "distributed.nanny.pre-spawn-environ": {},
        "distributed.worker.multiprocessing-method": start_method(),
    }
    with dask.config.set(quiet):
        cluster = distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.CRITICAL)
    try:
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.close(timeout=10)


def start_method() -> str:
    """How the local cluster's first workers start: forked from this process, which has Dask and memlens
    imported already (no second Python start and imports), where that is safe; else spawned.

    Safe: Linux, no other Python thread (one that holds a lock would leave it held in the worker), no
    ncu_report (its disassembler's thread) and no CUDA driver loaded. The threads of NumPy's OpenBLAS
    are no obstacle: it stops them for a fork. A worker its Nanny restarts later starts as Dask's
    settings say (spawned, by default)."""
    if sys.platform != "linux" or threading.active_count() > 1 or "ncu_report" in sys.modules:
        return "spawn"
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            cuda = any("libcuda.so" in line for line in maps)
    except OSError:
        return "spawn"
    return "spawn" if cuda else "fork"


class DaskBackend:
    """The scheduler interface on a Dask cluster (see the module's notes): its jobs run by ProfileJobs."""

    def __init__(self, client: Any, same_host: SameHost | None = None) -> None:
        self.client, self.same_host = client, same_host  # same_host: a local cluster's (cluster_worker)

    def slots(self) -> int:
        return max(1, gpu_slots(self.client))

    def shares_files(self) -> bool:
        return self.same_host is not None  # --cluster local: the workers reach this host's folders

    def run(self, jobs: Sequence[Job], context: RunContext) -> list[Part]:
        runner = ProfileJobs(self.client, context, self.same_host, len(jobs))
        if context.on_event is not None:
            self.client.subscribe_topic(f"memlens-{runner.run_id}", lambda event: context.on_event(event[1]))
        try:
            return runner.run(jobs)
        except SchedulerGone:
            error = ProfilerError(
                f"the scheduler went away: {len(runner.outcomes)} of {len(jobs)} jobs finished; "
                f"partial results in {context.run_dir}"
            )
            raise BackendStopped(runner.with_unfinished("the scheduler went away"), error) from None


class ProfileJobs(ClusterJobs[Job, Part]):
    """A profile run's jobs on the cluster: each runs cluster_worker.run_remote, its files written into the
    run directory as it comes back; Ctrl-C keeps what the running jobs ship within STOP_GRACE_S."""

    STOP_GRACE_S = STOP_GRACE_S

    def __init__(self, client: Any, context: RunContext, same_host: SameHost | None, count: int) -> None:
        super().__init__(client)
        self.context, self.same_host, self.count = context, same_host, count

    def task(self, attempt: Attempt[Job]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        from memlens.collect.cluster_worker import run_remote

        context = self.context
        return run_remote, (
            context.options,
            attempt.job,
            self.run_id,
            context.started,
            str(context.run_dir),
            self.same_host,
        )

    def came_back(self, attempt: Attempt[Job], shipped: Any) -> Part:
        """A job that came back: its files written and its part kept."""
        job = attempt.job
        _write(profile_files(self.context.run_dir, job=job.number), shipped.files)
        if shipped.results:
            results = RunResults.from_json(orjson.loads(shipped.results), f"job {job.number}'s results")
        else:  # the worker could not start the job (no GPU, no ncu, no suite)
            results = _failed(job, shipped.error[1] if shipped.error else "no results")
        return Part(shipped.where.gpu, results, shipped.raised(), shipped.where.host)

    def retrying(self, attempt: Attempt[Job]) -> None:
        job = attempt.job
        if job.claims is not None:  # what it took died with its worker: for anyone to take again
            release(Path(job.claims), job.tag)

    def failed(self, attempt: Attempt[Job]) -> Part:
        job = attempt.job
        log = self.context.run_dir / f"job{job.number}.failed.txt"
        history = f"job {job.number}: {', '.join(_cases(job))}\n" + "\n".join(attempt.history) + "\n"
        write_output(log, history, record=True)
        message = f"job {job.number} failed: {attempt.history[-1]}; see {log.name}"
        return Part(None, _failed(job, message), ProfilerError(message))

    def gone(self, attempt: Attempt[Job]) -> Part:
        raise SchedulerGone  # the run ends: this job and those not back are not run

    def abandon(self) -> None:
        """A job's files that could not be written end the run as they are."""

    def interrupted(self) -> BaseException:
        finished = len(self.outcomes)
        self.stop(keep=True)
        kept = len(self.outcomes) - finished
        stopped = f", {kept} stopped with what they had profiled" if kept else ""
        return BackendStopped(
            self.with_unfinished("interrupted"),
            KeyboardInterrupt(
                f"{finished} of {self.count} jobs finished{stopped}; partial results in {self.context.run_dir}"
            ),
        )

    def with_unfinished(self, why: str) -> list[Part]:
        unfinished = [Part(None, _failed(a.job, f"not run: {why}", "not_run"), None) for a in self.pending.values()]
        return [*self.outcomes.values(), *unfinished]


def _write(files: ProfileFiles, shipped: dict[str, bytes]) -> None:
    """A job's shipped files, each a new file of the run directory (never one written over)."""
    paths = {"ncu-rep": files.report, "log": files.log, "command": files.command, "events": files.events}
    for kind, data in shipped.items():
        if kind not in paths:
            continue
        try:
            write_new_bytes(paths[kind], data)
        except OSError as exc:
            raise OutputError(f"{paths[kind]}: cannot write it ({exc.strerror or exc})") from None


def _cases(job: Job) -> list[str] | tuple[str, ...]:
    """The cases that are a job's: its share's, or (taking units) those of the units it took."""
    return taken_by(Path(job.claims), job.tag) if job.claims is not None else job.cases


def _failed(job: Job, message: str, status: str = "failed") -> RunResults:
    """The results of a job that did not run: each of its cases failed (or not run), with why."""
    outcomes = []
    for label in _cases(job):
        family, _, variant = label.partition("/")
        outcomes.append(VariantOutcome(family, variant, status, message))
    return RunResults(RunInfo(), (), tuple(outcomes), complete=False)
