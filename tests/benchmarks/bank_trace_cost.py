"""What `memlens banks -- COMMAND` costs (issue 50: at most 2x the program alone, default warps): wall time of
each program alone and traced, the first traced run apart (it builds the library and the device patch into a
fresh cache) from the warm ones. GPU machine with the CUDA Sanitizer API and nvcc.

    python tests/benchmarks/bank_trace_cost.py [--rounds 3] [--programs probe,suite,train] [--recorded-only]

probe: tests/fixtures/programs/bank_probe.cu built with nvcc; suite: the built-in suite's profiled program at
its small sizes (each variant once after its warm-up, as `memlens profile` runs it); train: a PyTorch training
step loop (tests/benchmarks/train_loop.py --steps 5). Prints each time, the medians and warm/alone; exit code 0
either way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = 2.0


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])}... exited {done.returncode}: {done.stderr[-1500:]}")
    return took


def programs(work: Path, chosen: set[str]) -> dict[str, list[str]]:
    found = {}
    if "probe" in chosen:
        binary = work / "bank_probe"
        source = "tests/fixtures/programs/bank_probe.cu"
        subprocess.run(["nvcc", "-lineinfo", "-arch=sm_90", "-o", str(binary), source], cwd=REPO, check=True)
        found["probe"] = [str(binary)]
    if "suite" in chosen:
        events = str(work / "events.jsonl")
        found["suite"] = [
            sys.executable,
            "-m",
            "memlens.collect.profiled_program",
            "--suite",
            "kernels",
            "--small",
            "--events",
            events,
        ]
    if "train" in chosen:
        found["train"] = [sys.executable, "tests/benchmarks/train_loop.py", "--steps", "5"]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--programs", default="probe,suite,train")
    parser.add_argument(
        "--recorded-only", action="store_true", help="memlens banks --recorded-only (no bank model on every execution)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "MEMLENS_CACHE_DIR": str(work / "cache")}
        for name, argv in programs(work, set(args.programs.split(","))).items():
            mode = ["--recorded-only"] if args.recorded_only else []
            traced = [sys.executable, "-m", "memlens", "banks", *mode, "--out", str(work / f"runs_{name}"), "--", *argv]
            alone = [timed(argv, env) for _ in range(args.rounds)]
            first = timed(traced, env)
            warm = [timed(traced, env) for _ in range(args.rounds)]
            ratio = statistics.median(warm) / statistics.median(alone)
            verdict = "met" if ratio <= TARGET else "NOT met"
            print(
                f"{name}: alone {' '.join(f'{t:.2f}' for t in alone)} s; traced, first (builds) {first:.2f} s, "
                f"warm {' '.join(f'{t:.2f}' for t in warm)} s"
            )
            print(f"  warm / alone {ratio:.2f} (target <= {TARGET}: {verdict})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
