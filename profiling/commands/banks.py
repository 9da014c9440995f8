"""Which lanes collide in which bank, and the padding or swizzle that proves a fix.

`memlens banks FILE.json` analyses a banks.json file (the format is in the README): for each recorded
shared-memory instruction, the wavefronts the hardware serves it in (4-byte accesses a warp at a time,
8-byte a half-warp, 16-byte a quarter-warp, ldmatrix/stmatrix an 8x8 matrix a phase; lanes on one word
merged) over the ideal, its n-way, the picture of its worst warp's 32 banks, and the smallest padding
or XOR swizzle under which every recorded warp is conflict-free. --format json (older: --json): the
figures as JSON.

`memlens banks [-k REGEX] [--warps N] [--launches first|N|all] [--out DIR] -- COMMAND [ARGS...]` runs the
program under memlens's Sanitizer-API library, records the lane offsets of the first N warp-level executions of every
shared-memory instruction (loads, stores, atomics, ldmatrix/stmatrix, cp.async) in each kernel's first
launch (--launches) into banks.json in a new run directory, and analyses it. It needs the CUDA Sanitizer
API (the toolkit's compute-sanitizer, or the nvidia-cuda-sanitizer-api wheel), a C++ compiler and nvcc (or a
shipped patch) for the GPU's architecture.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlens.collect.launch_sampling import parse_launches
from memlens.commands.shared_arguments import FORMAT_WORDS, add_format_argument, chosen_format, older_spelling
from memlens.errors import ConfigError
from memlens.model.run_layout import BANK_WARPS, BANKS_FILE, DEFAULT_OUT
from memlens.output import renderer
from memlens.output.bank_map import BanksFindings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="a banks.json file or the run directory holding one (or -- COMMAND)")
    parser.add_argument("-k", dest="pattern", help="only kernels whose name matches this regex")
    add_format_argument(parser, ("table", "json"), FORMAT_WORDS)
    parser.add_argument(
        "--json", action="store_true", help=older_spelling("json", "each instruction's n-way, wavefronts, ideal, fix")
    )
    parser.add_argument("--all", dest="draw_all", action="store_true", help="draw conflict-free instructions too")
    parser.add_argument(
        "--warps",
        type=int,
        default=BANK_WARPS,
        metavar="N",
        help=f"-- COMMAND: warp-level executions recorded per instruction (default {BANK_WARPS})",
    )
    parser.add_argument(
        "--launches",
        default="first",
        metavar="first|N|all",
        help="-- COMMAND: which launches of each kernel (function) to trace, as memlens profile takes them: first "
        "(the default), N (its first N), all; later launches run unpatched",
    )
    parser.add_argument(
        "--recorded-only",
        action="store_true",
        help="-- COMMAND: no bank model on every execution on the GPU (faster on large programs; no every_execution)",
    )
    parser.add_argument(
        "--out", default=str(DEFAULT_OUT), help=f"-- COMMAND: run directories' folder (default: {DEFAULT_OUT})"
    )


def run(args: argparse.Namespace) -> int:
    program: list[str] = getattr(args, "program", [])
    if program and args.file:
        raise ConfigError("give a banks.json FILE or -- COMMAND, not both")
    if not program and not args.file:
        raise ConfigError("give a banks.json FILE to analyse, or -- COMMAND to record one")
    if args.warps < 1:
        raise ConfigError(f"--warps must be 1 or more, not {args.warps}")
    sampling = parse_launches(args.launches)  # a bad --launches is a usage error before anything runs
    output = chosen_format(args, {"json": args.json})
    if program:
        from memlens.collect.bank_trace import trace_program

        path = trace_program(
            program,
            Path(args.out),
            args.warps,
            args.pattern,
            every=not args.recorded_only,
            launches=sampling.per_kernel or 0,
        )
        print(f"memlens: recorded {path}", file=sys.stderr)
    else:
        path = Path(args.file)
        if path.is_dir() and (path / BANKS_FILE).is_file():  # a run directory of `memlens banks -- COMMAND`
            path = path / BANKS_FILE
    from memlens.model.banks_file import read_banks_file
    from memlens.theory.bank_analysis import analyse_file

    analysis = analyse_file(read_banks_file(path), str(path), args.pattern)
    if args.pattern is not None and not analysis.instructions:
        raise ConfigError(f"no instruction in {path} is of a kernel matching -k {args.pattern!r}")
    findings = BanksFindings(analysis, draw_all=args.draw_all)
    renderer(output, "banks")(findings, sys.stdout)
    return 0
