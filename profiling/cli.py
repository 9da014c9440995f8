"""The `memlens` command: parses arguments, runs one command, maps errors to exit codes."""

from __future__ import annotations

import argparse
import gc
import importlib
import re
import signal
import sys
import threading
from collections.abc import Callable, Sequence

from memlens.errors import EXIT_PIPE_CLOSED, EXIT_PROFILER, MemlensError, StdoutClosed
from memlens.io.files import one_command
from memlens.io.terminal import guarded_streams, point_at_null_device
from memlens.version import __version__

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
    "banks": ("banks", "which lanes collide in which shared-memory bank, and a fix proved on the recorded addresses"),
}
PROGRAM_COMMANDS = ("profile", "banks")  # those that run a program: memlens CMD [options] -- COMMAND [ARGS...]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, but a description keeps its paragraphs (blank lines between them) and its
    indented lines (examples) as written; the other lines are filled to the terminal's width."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap  # here, not above: only --help fills text

        paragraphs = re.split(r"\n[ \t]*\n", textwrap.dedent(text).strip("\n"))
        return "\n\n".join(
            "\n".join(indent + line for line in paragraph.splitlines())
            if any(line[:1].isspace() for line in paragraph.splitlines())
            else textwrap.fill(
                " ".join(paragraph.split()),
                width,
                initial_indent=indent,
                subsequent_indent=indent,
                break_on_hyphens=False,
                break_long_words=False,
            )
            for paragraph in paragraphs
        )


class Parser(argparse.ArgumentParser):
    """An argument that no parser takes is refused by the parser of the command it was given to,
    with that command's usage (argparse would show memlens's own), and before a missing COMMAND."""

    commands: dict[str, argparse.ArgumentParser]

    def parse_args(self, args: Sequence[str] | None = None, namespace: None = None) -> argparse.Namespace:  # type: ignore[override]
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.commands.get(parsed.command, self).error(f"unrecognized arguments: {' '.join(extra)}")
        if parsed.command is None:
            self.error("the following arguments are required: COMMAND")
        return parsed


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only `command`'s module is imported (all of them when None), so one command
    does not pay for the imports of the others."""
    parser = Parser(
        prog="memlens",
        description="What your CUDA kernels do to the memory hierarchy, from Nsight Compute's counters.",
        epilog="output: --format NAME picks what a command prints (--json, --md, --csv: its older spellings); "
        "--sarif FILE, --json FILE (gate, check), -o FILE (report) write a file, - standard output. "
        "exit codes: 0 ok, 1 gate failed, 2 usage/config/input error, 3 profiler or environment failure; "
        f"{EXIT_PIPE_CLOSED} when standard output's reader went away (`memlens metrics | head -1`)",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"memlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = {}
    for name, (module_name, help_text) in COMMANDS.items():
        if command not in (None, name):
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(f".commands.{module_name}", __package__)
        subparser = sub.add_parser(
            name, help=help_text, description=(module.__doc__ or help_text).strip(), formatter_class=HelpFormatter
        )
        module.add_arguments(subparser)
        subparser.set_defaults(run=module.run)
        parser.commands[name] = subparser
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code. Standard output is guarded while the arguments are parsed
    (`--help`, `--version`) and the command runs (terminal.GuardedStream): a closed pipe ends the
    command quietly with EXIT_PIPE_CLOSED, any other write error there is one line and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    program: list[str] = []
    if command in PROGRAM_COMMANDS and "--" in argv:  # memlens profile [options] -- COMMAND [ARGS...]
        split = argv.index("--")
        argv, program = argv[:split], argv[split + 1 :]

    def parse() -> argparse.Namespace:
        args = parser.parse_args(argv)
        if command in PROGRAM_COMMANDS:
            args.program = program
        return args

    hook, sys.unraisablehook = sys.unraisablehook, _interrupt_again
    try:
        with guarded_streams(), one_command():
            return _run(parse)
    finally:
        sys.unraisablehook = hook


def console_main() -> int:
    """The `memlens` command and `python -m memlens`: `main`, then every object frozen (gc.freeze), as the
    process ends next. Python's last collection at exit then passes them over: where a command imported
    Numba and CuPy (a suite run), that collection took 0.15-0.2 s after the work was done."""
    status = main()
    gc.freeze()
    return status


def _run(parse: Callable[[], argparse.Namespace]) -> int:
    try:
        try:
            args = parse()  # --help, --version and a usage error exit (SystemExit) after the flush below
            return int(args.run(args))
        finally:
            sys.stdout.flush()  # what is still buffered fails here, as this command's error
    except StdoutClosed:
        return EXIT_PIPE_CLOSED
    except BrokenPipeError:  # a write past the guard (a stream's buffer): the same closed pipe
        point_at_null_device(sys.stdout)
        return EXIT_PIPE_CLOSED
    except MemlensError as exc:
        print(f"memlens: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(f"memlens: interrupted {exc}".rstrip(), file=sys.stderr)
        return EXIT_PROFILER


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
