"""Time what memlens does per kernel after the reader, for many kernels, on any machine: the
kernels of a recorded fixture copied N times (new launch ids, program labels "step<i // 8> >
many/k<i % 8>" as record_many.py's --program layout gives), then printed as `memlens metrics` prints
them (table, --json, --csv) and built into the HTML report, each in a process of its own:

    python tests/benchmarks/render_many.py [--kernels 10000] [--fixture PATH]

Prints the seconds and the peak resident memory of each output (the fixture's reading included,
a few tens of ms). What it leaves out is reading a report of that many launches (read_many.py on a
recording from record_many.py measures that). Not a test: figures, no verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "nvidia_h200" / "suite_fast.ncu-rep"
OUTPUTS = ("table", "json", "csv", "report")


def render(fixture: Path, count: int, output: str) -> None:
    """The child: one output of `count` kernels made from the fixture's, to /dev/null."""
    sys.path.insert(0, str(REPO))
    from memlens.readers import read_report

    base = read_report(fixture, instructions=output == "report")
    recorded = base.kernels
    kernels = tuple(
        replace(
            recorded[i % len(recorded)],
            launch_id=i,
            family="many",
            variant=f"k{i % 8}",
            nvtx=f"step{i // 8} > many/k{i % 8}",
        )
        for i in range(count)
    )
    results = replace(base, kernels=kernels)
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        if output == "report":
            from memlens.output import render_report
            from memlens.reports.build import build_report

            render_report(build_report([(str(fixture), results)], [None], [None]), "html")
        else:
            from memlens.commands.metrics import render as render_metrics
            from memlens.reports.verdicts import local_memory_causes

            causes = local_memory_causes(fixture, list(kernels))
            render_metrics(results, list(kernels), output, causes)


def measure(fixture: Path, count: int, output: str) -> tuple[float, int]:
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        output,
        "--kernels",
        str(count),
        "--fixture",
        str(fixture),
    ]
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=REPO)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"render_many: {output} failed")
    return time.perf_counter() - started, usage.ru_maxrss * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=10000, help="kernels to print (default 10000)")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="a recorded .ncu-rep (default suite_fast)")
    parser.add_argument("--child", choices=OUTPUTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        render(args.fixture, args.kernels, args.child)
        return 0
    print(f"{args.kernels} kernels copied from {args.fixture.name}: seconds and peak memory a process")
    for output in OUTPUTS:
        seconds, peak = measure(args.fixture, args.kernels, output)
        print(f"  {output:7} {seconds:6.2f} s  {peak / 2**20:6.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
