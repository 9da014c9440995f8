"""memlens's own start before ncu (issues 27 and 49): how long `memlens profile -- COMMAND` takes from
its start to the moment it starts ncu, and what it imports by then.

    python tests/benchmarks/start_time.py [--rounds 5] [--ncu PATH] [--json OUT]

Four figures, each the median of --rounds runs (a first, untimed run warms the file cache):

    help      wall clock of `python -m memlens profile --help` (the imports of the profile command)
    to_ncu    wall clock from starting `python -m memlens profile --out TMP -- true` to the profiling
              ncu's start: the ncu given (--ncu, else the one memlens finds; with none, a stand-in that
              answers --version and exits) is wrapped in a script that writes the time it starts
              (`date +%s.%N`, less the time a `date` takes), so this counts Python's start, memlens's
              imports, its `ncu --version` query and building the command
    to_ncu_suite  the same for a suite run, `python -m memlens profile SUITE --small` (the built-in suite;
              --suite PATH): the wrapper stops there, without starting ncu, so memlens ends the run
              (exit 3) with no profile
    version   wall clock of `ncu --version` alone (0 for the stand-in; since issue 49 memlens runs it
              while it imports, so to_ncu holds only what it waits of it)

then the modules each run imported before ncu started, the 12 slowest by `python -X importtime`'s self time
(memlens's own modules compile from source each start where no bytecode is cached, e.g. under
PYTHONDONTWRITEBYTECODE=1 in an editable install: the bytecode line says which). Target (issue 49):
to_ncu at most 0.15 s on the GPU host. A benchmark: exit code 0 whatever the figures.
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


# memlens as `python -m memlens ARGS` runs it, stopped where it starts ncu to profile (not `ncu --version`),
# under -X importtime: the modules it imported by then are on stderr before the line UP_TO_NCU_MARK
UP_TO_NCU = """
import os, subprocess, sys
start = subprocess.Popen.__init__


def popen(self, args, *rest, **kwargs):
    if os.path.basename(str(args[0])) == "ncu" and list(args[1:]) != ["--version"]:
        sys.stderr.write("UP_TO_NCU_MARK\\n")
        sys.stderr.flush()
        os._exit(0)
    start(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = popen
from memlens.cli import main

sys.exit(main(sys.argv[1:]))
"""


def main() -> int:
    args = parse_args()
    python = sys.executable
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    suite = args.suite or str(REPO / "kernels")
    with tempfile.TemporaryDirectory(prefix="memlens-start-") as tmp:
        work = Path(tmp)
        real = args.ncu or os.environ.get("MEMLENS_NCU") or shutil.which("ncu")
        if real is None:
            real = str(work / "stand-in-ncu")
            Path(real).write_text(STAND_IN)
            os.chmod(real, 0o755)
        stamps = work / "stamps"
        wrapper = work / "bin" / "ncu"  # named ncu, as memlens's lookup and UP_TO_NCU know it
        wrapper.parent.mkdir()
        wrapper.write_text(
            f'#!/bin/sh\n[ "$1" = "--version" ] || date +%s.%N >> {stamps}\n'
            f'[ "$1" = "--version" ] || [ -z "$START_TIME_STOP" ] || exit 1\nexec {real} "$@"\n'
        )
        os.chmod(wrapper, 0o755)
        help_argv = [python, "-m", "memlens", "profile", "--help"]
        common = ["--out", str(work / "runs"), "--ncu", str(wrapper), "--clock-control", "none"]
        run_argv = [python, "-m", "memlens", "profile", *common, "--", "true"]
        suite_argv = [python, "-m", "memlens", "profile", suite, "--small", *common]
        subprocess.run(help_argv, env=env, capture_output=True, check=False)  # untimed: the file cache
        figures: dict[str, list[float]] = {"help": [], "to_ncu": [], "to_ncu_suite": [], "version": []}
        for _ in range(args.rounds):
            figures["help"].append(timed(help_argv, env))
            figures["to_ncu"].append(to_ncu(run_argv, env, work, stamps))
            figures["to_ncu_suite"].append(to_ncu(suite_argv, {**env, "START_TIME_STOP": "1"}, work, stamps))
            figures["version"].append(timed([real, "--version"], env) if real != str(work / "stand-in-ncu") else 0.0)
        slowest = {
            "program": imports([python, "-X", "importtime", "-c", UP_TO_NCU, *run_argv[3:]], env, work),
            "suite": imports([python, "-X", "importtime", "-c", UP_TO_NCU, *suite_argv[3:]], env, work),
        }
    medians = {name: round(statistics.median(values), 3) for name, values in figures.items()}
    print(f"ncu: {real if args.ncu or shutil.which('ncu') else 'a stand-in (no ncu here)'}")
    print(f"bytecode: {bytecode()}")
    for name, value in medians.items():
        print(f"{name:12s} {value:6.3f} s  (median of {args.rounds})")
    met = medians["to_ncu"] <= TARGET_S
    print(f"to_ncu target <= {TARGET_S} s: {'met' if met else 'NOT met'}")
    for run, (found, whole) in slowest.items():
        print(f"imports of the {run} run before ncu starts, {sum(found.values()):.1f} ms; the slowest (self ms):")
        for name, ms in top(found):
            print(f"  {ms:8.1f}  {name}")
        print(f"  top-level (cumulative ms): {', '.join(f'{name} {ms}' for name, ms in top(whole)[:6])}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "seconds": medians,
                    "rounds": args.rounds,
                    "target_s": TARGET_S,
                    "met": met,
                    "bytecode": bytecode(),
                    "imports_self_ms": {run: dict(top(found)) for run, (found, _) in slowest.items()},
                    "imports_cumulative_ms": {run: dict(top(whole)) for run, (_, whole) in slowest.items()},
                    "imports_total_ms": {run: round(sum(found.values()), 1) for run, (found, _) in slowest.items()},
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


def to_ncu(argv: list[str], env: dict[str, str], work: Path, stamps: Path) -> float:
    """Seconds from starting `argv` to the wrapper's stamp, less the time a `date` takes to stamp."""
    stamps.unlink(missing_ok=True)
    started = time.time()
    subprocess.run(argv, env=env, capture_output=True, check=False, cwd=work)
    lines = stamps.read_text().split() if stamps.exists() else []
    stamp_cost = timed(["date", "+%s.%N"], env)
    return float(lines[0]) - started - stamp_cost if lines else float("nan")


def imports(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[dict[str, float], dict[str, float]]:
    """The modules imported before the UP_TO_NCU mark, from -X importtime: each one's self time and each
    top-level import's cumulative time (`site`: the .pth files of the environment), ms."""
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=cwd)
    self_ms: dict[str, float] = {}
    cumulative_ms: dict[str, float] = {}
    for line in done.stderr.split("UP_TO_NCU_MARK")[0].splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            name = parts[2].strip()
            self_ms[name] = self_ms.get(name, 0.0) + int(parts[0]) / 1000
            if not parts[2].startswith("  "):
                cumulative_ms[name] = cumulative_ms.get(name, 0.0) + int(parts[1]) / 1000
    return self_ms, cumulative_ms


def top(found: dict[str, float]) -> list[tuple[str, float]]:
    """The 12 slowest."""
    return sorted(((name, round(ms, 1)) for name, ms in found.items()), key=lambda item: -item[1])[:12]


def bytecode() -> str:
    """Whether memlens's modules start from cached bytecode or compile from source."""
    import importlib.util

    spec = importlib.util.find_spec("memlens.cli")
    cached = spec.cached if spec is not None else None
    if cached and Path(cached).exists():
        return "cached"
    if os.environ.get("PYTHONDONTWRITEBYTECODE") or sys.flags.dont_write_bytecode:
        return "compiled from source each start (PYTHONDONTWRITEBYTECODE, none cached)"
    return "none cached before the first run (written by it)"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ncu", help="the ncu to time (default: MEMLENS_NCU, PATH, else a stand-in)")
    parser.add_argument("--suite", help="the suite of to_ncu_suite (default: the built-in suite, kernels/)")
    parser.add_argument("--json", help="write the figures here")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
