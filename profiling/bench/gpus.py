"""`memlens bench --gpus`: the selected variants shared out over several GPUs (as profiling/collect/several_gpus.py
shares them for profile: by min_bytes and min_flops where every family declares one, else round robin), one
`memlens bench` child per GPU with CUDA_VISIBLE_DEVICES=<its UUID>, all at once. The run directory
gets each GPU's own bench.json as `bench.gpu<i>.json` and its output as `bench.gpu<i>.log`, and one
merged bench.json: every variant's timing (each compared with a copy of its own bytes timed on its
own GPU), the header copy of the first GPU, the GPU models joined. With one GPU the bench runs in
this process on that GPU."""

from __future__ import annotations

import datetime as dt
import functools
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from memlens.bench.results import BenchFailure, BenchResults, load_bench
from memlens.bench.timing import BenchOptions, bench, check_options
from memlens.collect.gpus import Gpu
from memlens.collect.job_runner import POLL_S, run_at_once, wait_child
from memlens.collect.run_dir import machine_of, new_run_dir, now, take_provenance
from memlens.collect.several_gpus import expected_costs, sizes_for, split
from memlens.errors import ProfilerError
from memlens.io.files import write_json_output, write_output
from memlens.io.processes import start_command
from memlens.model.nvtx_names import labels_pattern
from memlens.model.run_layout import BENCH
from memlens.selection import Selection, select_variants
from memlens.suite import Variant


def bench_on_gpus(options: BenchOptions, gpus: Sequence[Gpu]) -> tuple[Path, BenchResults]:
    if len(gpus) == 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[0].uuid  # before CuPy first touches CUDA
        return bench(options)
    check_options(options)  # here, not in each child: a usage error is exit 2 before anything starts
    selection = select_variants(options.suite, options.pattern, options.sizes, options.sweeps, options.small)
    plan = [(g, s) for g, s in zip(gpus, shares_of(selection, options.small, len(gpus)), strict=True) if s]
    run_dir = options.into if options.into is not None else new_run_dir(options.out_dir)
    started = now()
    scratch = Path(tempfile.mkdtemp(prefix="memlens-bench-"))
    try:
        returncodes = _run_children(options, selection.suite.path, plan, run_dir, scratch)
        parts = [
            _part(gpu, share, scratch / f"gpu{gpu.index}", run_dir, code)
            for (gpu, share), code in zip(plan, returncodes, strict=True)
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return run_dir, merge_parts(options, selection, parts, run_dir, started)


def shares_of(selection: Selection, small: bool, count: int) -> list[list[Variant]]:
    """The selected variants in `count` shares (some maybe empty), balanced by expected cost."""
    costs, _ = expected_costs(selection, small, Path(os.devnull))  # no ncu run to learn from
    return split(selection.variants, costs, count)


ShareResults = BenchResults | list[BenchFailure]  # one share's bench results, or a failure for each of its variants


def merge_parts(
    options: BenchOptions, selection: Selection, parts: Sequence[ShareResults], run_dir: Path, started: dt.datetime
) -> BenchResults:
    """The shares' results as one bench.json in `run_dir` (every variant in suite order, the first
    share's copy, the GPU models joined); ProfilerError where no share timed anything."""
    order = {c.label: i for i, c in enumerate(selection.cases())}
    timed = [p for p in parts if isinstance(p, BenchResults)]
    failures = [f for p in parts for f in (p.failures if isinstance(p, BenchResults) else p)]
    if not timed:
        raise ProfilerError(
            f"no GPU timed anything, first {failures[0].family}/{failures[0].variant}: "
            f"{failures[0].message}; logs in {run_dir}"
        )
    suite = selection.suite.path
    provenance = take_provenance(machine_of(suite), suite, options.memlens_command, started)
    provenance["gpu_name"] = " + ".join(dict.fromkeys(p.info.gpu_name for p in timed if p.info.gpu_name))
    results = BenchResults(
        replace(timed[0].info, **provenance),
        timed[0].copy,
        tuple(sorted((v for p in timed for v in p.variants), key=lambda v: order.get(v.label, len(order)))),
        tuple(sorted(failures, key=lambda f: order.get(f"{f.family}/{f.variant}", len(order)))),
    )
    write_json_output(run_dir / BENCH, results.to_json(), record=True)
    return results


def child_argv(options: BenchOptions, suite: Path, share: Sequence[Variant], out: Path) -> list[str]:
    """The `memlens bench` of one GPU's share, into a run directory under `out`."""
    argv = [sys.executable, "-m", "memlens", "bench", str(suite.resolve())]
    argv += ["-k", labels_pattern([v.label for v in share]), "--repeats", str(options.repeats), "--out", str(out)]
    for item in sizes_for(share, options.sizes):
        argv += ["--size", item]
    for item in sizes_for(share, options.sweeps):
        argv += ["--sweep", item]
    return argv + (["--small"] if options.small else [])


def _run_children(
    options: BenchOptions, suite: Path, plan: list[tuple[Gpu, list[Variant]]], run_dir: Path, scratch: Path
) -> list[int | None]:
    """Start one bench per GPU, wait for all; on Ctrl-C or SIGTERM end them all (their groups too)."""
    stop = threading.Event()
    children = [
        functools.partial(_run_child, options, suite, gpu, share, run_dir, scratch, stop) for gpu, share in plan
    ]
    returncodes = run_at_once(children, stop, "memlens-bench")
    if stop.is_set():
        raise KeyboardInterrupt
    return returncodes


def _run_child(
    options: BenchOptions,
    suite: Path,
    gpu: Gpu,
    share: list[Variant],
    run_dir: Path,
    scratch: Path,
    stop: threading.Event,
) -> int | None:
    argv = child_argv(options, suite, share, scratch / f"gpu{gpu.index}")
    process = start_command(argv, env=gpu.environment(), output=run_dir / f"bench.gpu{gpu.index}.log")
    return wait_child(process, stop, POLL_S)


def _part(gpu: Gpu, share: list[Variant], out: Path, run_dir: Path, returncode: int | None) -> ShareResults:
    """One GPU's bench results (its bench.json kept as bench.gpu<i>.json), or, where it wrote none,
    a failure for each of its variants naming the GPU and its log."""
    written = sorted(out.glob(f"*/{BENCH}"))
    if written:
        write_output(run_dir / f"bench.gpu{gpu.index}.json", written[0].read_text(encoding="utf-8"), record=True)
        return load_bench(written[0])
    return failed_share(share, str(gpu), run_dir / f"bench.gpu{gpu.index}.log", returncode)


def failed_share(share: Sequence[Variant], where: str, log: Path, returncode: int | None) -> list[BenchFailure]:
    """A failure for each variant of a share that wrote no bench.json: where it ran, the last line
    of its output (else its exit code), and its log."""
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log.exists() else []
    why = lines[-1] if lines else f"exit code {returncode}"
    return [BenchFailure(v.family.name, v.name, "failed", f"{where}: {why}; see {log.name}") for v in share]
