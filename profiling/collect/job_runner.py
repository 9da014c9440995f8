"""The one job runner of `--gpus` and `--cluster`, for `memlens profile` and `memlens bench` alike: a run's
jobs (shares of its cases) run at once, one a GPU, and each job's outcome comes back to the caller.

- `run_at_once` (`--gpus`): one thread a job of this host, polled; Ctrl-C (or SIGTERM) sets the run's
  stop event, which each job watches (profile's ncu, bench's child: `wait_child`), and every job is
  waited for, so that each says what it did.
- `ClusterJobs` (`--cluster`): each job a Dask task that needs the resource `GPU=1`, polled; a job whose
  worker died is submitted once more, to another worker where there is one; Ctrl-C sets the run's
  distributed stop event (its workers end their jobs), waits up to a grace for the running jobs, and
  cancels the rest. A command subclasses it with what its jobs are (`task`) and what becomes of each
  (`came_back`, `failed`, `interrupted`, ...): collect/cluster.DaskBackend, bench/cluster.py.

Dask distributed (the `cluster` extra) is imported only when a cluster is asked for.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor
from dataclasses import dataclass, field
from subprocess import Popen
from typing import Any, Generic, Protocol, TypeVar

from memlens.errors import SetupError
from memlens.io.processes import end_group, hold_interrupts, sigterm_as_interrupt

POLL_S = 0.2
CHILD_POLL_S = 0.5  # how often a job's child is checked against the run's stop event
Outcome = TypeVar("Outcome")


# --- this host's GPUs: one thread a job --------------------------------------------------------------


def run_at_once(jobs: Sequence[Callable[[], Outcome]], stop: threading.Event, name: str) -> list[Outcome]:
    """Run every job at once, one thread each, and wait for all; on Ctrl-C (or SIGTERM), or a job that
    raised, set `stop` and wait for the others to end (each job watches `stop`). Each job's outcome, in
    order (a job's error raised); an interrupt is the jobs' to report (`stop` says it came)."""
    with ThreadPoolExecutor(max_workers=max(1, len(jobs)), thread_name_prefix=name) as pool:
        futures = [pool.submit(job) for job in jobs]
        try:
            with sigterm_as_interrupt():
                while not all(future.done() for future in futures):
                    concurrent.futures.wait(futures, timeout=POLL_S, return_when=FIRST_EXCEPTION)
                    if any(future.done() and future.exception() is not None for future in futures):
                        break
        except KeyboardInterrupt:
            stop.set()
        if not all(future.done() for future in futures):
            stop.set()
            with hold_interrupts():
                concurrent.futures.wait(futures)
        return [future.result() for future in futures]


def wait_child(process: Popen[bytes], stop: threading.Event, poll: float = CHILD_POLL_S) -> int | None:
    """Wait for a job's child; end it (and its process group) once `stop` is set, or on any error.
    Its exit code."""
    try:
        while process.poll() is None and not stop.wait(poll):
            pass
    finally:
        if process.poll() is None:
            end_group(process)
    return process.returncode


# --- a Dask cluster's GPU workers: one task a job ----------------------------------------------------


def distributed() -> Any:
    """Dask distributed, quiet (memlens says what went wrong in one line); SetupError without it."""
    try:
        import distributed
    except ImportError as exc:
        raise SetupError(f'--cluster needs Dask distributed ({exc}): pip install "memlens[cluster]"') from None
    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return distributed


class Numbered(Protocol):
    @property
    def number(self) -> int: ...


Job = TypeVar("Job", bound=Numbered)


@dataclass
class Attempt(Generic[Job]):
    """One submission of a job: the first (0) or its retry (1), and what happened to those before."""

    job: Job
    number: int = 0
    history: list[str] = field(default_factory=list)


class SchedulerGone(Exception):  # noqa: N818 - a condition a runner handles, never raised further
    """The client lost its scheduler: every task not yet back is cancelled."""


def stop_event_name(prefix: str, run_id: str) -> str:
    """The run's distributed stop event, set on Ctrl-C: its workers end their jobs."""
    return f"{prefix}-stop-{run_id}"


def stop_event(name: str, poll: float = CHILD_POLL_S) -> threading.Event:
    """On a worker: a local event set once the run's distributed stop event `name` is (polled from a
    thread of its own, every `poll` seconds)."""
    from distributed import Event, get_client

    local = threading.Event()
    remote = Event(name, client=get_client())  # the task's client: the poller has none

    def watch() -> None:
        while not local.is_set():
            try:
                if remote.is_set():
                    local.set()
            except Exception:  # noqa: BLE001 - the scheduler gone: the job ends by itself, its result lost
                return
            local.wait(poll)

    threading.Thread(target=watch, name="memlens-stop", daemon=True).start()
    return local


class ClusterJobs(Generic[Job, Outcome]):
    """One run's jobs on a Dask cluster (see the module's notes). `PREFIX` names its tasks
    (`<prefix>-<run>-job<n>-try<k>`) and its stop event; `STOP_GRACE_S` is how long Ctrl-C waits."""

    PREFIX = "memlens"
    STOP_GRACE_S = 30.0

    def __init__(self, client: Any) -> None:
        self.client = client
        self.run_id = uuid.uuid4().hex[:12]
        self.pending: dict[Any, Attempt[Job]] = {}
        self.outcomes: dict[int, Outcome] = {}

    # --- what a command says of its jobs ---

    def task(self, attempt: Attempt[Job]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """The function a worker runs for the job, and its arguments."""
        raise NotImplementedError

    def came_back(self, attempt: Attempt[Job], shipped: Any) -> Outcome:
        """The outcome of a job whose task returned `shipped`."""
        raise NotImplementedError

    def failed(self, attempt: Attempt[Job]) -> Outcome:
        """The outcome of a job that did not come back (its history says why)."""
        raise NotImplementedError

    def interrupted(self) -> BaseException:
        """Ctrl-C: what the run raises (stop() first, which ends the running jobs)."""
        raise NotImplementedError

    def retrying(self, attempt: Attempt[Job]) -> None:
        """Before a job whose worker died is submitted once more."""

    def gone(self, attempt: Attempt[Job]) -> Outcome:
        """A job the scheduler lost (it went away): failed, saying so; or raise SchedulerGone to end the run."""
        attempt.history.append(f"attempt {attempt.number + 1}: the scheduler went away")
        return self.failed(attempt)

    def abandon(self) -> None:
        """Another error ended the run (a job's files could not be written): the others stopped too."""
        self.stop()

    # --- the run ---

    def run(self, jobs: Sequence[Job]) -> list[Outcome]:
        """Every job's outcome, in order (see the module's notes)."""
        for job in jobs:
            self.submit(Attempt(job))
        try:
            with sigterm_as_interrupt():
                while self.pending:
                    done = [future for future in self.pending if future.done()]
                    for future in sorted(done, key=lambda f: f.status in ("finished", "error")):  # the lost first
                        self._back(future)
                    if not done:
                        time.sleep(POLL_S)
        except KeyboardInterrupt:
            raise self.interrupted() from None
        except SchedulerGone:
            raise
        except BaseException:
            self.abandon()
            raise
        return [self.outcomes[job.number] for job in jobs]

    def submit(self, attempt: Attempt[Job], avoid: str | None = None) -> None:
        function, arguments = self.task(attempt)
        key = f"{self.PREFIX}-{self.run_id}-job{attempt.job.number}-try{attempt.number}"
        future = self.client.submit(
            function, *arguments, key=key, resources={"GPU": 1}, pure=False, **elsewhere(self.client, avoid)
        )
        self.pending[future] = attempt

    def _back(self, future: Any) -> None:
        """A job that came back: its outcome kept; a dead worker's job retried once. A job whose outcome
        raised stays pending."""
        attempt = self.pending[future]
        if future.status == "finished":
            outcome = self.came_back(attempt, future.result())
        elif future.status != "error":  # cancelled or lost: the scheduler went away
            outcome = self.gone(attempt)
        else:
            killed, worker, what = what_happened(future.exception())
            attempt.history.append(f"attempt {attempt.number + 1}: {what}")
            if killed and attempt.number == 0:
                del self.pending[future]
                self.retrying(attempt)
                self.submit(Attempt(attempt.job, 1, attempt.history), avoid=worker)
                return
            outcome = self.failed(attempt)
        del self.pending[future]
        self.outcomes[attempt.job.number] = outcome

    def stop(self, keep: bool = False) -> None:
        """Ctrl-C: end the running jobs (within STOP_GRACE_S), cancel every one not back; with `keep`,
        the outcomes of those that came back meanwhile kept."""
        with hold_interrupts(), contextlib.suppress(Exception):
            running = stop_tasks(
                self.client, stop_event_name(self.PREFIX, self.run_id), self.pending, self.STOP_GRACE_S
            )
            for future in [f for f in running if keep and f.status == "finished"]:
                attempt = self.pending.pop(future)
                self.outcomes[attempt.job.number] = self.came_back(attempt, future.result())
            self.client.cancel(list(self.pending), force=True)


def elsewhere(client: Any, avoid: str | None) -> dict[str, Any]:
    """client.submit's placement for a task retried after its worker `avoid` died: any other worker
    (any at all where there is none)."""
    others = [w for w in client.scheduler_info(n_workers=-1)["workers"] if w != avoid]
    return {"workers": others, "allow_other_workers": True} if avoid and others else {}


def what_happened(exc: BaseException | None) -> tuple[bool, str | None, str]:
    """Of a failed task: whether its worker died, that worker's address (where Dask knows it), and what
    happened, in words."""
    if isinstance(exc, distributed().KilledWorker):
        worker = getattr(getattr(exc, "last_worker", None), "address", None)
        return True, worker, f"its worker {worker} died while running it"
    return False, None, f"{type(exc).__name__}: {exc}"


def stop_tasks(client: Any, event: str, pending: Collection[Any], grace: float) -> list[Any]:
    """Ctrl-C: set the run's stop event `event` (its workers end their children), cancel the tasks not
    started, and wait up to `grace` seconds for the running ones; those back."""
    distributed().Event(event, client=client).set()
    started = {key for keys in client.processing().values() for key in keys}
    running = [f for f in pending if f.key in started]
    client.cancel([f for f in pending if f.key not in started], force=True)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not all(f.done() for f in running):
        time.sleep(POLL_S)
    return running
