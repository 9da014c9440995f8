"""`memlens bench --cluster ADDRESS|local`: the variants shared out as `bench --gpus` shares them
(bench/gpus.shares_of), in as many shares as the Dask cluster has GPU slots, each share a task that
needs the resource `GPU=1` (collect/cluster.py's cluster: `local` is one worker per GPU of this host).
The worker runs the share's `memlens bench` child on its GPU (bench/cluster_worker.run_share) and ships
back its bench.json, output and exit code; the run directory gets them as `bench.job<n>.json` and
`bench.job<n>.log` (new files, never written over) and one merged bench.json, as bench --gpus makes.

The shares run as collect/job_runner.ClusterJobs runs profile --cluster's jobs (BenchJobs). Faults: a
share whose worker dies is submitted once more, to another worker where there is one; should
that die too, or the scheduler go away, its variants are failures saying so. Ctrl-C (or SIGTERM) sets
the run's stop event, which ends the running children (waited for up to STOP_GRACE_S), cancels the
rest and keeps only the shares that had come back whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memlens.bench.cluster_worker import PREFIX, ShareShipped, run_share
from memlens.bench.gpus import ShareResults, failed_share, merge_parts, shares_of
from memlens.bench.results import BenchFailure, BenchResults, load_bench
from memlens.bench.timing import BenchOptions, check_options
from memlens.collect.cluster import connect, gpu_slots
from memlens.collect.job_runner import Attempt, ClusterJobs
from memlens.collect.run_dir import new_run_dir, now
from memlens.errors import OutputError
from memlens.io.files import write_new_bytes
from memlens.selection import select_variants
from memlens.suite import Variant

STOP_GRACE_S = 15.0  # after Ctrl-C, for the running children to be ended


@dataclass(frozen=True)
class Share:
    """One job of the run: a share of the variants."""

    number: int
    variants: list[Variant]


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
        shares = [Share(n, s) for n, s in enumerate(s for s in shares_of(selection, options.small, count) if s)]
        run_dir = options.into if options.into is not None else new_run_dir(options.out_dir)
        started = now()
        parts = BenchJobs(client, options, run_dir, len(shares)).run(shares)
    return run_dir, merge_parts(options, selection, parts, run_dir, started)


def _files(run_dir: Path, number: int) -> tuple[Path, Path]:
    return run_dir / f"bench.job{number}.json", run_dir / f"bench.job{number}.log"


def _refuse_existing(run_dir: Path) -> None:
    """A run directory that holds an earlier bench --cluster's files: never written over."""
    earlier = sorted(run_dir.glob("bench.job*"))
    if earlier:
        raise OutputError(f"{earlier[0]}: exists (from an earlier bench --cluster); bench into another run")


class BenchJobs(ClusterJobs[Share, ShareResults]):
    """A bench run's shares on the cluster: each runs cluster_worker.run_share, its files written into the
    run directory as it comes back; Ctrl-C keeps none (no bench.json is written)."""

    PREFIX, STOP_GRACE_S = PREFIX, STOP_GRACE_S  # the module's

    def __init__(self, client: Any, options: BenchOptions, run_dir: Path, count: int) -> None:
        super().__init__(client)
        self.options, self.run_dir, self.count = options, run_dir, count

    def task(self, attempt: Attempt[Share]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return run_share, (self.options, [v.label for v in attempt.job.variants], self.run_id)

    def came_back(self, attempt: Attempt[Share], shipped: Any) -> ShareResults:
        return _part(shipped, attempt.job, self.run_dir)

    def failed(self, attempt: Attempt[Share]) -> ShareResults:
        share = attempt.job
        message = f"job {share.number} failed: {'; '.join(attempt.history)}"
        return [BenchFailure(v.family.name, v.name, "failed", message) for v in share.variants]

    def interrupted(self) -> BaseException:
        self.stop()
        return KeyboardInterrupt(
            f"{len(self.outcomes)} of {self.count} shares had finished (their bench.job files "
            f"are in {self.run_dir}); no bench.json written"
        )


def _part(shipped: ShareShipped, share: Share, run_dir: Path) -> ShareResults:
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
