"""How long a Dask cluster like `--cluster local`'s takes to start and to close on this host, in variants: a
scheduler in this process and a worker a GPU, each timed to all workers joined, one trivial task, and the close.

    python tests/benchmarks/cluster_start.py [--gpus 2] [--rounds 2]

Each variant and round in a new Python process that has imported Dask (and with it NumPy) and memlens, as
`memlens profile --cluster local` has when it starts its cluster. Not pass/fail: prints a line a variant
and round. Needs memlens[cluster]; no GPU (each worker is only given CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import sys
import time


def spec_cluster(worker_class, method: str, gpus: int):  # noqa: ANN001, ANN201
    """--cluster local's cluster, built here with another worker class or start method."""
    import dask
    import distributed

    def options(index: int) -> dict:
        found = {
            "nthreads": 1,
            "resources": {"GPU": 1},
            "dashboard_address": None,
            "silence_logs": logging.CRITICAL,
            "preload": ["memlens.collect.cluster_worker"],
        }
        if worker_class is distributed.Nanny:
            found["env"] = {"CUDA_VISIBLE_DEVICES": str(index)}
        return found

    workers = {f"gpu{i}": {"cls": worker_class, "options": options(i)} for i in range(gpus)}
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard": False, "dashboard_address": ":0"}}
    settings = {"distributed.diagnostics.nvml": False, "distributed.worker.multiprocessing-method": method}
    with dask.config.set(settings):
        return contextlib.closing(
            distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.CRITICAL)
        )


def memlens_cluster(gpus: int):  # noqa: ANN201
    """What `--cluster local` starts (collect/cluster.local_cluster), on made-up GPUs."""
    from memlens.collect.cluster import local_cluster
    from memlens.collect.gpus import Gpu

    return local_cluster([Gpu(i, "GPU", f"GPU-{i:08d}", f"00000000:{i:02x}:00.0") for i in range(gpus)])


def timed(label: str, started, gpus: int) -> None:  # noqa: ANN001
    import distributed

    began = time.monotonic()
    with started() as cluster:
        up = time.monotonic()
        client = distributed.Client(cluster.scheduler_address, set_as_default=False)
        client.wait_for_workers(gpus)
        joined = time.monotonic()
        client.submit(os.getpid, resources={"GPU": 1}, pure=False).result()
        done = time.monotonic()
        client.close()
        closing = time.monotonic()
    closed = time.monotonic()
    print(
        f"{label:44} cluster {up - began:.2f} s, all workers {joined - began:.2f} s, a task {done - joined:.2f} s, "
        f"close {closed - closing:.2f} s",
        flush=True,
    )


VARIANTS = {
    "forked": "--cluster local's (Nannies, workers forked)",
    "spawned": "Nannies, workers spawned (Dask's default)",
    "threads": "Workers in this process",
}


def one(variant: str, gpus: int) -> None:
    import distributed

    import memlens.collect.cluster  # noqa: F401 - imported, as by memlens profile

    started = {
        "forked": lambda: memlens_cluster(gpus),
        "spawned": lambda: spec_cluster(distributed.Nanny, "spawn", gpus),
        "threads": lambda: spec_cluster(distributed.Worker, "spawn", gpus),
    }[variant]
    timed(VARIANTS[variant], started, gpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variant", choices=VARIANTS, help="one variant, in this process")
    args = parser.parse_args()
    if args.variant:
        one(args.variant, args.gpus)
        return
    for _ in range(args.rounds):
        for variant in VARIANTS:
            command = [sys.executable, __file__, "--variant", variant, "--gpus", str(args.gpus)]
            subprocess.run(command, check=True, timeout=120)


if __name__ == "__main__":  # a spawned worker imports this module again
    main()
