"""What profiling a training loop costs (issue 27, item 4), on a GPU machine with ncu, torch and triton:

    python tests/benchmarks/train_loop_cost.py OUT_DIR [--steps 50] [--subset-steps 3] [--layers 6]
        [--skip app,count,default,all,bare,pushpop,cupy] [--timeout 300]

Steps, each timed by wall clock (`--clock-control none` throughout: shared machines):

    app       tests/benchmarks/train_loop.py --steps S alone (and --steps K, for the extrapolations)
    count     the same loop under torch.profiler: its kernel launches in all (outside ncu)
    default   memlens profile -- train_loop.py --steps S (the default: --launches first)
    all       memlens profile --launches all on K steps, extrapolated to S steps:
              app(S) + (all(K) - app(K)) x launches(S) / launches(K), said so in the table
    bare      ncu with memlens's argv and metric list on every launch of K steps (no launch filter),
              extrapolated the same way
    pushpop   (issue 34) the loop with a plain push/pop range around each step (train_loop.py --ranges
              push-pop), alone and under `memlens profile` with default options, S steps: its time, its
              ratio to the program alone (target at most 3x), and among the profiled kernels the Triton
              backward, the GEMMs (each distinct name and grid: the backward's weight gradient has a grid
              of its own) and the elementwise kernels
    cupy      (issue 34) tests/fixtures/programs/cupy_rowsum_app.py under `memlens profile`: a CuPy row sum
              warmed up outside memlens.range("cupy/rowsum") (inside CUB's CCCL range), then run inside
              it: each profiled kernel's label, and whether the range's launch was the one profiled

Then the default run's kernels are matched with the all-launches run's by (kernel, grid, block): each
one's deterministic counters must be equal and its duration within 10 %; and the backward kernels
(the Triton act_backward, the backward GEMMs) must be among the default's. Prints a table; writes
OUT_DIR/train_loop_cost.json and keeps each run directory under OUT_DIR. Targets: default within 60 s
and within 10x the program alone. --steps 50 --subset-steps 3 fits about 5 minutes on an H100;
--subset-steps 1 or --skip bare shrinks it. Exit code 0 whatever the figures (a benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from memlens.collect.ncu import ProfileRequest, find_ncu, profile_argv  # noqa: E402
from memlens.collect.program_run import DEFAULT_FILTERS  # noqa: E402
from memlens.model.catalogue import CATALOGUE, ncu_metric_names  # noqa: E402
from memlens.model.ncu_settings import NcuSettings  # noqa: E402
from memlens.model.results import load_results  # noqa: E402

LOOP = REPO / "tests" / "benchmarks" / "train_loop.py"
STEPS = ("app", "count", "default", "all", "bare", "pushpop", "cupy")
CUPY_APP = REPO / "tests" / "fixtures" / "programs" / "cupy_rowsum_app.py"
GEMM_WORDS = ("gemm", "cutlass", "xmma", "matmul")
ELEMENTWISE_WORDS = ("elementwise", "vectorized", "unrolled", "foreach")
TARGET_S, TARGET_RATIO = 60.0, 10.0
DURATION_TOLERANCE = 0.10
DETERMINISTIC = tuple(key for key, metric in CATALOGUE.items() if metric.deterministic)


def main() -> int:
    args = parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    loop = [sys.executable, str(LOOP), "--layers", str(args.layers)]
    full, subset = ["--steps", str(args.steps)], ["--steps", str(args.subset_steps)]
    memlens = [sys.executable, "-m", "memlens", "profile", "--clock-control", "none", "--timeout", str(args.timeout)]
    seconds: dict[str, float] = {}
    facts: dict[str, object] = {"steps": args.steps, "subset_steps": args.subset_steps, "layers": args.layers}
    steps = [s for s in STEPS if s not in args.skip]
    subprocess.run([*loop, "--steps", "1"], env=env, capture_output=True, check=False)  # JIT and file caches
    if "app" in steps:
        seconds["app"] = timed([*loop, *full], env, args.timeout)
        seconds["app_subset"] = timed([*loop, *subset], env, args.timeout)
    launches = {}
    if "count" in steps:
        for name, which in (("full", full), ("subset", subset)):
            done = subprocess.run(
                [*loop, *which, "--count-launches"],
                env=env,
                capture_output=True,
                text=True,
                check=False,
                timeout=args.timeout,
            )
            launches[name] = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
        facts["launches"] = launches
    runs: dict[str, Path] = {}
    if "default" in steps:
        seconds["default"] = timed([*memlens, "--out", str(out / "default"), "--", *loop, *full], env, args.timeout)
        runs["default"] = (out / "default" / "latest").resolve()
    if "all" in steps:
        seconds["all_subset"] = timed(
            [*memlens, "--launches", "all", "--out", str(out / "all"), "--", *loop, *subset], env, args.timeout
        )
        runs["all"] = (out / "all" / "latest").resolve()
    if "bare" in steps:
        ncu = find_ncu(None)
        bare_dir = out / "bare"
        bare_dir.mkdir(exist_ok=True)
        request = ProfileRequest(
            metrics=ncu_metric_names(),
            report=bare_dir / "profile",
            log=bare_dir / "ncu.log",
            nvtx_include=DEFAULT_FILTERS,
            settings=NcuSettings("none"),
        )
        argv = profile_argv(ncu, request, [*loop, *subset])
        argv.insert(1, "--force-overwrite")
        seconds["bare_subset"] = timed(argv, env, args.timeout)
    if "pushpop" in steps:
        push_pop = [*loop, *full, "--ranges", "push-pop"]
        seconds["pushpop_app"] = timed(push_pop, env, args.timeout)
        seconds["pushpop"] = timed([*memlens, "--out", str(out / "pushpop"), "--", *push_pop], env, args.timeout)
        facts["pushpop"] = _push_pop_facts((out / "pushpop" / "latest").resolve(), seconds)
    if "cupy" in steps:
        seconds["cupy"] = timed(
            [*memlens, "--out", str(out / "cupy"), "--", sys.executable, str(CUPY_APP)], env, args.timeout
        )
        facts["cupy"] = _cupy_facts((out / "cupy" / "latest").resolve())
    scale = _scale(launches)
    for name in ("all", "bare"):
        if f"{name}_subset" in seconds and "app" in seconds and scale is not None:
            profiling_s = seconds[f"{name}_subset"] - seconds["app_subset"]
            seconds[f"{name}_extrapolated"] = seconds["app"] + profiling_s * scale
    facts["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    facts["kernels"] = _kernels(runs)
    facts["comparison"] = _compare(runs) if {"default", "all"} <= runs.keys() else None
    facts["targets"] = _targets(seconds)
    (out / "train_loop_cost.json").write_text(json.dumps(facts, indent=2) + "\n")
    _print(facts, scale)
    return 0


def timed(argv: list[str], env: dict[str, str], timeout: float) -> float:
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"timed out after {timeout:g} s: {' '.join(argv[:6])} ...", file=sys.stderr)
        return float("nan")
    if done.returncode != 0:
        print(f"exit {done.returncode}: {' '.join(argv[:6])} ...\n{done.stderr[-2000:]}", file=sys.stderr)
    return time.perf_counter() - started


def _scale(launches: dict[str, object]) -> float | None:
    full, subset = launches.get("full"), launches.get("subset")
    if not isinstance(full, dict) or not isinstance(subset, dict) or not subset.get("launches"):
        return None
    return float(full["launches"]) / float(subset["launches"])


def _key(kernel) -> tuple[str, float | None, float | None]:  # type: ignore[no-untyped-def]
    return kernel.kernel, kernel.value("grid_size"), kernel.value("block_size")


def _kernels(runs: dict[str, Path]) -> dict[str, object]:
    found: dict[str, object] = {}
    for name, run in runs.items():
        try:
            results = load_results(run / "results.json")
        except Exception as exc:  # a benchmark: say what is missing, go on
            found[name] = f"unreadable: {exc}"
            continue
        keys = [_key(k) for k in results.kernels]
        counted = sorted({k.range_runs for k in results.kernels if k.range_runs is not None})
        found[name] = {
            "profiled": len(keys),
            "distinct": len(set(keys)),
            "backward_triton": sum("act_backward" in k[0] for k in keys),
            "forward_triton": sum("act_forward" in k[0] for k in keys),
            "gemm": sum("gemm" in k[0].lower() or "cutlass" in k[0].lower() for k in keys),
            "range_runs": counted,
        }
    return found


def _push_pop_facts(run: Path, seconds: dict[str, float]) -> dict[str, object]:
    """What the push/pop-ranged loop's default run profiled, and its time against the program alone."""
    try:
        results = load_results(run / "results.json")
    except Exception as exc:  # a benchmark: say what is missing, go on
        return {"unreadable": str(exc)}
    names = [k.kernel for k in results.kernels]
    gemms = sorted(
        {
            (k.kernel[:80], k.value("grid_size"))
            for k in results.kernels
            if any(word in k.kernel.lower() for word in GEMM_WORDS)
        }
    )
    ratio = seconds["pushpop"] / seconds["pushpop_app"] if seconds.get("pushpop_app") else None
    return {
        "profiled": len(names),
        "backward_triton": sum("act_backward" in n for n in names),
        "gemm_kernels_and_grids": [list(g) for g in gemms],
        "gemms": len(gemms),
        "elementwise": sum(any(w in n.lower() for w in ELEMENTWISE_WORDS) for n in names),
        "labels": sorted({k.nvtx or "(no range)" for k in results.kernels}),
        "push_pop_scope": results.info.push_pop_scope,
        "ranges_selected": results.info.ranges_selected,
        "over_app": round(ratio, 2) if ratio else None,
        "met_3x": ratio is not None and ratio <= 3.0,
    }


def _cupy_facts(run: Path) -> dict[str, object]:
    try:
        results = load_results(run / "results.json")
    except Exception as exc:  # a benchmark: say what is missing, go on
        return {"unreadable": str(exc)}
    labels = [k.nvtx or k.label for k in results.kernels]
    return {
        "labels": labels,
        "in_range": bool(labels) and all(k.family == "cupy" for k in results.kernels),
        "ranges_not_profiled": results.info.ranges_not_profiled,
    }


def _compare(runs: dict[str, Path]) -> dict[str, object]:
    """The default run's kernels against the first launch of each in the all-launches run."""
    default = load_results(runs["default"] / "results.json").kernels
    first: dict[tuple[str, float | None, float | None], object] = {}
    for kernel in load_results(runs["all"] / "results.json").kernels:
        first.setdefault(_key(kernel), kernel)
    matched, counters_differ, slow = 0, [], []
    for kernel in default:
        other = first.get(_key(kernel))
        if other is None:
            continue
        matched += 1
        for key in DETERMINISTIC:
            if kernel.value(key) != other.value(key):  # type: ignore[attr-defined]
                counters_differ.append(f"{kernel.kernel[:60]} {key}: {kernel.value(key)} vs {other.value(key)}")  # type: ignore[attr-defined]
        mine, theirs = kernel.value("duration"), other.value("duration")  # type: ignore[attr-defined]
        if mine and theirs and abs(mine - theirs) / theirs > DURATION_TOLERANCE:
            slow.append(f"{kernel.kernel[:60]}: {mine:.4g} vs {theirs:.4g} ns")
    return {
        "matched": matched,
        "default_kernels": len(default),
        "counters_differ": counters_differ[:20],
        "durations_off_by_10pct": slow[:20],
    }


def _targets(seconds: dict[str, float]) -> dict[str, object]:
    if "default" not in seconds or "app" not in seconds:
        return {}
    ratio = seconds["default"] / seconds["app"]
    return {
        "default_s": round(seconds["default"], 1),
        "default_over_app": round(ratio, 2),
        "met": seconds["default"] <= TARGET_S and ratio <= TARGET_RATIO,
    }


def _print(facts: dict[str, object], scale: float | None) -> None:
    seconds = facts["seconds"]
    assert isinstance(seconds, dict)
    print(f"train loop: {facts['steps']} steps, {facts['layers']} layers; launches {facts.get('launches')}")
    rows = [
        ("program alone", "app"),
        ("memlens, default (--launches first)", "default"),
        (f"memlens --launches all, {facts['subset_steps']} steps (measured)", "all_subset"),
        ("memlens --launches all, extrapolated", "all_extrapolated"),
        (f"bare ncu, memlens's metrics, {facts['subset_steps']} steps (measured)", "bare_subset"),
        ("bare ncu, every launch, extrapolated", "bare_extrapolated"),
    ]
    for title, key in rows:
        if key in seconds:
            print(f"  {title:58s} {seconds[key]:8.1f} s")
    if scale is not None:
        print(f"  (extrapolated: app + (measured - app of the subset) x {scale:.1f}, the launches' ratio)")
    print(f"kernels: {json.dumps(facts['kernels'])}")
    print(f"default vs all, first launch of each: {json.dumps(facts['comparison'])}")
    print(f"targets (default <= {TARGET_S:g} s and <= {TARGET_RATIO:g}x the program): {json.dumps(facts['targets'])}")
    for key, title in (
        ("pushpop_app", "push/pop-ranged loop alone"),
        ("pushpop", "push/pop-ranged loop, memlens default"),
    ):
        if key in seconds:
            print(f"  {title:58s} {seconds[key]:8.1f} s")
    if "pushpop" in facts:
        print(f"push/pop-ranged loop (issue 34, target <= 3x the program): {json.dumps(facts['pushpop'])}")
    if "cupy" in facts:
        print(f"CuPy row sum after a warm-up outside its range (issue 34): {json.dumps(facts['cupy'])}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--subset-steps", type=int, default=3)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument(
        "--skip", type=lambda text: set(text.split(",")), default=set(), help=f"leave out some of {','.join(STEPS)}"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a step may take")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
