"""The transpose sweep of RESULTS.md (35 cases then, 40 with today's suite:
`memlens profile kernels --sweep transpose.rows=2048,4096,8192,16384`)
on one GPU, with `--gpus all` and with `--cluster local`: wall time of each, and whether the deterministic
counters (exact excess wavefronts, local-memory instructions) of every case are the same in all three.

    python tests/benchmarks/sweep_backends.py OUT.json [--rounds 2] [--steps one,gpus,cluster] [--again]
        [--sweep ITEM ...]

Each step is a `python -m memlens profile ... --clock-control none` subprocess into a folder of its own;
the first round warms the kernel caches. Target (issue 37): two GPUs at most 0.6x one GPU's time through
either backend. Not pass/fail: prints the table and writes it as JSON. With --again, one more round of
each step into the folder of its last round (`<step>+again`): the split of several GPUs then balances on
that run's measured seconds, as a sweep repeated into the same --out does.

Where the time goes, for each ncu run of a step (from the program's event times and the run directory's
files): `start` from memlens's start to the profiled program's plan (memlens, ncu and the program
starting, the suite imported), `cases` from the plan to its last case done (ncu's replays included),
`end` from there to the raw report written (the program and ncu exiting), then `read` up to results.json
(the report read and merged; one figure for the step).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SWEEP = ["--sweep", "transpose.rows=2048,4096,8192,16384"]  # the whole suite
STEPS = {"one": [], "gpus": ["--gpus", "all"], "cluster": ["--cluster", "local"]}
KEYS = ("exact_excess_wavefronts_ld", "exact_excess_wavefronts_st", "local_ld_instructions", "local_st_instructions")


def run(step: str, out: Path, sweep: list[str]) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    argv = [
        sys.executable,
        "-m",
        "memlens",
        "profile",
        str(REPO / "kernels"),
        *sweep,
        "--out",
        str(out),
        "--clock-control",
        "none",
        *STEPS[step],
    ]
    started, wall = time.monotonic(), time.time()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1200)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{step}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    data = json.loads((out / "latest" / "results.json").read_text())
    figures = {
        f"{k['family']}/{k['variant']}/{k['kernel']}": [k["raw"].get(key) for key in KEYS] for k in data["kernels"]
    }
    return seconds, figures, phases((out / "latest").resolve(), wall)


def phases(run: Path, wall: float) -> dict:
    """Each ncu run's phases (the module's notes), in seconds from memlens's start."""
    runs = {}
    for events_file in sorted(run.glob("events*.jsonl")):
        events = [json.loads(line) for line in events_file.read_text().splitlines() if line.strip()]
        tag = events_file.name.removeprefix("events").removesuffix(".jsonl").lstrip(".") or "one"
        report = next(iter(run.glob(f"profile{'.' + tag if tag != 'one' else ''}.ncu-rep")), None)
        plan = next(e["time"] for e in events if e["event"] == "plan")
        last = max(e["time"] for e in events if e["event"] == "done")
        written = report.stat().st_mtime if report else last
        runs[tag] = {
            "cases": sum(e["event"] == "done" for e in events),
            "start": round(plan - wall, 2),
            "cases_s": round(last - plan, 2),
            "end_s": round(written - last, 2),
            "report_at": round(written - wall, 2),
        }
    saved = (run / "results.json").stat().st_mtime - wall
    return {
        "runs": runs,
        "read_s": round(saved - max(r["report_at"] for r in runs.values()), 2),
        "saved_at": round(saved, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", default="one,gpus,cluster")
    parser.add_argument(
        "--keep-events",
        type=Path,
        metavar="DIR",
        help="keep each step's events files (its cases' times) in DIR/<step><round>",
    )
    parser.add_argument("--again", action="store_true", help="a last round into each step's previous folder")
    parser.add_argument(
        "--sweep", action="append", metavar="ITEM", help=f"memlens profile's --sweep items instead of {SWEEP[1]}"
    )
    args = parser.parse_args()
    steps = args.steps.split(",")
    sweep = [arg for item in args.sweep for arg in ("--sweep", item)] if args.sweep else SWEEP
    rounds = [[(step, f"{step}{r}") for step in steps] for r in range(args.rounds)]
    if args.again:
        rounds.append([(f"{step}+again", f"{step}{args.rounds - 1}") for step in steps if step != "one"])
        steps = [*steps, *(name for name, _ in rounds[-1])]
    seconds: dict[str, list[float]] = {step: [] for step in steps}
    figures: dict[str, dict] = {}
    breakdown: dict[str, list[dict]] = {step: [] for step in steps}
    with tempfile.TemporaryDirectory(prefix="memlens-sweep-") as scratch:
        for round_index, steps_of_round in enumerate(rounds):
            for step, folder in steps_of_round:
                took, figures[step], where = run(step.removesuffix("+again"), Path(scratch) / folder, sweep)
                if args.keep_events:
                    kept_dir = args.keep_events / f"{folder}{'+again' if step.endswith('+again') else ''}"
                    kept_dir.mkdir(parents=True, exist_ok=True)
                    for events in (Path(scratch) / folder / "latest").glob("events*.jsonl"):
                        shutil.copy(events, kept_dir / events.name)
                seconds[step].append(took)
                breakdown[step].append(where)
                print(f"round {round_index + 1} {step}: {took:.1f} s, {len(figures[step])} kernels", file=sys.stderr)
                for tag, phase in where["runs"].items():
                    print(
                        f"  {tag:6} {phase['cases']:3} cases: start {phase['start']:5.1f} s, "
                        f"cases {phase['cases_s']:5.1f} s, end {phase['end_s']:4.1f} s",
                        file=sys.stderr,
                    )
                print(f"  read {where['read_s']:.1f} s, saved at {where['saved_at']:.1f} s", file=sys.stderr)
    kept = {step: statistics.median(times[1:] or times) for step, times in seconds.items()}  # warm rounds
    same = all(figures[step] == figures[steps[0]] for step in steps)
    rows = {
        step: {
            "seconds": kept[step],
            "rounds": seconds[step],
            "phases": breakdown[step],
            "of_one_gpu": kept[step] / kept["one"] if "one" in kept else None,
        }
        for step in steps
    }
    for step, row in rows.items():
        ratio = f"{row['of_one_gpu']:.2f}x one GPU" if row["of_one_gpu"] else ""
        print(f"{step:8} {row['seconds']:7.1f} s  {ratio}")
    print(f"deterministic counters identical in every step: {same}")
    args.out.write_text(
        json.dumps(
            {"steps": rows, "same_counters": same, "cases": len(figures[steps[0]]), "command": " ".join(sys.argv)},
            indent=1,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
