"""Time `memlens metrics` on a recording of many kernel launches (record_many.py's), on any machine:
no GPU and no ncu needed. Target: at most 2 s for 1,000 launches.

    python tests/benchmarks/read_many.py PATH [PATH ...] [--rounds N] [--json OUT] [--profile]

For each PATH (a .ncu-rep or ncu CSV): seconds of the reader alone (profiling.readers.read_report),
of `memlens metrics PATH --json` and of `memlens metrics PATH` (the table), each through
profiling.cli.main in this process with its output discarded. The first round pays the imports
(ncu_report's included), so it is reported apart from the median of the rounds after it.
--profile adds a cProfile of one `--json` run: the functions with the most cumulative time.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from profiling.cli import main as memlens  # noqa: E402
from profiling.fileio import write_json_atomic  # noqa: E402
from profiling.readers import read_report  # noqa: E402

TARGET_SECONDS = 2.0


def seconds_of(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        action()
    return time.perf_counter() - started


def cli(*argv: str) -> Callable[[], object]:
    def run() -> None:
        code = memlens(list(argv))
        if code != 0:
            raise SystemExit(f"memlens {' '.join(argv)} exited with code {code}")

    return run


def measure(path: Path, rounds: int) -> dict:
    steps = {
        "reader": lambda: read_report(path),
        "metrics_json": cli("metrics", str(path), "--json"),
        "metrics_table": cli("metrics", str(path)),
    }
    kernels = len(read_report(path).kernels) if rounds else 0
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds + 1):  # the first round is the cold one
        for name, action in steps.items():
            times[name].append(seconds_of(action))
    return {
        "path": str(path),
        "kernels": kernels,
        "first_seconds": {name: values[0] for name, values in times.items()},
        "median_seconds": {name: statistics.median(values[1:]) for name, values in times.items()},
        "seconds": times,
    }


def profile(path: Path, top: int = 25) -> str:
    profiler = cProfile.Profile()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        profiler.runcall(cli("metrics", str(path), "--json"))
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(top)
    return text.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, help="recordings: .ncu-rep or ncu CSV")
    parser.add_argument("--rounds", type=int, default=3, help="warm rounds after the first (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one --json run per path")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    results = [measure(path, args.rounds) for path in args.paths]
    for result in results:
        print(f"{result['path']}: {result['kernels']} kernels; seconds, first (cold) / median of {args.rounds} warm:")
        for name, median in result["median_seconds"].items():
            verdict = "" if name == "reader" else f"  (target <= {TARGET_SECONDS:g} s: "
            verdict += "" if name == "reader" else ("met)" if median <= TARGET_SECONDS else "NOT met)")
            print(f"  {name:14} {result['first_seconds'][name]:7.3f} / {median:7.3f}{verdict}")
    if args.json:
        write_json_atomic(args.json, {"benchmark": "read_many", "target_seconds": TARGET_SECONDS, "results": results})
        print(f"written: {args.json}")
    if args.profile:
        for path in args.paths:
            print(f"\n--- cProfile of `memlens metrics {path} --json` ---\n{profile(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
