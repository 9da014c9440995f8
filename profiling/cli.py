"""The `memlens` command: parses arguments, runs one command, maps errors to exit codes."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Sequence

from . import __version__
from .errors import EXIT_INPUT, EXIT_PROFILER, MemlensError

INTERRUPT_AGAIN_S = 0.05  # see _interrupt_again
# command name -> (module under profiling.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("list_suite", "list families, variants and what each demonstrates"),
    "profile": ("profile", "profile a suite, or any program (-- COMMAND), under Nsight Compute"),
    "metrics": ("metrics", "print per-kernel metrics from a run, results.json, .ncu-rep or ncu CSV"),
    "doctor": ("doctor", "check ncu, the GPU, counter permissions and Python packages"),
    "bench": ("bench", "time each variant with CUDA events outside ncu: ms, GB/s, %% of copy bandwidth"),
    "report": ("report", "render an HTML, Markdown or JSON report of one or more runs"),
    "check": ("check", "compile the suite without a GPU: registers, stack, spills, shared memory, PTX .local"),
    "gate": ("gate", "check a run (or a static check) against a rules file; exit 1 when a rule fails"),
    "baseline": ("baseline", "save a run's figures as a baseline for gate --baseline, or show one"),
    "lines": ("lines", "the source lines (or SASS) behind each kernel's bank conflicts and local memory"),
    "compare": ("compare", "two builds kernel by kernel and source line by line: which line got better or worse"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only `command`'s module is imported (all of them when None), so one command
    does not pay for the imports of the others."""
    parser = argparse.ArgumentParser(
        prog="memlens",
        description="What your CUDA kernels do to the memory hierarchy, from Nsight Compute's counters.",
        epilog="exit codes: 0 ok, 1 gate failed, 2 usage/config/input error, 3 profiler or environment failure",
    )
    parser.add_argument("--version", action="version", version=f"memlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        if command not in (None, name):
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(f".commands.{module_name}", __package__)
        subparser = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip())
        module.add_arguments(subparser)
        subparser.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    program: list[str] = []
    if command == "profile" and "--" in argv:  # memlens profile [options] -- COMMAND [ARGS...]
        split = argv.index("--")
        argv, program = argv[:split], argv[split + 1 :]
    args = parser.parse_args(argv)
    if command == "profile":
        args.program = program
    hook, sys.unraisablehook = sys.unraisablehook, _interrupt_again
    try:
        return int(args.run(args))
    except MemlensError as exc:
        print(f"memlens: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(f"memlens: interrupted {exc}".rstrip(), file=sys.stderr)
        return EXIT_PROFILER
    except BrokenPipeError:
        return EXIT_INPUT
    finally:
        sys.unraisablehook = hook


def _interrupt_again(unraisable: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C (or a SIGTERM, raised as one) that landed in a callback Python cannot raise from (the
    weakref callback of an import lock, while a thread imports) would be printed as a traceback and
    lost: it is delivered to the main thread again instead (a SIGINT, which wakes a sleep or a wait),
    to stop memlens as any Ctrl-C does. From another thread, a moment later: sent from here, it would
    land in this hook."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        main_thread = threading.main_thread().ident
        again = threading.Timer(INTERRUPT_AGAIN_S, signal.pthread_kill, (main_thread, signal.SIGINT))
        again.daemon = True
        again.start()
    else:
        sys.__unraisablehook__(unraisable)


if __name__ == "__main__":
    sys.exit(main())
