"""One exception root for memlens; the CLI maps each kind to an exit code."""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_INPUT = 2
EXIT_PROFILER = 3
# Standard output closed by its reader (`memlens metrics | head -1`): quiet, and the status a shell
# gives a process that SIGPIPE ended (128 + 13), which a `set -o pipefail` script can tell from 2.
EXIT_PIPE_CLOSED = 141


class MemlensError(Exception):
    """Base of every error memlens reports to a user as one line."""

    exit_code = EXIT_INPUT


class ConfigError(MemlensError):
    """Bad option, rules file, suite definition or baseline."""

    exit_code = EXIT_INPUT


class InputError(MemlensError):
    """A file memlens was asked to read is missing, malformed or unsupported."""

    exit_code = EXIT_INPUT


class OutputError(MemlensError):
    """A file memlens was asked to write cannot be written, or would replace one of its inputs."""

    exit_code = EXIT_INPUT


class StdoutError(OutputError):
    """Standard output cannot be written (a full disk, an I/O error, closed): one line, exit 2."""


class StdoutClosed(MemlensError):
    """Standard output's reader went away (a closed pipe): memlens stops quietly, exit 141."""

    exit_code = EXIT_PIPE_CLOSED


class ProfilerError(MemlensError):
    """ncu, the GPU, a compiler or a kernel under test failed."""

    exit_code = EXIT_PROFILER


class SetupError(MemlensError):
    """A package memlens needs for what was asked is not installed; the message says what to install."""

    exit_code = EXIT_PROFILER


class VerificationError(ProfilerError):
    """A variant's output differs from its NumPy reference."""


class GateFailed(MemlensError):
    """At least one gate rule failed."""

    exit_code = EXIT_GATE_FAILED
