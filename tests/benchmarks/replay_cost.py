"""What ncu's kernel replay costs each profiled range, and what in the profiled program makes it dearer.
GPU machine with ncu; always --clock-control none.

    python tests/benchmarks/replay_cost.py ranges OUT.json [--lists one,fast,default,full]
    python tests/benchmarks/replay_cost.py state

`ranges`: the suite's profiled program under ncu once per metric list (one metric: one pass; the `--fast`
list; memlens's default list; variants of it without some per-instruction metrics, no_NAME without that
one; `--set full`), each range timed from its start to its end with the device synchronized on both sides:
what profiling that kernel cost, apart from the program's own work. Prints a table, range by range, and
writes it as JSON.

`state`: one transpose (8192 x 8192 fp32, three ranges) under one metric and under the `--fast` list,
with the program holding 2 GiB more device memory, 2,000 small allocations, 1 GiB of page-locked host
memory, a Numba kernel, or 40 more loaded modules. Prints each range's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from memlens.collect.ncu import ProfileRequest, find_ncu, profile_argv  # noqa: E402
from memlens.model.catalogue import ncu_metric_names  # noqa: E402
from memlens.model.ncu_settings import NcuSettings  # noqa: E402
from memlens.model.per_instruction import (  # noqa: E402
    GLOBAL_REQUESTS,
    GLOBAL_SECTORS,
    GLOBAL_SECTORS_IDEAL,
    MEMORY_ACCESS_SIZE,
    MEMORY_ACCESS_TYPE,
    MEMORY_TYPE,
    PER_PC_EXECUTIONS,
)
from memlens.suite import NVTX_DOMAIN  # noqa: E402

ONE = ["gpu__time_duration.sum"]

# The profiled program with each memlens NVTX range timed (device synchronized before and after).
TIMED_PROGRAM = r"""
import contextlib, json, os, sys, time
import nvtx
real = nvtx.annotate
log = open(os.environ["RANGES"], "w")
@contextlib.contextmanager
def annotate(name, domain=None):
    import cupy
    cupy.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    with real(name, domain=domain):
        yield
    cupy.cuda.runtime.deviceSynchronize()
    log.write(json.dumps({"range": name, "s": time.perf_counter() - t0}) + "\n"); log.flush()
nvtx.annotate = annotate
import memlens.collect.profiled_program as pp
sys.exit(pp.main(sys.argv[1:]))
"""

# One transpose, three timed ranges, the program's state set by argv[1].
STATE_PROGRAM = r"""
import sys, time, json, cupy, nvtx, numpy as np
state, n = sys.argv[1], int(sys.argv[2])
k = cupy.RawModule(code=open("kernels/transpose.cu").read()).get_function("transpose_padded")
a = cupy.random.random((n, n), dtype=cupy.float32); out = cupy.empty_like(a)
keep = []
if state == "device_2GiB": keep.append(cupy.ones(2**31 // 4, dtype=cupy.float32))
if state == "allocations_2000": keep += [cupy.ones(4096, dtype=cupy.float32) for _ in range(2000)]
if state == "pinned_1GiB": keep.append(cupy.cuda.alloc_pinned_memory(2**30))
if state == "numba":
    from numba import cuda
    @cuda.jit
    def f(x):
        i = cuda.grid(1)
        if i < x.size: x[i] += 1
    d = cuda.to_device(np.zeros(1 << 20, np.float32)); f[1024, 1024](d); cuda.synchronize(); keep.append(d)
if state == "modules_40":
    for i in range(40):
        m = cupy.RawModule(code=f"extern \"C\" __global__ void g{i}(float* x) {{ x[threadIdx.x] += {i}; }}")
        m.get_function(f"g{i}")((1,), (32,), (a,)); keep.append(m)
args = (a, out, np.int32(n), np.int32(n))
k((n // 32, n // 32), (32, 8), args); cupy.cuda.runtime.deviceSynchronize()
times = []
for i in range(3):
    t0 = time.perf_counter()
    with nvtx.annotate(f"state.r{i}", domain="memlens"):
        k((n // 32, n // 32), (32, 8), args)
    cupy.cuda.runtime.deviceSynchronize(); times.append(time.perf_counter() - t0)
print("RANGES", json.dumps(times))
"""
STATES = (
    ("bare", 8192),
    ("bare", 2048),
    ("device_2GiB", 8192),
    ("allocations_2000", 8192),
    ("pinned_1GiB", 8192),
    ("numba", 8192),
    ("modules_40", 8192),
)


def metric_lists() -> dict[str, list[str]]:
    default = ncu_metric_names()
    static = (MEMORY_TYPE, MEMORY_ACCESS_TYPE, MEMORY_ACCESS_SIZE)
    global_ = (GLOBAL_SECTORS, GLOBAL_SECTORS_IDEAL, GLOBAL_REQUESTS)
    return {
        "one": ["--metrics", ",".join(ONE)],
        "fast": ["--metrics", ",".join(ncu_metric_names(fast=True))],
        "default": ["--metrics", ",".join(default)],
        "no_static3": ["--metrics", ",".join(m for m in default if m not in static)],
        "no_global3": ["--metrics", ",".join(m for m in default if m not in global_)],
        "no_inst_exec": ["--metrics", ",".join(m for m in default if m != PER_PC_EXECUTIONS)],
        **{f"no_{name}": ["--metrics", ",".join(m for m in default if m != name)] for name in static},
        "full": ["--set", "full"],
    }


def ncu_argv(metric_args: list[str], stem: Path, program: list[str]) -> list[str]:
    """memlens's own ncu argv (profile_argv: its NVTX filter, replay and cache options) with `metric_args` for
    its metric list, reporting to `stem`, over `program`."""
    request = ProfileRequest(
        metrics=ONE,
        report=stem,
        log=stem.with_suffix(".log"),
        nvtx_include=f"regex:{NVTX_DOMAIN}@.*/",
        settings=NcuSettings("none"),
    )
    argv = profile_argv(find_ncu(None), request, program)
    at = argv.index("--metrics")
    argv[at : at + 2] = metric_args
    return argv


def ranges(out: Path, names: list[str]) -> None:
    lists, work = metric_lists(), Path(tempfile.mkdtemp(prefix="replay-cost-"))
    program = work / "timed_program.py"
    program.write_text(TIMED_PROGRAM)
    table: dict[str, dict[str, float]] = {}
    for name in names:
        log = work / f"ranges_{name}.jsonl"
        program_argv = [sys.executable, str(program), "--suite", "kernels", "--events", str(work / f"{name}.events")]
        argv = ncu_argv(lists[name], work / name, program_argv)
        t0 = time.time()
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, RANGES=str(log)))
        wall = time.time() - t0
        if done.returncode:
            print(name, "rc", done.returncode, done.stdout[-300:], done.stderr[-300:])
        rows = {json.loads(line)["range"]: json.loads(line)["s"] for line in log.open()}
        rows["_sum_ranges"], rows["_wall"] = sum(rows.values()), wall
        table[name] = rows
        print(f"{name:12} wall {wall:6.2f}  ranges {rows['_sum_ranges']:6.2f}", flush=True)
    keys = list(next(iter(table.values())))
    print(f"{'range':34}" + "".join(f"{n[:11]:>12}" for n in table))
    for key in keys:
        print(f"{key[-34:]:34}" + "".join(f"{table[n].get(key, float('nan')):12.3f}" for n in table))
    out.write_text(json.dumps(table, indent=1))


def state() -> None:
    work = Path(tempfile.mkdtemp(prefix="replay-state-"))
    program = work / "state_program.py"
    program.write_text(STATE_PROGRAM)
    for name, n in STATES:
        cells = []
        for list_name, metrics in (("one", ONE), ("fast", ncu_metric_names(fast=True))):
            stem = work / f"{name}_{n}_{list_name}"
            argv = ncu_argv(["--metrics", ",".join(metrics)], stem, [sys.executable, str(program), name, str(n)])
            done = subprocess.run(argv, capture_output=True, text=True)
            line = [x for x in done.stdout.splitlines() if x.startswith("RANGES")]
            seconds = " ".join(f"{t:.3f}" for t in json.loads(line[0][7:])) if line else f"rc {done.returncode}"
            cells.append(f"{list_name} {seconds}")
        print(f"{name:16} n={n:5}: " + " | ".join(cells), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    by_range = sub.add_parser("ranges")
    by_range.add_argument("out", type=Path)
    by_range.add_argument("--lists", default="one,fast,default,full")
    sub.add_parser("state")
    args = parser.parse_args()
    if args.what == "ranges":
        ranges(args.out, args.lists.split(","))
    else:
        state()
    return 0


if __name__ == "__main__":
    sys.exit(main())
