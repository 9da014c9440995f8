"""Where a `memlens profile` run's start goes (issue 37): runs `python -m memlens ARGS` in this process with
each stage marked, as seconds since this script started and the process id (the forked workers of
`--cluster local` mark theirs too), on stderr; memlens's own output goes on as usual.

    python tests/benchmarks/start_stages.py profile kernels --small --out runs/stages --gpus all
    python tests/benchmarks/start_stages.py profile kernels --small --out runs/stages --cluster local

Marked: each subprocess started (its program and first arguments: nvidia-smi, ncu, git), and the entry
(`>`) and return (`<`) of the collecting stage's steps: listing the GPUs, finding ncu, Dask's import,
waiting for the workers, the suite's import (select), planning the jobs, a job on its worker, reading a
report. A benchmark: it prints, it never fails on a figure.
"""

from __future__ import annotations

import functools
import importlib
import os
import subprocess
import sys
import time

START = time.monotonic()
STAGES = {
    "memlens.collect.cluster": ["select", "list_gpus", "find_ncu", "_distributed", "_wait_for_gpus", "profile_jobs"],
    "memlens.collect.scheduler": ["plan_jobs", "run_job"],
    "memlens.collect.cluster_worker": ["run_remote"],
    "memlens.collect.profile_run": ["collect"],
}


def mark(what: str) -> None:
    print(f"{time.monotonic() - START:7.3f} {os.getpid()} {what}", file=sys.__stderr__, flush=True)


def marked(module_name: str, name: str) -> None:
    """Replace `module.name` by a function that marks its entry and return."""
    module = importlib.import_module(module_name)
    original = getattr(module, name)
    short = f"{module_name.rsplit('.', 1)[-1]}.{name}"

    @functools.wraps(original)  # a job's function pickles by name, as before
    def stage(*args, **kwargs):
        mark(f"> {short}")
        try:
            return original(*args, **kwargs)
        finally:
            mark(f"< {short}")

    setattr(module, name, stage)


def main() -> int:
    popen = subprocess.Popen.__init__

    def started(self, args, *rest, **kwargs):
        shown = [os.path.basename(str(args[0])), *map(str, args[1:3])] if isinstance(args, (list, tuple)) else [args]
        mark("popen " + " ".join(shown))
        popen(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = started  # type: ignore[method-assign]
    for module_name, names in STAGES.items():
        for name in names:
            marked(module_name, name)
    mark("memlens imported")
    from memlens.cli import main as memlens_main

    code = memlens_main(sys.argv[1:])
    mark("memlens done")
    return code


if __name__ == "__main__":
    sys.exit(main())
