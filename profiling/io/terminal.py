"""Terminal output: rich tables and progress on a terminal, plain lines elsewhere (CI, pipes)."""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from memlens.errors import StdoutClosed, StdoutError

if TYPE_CHECKING:  # rich.console takes tens of ms to import: only where a console is made
    from rich.console import Console


def interactive() -> bool:
    """True on a terminal outside CI: live progress is shown only then."""
    return sys.stderr.isatty() and not os.environ.get("CI")


def console(stderr: bool = False, file: TextIO | None = None) -> Console:
    """A console on standard output (or error), or on `file` where that is another stream."""
    from rich.console import Console

    if file is sys.stdout or file is sys.stderr:
        file = None  # rich looks the standard stream up when it prints, as without a file
    # markup and highlighting off: kernel names like `f<[a]>` must print as they are.
    return Console(stderr=stderr, file=file, markup=False, highlight=False, soft_wrap=False)


PIPE_WIDTH = 200  # columns of a table in a pipe, a file or a CI log, where rich would assume 80


def table_console(pipe_width: int = PIPE_WIDTH, file: TextIO | None = None) -> Console:
    """The console a command prints its table on: on a terminal as wide as the terminal; in a
    pipe or a file at least `pipe_width` columns (rich's 80 would fold the table), unless COLUMNS
    sets the width."""
    out = console(file=file)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, pipe_width)
    return out


def fit_lines(lines: list[str], wide: bool = False) -> list[str]:
    """`lines` wrapped between words to the terminal's width, each continuation indented past its
    line's own indent; as they are with `wide`, and in a pipe or a file unless COLUMNS sets a width.
    A word wider than the terminal stays whole on a line of its own."""
    if wide or not (sys.stdout.isatty() or "COLUMNS" in os.environ):
        return lines
    import shutil
    import textwrap

    width = shutil.get_terminal_size().columns
    fitted = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip(" ")))
        wrapped = textwrap.wrap(
            line, width, subsequent_indent=indent + "    ", break_long_words=False, break_on_hyphens=False
        )
        fitted += wrapped or [line]
    return fitted


class ProgressBar:
    """The one live bar of long commands (profile, bench, check), on stderr: what runs, how far
    along, for how long. Drawn on a terminal outside CI only (`interactive()`); elsewhere every call
    is nothing, and `enabled` is False so a command can print plain lines instead. `transient`: the
    bar goes away when done."""

    def __init__(
        self, description: str = "", total: int | None = None, transient: bool = True, enabled: bool | None = None
    ) -> None:
        self.enabled = interactive() if enabled is None else enabled
        self._first = (description, total)
        self._transient = transient
        self._bar: Any = None  # rich.progress.Progress, imported only when a bar is drawn
        self._task: Any = None

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console(stderr=True),
                transient=self._transient,
            )
            self._bar.__enter__()
            description, total = self._first
            self._task = self._bar.add_task(description, total=total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(
        self, description: str | None = None, total: int | None = None, completed: int | None = None, advance: int = 0
    ) -> None:
        """Describe what runs now, set the total or the steps done, or advance by `advance` steps."""
        if self._bar is None:
            return
        self._bar.update(self._task, description=description, total=total, completed=completed)
        if advance:
            self._bar.advance(self._task, advance)

    def print(self, line: str) -> None:
        """A line above the bar (on stderr)."""
        if self._bar is not None:
            self._bar.console.print(line)


# --- standard output and error while a command runs -----------------------------------------------


class GuardedStream:
    """sys.stdout (or sys.stderr) while a command runs. On stdout, a closed pipe raises StdoutClosed
    (memlens stops quietly) and any other write error StdoutError (one line, exit 2), never an
    OSError's traceback; on stderr, where nothing is left to tell it to, the error is dropped. After
    the first error the stream's descriptor is pointed at the null device, as the Python docs advise
    for SIGPIPE, so what Python still holds does not fail again at exit ("Exception ignored ...
    BrokenPipeError"), and later writes are dropped."""

    def __init__(self, stream: TextIO | None, raising: bool) -> None:
        self._stream = stream  # None where the descriptor was closed when Python started (`>&-`)
        self._raising = raising
        self._failed = False

    def write(self, text: str) -> int:
        if not self._failed:
            try:
                if self._stream is None:
                    raise OSError(errno.EBADF, os.strerror(errno.EBADF))
                if len(text) >= io.DEFAULT_BUFFER_SIZE and hasattr(self._stream, "buffer"):
                    return self._write_whole(text)
                return self._stream.write(text)
            except OSError as exc:
                self._fail(exc)
        return len(text)

    def _write_whole(self, text: str) -> int:
        """One large write, to its last byte: a buffered writer whose reader goes away mid-write
        returns a short count and drops the rest, which the text layer never sees; writing on from
        where it stopped meets the closed pipe (EPIPE) as an error."""
        stream = self._stream
        stream.flush()  # type: ignore[union-attr]  # what was printed before comes first
        data = memoryview(text.encode(stream.encoding or "utf-8", stream.errors or "strict"))  # type: ignore[union-attr]
        while data:
            data = data[stream.buffer.write(data) :]  # type: ignore[union-attr]
        stream.buffer.flush()  # type: ignore[union-attr]
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self._failed and self._stream is not None:
            try:
                self._stream.flush()
            except OSError as exc:
                self._fail(exc)

    def isatty(self) -> bool:
        return not self._failed and self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, buffer...: the stream's own
        return getattr(self._stream, name)

    def _fail(self, exc: OSError) -> None:
        self._failed = True
        point_at_null_device(self._stream)
        if not self._raising:
            return
        if exc.errno == errno.EPIPE:
            raise StdoutClosed("standard output closed") from None
        raise StdoutError(f"standard output: cannot write ({exc.strerror or exc})") from None


def point_at_null_device(stream: TextIO | None) -> None:
    """Point `stream`'s descriptor at the null device (where it has one)."""
    try:
        descriptor = stream.fileno()  # type: ignore[union-attr]
        null = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture): nothing to point
        return
    try:
        os.dup2(null, descriptor)
    except OSError:
        pass
    finally:
        os.close(null)


@contextmanager
def guarded_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr as GuardedStream while the block runs, the streams as they were after."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = GuardedStream(out, raising=True), GuardedStream(err, raising=False)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
