"""Record, on a GPU machine with ncu, a report of many kernel launches for read_many.py: a tiny
kernel launched N times (default 1000), each launch in its own memlens NVTX range
"many.launch0000", "many.launch0001", ..., profiled by ncu with memlens's own argv and the
catalogue's metric list minus the instrumented metrics (to keep it quick; --lines: with them, the
per-instruction figures `memlens lines` reads), --clock-control none.

    python tests/benchmarks/record_many.py OUT_DIR [--launches N] [--ncu PATH]
    python tests/benchmarks/record_many.py OUT_DIR --program --launches 10000 --kernels 8 [--replay kernel]

--program records what `memlens profile -- COMMAND` makes of a program instead: K kernels of
distinct names (--kernels, default 8), launch i runs kernel i % K inside the default-domain ranges
"step<i // K>" > "many/k<i % K>", selected by memlens's default program filters; its report groups
into the family "many" with K variants of N / K launches each.

--replay picks ncu's replay mode, which sets what a launch costs to record:
- application (the default here): ncu runs the whole program once per replay pass and collects each
  pass's counters from every launch as it comes; no launch is saved, restored or replayed, so a
  launch costs about what it costs to run under ncu's launch interception, times the passes (the
  metric list minus the instrumented metrics needs few), plus one start of the program per pass.
  Fit for a report meant for reading: the program is deterministic (the same kernels in the same
  order each run, which application replay requires). Measured: 1,000 launches (--program, 8
  kernels) took 105.7 s of ncu on an H200 (2026-11-23), about 0.11 s a launch: not much cheaper
  than kernel replay, so 10,000 launches still take about 18 minutes (run them in the background).
- kernel (what `memlens profile` uses): each launch is replayed in place, its device memory saved
  before and restored between passes: about 0.14 s a launch (1,000 launches took 141.5 s on an H200,
  results/record_many_h200.txt), so 10,000 launches take about 25 minutes, more than one 10-minute
  command (pass --timeout 2400, run it in the background with nohup ... & and wait for many.txt).
many.txt records the replay mode and ncu's seconds.

OUT_DIR (new or empty) receives many.ncu-rep (the raw report), many.csv (`ncu -i many.ncu-rep --csv
--page raw --print-units base`), many.log (ncu's log) and many.txt (GPU, driver, ncu, command, seconds).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from memlens.collect.ncu import (  # noqa: E402
    REPLAY_MODES,
    ProfileRequest,
    check_log,
    find_ncu,
    profile_argv,
    run_ncu,
)
from memlens.collect.program_run import DEFAULT_FILTERS  # noqa: E402
from memlens.collect.run_dir import driver_version  # noqa: E402
from memlens.errors import MemlensError  # noqa: E402
from memlens.io.processes import command_line  # noqa: E402
from memlens.model.catalogue import ncu_metric_names  # noqa: E402
from memlens.model.ncu_settings import NcuSettings  # noqa: E402
from memlens.readers import read_report  # noqa: E402
from memlens.suite import NVTX_DOMAIN  # noqa: E402

FAMILY = "many"
STEM = "many"
ELEMENTS = 1024
KERNEL = r"""
extern "C" __global__ void many_scale(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


def range_name(index: int) -> str:
    return f"{FAMILY}.launch{index:04d}"


def app(launches: int, kernels: int = 0) -> int:
    """The profiled program: one launch per NVTX range, the kernels compiled outside any range.
    kernels = 0: the suite layout (memlens domain); K > 0: the program layout (see --program)."""
    import cupy
    import numpy as np
    import nvtx

    names = [f"many_scale_{j}" for j in range(max(kernels, 1))]
    source = "\n".join(KERNEL.replace("many_scale", name) for name in names)
    compiled = [cupy.RawModule(code=source).get_function(name) for name in names]
    x = cupy.random.random(ELEMENTS, dtype=cupy.float32)
    y = cupy.full_like(x, np.nan)
    grid, block = (ELEMENTS // 256,), (256,)
    for kernel in compiled:
        kernel(grid, block, (y, x, np.int32(ELEMENTS)))
    cupy.cuda.runtime.deviceSynchronize()
    for index in range(launches):
        if kernels:
            with nvtx.annotate(f"step{index // kernels}"), nvtx.annotate(f"{FAMILY}/k{index % kernels}"):
                compiled[index % kernels](grid, block, (y, x, np.int32(ELEMENTS)))
            continue
        with nvtx.annotate(range_name(index), domain=NVTX_DOMAIN):
            compiled[0](grid, block, (y, x, np.int32(ELEMENTS)))
    cupy.cuda.runtime.deviceSynchronize()
    if not bool((y == 2 * x).all()):
        print("record_many: wrong result", file=sys.stderr)
        return 1
    return 0


def record(
    out: Path,
    launches: int,
    ncu_path: str | None,
    timeout: float,
    kernels: int = 0,
    replay: str = "application",
    lines: bool = False,
) -> int:
    ncu = find_ncu(ncu_path)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        sys.exit(f"record_many: {out} is not empty (ncu never overwrites a report here)")
    request = ProfileRequest(
        metrics=ncu_metric_names(fast=not lines),
        report=out / STEM,
        log=out / f"{STEM}.log",
        nvtx_include=DEFAULT_FILTERS if kernels else f"regex:{NVTX_DOMAIN}@.*/",
        settings=NcuSettings("none"),
        replay_mode=replay,
    )
    app_argv = [sys.executable, str(Path(__file__).resolve()), "--app", str(launches), "--kernels", str(kernels)]
    argv = profile_argv(ncu, request, app_argv)
    run = run_ncu(argv, timeout, log=request.log)
    check_log(run.log_text)
    report = out / f"{STEM}.ncu-rep"
    if run.returncode != 0 or not report.exists():
        sys.exit(f"record_many: ncu exited with code {run.returncode}; see {request.log}")
    with (out / f"{STEM}.csv").open("w", encoding="utf-8") as csv_file:
        export = [str(ncu.path), "-i", str(report), "--csv", "--page", "raw", "--print-units", "base"]
        exported = subprocess.run(export, stdout=csv_file, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if exported.returncode != 0:
        sys.exit(f"record_many: {command_line(export)} failed ({exported.returncode}): {exported.stderr.strip()}")
    recorded = read_report(report)  # proves the reader opens it, and names the GPU
    ranges = sum(1 for k in recorded.kernels if k.family == FAMILY)
    notes = [
        f"recorded: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} by tests/benchmarks/record_many.py",
        f"gpu: {recorded.info.gpu_name} (cc {recorded.info.compute_capability})",
        f"driver: {driver_version()}",
        f"ncu: {ncu.version_text}",
        f"launches: {launches}; kernels in the report: {len(recorded.kernels)}, in the {FAMILY} family: {ranges}",
        f"replay: {replay}; per-instruction metrics: {'yes' if lines else 'no'}",
        f"ncu seconds: {run.seconds:.1f}",
        f"command: {command_line(argv)}",
    ]
    (out / f"{STEM}.txt").write_text("\n".join(notes) + "\n", encoding="utf-8")
    print("\n".join(notes[1:8]))
    print(f"written: {report}, {out / f'{STEM}.csv'}")
    return 0 if ranges == launches else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, help="folder to write the recording into (new or empty)")
    parser.add_argument("--launches", type=int, default=1000, help="kernel launches, one per range (default 1000)")
    parser.add_argument("--ncu", help="path of ncu (default: $MEMLENS_NCU or PATH)")
    parser.add_argument("--timeout", type=float, default=540.0, help="seconds before ncu is stopped (default 540)")
    parser.add_argument("--program", action="store_true", help="record the program layout (see above)")
    parser.add_argument("--kernels", type=int, default=8, help="distinct kernels with --program (default 8)")
    parser.add_argument(
        "--replay",
        choices=REPLAY_MODES,
        default="application",
        help="ncu's replay mode (default application: see above)",
    )
    parser.add_argument(
        "--lines",
        action="store_true",
        help="memlens's default list, the instrumented per-instruction metrics too (a pass more)",
    )
    parser.add_argument("--app", type=int, metavar="N", help=argparse.SUPPRESS)  # the profiled program
    args = parser.parse_args()
    if args.app is not None:
        return app(args.app, args.kernels)
    if args.out is None:
        parser.error("OUT_DIR is required")
    if args.program and args.kernels < 1:
        parser.error("--kernels must be at least 1")
    try:
        return record(
            args.out,
            args.launches,
            args.ncu,
            args.timeout,
            args.kernels if args.program else 0,
            args.replay,
            args.lines,
        )
    except MemlensError as exc:
        sys.exit(f"record_many: {exc}")


if __name__ == "__main__":
    sys.exit(main())
