"""Compile every suite kernel for one architecture without a GPU or driver, and print what the
compiler decided per kernel: registers per thread, stack frame, spill stores and loads, static
shared memory, and whether the PTX declares local memory (`.local`).

CUDA C++ goes through nvcc where a toolkit has one, else NVRTC (the pip wheel; `--compiler`
picks); Numba kernels through numba.cuda.compile_ptx and ptxas. `--json FILE` writes the figures
for `memlens gate FILE --rules kernels/gates-static.toml`; `--into RUN` writes them as check.json
into a run directory, where `memlens report` and `memlens metrics` read them to name the cause of
local-memory traffic (register spill, an array indexed at run time, an array too large for
registers). Exit 3 when a kernel does not compile or no compiler is found (`pip install
'memlens[check]'` brings NVRTC, NVVM and ptxas); exit 2 when no selected variant declares a kernel
(Launch(kernels=...)): nothing to check, or when the compiler rejects --arch for every kernel (its
words quoted). `--format json` (or `--json -`) prints the JSON instead of the table."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memlens.commands.shared_arguments import FORMAT_WORDS, add_format_argument, add_suite_arguments
from memlens.errors import ConfigError, InputError, ProfilerError
from memlens.io.files import resolve_outputs, write_json_output
from memlens.io.terminal import ProgressBar
from memlens.model.run_layout import NO_RUN_YET, input_files, no_run_yet
from memlens.output import renderer
from memlens.selection import select_variants
from memlens.static.check import (
    CHECK_FILE,
    Progress,
    arch_rejection,
    check_suite,
    compiler_missing,
    without_kernels,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_suite_arguments(parser)
    parser.add_argument("--arch", default="sm_90", help="target architecture (default: sm_90)")
    parser.add_argument(
        "--compiler",
        choices=("auto", "nvcc", "nvrtc"),
        default="auto",
        help="for CUDA C++: nvcc where found, else NVRTC (auto, the default), or one",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help=f"write the figures as JSON, for `memlens gate` ({CHECK_FILE} "
        "in a FOLDER/; - prints it instead of the table)",
    )
    add_format_argument(parser, ("table", "json"), FORMAT_WORDS)
    parser.add_argument(
        "--into",
        type=Path,
        metavar="RUN",
        help=f"write the figures as {CHECK_FILE} into this run directory, for its report",
    )


def run(args: argparse.Namespace) -> int:
    if args.into is not None and not args.into.is_dir():
        raise InputError(NO_RUN_YET if no_run_yet(args.into) else f"--into {args.into}: not a run directory")
    outputs = resolve_outputs(
        [
            ("--json", args.json, CHECK_FILE),
            ("--into", args.into and args.into / CHECK_FILE, None),
            ("--format json", "-" if args.format == "json" else None, None),
        ]
    )
    selection = select_variants(args.suite, args.pattern)
    suite = selection.suite
    prefer = "nvrtc" if args.compiler == "nvrtc" else "nvcc"
    if args.compiler == "nvcc":
        from memlens.static.toolchain import find_nvcc

        if find_nvcc() is None:
            raise ProfilerError("--compiler nvcc: nvcc not found (install a CUDA toolkit or set MEMLENS_NVCC)")
    total = sum(len(v.kernels) for v in selection.variants)
    if total == 0 and selection.variants:
        which = f" matching -k {args.pattern!r}" if args.pattern else ""
        raise ConfigError(
            f"suite {suite.path}: no variant{which} declares its kernels (CudaKernel or NumbaKernel "
            "in Launch(kernels=...)): nothing to compile"
        )
    with _progress(total) as progress:
        results = check_suite(suite, args.pattern, args.arch, prefer, progress)
    rejected = arch_rejection(results.failures)
    if rejected is not None and not results.kernels:  # every kernel failed, on the architecture
        raise ConfigError(f"--arch {args.arch}: the compiler rejects it ({rejected})")
    for output, into in zip(outputs, (False, True, False), strict=True):  # --into writes the run's own check.json
        if output is not None:
            write_json_output(output, results.to_json(), inputs=input_files(suite.path), record=into)
    if not any(output is not None and output.kind == "stdout" for output in outputs):
        renderer("table", "check")(results, sys.stdout)  # with `--json -`, the JSON is standard output
    for label in without_kernels(suite, args.pattern):
        print(f"memlens: {label} declares no kernels: nothing to compile", file=sys.stderr)
    if results.failures:
        for failure in results.failures:
            print(f"memlens: {failure.label} ({failure.kernel}): {failure.message}", file=sys.stderr)
        hint = ""
        if rejected is not None:
            hint = f" (--arch {args.arch}: the compiler rejects it: {rejected})"
        elif compiler_missing(results.failures):
            hint = " (a compiler is missing: pip install 'memlens[check]', or install a CUDA toolkit)"
        raise ProfilerError(f"{len(results.failures)} of {total} kernels did not compile{hint}")
    return 0


@contextmanager
def _progress(total: int) -> Iterator[Progress | None]:
    """A transient bar on a terminal (the one progress bar); nothing in a pipe or CI log."""
    with ProgressBar("compiling", total=total) as bar:
        if not bar.enabled:
            yield None
            return
        started = False

        def step(description: str) -> None:
            nonlocal started
            if started:
                bar.update(advance=1)
            started = True
            bar.update(f"compiling {description}")

        yield step
