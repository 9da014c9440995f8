"""What profiling costs, measured in one run on a GPU machine with ncu (wall clock, seconds):

    app      the profiled app alone: python -m memlens.collect.profiled_program on the suite, no ncu
    memlens  memlens profile (every catalogue metric, with the instrumented pass)
    bare     ncu with memlens's own argv (metric list, NVTX filter, replay and cache options, app)
    idle     ncu with memlens's argv, its NVTX filter matching no range: ncu's fixed cost around the app
    one_pass ncu with memlens's argv and one metric (gpu__time_duration.sum): a pass a kernel
    fast     memlens profile --fast (no instrumented pass)
    roofline memlens profile --roofline (the roofline's counters too: more replay passes)
    full     ncu --set full over the same NVTX ranges, otherwise the same argv as bare

Prints each time and the ratios memlens / bare (target <= 1.15: memlens adds little to ncu),
memlens / full (target <= 0.3: far cheaper than collecting everything) and the exact pass's cost,
memlens - fast (what the instrumented pass for exact bank conflicts adds). Writes them as JSON.
A benchmark, not a test: it states the targets and whether this run met them; exit code 0 either way.
Always --clock-control none (shared machines).

    python tests/benchmarks/profile_cost.py OUT.json [--suite kernels] [-k RE] [--small] [--rounds N]
        [--steps memlens,bare,full,...]   (memlens, bare and full always run: the ratios need them)
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from memlens.collect.ncu import Ncu, ProfileRequest, check_log, find_ncu, profile_argv  # noqa: E402
from memlens.collect.profile_run import ProfileOptions, app_argv  # noqa: E402
from memlens.collect.run_dir import driver_version  # noqa: E402
from memlens.model.catalogue import ncu_metric_names  # noqa: E402
from memlens.model.ncu_settings import NcuSettings  # noqa: E402
from memlens.suite import NVTX_DOMAIN, load_suite  # noqa: E402
from tests.support.json_file import write_json  # noqa: E402

CLOCK_CONTROL = "none"
TARGETS = {"memlens_over_bare": 1.15, "memlens_over_full": 0.3}
STEPS = ("app", "idle", "one_pass", "memlens", "bare", "fast", "roofline", "full")
RATIO_STEPS = ("memlens", "bare", "full")
NCU_STEPS = ("bare", "full", "one_pass")  # run ncu directly: its log is checked (idle profiles nothing on purpose)


def main() -> int:
    args = parse_args()
    ncu = find_ncu(args.ncu)
    options = ProfileOptions(
        suite=args.suite, pattern=args.pattern, small=args.small, ncu_settings=NcuSettings(CLOCK_CONTROL)
    )
    suite = load_suite(options.suite)
    with tempfile.TemporaryDirectory(prefix="profile-cost-") as tmp:
        work = Path(tmp)
        warm_up = app_argv(suite.path, options, work / "warm-up.events")
        run_step(warm_up, work / "warm-up", args.timeout)  # caches, imports
        seconds: dict[str, list[float]] = {step: [] for step in args.steps}
        for round_index in range(args.rounds):
            for step in args.steps:
                argv = step_argv(step, ncu, suite, options, work / f"{step}-{round_index}")
                seconds[step].append(
                    run_step(argv, work / f"{step}-{round_index}", args.timeout, ncu_log=step in NCU_STEPS)
                )
                print(f"{step:8} round {round_index + 1}: {seconds[step][-1]:8.2f} s", file=sys.stderr)
    result = summarize(seconds, ncu, suite.path, args)
    write_json(args.out, result)
    print_summary(result)
    print(f"written: {args.out}")
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the JSON file to write")
    parser.add_argument("--suite", default=str(REPO / "kernels"), help="suite directory or .py file (default: kernels)")
    parser.add_argument("-k", dest="pattern", help="only variants whose family/variant matches this regex")
    parser.add_argument("--small", action="store_true", help="the families' small sizes")
    parser.add_argument("--rounds", type=int, default=1, help="times to run each step; the median is used")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a step is stopped")
    parser.add_argument("--ncu", help="path of ncu (default: $MEMLENS_NCU or PATH)")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"steps to run (default: all, {','.join(STEPS)})")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    chosen = set(args.steps.split(",")) | set(RATIO_STEPS)
    if chosen - set(STEPS):
        parser.error(f"--steps: unknown {', '.join(sorted(chosen - set(STEPS)))}; known: {', '.join(STEPS)}")
    args.steps = [step for step in STEPS if step in chosen]
    return args


def step_argv(step: str, ncu: Ncu, suite, options: ProfileOptions, stem: Path) -> list[str]:
    """The command of one step; bare and full share memlens's own ncu argv."""
    if step == "app":
        return app_argv(suite.path, options, stem.with_suffix(".events"))
    if step in ("memlens", "fast", "roofline"):
        argv = [
            sys.executable,
            "-m",
            "memlens",
            "profile",
            str(suite.path),
            "--out",
            str(stem),
            "--clock-control",
            CLOCK_CONTROL,
            "--ncu",
            str(ncu.path),
        ]
        argv += (["-k", options.pattern] if options.pattern else []) + (["--small"] if options.small else [])
        return argv + {"fast": ["--fast"], "roofline": ["--roofline"]}.get(step, [])
    request = ProfileRequest(
        metrics=["gpu__time_duration.sum"] if step == "one_pass" else ncu_metric_names(),
        report=stem,
        log=stem.with_suffix(".log"),
        nvtx_include=f"regex:{NVTX_DOMAIN}@no-such-range/" if step == "idle" else f"regex:{NVTX_DOMAIN}@.*/",
        settings=NcuSettings(CLOCK_CONTROL),
    )
    argv = profile_argv(ncu, request, app_argv(suite.path, options, stem.with_suffix(".events")))
    if step == "full":
        at = argv.index("--metrics")
        argv[at : at + 2] = ["--set", "full"]
    return argv


def run_step(argv: list[str], stem: Path, timeout: float, ncu_log: bool = False) -> float:
    """Wall-clock seconds of one command; exits with its output if it fails."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"ran past {timeout:g} s: {shlex.join(argv)}")
    seconds = time.perf_counter() - started
    log = stem.with_suffix(".log")
    log_text = log.read_text(errors="replace") if ncu_log and log.exists() else ""
    if done.returncode != 0:
        output = "\n".join(text[-3000:] for text in (done.stdout, done.stderr, log_text) if text)
        sys.exit(f"failed with exit code {done.returncode}: {shlex.join(argv)}\n{output}")
    if ncu_log:
        check_log(log_text)  # ncu exits 0 when its filter matched nothing
    return seconds


def summarize(seconds: dict[str, list[float]], ncu: Ncu, suite: Path, args: argparse.Namespace) -> dict:
    median = {step: statistics.median(values) for step, values in seconds.items()}
    ratios = {
        "memlens_over_bare": median["memlens"] / median["bare"],
        "memlens_over_full": median["memlens"] / median["full"],
    }
    return {
        "benchmark": "profile_cost",
        "gpu": gpu_name(),
        "driver": driver_version(),
        "ncu_version": ncu.version_text,
        "suite": str(suite),
        "pattern": args.pattern,
        "small": args.small,
        "clock_control": CLOCK_CONTROL,
        "rounds": args.rounds,
        "seconds": seconds,
        "median_seconds": median,
        "ratios": ratios,
        "targets": {name: {"at_most": TARGETS[name], "met": ratios[name] <= TARGETS[name]} for name in TARGETS},
        "bare_over_full": median["bare"] / median["full"],  # ncu's own share: memlens cannot be cheaper
    } | _optional_figures(median)


def _optional_figures(median: dict[str, float]) -> dict[str, float]:
    """Figures of the steps that --steps may leave out."""
    figures = {}
    if "fast" in median:
        figures["exact_pass_seconds"] = median["memlens"] - median["fast"]
    if "roofline" in median:
        figures["roofline_over_full"] = median["roofline"] / median["full"]  # --roofline's cost: no target
        figures["roofline_extra_seconds"] = median["roofline"] - median["memlens"]
    if "app" in median:
        figures["ncu_overhead_over_app_seconds"] = median["bare"] - median["app"]
    if "idle" in median:
        figures["passes_seconds"] = median["bare"] - median["idle"]  # what the kernels' passes cost, all told
    if "idle" in median and "one_pass" in median:
        figures["first_pass_seconds"] = median["one_pass"] - median["idle"]
        figures["later_passes_seconds"] = median["bare"] - median["one_pass"]
    return figures


def gpu_name() -> str | None:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else None


def print_summary(result: dict) -> None:
    median = result["median_seconds"]
    print(f"{result['gpu']}, ncu {result['ncu_version']}, median of {result['rounds']} round(s), wall clock:")
    for step in median:
        print(f"  {step:8} {median[step]:8.2f} s")
    for name, ratio in result["ratios"].items():
        target = result["targets"][name]
        print(f"  {name:18} {ratio:6.3f}  (target <= {target['at_most']}: {'met' if target['met'] else 'NOT met'})")
    print(f"  bare ncu / full {result['bare_over_full']:.3f} (memlens runs this ncu: its floor)")
    if "exact_pass_seconds" in result:
        print(f"  exact pass cost (memlens - fast) {result['exact_pass_seconds']:.2f} s")
    if "passes_seconds" in result:
        idle, passes = result["median_seconds"]["idle"], result["passes_seconds"]
        print(f"  ncu with no kernel profiled (idle) {idle:.2f} s; passes {passes:.2f} s")
    if "first_pass_seconds" in result:
        first, later = result["first_pass_seconds"], result["later_passes_seconds"]
        print(f"  first pass {first:.2f} s, the later passes {later:.2f} s")
    if "roofline_extra_seconds" in result:
        extra, share = result["roofline_extra_seconds"], result["roofline_over_full"]
        print(f"  --roofline: {extra:+.2f} s over memlens, {share:.3f} of full")


if __name__ == "__main__":
    sys.exit(main())
