"""What `import memlens` gives a script or a notebook.

    import memlens

    with memlens.range("mine/v1"):      # the kernels launched here are labelled mine/v1
        my_kernel(...)

    @memlens.range("mine/v2")           # or a function, each call
    def step(): ...

then `memlens profile -- python app.py`, and `memlens.load("runs/latest").dataframe()`.

`range` pushes an NVTX push/pop range (the `nvtx` package) in NVTX's default domain, the one
`memlens profile`'s default filters select ('regex:.*/'; 'regex:.*@.*/' takes every named domain)
and whose ranges its labels show without a domain. A name shaped "family/variant" groups with the
family's other variants in reports. The suite contract (Family, Launch, Expect, CudaKernel,
NumbaKernel, Inputs, Size) is here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import ConfigError
from .results import KernelResult, RunResults
from .suite import CudaKernel, Expect, Family, Inputs, Launch, NumbaKernel, Size

__all__ = ["range", "load", "Family", "Launch", "Expect", "Inputs", "Size", "CudaKernel", "NumbaKernel",
           "RunResults", "KernelResult"]  # fmt: skip

DOMAIN = None  # NVTX's default domain: ncu names it "<default domain>"


def range(name: str, color: str | None = None) -> Any:  # noqa: A001 (memlens.range reads as intended)
    """An NVTX push/pop range named `name`: a context manager, and a decorator of functions."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"memlens.range needs a non-empty name, not {name!r}")
    if name.endswith("/") or "@" in name or " > " in name:
        raise ConfigError(f"memlens.range {name!r}: no trailing '/', '@' or ' > ' (they mean other things to "
                          "ncu's filters and memlens's labels)")  # fmt: skip
    try:
        import nvtx
    except ImportError as exc:
        raise ConfigError(f"memlens.range needs the nvtx package ({exc}): pip install nvtx") from None
    return nvtx.annotate(name, color=color, domain=DOMAIN)


def load(path: str | Path) -> RunResults:
    """The typed results of a run directory, a results.json, a .ncu-rep or an ncu CSV export.
    `.dataframe()` on them gives a pandas DataFrame (pip install "memlens[pandas]")."""
    from .readers import read_report

    return read_report(path)
