"""Time each variant of a suite with CUDA events, outside ncu: the median (min, p10-p90) of at least
20 launches rotating over input sets several times the L2 cache, each set verified first; GB/s from
the family's min_bytes, and as a percentage of a device-to-device copy of the same bytes timed the
same way in the same run (the header gives the GPU's copy over a buffer of 1 GiB or more).
Writes bench.json into a new run directory under --out, or into an existing run with --into
(`--into runs/latest` puts the timings beside a profile); runs/latest is left as it is."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    pass

from memlens.bench.gpus import bench_on_gpus
from memlens.bench.results import BENCH_FILE, BenchResults, VariantTiming, roofline_shares
from memlens.bench.timing import DEFAULT_REPEATS, L2_MULTIPLE, MIN_REPEATS, BenchOptions
from memlens.bench.timing import bench as run_bench
from memlens.collect.gpus import chosen_gpus
from memlens.collect.run_dir import shell_command
from memlens.commands.common import add_size_arguments, add_suite_arguments, skipped_lines
from memlens.errors import ProfilerError
from memlens.io.terminal import ProgressBar, table_console
from memlens.io.units import format_bytes, format_duration, format_percent
from memlens.model.run_layout import DEFAULT_OUT
from memlens.suite import SKIPPED

NA = "n/a"
COPY_HEADER = "copy GB/s (same bytes)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", default=str(DEFAULT_OUT),
                       help=f"folder for a new run directory (default: {DEFAULT_OUT})")  # fmt: skip
    where.add_argument("--into", metavar="RUN", help="write bench.json into this existing run directory")
    parser.add_argument(
        "--repeats", type=int, default=DEFAULT_REPEATS, metavar="N",
        help=f"timed launches per variant, at least {MIN_REPEATS} (default {DEFAULT_REPEATS})",
    )  # fmt: skip
    add_size_arguments(parser)
    parser.add_argument("--gpus", metavar="all|0,1,...",
                        help="share the variants out over these GPUs (nvidia-smi's indices), all at once")  # fmt: skip


def run(args: argparse.Namespace) -> int:
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
    )
    gpus = chosen_gpus(args.gpus)
    if gpus is not None:
        run_dir, results = bench_on_gpus(options, gpus)
    else:
        with BenchProgress(ProgressBar()) as progress:
            run_dir, results = run_bench(options, on_progress=progress.update)
    print_table(results, run_dir)
    if any(f.status != SKIPPED for f in results.failures):
        raise ProfilerError(failure_message(results, run_dir))
    return 0


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
    out = table_console()
    info, copy = results.info, results.copy
    driver = f", driver {info.driver_version}" if info.driver_version else ""
    out.print(
        f"{info.gpu_name}{driver}: device-to-device copy {copy.gb_per_s:,.0f} GB/s "
        f"({format_bytes(copy.buffer_bytes)} buffer); median of {info.repeats} launches"
    )
    table = Table()
    for header in ("variant", "size", "sets", "median", "p10 - p90", "min", "GB/s", COPY_HEADER, "% of copy"):
        table.add_column(header, justify="left" if header in ("variant", "size") else "right", no_wrap=True)
    shares = roofline_shares(run_dir, results)
    judged = {label: f"{format_percent(share)} of roofline" for label, share in shares.items()}
    for timing in results.variants:
        cells = row(timing, info.l2_bytes)
        if timing.label in judged:
            cells[-1] = judged[timing.label]
        table.add_row(*cells)
    out.print(table)
    for line in notes(results):
        out.print(line)
    if judged:
        out.print(f"% of copy: a compute-bound variant ({', '.join(judged)}) is judged by its roofline instead: its"
                  " FLOPs (the run's profile) over the median time, as a % of its roofline bound on this GPU")
    elif any(timing.family == "matmul" for timing in results.variants):
        out.print("% of copy judges memory-bound kernels; a compute-bound one is judged by its roofline: "
                  "`memlens profile --roofline`, then `memlens bench --into` that run")
    out.print(f"written: {run_dir / BENCH_FILE}")


def row(timing: VariantTiming, l2_bytes: int) -> list[str]:
    times = timing.times
    flattered = "*" if cache_may_flatter(timing, l2_bytes) else ""
    return [
        timing.label,
        " ".join(f"{k}={v}" for k, v in timing.size.items()),
        f"{timing.input_sets}{flattered}",
        _ms(times.median_ms),
        f"{_ms(times.p10_ms)} - {_ms(times.p90_ms)}",
        _ms(times.min_ms),
        NA if timing.gb_per_s is None else f"{timing.gb_per_s:,.1f}",
        NA if timing.copy is None else f"{timing.copy.gb_per_s:,.1f}",
        NA if timing.pct_of_copy is None else format_percent(timing.pct_of_copy),
    ]


def _ms(milliseconds: float) -> str:
    return format_duration(milliseconds * 1e6)


def cache_may_flatter(timing: VariantTiming, l2_bytes: int) -> bool:
    return timing.rotated_bytes < L2_MULTIPLE * l2_bytes


def notes(results: BenchResults) -> list[str]:
    lines = []
    l2 = results.info.l2_bytes
    if any(cache_may_flatter(t, l2) for t in results.variants):
        lines.append(f"* the input sets together hold less than {L2_MULTIPLE}x the L2 cache "
                     f"({format_bytes(l2)}): the cache may flatter these times")  # fmt: skip
    if any(t.copy is not None for t in results.variants):
        lines.append(
            f"% of copy: of {COPY_HEADER!r}, a device-to-device copy of the variant's min_bytes "
            "(half read, half written) timed the same way as the variant; not of the header's copy"
        )
    if any(t.min_bytes is None for t in results.variants):
        lines.append("GB/s: n/a where the family declares no min_bytes")
    lines.extend(f"{f.family}/{f.variant}: {f.status}: {f.message}" for f in results.failures if f.status != SKIPPED)
    lines.extend(skipped_lines(results.failures))
    return lines
