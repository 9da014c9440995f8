"""`memlens bench --cluster ADDRESS|local`: the variants shared out as `bench --gpus` shares them
(bench/gpus.shares_of), in as many shares as the Dask cluster has GPU slots, each share a task that
needs the resource `GPU=1` (collect/cluster.py's cluster: `local` is one worker per GPU of this host).
The worker runs the share's `memlens bench` child on its GPU (bench/cluster_worker.run_share) and ships
back its bench.json, output and exit code; the run directory gets them as `bench.job<n>.json` and
`bench.job<n>.log` (new files, never written over) and one merged bench.json, as bench --gpus makes.

Faults: a share whose worker dies is submitted once more, to another worker where there is one; should
that die too, or the scheduler go away, its variants are failures saying so. Ctrl-C (or SIGTERM) sets
the run's stop event, which ends the running children (waited for up to STOP_GRACE_S), cancels the
rest and keeps only the shares that had come back whole.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memlens.bench.cluster_worker import ShareShipped, run_share, stop_event_name
from memlens.bench.gpus import Part, failed_share, merge_parts, shares_of
from memlens.bench.results import BenchFailure, BenchResults, load_bench
from memlens.bench.timing import BenchOptions, check_options
from memlens.collect.cluster import connect, elsewhere, gpu_slots, stop_tasks, what_happened
from memlens.collect.run_dir import new_run_dir, now
from memlens.errors import OutputError
from memlens.io.files import write_new_bytes
from memlens.io.processes import hold_interrupts, sigterm_as_interrupt
from memlens.suite import Variant, select_variants

STOP_GRACE_S = 15.0  # after Ctrl-C, for the running children to be ended
POLL_S = 0.2


@dataclass
class _Share:
    number: int
    variants: list[Variant]
    attempt: int = 0  # 0, then 1 for the retry
    history: list[str] = field(default_factory=list)


def bench_on_cluster(options: BenchOptions, address: str) -> tuple[Path, BenchResults]:
    """Bench the selection on the cluster at `address` (or `local`): one run directory."""
    check_options(options)  # a usage error is exit 2 before anything starts
    selection = select_variants(options.suite, options.pattern, options.sizes, options.sweeps, options.small)
    if options.suite is not None:  # the workers find the suite at the same path
        options = replace(options, suite=str(Path(options.suite).resolve()))
    if options.into is not None:
        _refuse_existing(options.into)
    with connect(address) as client:
        count = gpu_slots(client)
        shares = [_Share(n, s) for n, s in enumerate(s for s in shares_of(selection, options.small, count) if s)]
        run_dir = options.into if options.into is not None else new_run_dir(options.out_dir)
        started = now()
        parts = _run(client, options, shares, run_dir)
    return run_dir, merge_parts(options, selection, parts, run_dir, started)


def _files(run_dir: Path, number: int) -> tuple[Path, Path]:
    return run_dir / f"bench.job{number}.json", run_dir / f"bench.job{number}.log"


def _refuse_existing(run_dir: Path) -> None:
    """A run directory that holds an earlier bench --cluster's files: never written over."""
    earlier = sorted(run_dir.glob("bench.job*"))
    if earlier:
        raise OutputError(f"{earlier[0]}: exists (from an earlier bench --cluster); bench into another run")


def _run(client: Any, options: BenchOptions, shares: list[_Share], run_dir: Path) -> list[Part]:
    run_id = uuid.uuid4().hex[:12]
    pending = {_submit(client, options, run_id, share): share for share in shares}
    parts: dict[int, Part] = {}
    try:
        with sigterm_as_interrupt():
            while pending:
                done = [future for future in pending if future.done()]
                for future in done:
                    _take(client, future, pending.pop(future), pending, parts, options, run_id, run_dir)
                if not done:
                    time.sleep(POLL_S)
    except KeyboardInterrupt:
        _stop(client, run_id, pending)
        raise KeyboardInterrupt(f"{len(parts)} of {len(shares)} shares had finished (their bench.job files are in "
                                f"{run_dir}); no bench.json written") from None  # fmt: skip
    except BaseException:  # a share's files could not be written: the others stopped too
        _stop(client, run_id, pending)
        raise
    return [parts[share.number] for share in shares]


def _submit(client: Any, options: BenchOptions, run_id: str, share: _Share, avoid: str | None = None) -> Any:
    key = f"memlens-bench-{run_id}-job{share.number}-try{share.attempt}"
    labels = [v.label for v in share.variants]
    return client.submit(run_share, options, labels, run_id, key=key, resources={"GPU": 1}, pure=False,
                         **elsewhere(client, avoid))  # fmt: skip


def _take(client: Any, future: Any, share: _Share, pending: dict, parts: dict, options: BenchOptions,
          run_id: str, run_dir: Path) -> None:  # fmt: skip
    """A share that came back: its files written and its part kept; a dead worker's share retried once."""
    if future.status == "finished":
        parts[share.number] = _part(future.result(), share, run_dir)
        return
    if future.status != "error":  # cancelled or lost: the scheduler went away
        share.history.append(f"attempt {share.attempt + 1}: the scheduler went away")
    else:
        killed, worker, what = what_happened(future.exception())
        share.history.append(f"attempt {share.attempt + 1}: {what}")
        if killed and share.attempt == 0:
            share.attempt = 1
            pending[_submit(client, options, run_id, share, avoid=worker)] = share
            return
    message = f"job {share.number} failed: {'; '.join(share.history)}"
    parts[share.number] = [BenchFailure(v.family.name, v.name, "failed", message) for v in share.variants]


def _part(shipped: ShareShipped, share: _Share, run_dir: Path) -> Part:
    """One share's bench results (its bench.json kept as bench.job<n>.json), or, where it wrote none,
    a failure for each of its variants naming where it ran and its log."""
    bench, log = _files(run_dir, share.number)
    _write_new(log, shipped.log)
    if shipped.bench is None:
        return failed_share(share.variants, shipped.where, log, shipped.returncode)
    _write_new(bench, shipped.bench)
    return load_bench(bench)


def _write_new(path: Path, text: str) -> None:
    try:
        write_new_bytes(path, text.encode("utf-8"))
    except OSError as exc:
        raise OutputError(f"{path}: cannot write it ({exc.strerror or exc})") from None


def _stop(client: Any, run_id: str, pending: Collection[Any]) -> None:
    """Ctrl-C: end the running children (within STOP_GRACE_S), cancel every share not back."""
    with hold_interrupts(), contextlib.suppress(Exception):
        stop_tasks(client, stop_event_name(run_id), pending, STOP_GRACE_S)
        client.cancel(list(pending), force=True)
