"""memlens: Nsight Compute's evidence of what CUDA kernels do to the memory hierarchy.

Installed, this folder is the package `memlens` (reports/ is `memlens.reports`, the built-in suite
kernels/ is `memlens.kernels`). In a source checkout it is `profiling`, and `memlens`, `memlens.X`
name the same modules (see _aliases), so code written against `memlens` runs from the checkout too.
"""

from __future__ import annotations

__version__ = "0.1.0"

if __name__ == "profiling":  # a source checkout: `memlens...` imports give the modules here
    from ._aliases import install as _install_aliases

    _install_aliases()
    del _install_aliases

# The public API, imported on first use (the CLI does not pay for NumPy): see api.py.
_API = ("range", "load", "Family", "Launch", "Expect", "Inputs", "Size", "CudaKernel", "NumbaKernel",
        "RunResults", "KernelResult")  # fmt: skip
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> object:
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
