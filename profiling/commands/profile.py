"""Profile every selected variant of a suite in one process under one ncu invocation, or any
program: `memlens profile [options] -- COMMAND [ARGS...]` profiles the kernels its NVTX ranges select
(--nvtx-include FILTER in ncu's syntax, repeatable; default: the program's own ranges, every domain's but
the libraries', every range where it opened none of its own; --nvtx-exclude FILTER leaves ranges out;
--nvtx-push-pop-scope process|thread, default process: push/pop ranges over every thread's launches),
or with --all-kernels every kernel up to --launch-count (default 100).

--banks: then the suite (or the program) runs once more under memlens's CUDA Sanitizer API library, into
the same run directory's banks.json (ncu and the Sanitizer cannot share a process): `memlens banks RUN`.

Clock control defaults to ncu's own (base: clocks locked to base, what most users want on
their own machine); set MEMLENS_CLOCK_CONTROL=none on machines whose clocks must be left alone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlens.collect.run_dir import shell_command
from memlens.commands.shared_arguments import add_size_arguments, add_suite_arguments
from memlens.errors import ConfigError
from memlens.io.units import plural
from memlens.model.ncu_settings import (
    CACHE_CONTROLS,
    CLOCK_CONTROL_ENV,
    CLOCK_CONTROLS,
    DEFAULT_CACHE_CONTROL,
    DEFAULT_CLOCK_CONTROL,
    NcuSettings,
)
from memlens.model.run_layout import BANK_EVENTS, BANK_WARPS, DEFAULT_OUT

# A suite run's modules (the suite contract imports NumPy) are imported in _run_suite, a program run's
# in _run_program: between `memlens profile -- COMMAND` starting and ncu starting, memlens imports only
# what builds the ncu command (tests/benchmarks/start_time.py measures it).


if TYPE_CHECKING:
    from memlens.collect.gpus import Gpu
    from memlens.io.terminal import ProgressBar
    from memlens.model.results import RunResults


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"folder for run directories (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--clock-control",
        choices=CLOCK_CONTROLS,
        default=os.environ.get(CLOCK_CONTROL_ENV, DEFAULT_CLOCK_CONTROL),
        help=f"ncu clock control (default: {DEFAULT_CLOCK_CONTROL}, or ${CLOCK_CONTROL_ENV})",
    )
    parser.add_argument(
        "--cache-control",
        choices=CACHE_CONTROLS,
        default=DEFAULT_CACHE_CONTROL,
        help=f"flush caches between passes (default: {DEFAULT_CACHE_CONTROL})",
    )
    parser.add_argument("--fast", action="store_true", help="skip the instrumented pass: no exact bank-conflict count")
    parser.add_argument(
        "--roofline",
        action="store_true",
        help="also collect the FLOP counters and L1's global sectors (roofline, arithmetic intensity, "
        "coalescing): 2 more replay passes a kernel on an H200",
    )
    parser.add_argument(
        "--banks",
        action="store_true",
        help="then run the program (or the suite) once more under memlens's Sanitizer library: banks.json in "
        "the run directory, each shared-memory instruction's lanes and banks (memlens banks RUN)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before ncu is stopped (default 1800)")
    parser.add_argument("--ncu", help="path of the ncu executable (default: $MEMLENS_NCU or PATH)")
    parser.add_argument(
        "--gpus",
        metavar="all|0,1,...",
        help="share the variants out over these GPUs (nvidia-smi's indices), one ncu per GPU at once, "
        "into one run directory (default: the one GPU CUDA picks)",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS|local",
        help="share the cases out over a Dask cluster's GPU workers (a scheduler address such as "
        "tcp://HOST:8786, or local: one worker per GPU of this host), into one run directory; needs "
        "memlens[cluster] (docs/cluster.md)",
    )
    add_size_arguments(parser)
    program = parser.add_argument_group("a program (memlens profile [options] -- COMMAND [ARGS...])")
    program.add_argument(
        "--nvtx-include",
        action="append",
        default=[],
        metavar="FILTER",
        help="profile kernels in the push/pop ranges FILTER selects, ncu's syntax: RANGE/, DOMAIN@RANGE/, "
        "regex:EXPR/, regex:DOMAIN@EXPR/ (repeatable; default: the program's own ranges, every range of "
        "the default domain and of every named one but the libraries' (CCCL, NCCL); where it opened none "
        "of its own, every range of every domain)",
    )
    program.add_argument(
        "--nvtx-exclude",
        action="append",
        default=[],
        metavar="FILTER",
        help="leave out the kernels in the push/pop ranges FILTER selects, same syntax (repeatable; "
        "e.g. 'regex:NCCL@.*/')",
    )
    program.add_argument(
        "--nvtx-push-pop-scope",
        choices=("process", "thread"),
        default="process",
        help="which launches a push/pop range covers: every thread's (process, the default: PyTorch's backward, "
        "launched from its autograd thread, is inside a range the main thread pushed around the step) or "
        "only the thread's that pushed it (thread, ncu's own default)",
    )
    program.add_argument("--all-kernels", action="store_true", help="profile every kernel, not NVTX ranges")
    program.add_argument(
        "--launch-count",
        type=int,
        metavar="N",
        help="profile at most N launches, with --launches all (default with --all-kernels and --launches all: 100)",
    )
    program.add_argument(
        "--launches",
        metavar="first|N|all",
        help="which launches of each distinct kernel (function, grid, block, shared memory) to profile: "
        "first (the default: one of each), N (N of each), all (every launch, as ncu alone does; the "
        "default with --launch-count); first and N key by function and shape, not by NVTX range",
    )
    program.add_argument(
        "--each-range",
        action="store_true",
        help="profile each distinct kernel once in each named range, not once in the program: more runs of the "
        "program, each leaving out by name the ranges profiled so far, until one profiles nothing (a "
        "memlens.range is run again by name where needed without it)",
    )
    program.add_argument(
        "--warm-up",
        type=int,
        metavar="K",
        help="leave out the first K launches of each distinct kernel (JIT, autotuning, cold caches); default 0",
    )


def run(args: argparse.Namespace) -> int:
    from memlens.collect.ncu import looked_up_soon

    # ncu --version runs while the run's modules are imported; a cluster's workers look up their own ncu
    with contextlib.nullcontext() if args.cluster else looked_up_soon(args.ncu):
        if (
            getattr(args, "program", None)
            or args.nvtx_include
            or args.nvtx_exclude
            or args.all_kernels
            or args.nvtx_push_pop_scope != "process"
            or args.launch_count is not None
            or args.launches is not None
            or args.warm_up is not None
            or args.each_range
        ):
            return _run_program(args)
        return _run_suite(args)


def _run_suite(args: argparse.Namespace) -> int:
    from memlens.collect.profile_run import ProfileOptions, profile
    from memlens.commands.shared_arguments import chosen_place, run_in_place, skipped_lines
    from memlens.io.terminal import ProgressBar

    options = ProfileOptions(
        suite=args.suite,
        pattern=args.pattern,
        **_ncu_options(args),
        sizes=tuple(args.size),
        sweeps=tuple(args.sweep),
        small=args.small,
        memlens_command=shell_command(sys.argv[1:]),
    )
    gpus = chosen_place(
        args,
        "cases",
        alone="--banks records on this host's one GPU: leave out --gpus and --cluster" if args.banks else None,
    )

    def on_gpus(chosen: tuple[Gpu, ...]) -> tuple[Path, RunResults]:
        from memlens.collect.scheduler import profile_on_gpus  # here, not above: one GPU's run does without it

        return profile_on_gpus(options, chosen, on_event=progress.update)

    def on_cluster(address: str) -> tuple[Path, RunResults]:
        from memlens.collect.cluster import profile_on_cluster

        return profile_on_cluster(options, address, on_event=progress.update)

    with ProfileProgress(ProgressBar("starting ncu", transient=False)) as progress:
        run_dir, results = run_in_place(
            args.cluster,
            gpus,
            lambda: profile(options, on_event=progress.update),
            on_gpus,
            on_cluster,
        )
    kernels, variants = plural(len(results.kernels), "kernel"), plural(len(results.outcomes), "variant")
    print(f"{kernels} from {variants} profiled: {run_dir}")
    for line in skipped_lines(results.outcomes):
        print(line)
    if args.banks:
        from memlens.collect.profile_run import app_argv
        from memlens.suite_path import suite_root

        program = app_argv(suite_root(options.suite), options, run_dir / BANK_EVENTS)
        _record_banks(program, run_dir, None)  # the suite's -k has chosen the variants: every kernel of theirs
    return 0


def _record_banks(program: list[str], run_dir: Path, pattern: str | None) -> None:
    """`--banks`: the program once more, under the Sanitizer library, into the profile's run directory. The
    profile is whole before it starts: whatever befalls the trace, it stays."""
    from memlens.collect.bank_trace import trace_program

    print(f"bank maps: {trace_program(program, run_dir.parent, BANK_WARPS, pattern, run_dir=run_dir)}")


def _ncu_options(args: argparse.Namespace) -> dict[str, Any]:
    """What a suite run and a program run ask of ncu alike."""
    return {
        "out_dir": Path(args.out),
        "ncu_settings": NcuSettings(args.clock_control, args.cache_control, args.fast, args.roofline, args.ncu),
        "timeout": args.timeout if args.timeout > 0 else None,
    }


def _run_program(args: argparse.Namespace) -> int:
    from memlens.collect.launch_sampling import ALL, DEFAULT, parse_launches
    from memlens.collect.program_run import ProgramOptions, profile_program

    if not getattr(args, "program", None):
        raise ConfigError(
            "--nvtx-include, --nvtx-exclude, --nvtx-push-pop-scope, --all-kernels, --launch-count, "
            "--launches, --each-range and --warm-up profile a program: "
            "memlens profile [options] -- COMMAND [ARGS...]"
        )
    suite_only = [
        name
        for name, given in (
            ("a suite", args.suite),
            ("-k", args.pattern),
            ("--size", args.size),
            ("--sweep", args.sweep),
            ("--small", args.small),
            ("--gpus", args.gpus),
            ("--cluster", args.cluster),
        )
        if given
    ]
    if suite_only:
        raise ConfigError(
            f"{', '.join(suite_only)} select suite variants, not a program's kernels: "
            "use --nvtx-include FILTER with -- COMMAND"
        )
    launches = args.launches or (ALL if args.launch_count is not None else DEFAULT)  # a cap alone: every launch
    options = ProgramOptions(
        program=tuple(args.program),
        nvtx_include=tuple(args.nvtx_include),
        nvtx_exclude=tuple(args.nvtx_exclude),
        all_kernels=args.all_kernels,
        launch_count=args.launch_count,
        sampling=parse_launches(launches, args.warm_up or 0),
        **_ncu_options(args),
        memlens_command=shell_command(sys.argv[1:]),
        push_pop_scope=args.nvtx_push_pop_scope,
        each_range=args.each_range,
    )
    run_dir, results = profile_program(options)
    print(f"{plural(len(results.kernels), 'kernel')} profiled: {run_dir}")
    if args.banks:
        _record_banks(list(args.program), run_dir, None)
    if results.info.ranges_selected:
        print(f"ranges: {results.info.ranges_selected}")
    if not options.sampling.every_launch:
        print(options.sampling.describe())
    if results.info.ranges_not_profiled:
        from memlens.collect.launch_sampling import not_profiled_line

        print(not_profiled_line(results.info.ranges_not_profiled, results.info.ranges_second_pass))
    return 0


class ProfileProgress:
    """A profile run's events on the one progress bar; without a bar (a pipe, CI), one plain line on
    stderr per variant done."""

    def __init__(self, bar: ProgressBar) -> None:
        self.bar = bar

    def __enter__(self) -> ProfileProgress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)

    def update(self, event: dict) -> None:
        kind = event.get("event")
        if self.bar.enabled:
            if kind == "plan":
                self.bar.update("compiling", total=len(event["variants"]))
            elif kind == "start":
                self.bar.update(f"profiling {event['variant']}")
            elif kind == "done":
                self.bar.update(advance=1)
                if event["status"] != "ok":
                    self.bar.print(f"{event['variant']}: {event['status']}: {event.get('message', '')}")
        elif kind == "done":
            line = f"memlens: {event['variant']}: {event['status']}"
            if event.get("message"):
                line += f": {event['message']}"
            print(line, file=sys.stderr)
