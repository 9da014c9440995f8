"""memlens's own start before ncu (issue 27, item 5): how long `memlens profile -- COMMAND` takes from
its start to the moment it starts ncu, and what it imports by then.

    python tests/benchmarks/start_time.py [--rounds 5] [--ncu PATH] [--json OUT]

Three figures, each the median of --rounds runs (a first, untimed run warms the file cache):

    help      wall clock of `python -m memlens profile --help` (the imports of the profile command)
    to_ncu    wall clock from starting `python -m memlens profile --out TMP -- true` to the profiling
              ncu's start: the ncu given (--ncu, else the one memlens finds; with none, a stand-in that
              answers --version and exits) is wrapped in a script that writes the time it starts, so
              this counts memlens's imports, its `ncu --version` query and building the command
    version   wall clock of `ncu --version` alone (part of to_ncu; 0 for the stand-in)

and the modules `python -X importtime` says `memlens profile --help` imports, the 12 slowest. Target
(issue 27): to_ncu under 0.15 s on the H100 host. A benchmark: exit code 0 whatever the figures.
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
TARGET_S = 0.15
STAND_IN = """#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.3.1.0 (build 0) (public-release)"
fi
exit 0
"""


def main() -> int:
    args = parse_args()
    python = sys.executable
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryDirectory(prefix="memlens-start-") as tmp:
        work = Path(tmp)
        real = args.ncu or os.environ.get("MEMLENS_NCU") or shutil.which("ncu")
        if real is None:
            real = str(work / "stand-in-ncu")
            Path(real).write_text(STAND_IN)
            os.chmod(real, 0o755)
        stamps = work / "stamps"
        wrapper = work / "ncu"
        wrapper.write_text(
            f'#!/bin/sh\n[ "$1" = "--version" ] || python3 -c "import time; print(time.time())" '
            f'>> {stamps}\nexec {real} "$@"\n'
        )
        os.chmod(wrapper, 0o755)
        help_argv = [python, "-m", "memlens", "profile", "--help"]
        run_argv = [
            python,
            "-m",
            "memlens",
            "profile",
            "--out",
            str(work / "runs"),
            "--ncu",
            str(wrapper),
            "--clock-control",
            "none",
            "--",
            "true",
        ]
        subprocess.run(help_argv, env=env, capture_output=True, check=False)  # untimed: the file cache
        figures: dict[str, list[float]] = {"help": [], "to_ncu": [], "version": []}
        for _ in range(args.rounds):
            figures["help"].append(timed(help_argv, env))
            stamps.unlink(missing_ok=True)
            started = time.time()
            subprocess.run(run_argv, env=env, capture_output=True, check=False, cwd=work)
            lines = stamps.read_text().split() if stamps.exists() else []
            # the wrapper's own python3 start is not memlens's: take it off with an empty python3 run
            stamp_cost = timed(["python3", "-c", "import time; time.time()"], env)
            figures["to_ncu"].append(float(lines[0]) - started - stamp_cost if lines else float("nan"))
            figures["version"].append(timed([real, "--version"], env) if real != str(work / "stand-in-ncu") else 0.0)
        slowest = imports(help_argv, env)
    medians = {name: round(statistics.median(values), 3) for name, values in figures.items()}
    print(f"ncu: {real if args.ncu or shutil.which('ncu') else 'a stand-in (no ncu here)'}")
    for name, value in medians.items():
        print(f"{name:8s} {value:6.3f} s  (median of {args.rounds})")
    met = medians["to_ncu"] <= TARGET_S
    print(f"to_ncu target <= {TARGET_S} s: {'met' if met else 'NOT met'}")
    print("slowest imports of `memlens profile --help` (cumulative ms):")
    for name, ms in slowest:
        print(f"  {ms:8.1f}  {name}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "seconds": medians,
                    "rounds": args.rounds,
                    "target_s": TARGET_S,
                    "met": met,
                    "imports_ms": dict(slowest),
                },
                indent=2,
            )
            + "\n"
        )
    return 0


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=False)
    return time.perf_counter() - started


def imports(argv: list[str], env: dict[str, str]) -> list[tuple[str, float]]:
    """The 12 top-level imports with the most cumulative time, from -X importtime."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], env=env, capture_output=True, text=True, check=False
    )
    found = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            found.append((parts[2].strip(), int(parts[1]) / 1000))
    return sorted(found, key=lambda item: -item[1])[:12]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ncu", help="the ncu to time (default: MEMLENS_NCU, PATH, else a stand-in)")
    parser.add_argument("--json", help="write the figures here")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
