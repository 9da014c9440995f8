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
    from rich.progress import Progress as Bar
    from rich.progress import TaskID


def interactive() -> bool:
    """True on a terminal outside CI: live progress is shown only then."""
    return sys.stderr.isatty() and not os.environ.get("CI")


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    # markup and highlighting off: kernel names like `f<[a]>` must print as they are.
    return Console(stderr=stderr, markup=False, highlight=False, soft_wrap=False)


PIPE_WIDTH = 200  # columns of a table in a pipe, a file or a CI log, where rich would assume 80


def table_console(pipe_width: int = PIPE_WIDTH) -> Console:
    """The console a command prints its table on: on a terminal as wide as the terminal; in a
    pipe or a file at least `pipe_width` columns (rich's 80 would fold the table), unless COLUMNS
    sets the width."""
    out = console()
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, pipe_width)
    return out


def progress_bar(transient: bool) -> Bar:  # rich.progress is imported only when a bar is drawn
    """The live bar of long commands, on stderr: what runs, how far along, for how long."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    return Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               console=console(stderr=True), transient=transient)  # fmt: skip


class Progress:
    """Live progress of a profile run: a bar on a terminal, one plain line per variant otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Bar | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Progress:
        if self.enabled:
            self._bar = progress_bar(transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("starting ncu", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if self._bar is not None and self._task is not None:
            if kind == "plan":
                self._bar.update(self._task, total=len(event["variants"]), description="compiling")
            elif kind == "start":
                self._bar.update(self._task, description=f"profiling {event['variant']}")
            elif kind == "done":
                self._bar.advance(self._task)
                if event["status"] != "ok":
                    self._bar.console.print(f"{event['variant']}: {event['status']}: {event.get('message', '')}")
        elif kind == "done":
            line = f"memlens: {event['variant']}: {event['status']}"
            if event.get("message"):
                line += f": {event['message']}"
            print(line, file=sys.stderr)


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
