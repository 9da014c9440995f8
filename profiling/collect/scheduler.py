"""One scheduler interface, two backends: a suite run's cases shared out as jobs over GPUs.

A job is a share of the selection's units (shards.units: a variant, or a swept family at one value),
run as one ncu run on one GPU by `run_job`, the same pipeline a single-GPU run takes (several_gpus.py
balances the shares). A backend runs the jobs and hands back each job's `Part`: its results, tagged
with where it ran (`Where`: host, GPU model, UUID and index, driver and ncu version), and its error.

- `LocalGpus` (embedded, `--gpus`): one thread a GPU of this host, each job's ncu writing straight
  into the run directory (`profile.gpu<i>.ncu-rep`, ...).
- `collect/cluster.py` (`--cluster ADDRESS|local`): Dask distributed workers that declare a `GPU`
  resource; each ships its job's raw report, log, command, events and results back, written as
  `profile.job<n>.ncu-rep`, ... Imported only when asked for (the `cluster` extra).

`profile_jobs` is the run both take: the split, the run directory, the backend, the merge, the save.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

from memlens.collect.claims import write_units
from memlens.collect.gpus import Gpu
from memlens.collect.job_runner import run_at_once
from memlens.collect.ncu import Ncu, find_ncu
from memlens.collect.profile_run import ProfileOptions, Shard, conclude, profile, run_shard, save
from memlens.collect.run_dir import Machine, machine_of, new_run_dir, now
from memlens.collect.several_gpus import Part, case_costs, merge, share_arguments, split, unit_costs, units
from memlens.io.processes import hold_interrupts
from memlens.model.results import RunResults
from memlens.model.run_layout import ProfileFiles, profile_files
from memlens.selection import Selection, select_variants
from memlens.suite_path import suite_root

Result = TypeVar("Result")


@dataclass(frozen=True)
class Job:
    """One ncu run's worth of cases: the profiled program's -k labels, --size and --sweep items."""

    number: int
    labels: tuple[str, ...]
    sizes: tuple[str, ...]
    sweeps: tuple[str, ...]
    cases: tuple[str, ...]  # the case labels it runs, in suite order (with claims: those it may take)
    claims: str | None = None  # the folder its program takes units from (collect/claims.py), else a fixed share

    @property
    def tag(self) -> str:
        return f"job{self.number}"


@dataclass(frozen=True)
class Where:
    """Where a job ran: the host, its GPU, the driver and ncu there."""

    host: str | None
    gpu: Gpu | None
    driver_version: str | None = None
    ncu_version: str | None = None

    def tag(self, results: RunResults) -> RunResults:
        """`results` with every kernel and case marked as run here."""
        if self.gpu is not None:
            results = self.gpu.tag(results)
        outcomes = tuple(
            replace(o, host=self.host, driver_version=self.driver_version, ncu_version=self.ncu_version)
            for o in results.outcomes
        )
        return replace(results, outcomes=outcomes)


def host_name() -> str | None:
    return socket.gethostname() or None


@dataclass
class RunContext:
    """What every job of one run shares: the options, the selection, the machine (both perhaps still
    on their way: a job's ncu starts without them), the run directory, the start."""

    options: ProfileOptions
    selection: Future[Selection]
    machine: Future[Machine]
    run_dir: Path
    started: dt.datetime
    on_event: Callable[[dict], None] | None
    stop: threading.Event


class Backend(Protocol):
    """Runs a run's jobs on GPUs: `slots` says how many at once, `run` returns one Part a job;
    `shares_files`: whether every job's program can reach a folder of this host (then a job done with
    its share takes over what others have not started, claims.py)."""

    def slots(self) -> int: ...

    def shares_files(self) -> bool: ...

    def run(self, jobs: Sequence[Job], context: RunContext) -> list[Part]: ...


def profile_on_gpus(
    options: ProfileOptions, gpus: Sequence[Gpu], on_event: Callable[[dict], None] | None = None
) -> tuple[Path, RunResults]:
    """`--gpus`: the selection over `gpus` of this host; one GPU is the single-GPU run, on that GPU."""
    if len(gpus) == 1:
        return profile(options, on_event, gpus[0])
    selection = select(options)  # a wrong selection is said before a missing ncu
    return profile_jobs(options, LocalGpus(gpus, find_ncu(options.ncu_settings.path)), on_event, selection)


def select(options: ProfileOptions) -> Selection:
    return select_variants(options.suite, options.pattern, options.sizes, options.sweeps, options.small)


def plan_jobs(options: ProfileOptions, selection: Selection, count: int, claims: Path | None = None) -> list[Job]:
    """At most `count` jobs, each a share of the selection's units, the shares of balanced expected cost.
    With `claims` (a folder every job's program can reach) the units are written there with their
    shares, and each job may take any unit once its own are done (claims.py)."""
    costs, _ = case_costs(selection, options.small, options.out_dir)
    found = units(selection, costs, count)
    expected = unit_costs(found, costs)
    shares = [share for share in split(found, expected, count) if share]
    if claims is not None:
        labels, sizes, sweeps = share_arguments(found, options)
        cases = tuple(case.label for case in selection.cases())
        jobs = [Job(n, labels, sizes, sweeps, cases, str(claims)) for n in range(len(shares))]
        owner = {unit.label: job.tag for job, share in zip(jobs, shares, strict=True) for unit in share}
        write_units(
            claims,
            [[case.label for case in unit.cases()] for unit in found],
            [owner[unit.label] for unit in found],
            [expected[unit.label] for unit in found],
        )
        return jobs
    jobs = []
    for share in shares:
        labels, sizes, sweeps = share_arguments(share, options)
        cases = tuple(case.label for unit in share for case in unit.cases())
        jobs.append(Job(len(jobs), labels, sizes, sweeps, cases))
    return jobs


@dataclass(frozen=True)
class Plan:
    """A run's jobs (plan_jobs), and the labels of all its cases in suite order."""

    jobs: list[Job]
    cases: list[str]


def plan_run(options: ProfileOptions, selection: Selection, count: int, claims: Path | None = None) -> Plan:
    """The run's plan over `count` slots (plan_jobs), with the labels of the selection's cases."""
    return Plan(plan_jobs(options, selection, count, claims), [case.label for case in selection.cases()])


def profile_jobs(
    options: ProfileOptions,
    backend: Backend,
    on_event: Callable[[dict], None] | None = None,
    selection: Selection | None = None,
    plan: Plan | None = None,
) -> tuple[Path, RunResults]:
    """Profile the selection's jobs on `backend`, merged into one run directory; its error raised
    once what finished is saved. With `plan` (made in another process: cluster.plan_aside), the jobs
    start at once, and the suite is imported here meanwhile, for the merge."""
    with contextlib.ExitStack() as stack:
        if plan is None:
            selection = selection or select(options)
            claims = Path(stack.enter_context(claims_folder())) if backend.shares_files() else None
            plan = plan_run(options, selection, backend.slots(), claims)
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=2, thread_name_prefix="memlens-run"))
        chosen = done(selection) if selection is not None else pool.submit(select, options)
        run_dir = new_run_dir(options.out_dir)
        started = now()
        machine = pool.submit(machine_of, suite_root(options.suite))
        context = RunContext(options, chosen, machine, run_dir, started, Relay(on_event, plan.cases), threading.Event())
        parts, error = _run(backend, plan.jobs, context)
    with hold_interrupts():  # a second Ctrl-C waits until the partial results are saved
        results, first = merge(parts, chosen.result(), machine.result(), options.memlens_command, started)
        if error is not None:
            results = replace(results, complete=False)
        return save(options, run_dir, results, error or first)


def claims_folder() -> tempfile.TemporaryDirectory[str]:
    """Where the jobs' programs take units from (collect/claims.py); gone once the jobs are."""
    return tempfile.TemporaryDirectory(prefix="memlens-claims-")


def _run(backend: Backend, jobs: Sequence[Job], context: RunContext) -> tuple[list[Part], BaseException | None]:
    """The backend's parts; and the error that ended the run early (the backend's own), if any."""
    try:
        return backend.run(jobs, context), None
    except BackendStopped as stopped:
        return stopped.parts, stopped.error


class BackendStopped(Exception):  # noqa: N818 - not an error of its own: carries the parts and the error
    """A backend that could not finish: the parts it has, and why it stopped (Ctrl-C, the scheduler gone)."""

    def __init__(self, parts: list[Part], error: BaseException) -> None:
        super().__init__(str(error))
        self.parts, self.error = parts, error


def run_job(context: RunContext, ncu: Ncu, job: Job, files: ProfileFiles, gpu: Gpu) -> Part:
    """One job's ncu run on `gpu` (the pipeline a single-GPU run takes), its files in `files`."""
    scratch = tempfile.mkdtemp(prefix=f"memlens-{files.tag}-")
    options, selection, machine = context.options, context.selection, context.machine
    try:
        claims = (job.claims, job.tag) if job.claims is not None else None
        shard = Shard(files, {**gpu.environment(), "TMPDIR": scratch}, job.labels, job.sizes, job.sweeps, claims)
        events, cause = run_shard(options, ncu, shard, selection, context.on_event, context.stop)
        results, error = conclude(
            options, ncu, shard, selection.result(), machine.result(), context.started, events, cause
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    where = Where(host_name(), gpu, machine.result().driver_version, ncu.version_text)
    return Part(gpu, where.tag(results), error, where.host)


class Relay:
    """Passes the events of every job's program to one progress display: one plan, of every case."""

    def __init__(self, on_event: Callable[[dict], None] | None, labels: list[str]) -> None:
        self._on_event, self._labels = on_event, labels
        self._lock = threading.Lock()
        self._planned = False

    def __call__(self, event: dict) -> None:
        if self._on_event is None:
            return
        with self._lock:
            if event.get("event") == "plan":
                if self._planned:
                    return
                self._planned = True
                event = {**event, "variants": self._labels}
            self._on_event(event)


# --- the embedded backend: this host's GPUs, one thread each ----------------------------------------


class LocalGpus:
    """`--gpus`: job i on GPU i of this host, all at once, each ncu writing into the run directory."""

    def __init__(self, gpus: Sequence[Gpu], ncu: Ncu) -> None:
        self.gpus, self.ncu = tuple(gpus), ncu

    def slots(self) -> int:
        return len(self.gpus)

    def shares_files(self) -> bool:
        return True

    def run(self, jobs: Sequence[Job], context: RunContext) -> list[Part]:
        runs = [functools.partial(self._run_one, context, job, gpu) for job, gpu in zip(jobs, self.gpus, strict=False)]
        return run_at_once(runs, context.stop, "memlens-gpu")

    def _run_one(self, context: RunContext, job: Job, gpu: Gpu) -> Part:
        return run_job(context, self.ncu, job, profile_files(context.run_dir, gpu.index), gpu)


def done(value: Result) -> Future[Result]:
    """`value` as a future that has it already."""
    future: Future[Result] = Future()
    future.set_result(value)
    return future
