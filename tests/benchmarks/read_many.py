"""Time `memlens metrics` and `memlens report` on a recording of many kernel launches (record_many.py's),
on any machine: no GPU and no ncu needed. Targets, for each output: at most 2 s for 1,000 launches;
at most 5 s and 1 GiB (the peak of the memory of the command and its reader helpers at once) for
10,000 launches.

    python tests/benchmarks/read_many.py PATH [PATH ...] [--rounds N] [--json OUT] [--profile]

For each PATH (a .ncu-rep or ncu CSV):

- end to end: the wall-clock seconds and peak memory (see run_measured) of `python -m memlens metrics PATH`
  (the table), with --json and with --csv, and of `memlens report PATH` (HTML), each in a process of
  its own as a user runs it, stdout to /dev/null (so the table is the one written to a file or a
  pipe), and the ratio of each to its targets;
- phases: in one fresh process a round, the seconds of the imports `memlens` makes before it runs a
  command, of the reader alone (memlens.readers.read_report) and of printing each output from the
  kernels read. Python's own start (`python -c pass`) is measured apart.

Every round is a new process: ncu_report keeps what it decodes for as long as the process lives
(about 0.6 GB per 1,000 launches), so reading a .ncu-rep again in one process is slower each time and
says nothing of a user's run. The first round (cold files, no .pyc written yet) is reported apart
from the median of the rounds after it. --profile adds a cProfile of each output in this process:
the functions with the most cumulative time.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET_SECONDS = 2.0  # for 1,000 launches
TARGET_SECONDS_10K = 5.0  # for 10,000 launches (issue 12)
TARGET_BYTES_10K = 1 << 30
OUTPUTS = {"table": (), "json": ("--json",), "csv": ("--csv",)}
PHASES = ("imports", "reader", *OUTPUTS)


def targets(kernels: int) -> tuple[float, int | None]:
    """Seconds and peak bytes a run of `kernels` launches may take: 2 s up to 1,000 launches, 5 s and
    1 GB up to 10,000 (a straight line between)."""
    if kernels <= 1000:
        return TARGET_SECONDS, None
    share = min(1.0, (kernels - 1000) / 9000)
    return TARGET_SECONDS + share * (TARGET_SECONDS_10K - TARGET_SECONDS), TARGET_BYTES_10K


def run_measured(argv: list[str]) -> tuple[float, int, int]:
    """Wall-clock seconds, peak resident bytes of its largest process (Linux ru_maxrss: what
    `/usr/bin/time -v` prints) and the peak of the proportional set size summed over the process and
    its helpers (sampled every 50 ms: shared pages counted once) of one run of argv."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree_peak = [0]
    sampler = threading.Thread(target=_sample_tree, args=(process.pid, tree_peak), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with code {process.returncode}: {stderr.strip()}")
    return seconds, usage.ru_maxrss * 1024, tree_peak[0]


def _sample_tree(root: int, peak: list[int]) -> None:
    """Keeps in peak[0] the largest sum of Pss over `root` and its descendants, until root exits."""
    while os.path.exists(f"/proc/{root}/smaps_rollup"):
        pids, total = [root], 0
        while pids:
            pid = pids.pop()
            with contextlib.suppress(OSError, ValueError):
                with open(f"/proc/{pid}/smaps_rollup") as rollup:
                    total += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:")) * 1024
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as children:
                        pids += [int(child) for child in children.read().split()]
        peak[0] = max(peak[0], total)
        time.sleep(0.05)


def wall(argv: list[str]) -> float:
    return run_measured(argv)[0]


def summary(seconds: list[float]) -> dict:
    return {"first": seconds[0], "median": statistics.median(seconds[1:]), "seconds": seconds}


def end_to_end(argv: list[str], rounds: int) -> dict:
    runs = [run_measured(argv) for _ in range(rounds + 1)]
    figures = summary([seconds for seconds, _, _ in runs])
    figures["peak_bytes"] = max(peak for _, peak, _ in runs)
    figures["tree_peak_bytes"] = max(tree for _, _, tree in runs)
    return figures


def phases(path: Path) -> dict:
    """The phases of one run, in this (fresh) process; what --phases prints."""
    sys.path.insert(0, str(REPO))
    started = time.perf_counter()
    from memlens.cli import build_parser

    build_parser()  # imports every command, as `memlens` does before it runs one
    seconds = {"imports": time.perf_counter() - started}
    from memlens.commands.metrics import render
    from memlens.readers import read_report

    started = time.perf_counter()
    results = read_report(path)
    seconds["reader"] = time.perf_counter() - started
    kernels = list(results.kernels)
    for output in OUTPUTS:
        started = time.perf_counter()
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            render(results, kernels, output)
        seconds[output] = time.perf_counter() - started
    return {"kernels": len(kernels), "seconds": seconds}


def measure(path: Path, rounds: int, report_dir: Path) -> dict:
    memlens = [sys.executable, "-m", "memlens", "metrics", str(path)]
    commands = {name: memlens + list(flags) for name, flags in OUTPUTS.items()}
    commands["report"] = [
        sys.executable,
        "-m",
        "memlens",
        "report",
        str(path),
        "-o",
        str(report_dir / f"{path.name}.html"),
    ]
    measured = {name: end_to_end(argv, rounds) for name, argv in commands.items()}
    runs = []
    for _ in range(rounds + 1):
        child = [sys.executable, str(Path(__file__).resolve()), "--phases", str(path)]
        done = subprocess.run(child, cwd=REPO, capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    seconds_target, bytes_target = targets(runs[0]["kernels"])
    for figures in measured.values():
        figures["target_seconds"], figures["target_bytes"] = seconds_target, bytes_target
        figures["ratio_to_target"] = figures["median"] / seconds_target
    return {
        "path": str(path),
        "kernels": runs[0]["kernels"],
        "end_to_end": measured,
        "phases": {name: summary([run["seconds"][name] for run in runs]) for name in PHASES},
    }


def profile(path: Path, output: str, top: int = 20) -> str:
    sys.path.insert(0, str(REPO))
    from memlens.cli import main as memlens

    profiler = cProfile.Profile()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        profiler.runcall(memlens, ["metrics", str(path), *OUTPUTS[output]])
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(top)
    return text.getvalue()


def report(results: list[dict], python: float, rounds: int) -> None:
    print(f"python start (python -c pass): {python:.3f} s")
    for result in results:
        print(f"{result['path']}: {result['kernels']} kernels; seconds, first (cold) / median of {rounds}")
        print("  memlens metrics (table, json, csv) and report, end to end (a process each); peak memory of")
        print("  all its processes at once (and of the largest, ru_maxrss):")
        for name, figures in result["end_to_end"].items():
            met = figures["median"] <= figures["target_seconds"] and (
                figures["target_bytes"] is None or figures["tree_peak_bytes"] <= figures["target_bytes"]
            )
            limit = f"{figures['target_seconds']:g} s" + (
                f", {figures['target_bytes'] / 2**30:g} GiB" if figures["target_bytes"] else ""
            )
            print(
                f"    {name:8} {figures['first']:7.3f} / {figures['median']:7.3f}   "
                f"{figures['ratio_to_target']:5.2f} x target  {figures['tree_peak_bytes'] / 2**20:6.0f} MiB "
                f"({figures['peak_bytes'] / 2**20:5.0f} MiB)  "
                f"target {limit}: {'met' if met else 'NOT met'}"
            )
        print("  phases (one process a round; imports = memlens's before the command runs):")
        for name, figures in result["phases"].items():
            print(f"    {name:8} {figures['first']:7.3f} / {figures['median']:7.3f}")


def chunking(path: Path, settings: list[tuple[int, int]], rounds: int) -> list[dict]:
    """`memlens metrics PATH` (the table) with the chunked reader's settings (readers/ncu_rep.py's
    IN_FLIGHT_ACTIONS and MAX_HELPERS) in place of its defaults: seconds and memory of each round."""
    figures = []
    for in_flight, most in settings:
        code = (
            f"from memlens.readers import ncu_rep; ncu_rep.IN_FLIGHT_ACTIONS = {in_flight}; "
            f"ncu_rep.MAX_HELPERS = {most}; "
            f"from memlens.cli import main; main(['metrics', {str(path)!r}])"
        )
        for _ in range(rounds):
            seconds, peak, tree = run_measured([sys.executable, "-c", code])
            figures.append(
                {
                    "in_flight": in_flight,
                    "max_helpers": most,
                    "seconds": seconds,
                    "peak_bytes": peak,
                    "tree_peak_bytes": tree,
                }
            )
            print(
                f"  in flight {in_flight:5}, helpers at most {most:2}: {seconds:6.2f} s  "
                f"all processes {tree / 2**20:5.0f} MiB (largest {peak / 2**20:5.0f} MiB)",
                flush=True,
            )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, help="recordings: .ncu-rep or ncu CSV")
    parser.add_argument("--rounds", type=int, default=3, help="rounds after the first (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of each output per path")
    parser.add_argument(
        "--chunking",
        metavar="IN_FLIGHTxHELPERS,...",
        help="instead: time `memlens metrics` on each .ncu-rep with these settings of the "
        "chunked reader, e.g. 800x16,1000x8 (in-flight actions x helpers at most), "
        "--rounds each",
    )
    parser.add_argument("--phases", action="store_true", help=argparse.SUPPRESS)  # the child of measure()
    args = parser.parse_args()
    if args.phases:
        print(json.dumps(phases(args.paths[0])))
        return 0
    if args.chunking:
        try:
            settings = [tuple(int(n) for n in item.split("x")) for item in args.chunking.split(",")]
        except ValueError:
            parser.error(f"--chunking {args.chunking!r}: write IN_FLIGHTxHELPERS,... e.g. 800x16,1000x8")
        if any(len(setting) != 2 or min(setting) < 1 for setting in settings):
            parser.error(f"--chunking {args.chunking!r}: two positive numbers a setting, e.g. 800x16")
        for path in args.paths:
            print(f"{path}: chunked reading, {args.rounds} round(s) a setting")
            figures = chunking(path.resolve(), settings, args.rounds)  # type: ignore[arg-type]
            if args.json:
                sys.path.insert(0, str(REPO))
                from tests.support.json_file import write_json

                write_json(args.json, {"benchmark": "read_many --chunking", "path": str(path), "runs": figures})
        return 0
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    paths = [path.resolve() for path in args.paths]
    python = statistics.median(wall([sys.executable, "-c", "pass"]) for _ in range(3))
    with tempfile.TemporaryDirectory() as report_dir:
        results = [measure(path, args.rounds, Path(report_dir)) for path in paths]
    report(results, python, args.rounds)
    if args.json:
        sys.path.insert(0, str(REPO))
        from tests.support.json_file import write_json

        write_json(
            args.json,
            {
                "benchmark": "read_many",
                "target_seconds": TARGET_SECONDS,
                "target_seconds_10k": TARGET_SECONDS_10K,
                "target_bytes_10k": TARGET_BYTES_10K,
                "python_seconds": python,
                "rounds": args.rounds,
                "results": results,
            },
        )
        print(f"written: {args.json}")
    if args.profile:
        for path in paths:
            for output in OUTPUTS:
                print(f"\n--- cProfile of `{' '.join(['memlens', 'metrics', str(path), *OUTPUTS[output]])}` ---")
                print(profile(path, output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
