"""Files memlens writes: a regular file atomically (temp file + rename), a special file (device,
FIFO, socket, a descriptor) in place, never over an input or a raw profiler report.
And files it reads as a whole: with a size limit, so a huge or endless file is one clear error."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlens.errors import InputError, OutputError, StdoutClosed
from memlens.io.units import format_bytes

# Text inputs (ncu CSV, results.json, rules) are read whole; a CSV this size holds ~100,000 kernels.
MAX_TEXT_BYTES = 256 * 2**20


RAW_REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz")


STDOUT = "-"  # `-o -`: the document on standard output

# The inputs of the command that runs: every file it has read (results.json, a raw report, check.json,
# bench.json, rules, a baseline, the sources a report quotes), noted by whatever reads it. No output
# of the command may replace one of them (write_output).
_inputs_read: dict[str, Path] = {}


def note_input(path: str | Path) -> Path:
    """Record `path` as an input of the command that runs (an output will never replace it); `path` back."""
    path = Path(path)
    _inputs_read.setdefault(os.path.abspath(path), path)
    return path


def inputs_read() -> list[Path]:
    """The files the command that runs has read so far, in the order first read."""
    return list(_inputs_read.values())


# What else no output may replace, by the rule of the stage that knows it: model/run_layout.run_record (a
# run folder's own files, and the names memlens reads or writes there) sets it where it is defined.
_refusals: list[Callable[[Path], str | None]] = []


def refuse_also(rule: Callable[[Path], str | None]) -> None:
    """`write_output` refuses a path where `rule` gives a reason (the reason, after the path, is its message)."""
    if rule not in _refusals:
        _refusals.append(rule)


@contextmanager
def one_command() -> Iterator[None]:
    """A command's span: the inputs noted inside it are that command's alone."""
    _inputs_read.clear()
    try:
        yield
    finally:
        _inputs_read.clear()


@dataclass(frozen=True)
class Output:
    """Where a command writes one document, as `resolve_output` found it."""

    named: str  # the path as given (inside a folder given with a trailing /): for messages
    path: Path | None  # where the bytes go: a symbolic link followed; None for standard output
    kind: str  # "stdout"; "file" (atomic); "descriptor" (an open fd of this process, `fd`); "special"; "socket"
    fd: int | None = None


def resolve_output(path: str | Path, default_name: str | None = None) -> Output:
    """What writing to `path` means, by the kind of file it names: `-` is standard output; a path
    ending in `/` a folder, the file `default_name` inside it; /dev/stdout, /dev/fd/N and
    /proc/self/fd/N (or a link to one) this process's descriptor; a character device or a FIFO is
    written in place and a socket connected to, never renamed over nor made a regular file; a
    regular file (also through a link, which stays a link) or a new one is written atomically. A
    directory, a block device, a raw profiler report or a link loop is refused (OutputError)."""
    named = str(path)
    if named == STDOUT:
        return Output(STDOUT, None, "stdout")
    if named.endswith(("/", os.sep)):
        folder = Path(named)
        if default_name is None:
            raise OutputError(f"{named}: names a folder; name a file to write")
        if not folder.is_dir():
            why = "no such folder" if not folder.exists() else "not a folder"
            raise OutputError(f"{named}: {why} (a path ending in / names a folder to write {default_name} into)")
        path = folder / default_name
        named = str(path)
    path = Path(path)
    if path.name.endswith(RAW_REPORT_SUFFIXES):
        raise OutputError(f"{named}: refusing to write over a raw profiler report; name another file")
    descriptor = _descriptor(path)
    if descriptor is not None:
        fd = _own_descriptor(descriptor)
        return Output(named, Path(descriptor), "descriptor" if fd is not None else "special", fd)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"{named}: symbolic link loop") from None
        target = Path(os.path.realpath(path))
        if os.path.islink(path) and not target.parent.is_dir():
            raise OutputError(
                f"{named}: cannot write (a symbolic link to {os.readlink(path)}, which points nowhere: "
                f"no such folder {target.parent})"
            ) from None
        _check_folder(named, path, target.parent)
        return Output(named, target, "file")  # new, a link to nothing, or unreachable
    if stat.S_ISDIR(mode):
        raise OutputError(f"{named}: is a directory; name a file to write")
    if stat.S_ISBLK(mode):
        raise OutputError(f"{named}: is a block device; memlens writes no disk")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return Output(named, path, "special")
    if stat.S_ISSOCK(mode):
        return Output(named, path, "socket")
    target = Path(os.path.realpath(path))
    if target.name.endswith(RAW_REPORT_SUFFIXES):
        raise OutputError(f"{named}: refusing to write over a raw profiler report ({target}); name another file")
    return Output(named, target, "file")


def _check_folder(named: str, path: Path, folder: Path) -> None:
    """OutputError where the folder a new file goes into is missing or no folder: memlens makes no folders."""
    try:
        if folder.is_dir():
            return
        missing = path.parent
        while missing.parent != missing and not missing.parent.exists():
            missing = missing.parent
        blocking = missing if missing.exists() else missing.parent
        if blocking.exists() and not blocking.is_dir():
            raise OutputError(f"{named}: cannot write ({blocking} is not a folder)")
    except OSError:  # a folder we may not look into: the write names the reason
        return
    raise OutputError(f"{named}: cannot write (no such folder {missing}; memlens makes no folders: create it first)")


def resolve_outputs(outputs: Iterable[tuple[str, str | Path | None, str | None]]) -> list[Output | None]:
    """`resolve_output` of each (option, path or None, default name); OutputError naming both when
    two of them are one file (also through links, or both standard output), before anything is written."""
    found: list[Output | None] = []
    seen: dict[tuple[object, ...], str] = {}
    for option, path, default_name in outputs:
        if path is None:
            found.append(None)
            continue
        output = resolve_output(path, default_name)
        key = _identity(output)
        if key in seen:
            raise OutputError(f"{seen[key]} and {option} {output.named} are one file: give each output its own")
        seen[key] = f"{option} {output.named}"
        found.append(output)
    return found


def write_output(
    path: str | Path | Output,
    text: str,
    inputs: Iterable[str | Path | None] = (),
    default_name: str | None = None,
    *,
    record: bool = False,
) -> Output:
    """Write `text` where `path` says (see `resolve_output`): a regular file atomically (temp file +
    rename, so a reader sees the old file or the whole new one), never over one of the command's
    `inputs` nor any file it has read (`note_input`; same path after symlinks, or same file by inode),
    never over a raw profiler report, never onto a run folder's own files (`refuse_also`) unless this is
    one (`record`: what makes the run writes it), never onto a directory; a special file in place.
    Every refusal and every OS error (read-only folder, missing parent, disk full) is one OutputError line."""
    output = path if isinstance(path, Output) else resolve_output(path, default_name)
    if output.path is not None:
        for source in [*inputs, *inputs_read()]:
            if source is not None and same_file(output.path, Path(source)):
                raise OutputError(f"{output.named}: is an input of this command ({source}); name another file")
    if output.kind == "file" and not record:
        for rule in _refusals:
            reason = rule(output.path)  # type: ignore[arg-type]
            if reason is not None:
                raise OutputError(f"{output.named}: {reason}; name another file")
    if output.kind == "file" and read_only(output.path):  # type: ignore[arg-type]
        raise OutputError(f"{output.named}: cannot write (permission denied: the file is read-only)")
    try:
        if output.kind == "stdout":
            sys.stdout.write(text)
        elif output.kind == "file":
            write_text_atomic(output.path, text)  # type: ignore[arg-type]
        else:
            _write_in_place(output, text)
    except OSError as exc:
        if exc.errno == errno.EPIPE and output.kind == "descriptor":  # /dev/stdout's reader went away
            raise StdoutClosed(f"{output.named}: closed") from None
        raise OutputError(f"{output.named}: cannot write ({_reason(exc)})") from None
    return output


def write_json_output(
    path: str | Path | Output,
    data: Any,
    inputs: Iterable[str | Path | None] = (),
    default_name: str | None = None,
    *,
    record: bool = False,
) -> Output:
    return write_output(path, json.dumps(data, indent=2, sort_keys=False) + "\n", inputs, default_name, record=record)


_DESCRIPTORS = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/fd|/dev/fd")


def _descriptor(path: Path) -> str | None:
    """The /proc/PID/fd/N (or /dev/fd/N) that `path` or a symbolic link on the way to it names, if any."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        folder = os.path.dirname(current)
        if _DESCRIPTORS.fullmatch(os.path.realpath(folder)):
            return current
        if not os.path.islink(current):
            return None
        current = os.path.abspath(os.path.join(folder, os.readlink(current)))
    return None


def _own_descriptor(path: str) -> int | None:
    """N where `path` is this process's descriptor N (/proc/self/fd/N, /dev/fd/N, /proc/<our pid>/fd/N)."""
    folder, name = os.path.split(path)
    own = os.path.realpath(folder) == os.path.realpath(f"/proc/{os.getpid()}/fd") or folder == "/dev/fd"
    return int(name) if own and name.isdigit() else None


def _identity(output: Output) -> tuple[object, ...]:
    """What two outputs share when they are one file: the inode, else the path a new file gets."""
    try:
        if output.kind == "stdout" or output.fd is not None:
            return ("inode", *os.fstat(sys.stdout.fileno() if output.fd is None else output.fd)[1:3])
        return ("inode", *os.stat(output.path)[1:3])  # type: ignore[arg-type]
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's capture), no file yet
        return ("stdout",) if output.kind == "stdout" else ("path", os.path.realpath(output.path))  # type: ignore[arg-type]


def _write_in_place(output: Output, text: str) -> None:
    """A descriptor, device, FIFO or socket: written as it is, never replaced or created."""
    sys.stdout.flush()  # what memlens printed comes first, where this is its own standard output
    data = text.encode("utf-8")
    if output.kind == "socket":
        import socket  # here: `memlens profile` imports this module before ncu starts

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(output.path))
            connection.sendall(data)
        return
    if output.fd is not None:
        fd = os.dup(output.fd)
    else:  # a device or FIFO (opening a FIFO waits for its reader); another process's descriptor
        regular = stat.S_ISREG(os.stat(output.path).st_mode)  # type: ignore[arg-type]
        fd = os.open(output.path, os.O_WRONLY | (os.O_TRUNC if regular else 0))  # type: ignore[arg-type]
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)


def shown_path(path: str | Path) -> str:
    """`path` as a terminal shows it: relative to the working directory where it lies beneath it (as git
    and pytest name files), else as given. A path that fits the screen wraps with the text around it."""
    text, here = str(path), Path.cwd()
    if text == STDOUT or not os.path.isabs(text) or here == Path(here.anchor):
        return text
    try:
        return Path(text).relative_to(here).as_posix()
    except ValueError:
        return text


def missing_reason(path: Path) -> str:
    """Why `path` cannot be opened, in words: a symbolic link loop, a link to nothing, or no such file."""
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:
            return "symbolic link loop"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "symbolic link loop"
            return f"symbolic link to a missing file ({os.readlink(path)})"
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        return exc.strerror.lower() if exc.strerror else "no such file or directory"
    return "no such file or directory"


def same_file(first: Path, second: Path) -> bool:
    """True when both name one file: equal after resolving symlinks, or one inode (a hard link)."""
    try:
        if first.resolve() == second.resolve():
            return True
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except (OSError, RuntimeError):  # a symlink loop, a path we may not stat: not provably the same
        return False


def _reason(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        return f"{reason}: free some space or write elsewhere"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{reason}: write into a folder you may write, e.g. with -o"
    return reason


def read_only(path: Path) -> bool:
    """Whether an existing file at `path` may not be replaced: one the user may not write (os.access, as `cp`
    asks), or one without any write bit, for root too. A rename needs only the folder's permission, so the
    file's own is asked here; root's `cp` would write a 444 file, memlens takes the mode as the owner's
    "keep this" (as `rm` asks before removing one). False where there is no file (or it cannot be seen)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) and (not mode & 0o222 or not os.access(path, os.W_OK))


def write_text_atomic(path: Path, text: str) -> None:
    """Temp file + rename in `path`'s folder, which must exist: a file replaced keeps its mode, a new one
    gets the usual (0666 less the umask). OSError as it comes: commands write through `write_output`,
    which names it in one line and refuses a read-only file first."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:  # a new file
        mode = 0o666 & ~umask
    try:
        os.chmod(tmp, mode)  # mkstemp makes 0600
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_new_bytes(path: Path, data: bytes) -> None:
    """A new file, written whole or not at all and never over one that exists: temp file in `path`'s folder,
    then a hard link to `path` (FileExistsError where it exists). OSError as it comes."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def point_symlink(link: Path, target_name: str) -> None:
    """Make `link` point at `target_name` (a sibling), replacing an old link atomically."""
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    os.symlink(target_name, tmp)
    try:
        os.replace(tmp, link)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_bytes_limited(path: Path, limit: int = MAX_TEXT_BYTES, what: str = "") -> bytes:
    """The bytes of `path`; InputError when it cannot be read or holds more than `limit` bytes.
    Reads at most limit + 1 bytes, so a device such as /dev/zero cannot exhaust memory."""
    note_input(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read{' ' + what if what else ''} ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise InputError(f"{path}: larger than the {format_bytes(limit)} memlens reads from a text file")
    return data


def read_json(path: Path, what: str = "") -> Any:
    """The JSON value of a file (results, baseline, bench, static check); InputError naming the
    file when it is unreadable, too large, not UTF-8, empty or not JSON."""
    try:
        text = read_bytes_limited(path, what=what).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise InputError(f"{path}: empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # a number of over 4300 digits; nesting too deep
        raise InputError(f"{path}: invalid JSON ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
