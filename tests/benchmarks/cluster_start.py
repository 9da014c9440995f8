"""How long a Dask cluster like `--cluster local`'s takes to start on this host, in variants: a scheduler in
this process and a worker a GPU (Nanny: a process each), each timed to all workers joined and one trivial task.

    python tests/benchmarks/cluster_start.py [--gpus 2]

Not pass/fail: prints a line a variant. Needs memlens[cluster]; no GPU (each worker is only given
CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import argparse
import logging
import os
import time


def start(label: str, worker_class, preload: list[str], nvml: bool, gpus: int) -> None:  # noqa: ANN001
    import dask
    import distributed

    def options(index: int) -> dict:
        found = {"nthreads": 1, "resources": {"GPU": 1}, "dashboard_address": None,
                 "silence_logs": logging.CRITICAL, "preload": preload}  # fmt: skip
        if worker_class is distributed.Nanny:
            found["env"] = {"CUDA_VISIBLE_DEVICES": str(index)}
        return found

    workers = {f"gpu{i}": {"cls": worker_class, "options": options(i)} for i in range(gpus)}
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard": False, "dashboard_address": ":0"}}
    began = time.monotonic()
    with dask.config.set({"distributed.diagnostics.nvml": nvml}):
        cluster = distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.CRITICAL)
        up = time.monotonic()
        client = distributed.Client(cluster.scheduler_address, set_as_default=False)
        client.wait_for_workers(gpus)
        joined = time.monotonic()
        client.submit(os.getpid, resources={"GPU": 1}, pure=False).result()
        done = time.monotonic()
        client.close()
        cluster.close()
    print(f"{label:42} cluster {up - began:.2f} s, all workers {joined - began:.2f} s, a task {done - joined:.2f} s")


def main() -> None:
    import distributed

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2)
    gpus = parser.parse_args().gpus
    preload = ["memlens.collect.cluster_worker"]
    start("Nanny + preload (--cluster local's)", distributed.Nanny, preload, True, gpus)
    start("Nanny + preload, NVML diagnostics off", distributed.Nanny, preload, False, gpus)
    start("Nanny, no preload, NVML off", distributed.Nanny, [], False, gpus)
    start("Nanny + preload, again", distributed.Nanny, preload, True, gpus)
    start("Worker in this process + preload, NVML off", distributed.Worker, preload, False, gpus)


if __name__ == "__main__":  # the Nannies start their workers by spawning: this module is imported again
    main()
