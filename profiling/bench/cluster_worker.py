"""What a cluster worker runs for one share of `memlens bench --cluster` (`run_share`, a Dask task): the
`memlens bench` child that `bench --gpus` runs for one GPU (bench/gpus.child_argv), on the worker's GPU
(collect/cluster_worker.worker_gpu), into a scratch folder there; then the child's bench.json text, its
output and exit code come back to the client as `ShareShipped` (a few KB).

The suite must be at the same path on every worker (or be the built-in one), as for profile --cluster.
The run's stop event (`memlens-bench-stop-<run>`, set by the client on Ctrl-C) ends the child and its
process group; so does the task's end by any other way.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memlens.bench.gpus import child_argv
from memlens.bench.timing import BenchOptions
from memlens.collect.cluster_worker import worker_gpu
from memlens.collect.gpus import Gpu, list_gpus
from memlens.collect.job_runner import stop_event, stop_event_name, wait_child
from memlens.collect.scheduler import host_name
from memlens.errors import MemlensError
from memlens.io.processes import start_command
from memlens.model.run_layout import BENCH
from memlens.selection import select_variants

PREFIX = "memlens-bench"  # the names of a bench run's tasks and stop event (collect/job_runner.py)


@dataclass(frozen=True)
class ShareShipped:
    """One share's outcome as it crosses the network: where it ran (its gpu None where the worker
    found none), the child's bench.json (None where it wrote none), its output, and its exit code
    (None where no child started: then `log` says why)."""

    host: str
    gpu: Gpu | None
    bench: str | None
    log: str
    returncode: int | None

    @property
    def where(self) -> str:
        return f"{self.gpu} on {self.host}" if self.gpu is not None else f"a worker on {self.host}"


def run_share(options: BenchOptions, labels: Sequence[str], run_id: str) -> ShareShipped:
    """Bench the variants `labels` names on this worker's GPU (see the module's notes)."""
    host, gpu = host_name() or "an unnamed host", None
    scratch = Path(tempfile.mkdtemp(prefix="memlens-bench-share-"))
    stop = stop_event(stop_event_name(PREFIX, run_id))
    try:
        gpu = worker_gpu(os.environ.get("CUDA_VISIBLE_DEVICES"), list_gpus(f"a cluster worker on {host}"))
        selection = select_variants(options.suite, options.pattern, options.sizes, options.sweeps, options.small)
        wanted = set(labels)
        share = [v for v in selection.variants if v.label in wanted]
        argv = child_argv(options, selection.suite.path, share, scratch / "out")
        log = scratch / "bench.log"
        process = start_command(argv, env=gpu.environment(), output=log)
        wait_child(process, stop)
        written = sorted((scratch / "out").glob(f"*/{BENCH}"))
        bench = written[0].read_text(encoding="utf-8") if written else None
        output = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        return ShareShipped(host, gpu, bench, output, process.returncode)
    except MemlensError as exc:  # before the child started: the worker's setup (no GPU, no suite)
        return ShareShipped(host, gpu, None, f"memlens: error: {exc}\n", None)
    finally:
        stop.set()  # ends its poller
        shutil.rmtree(scratch, ignore_errors=True)
