"""Time each variant of a suite with CUDA events, outside ncu: the median (min, p10-p90) of at least
20 launches rotating over input sets several times the L2 cache, each set verified first; GB/s from
the family's min_bytes, and as a percentage of a device-to-device copy of the same bytes timed the
same way in the same run (the header gives the GPU's copy over a buffer of 1 GiB or more).
--copy-only times that copy alone, no suite: the measured DRAM ceiling `memlens lines` and the report
take a finding's time at stake at (docs/time-at-stake.md).
Writes bench.json into a new run directory under --out, or into an existing run with --into
(`--into runs/latest` puts the timings beside a profile); runs/latest is left as it is."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from memlens.bench.gpus import bench_on_gpus
from memlens.bench.results import BENCH_FILE, BenchResults, roofline_shares
from memlens.bench.timing import DEFAULT_REPEATS, MIN_REPEATS, BenchOptions
from memlens.bench.timing import bench as run_bench
from memlens.collect.run_dir import shell_command
from memlens.commands.shared_arguments import (
    add_size_arguments,
    add_suite_arguments,
    chosen_place,
    run_in_place,
    skipped_lines,
)
from memlens.errors import ConfigError, ProfilerError
from memlens.io.terminal import ProgressBar
from memlens.model.run_layout import DEFAULT_OUT
from memlens.output import renderer
from memlens.output.command_tables import BenchTable
from memlens.suite import SKIPPED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out", default=str(DEFAULT_OUT), help=f"folder for a new run directory (default: {DEFAULT_OUT})"
    )
    where.add_argument("--into", metavar="RUN", help="write bench.json into this existing run directory")
    parser.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        metavar="N",
        help=f"timed launches per variant, at least {MIN_REPEATS} (default {DEFAULT_REPEATS})",
    )
    add_size_arguments(parser)
    parser.add_argument(
        "--copy-only",
        action="store_true",
        help="time only the GPU's device-to-device copy (no suite): the DRAM ceiling of the time at stake",
    )
    parser.add_argument(
        "--gpus",
        metavar="all|0,1,...",
        help="share the variants out over these GPUs (nvidia-smi's indices), all at once",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS|local",
        help="share the variants out over a Dask cluster's GPU workers (a scheduler address such as "
        "tcp://HOST:8786, or local: one worker per GPU of this host); needs memlens[cluster] "
        "(docs/cluster.md)",
    )


def run(args: argparse.Namespace) -> int:
    check_copy_only(args)
    options = BenchOptions(
        suite=args.suite,
        pattern=args.pattern,
        out_dir=Path(args.out),
        into=Path(args.into) if args.into else None,
        repeats=args.repeats,
        sizes=tuple(args.size),
        sweeps=tuple(args.sweep),
        small=args.small,
        memlens_command=shell_command(sys.argv[1:]),
        copy_only=args.copy_only,
    )
    gpus = chosen_place(args, "variants")
    run_dir, results = run_in_place(
        args.cluster,
        gpus,
        lambda: _bench_here(options),
        lambda gpus: bench_on_gpus(options, gpus),
        _on_cluster(options),
    )
    print_table(results, run_dir)
    if any(f.status != SKIPPED for f in results.failures):
        raise ProfilerError(failure_message(results, run_dir))
    return 0


COPY_ONLY_ALONE = ("suite", "pattern", "size", "sweep", "small", "gpus", "cluster")


def check_copy_only(args: argparse.Namespace) -> None:
    """ConfigError (exit 2) for --copy-only with an option that chooses variants or where they run: it times none."""
    if not args.copy_only:
        return
    given = [name for name in COPY_ONLY_ALONE if getattr(args, name)]
    if given:
        option = {"suite": "SUITE", "pattern": "-k"}.get(given[0], f"--{given[0]}")
        raise ConfigError(f"--copy-only times the GPU's copy alone, no variants: drop {option}")


def _bench_here(options: BenchOptions) -> tuple[Path, BenchResults]:
    with BenchProgress(ProgressBar()) as progress:
        return run_bench(options, on_progress=progress.update)


def _on_cluster(options: BenchOptions) -> Callable[[str], tuple[Path, BenchResults]]:
    def on_cluster(address: str) -> tuple[Path, BenchResults]:
        from memlens.bench.cluster import bench_on_cluster

        return bench_on_cluster(options, address)

    return on_cluster


def failure_message(results: BenchResults, run_dir: Path) -> str:
    failures = [f for f in results.failures if f.status != SKIPPED]  # a GPU too old for a family is no failure
    first = failures[0]
    total = len(results.variants) + len(results.failures)
    return (
        f"{len(failures)} of {total} variants were not timed, first {first.family}/{first.variant}: "
        f"{first.status}: {first.message}; results in {run_dir / BENCH_FILE}"
    )


class BenchProgress:
    """bench's progress on the one progress bar (on a terminal; nothing otherwise)."""

    def __init__(self, bar: ProgressBar) -> None:
        self.bar = bar

    def __enter__(self) -> BenchProgress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)

    def update(self, stage: str, label: str, index: int, total: int) -> None:
        if stage == "done":
            self.bar.update(total=total, completed=index)
        else:
            self.bar.update(f"timing {label}", total=total)


def print_table(results: BenchResults, run_dir: Path) -> None:
    """The bench's table (memlens/output/command_tables.py), its compute-bound variants judged by their
    roofline where the run has a profile."""
    table = BenchTable(results, run_dir, roofline_shares(run_dir, results), tuple(skipped_lines(results.failures)))
    renderer("table", "bench")(table, sys.stdout)
