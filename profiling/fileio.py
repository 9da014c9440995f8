"""Files memlens writes: atomically (temp file + rename), never over a raw profiler report.
And files it reads as a whole: with a size limit, so a huge or endless file is one clear error."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import InputError, OutputError
from .units import format_bytes

# Text inputs (ncu CSV, results.json, rules) are read whole; a CSV this size holds ~100,000 kernels.
MAX_TEXT_BYTES = 256 * 2**20


RAW_REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz")


def write_output(path: str | Path, text: str, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write `text` to `path` for a command: atomically (temp file + rename, so a reader sees the old
    file or the whole new one), never over one of the command's `inputs` (same path after symlinks,
    or same file by inode), never over a raw profiler report, never onto a directory. Every refusal
    and every OS error (read-only folder, missing parent, disk full) is one OutputError line."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{path}: is a directory; name a file to write")
    if path.name.endswith(RAW_REPORT_SUFFIXES):
        raise OutputError(f"{path}: refusing to write over a raw profiler report; name another file")
    for source in inputs:
        if source is not None and same_file(path, Path(source)):
            raise OutputError(f"{path}: is an input of this command ({source}); name another file")
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({_reason(exc)})") from None
    return path


def write_json_output(path: str | Path, data: Any, inputs: Iterable[str | Path | None] = ()) -> Path:
    return write_output(path, json.dumps(data, indent=2, sort_keys=False) + "\n", inputs)


INPUT_SUFFIXES = (".csv", ".toml", ".py", ".cu", *RAW_REPORT_SUFFIXES)
INPUT_NAMES = ("results.json", "bench.json")  # a run directory's own records


def input_files(path: str | Path | None) -> list[Path]:
    """What a command argument reads: the file itself, or a directory's data (results.json,
    bench.json, profiler reports, CSV, rules, suite sources), so an output never lands on one of
    them; other files there (a saved baseline, a report) may be written again."""
    if path is None:
        return []
    path = Path(path)
    try:
        if path.is_dir():
            return [p for p in path.iterdir() if p.name in INPUT_NAMES or p.name.endswith(INPUT_SUFFIXES)]
    except OSError:
        pass
    return [path]


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


def write_text_atomic(path: Path, text: str) -> None:
    """Temp file + rename in `path`'s folder (made when missing). OSError as it comes: commands
    write through `write_output`, which names it in one line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


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
