"""What `import memlens` gives a script or a notebook.

    import memlens

    with memlens.range("mine/v1"):      # the kernels launched here are labelled mine/v1
        my_kernel(...)

    @memlens.range("mine/v2")           # or a function, each call
    def step(): ...

then `memlens profile -- python app.py`, and `memlens.load("runs/latest").dataframe()`.

`range` opens two NVTX ranges of one name in NVTX's default domain (the `nvtx` package): a push/pop
range, which nests (labels show `step > forward`) but belongs to the thread that pushed it, and a
start/end range, which belongs to the process and so covers the kernels every thread launches while
it is open: PyTorch runs backward on its own autograd thread, whose kernels a push/pop range around
the step does not cover (ncu sees push/pop ranges per thread). `memlens profile`'s default filters
select both kinds ('regex:.*/' and 'regex:.*'; 'regex:.*@.*/' and 'regex:.*@.*' take every named
domain). Under `memlens profile` it also counts how often each range ran (each thread's path of
memlens ranges, outermost first), written at the program's exit for results.json's `range_runs`.
A name shaped "family/variant" groups with the family's other variants in reports. The suite
contract (Family, Launch, Expect, CudaKernel, NumbaKernel, Inputs, Size) is here too.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlens import _API
from memlens.errors import ConfigError
from memlens.errors import GateFailed as GateFailed
from memlens.errors import InputError as InputError
from memlens.errors import MemlensError as MemlensError
from memlens.errors import OutputError as OutputError
from memlens.errors import ProfilerError as ProfilerError
from memlens.errors import SetupError as SetupError
from memlens.errors import VerificationError as VerificationError
from memlens.model.results import KernelResult as KernelResult
from memlens.model.results import RunResults
from memlens.suite import CudaKernel as CudaKernel
from memlens.suite import Expect as Expect
from memlens.suite import Family as Family
from memlens.suite import Inputs as Inputs
from memlens.suite import Launch as Launch
from memlens.suite import NumbaKernel as NumbaKernel
from memlens.suite import Size as Size

__all__ = list(_API)  # the one export list, in memlens/__init__.py

DOMAIN = None  # NVTX's default domain: ncu names it "<default domain>"


def range(name: str, color: str | None = None) -> _Range:  # noqa: A001 (memlens.range reads as intended)
    """NVTX ranges named `name` (push/pop and start/end): a context manager, and a decorator of functions."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"memlens.range needs a non-empty name, not {name!r}")
    if name.endswith("/") or "@" in name or " > " in name:
        raise ConfigError(
            f"memlens.range {name!r}: no trailing '/', '@' or ' > ' (they mean other things to "
            "ncu's filters and memlens's labels)"
        )
    try:
        import nvtx
    except ImportError as exc:
        raise SetupError(f"memlens.range needs the nvtx package ({exc}): pip install nvtx") from None
    return _Range(nvtx, name, color)


class _Range:
    """One memlens.range: enter pushes the push/pop range and starts the start/end range, exit ends
    both. Re-entrant and usable from several threads at once (what is open is kept per thread)."""

    def __init__(self, nvtx: Any, name: str, color: str | None) -> None:
        self.nvtx, self.name, self.color = nvtx, name, color

    def __enter__(self) -> _Range:
        stack = _open_ranges()
        path = " > ".join([*(entry[0] for entry in stack), self.name])
        started = self.nvtx.start_range(self.name, color=self.color, domain=DOMAIN)
        self.nvtx.push_range(self.name, color=self.color, domain=DOMAIN)
        stack.append((self.name, started))
        _COUNTS.add(path)
        return self

    def __exit__(self, *exc_info: object) -> None:
        name, started = _open_ranges().pop()
        self.nvtx.pop_range(domain=DOMAIN)
        self.nvtx.end_range(started)

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def inside(*args: Any, **kwargs: Any) -> Any:
            with self:
                return function(*args, **kwargs)

        return inside


_THREAD = threading.local()


def _open_ranges() -> list[tuple[str, Any]]:
    if not hasattr(_THREAD, "stack"):
        _THREAD.stack = []
    return _THREAD.stack


class _RangeCounts:
    """How often each path of memlens ranges ran, written at exit to the file memlens profile names in
    $MEMLENS_RANGE_COUNTS (launch_sampling.RANGE_COUNTS_ENV); nothing is counted without it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.registered = False

    def add(self, path: str) -> None:
        target = os.environ.get("MEMLENS_RANGE_COUNTS")
        if not target:
            return
        with self.lock:
            self.counts[path] += 1
            if not self.registered:
                self.registered = True
                atexit.register(self.write, target)

    def write(self, target: str) -> None:
        with self.lock:
            data = {"ranges": dict(self.counts)}
        from memlens.io.files import write_text_atomic

        try:
            write_text_atomic(Path(target), json.dumps(data, indent=1) + "\n")
        except OSError:  # a help to the reader of the results: never a reason for the program to fail
            pass


_COUNTS = _RangeCounts()


LOADS = "memlens.load reads a run directory, a results.json, a .ncu-rep or an ncu CSV export"
_NOT_RUNS = {".toml": "a rules file", ".py": "a source file", ".cu": "a source file", ".cuh": "a source file"}


def load(path: str | Path) -> RunResults:
    """The typed results of a run directory, a results.json, a .ncu-rep or an ncu CSV export.
    `.dataframe()` on them gives a pandas DataFrame (pip install "memlens[pandas]"), a column a figure
    named with its unit. Anything else is one MemlensError saying what `load` reads."""
    from memlens.readers import read_report

    if not isinstance(path, str | os.PathLike):
        raise ConfigError(f"memlens.load({path!r}): name a run (a path, not {type(path).__name__}); {LOADS}")
    if not os.fspath(path):
        raise ConfigError(f"memlens.load(''): an empty path names no run; {LOADS}")
    what = _NOT_RUNS.get(Path(path).suffix.lower())
    if what is not None and Path(path).is_file():
        raise InputError(f"{path}: {what}, not a run; {LOADS}")
    try:
        return read_report(path)
    except InputError as exc:
        raise InputError(f"{exc}; {LOADS}") from None
