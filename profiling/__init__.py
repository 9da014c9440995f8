"""memlens: Nsight Compute's evidence of what CUDA kernels do to the memory hierarchy.

This folder is the package `memlens` (reports/ is `memlens.reports`, the built-in suite kernels/ is
`memlens.kernels`): pyproject's package-dir maps them, installed or in a checkout (`make setup`
installs it editable). Nothing answers to `profiling`, `reports` or `kernels`.
"""

from __future__ import annotations

if __name__ != "memlens":  # the checkout's folder imported by its folder name: a second copy of every class
    raise ImportError(f"this folder is the package memlens, not {__name__}: import memlens (make setup installs it)")

from memlens.version import __version__ as __version__

# The public API, the one list (api.py takes its __all__ from it), imported on first use: the CLI does
# not pay for NumPy.
_API = (
    "range",
    "load",
    "Family",
    "Launch",
    "Expect",
    "Inputs",
    "Size",
    "CudaKernel",
    "NumbaKernel",
    "RunResults",
    "KernelResult",
    "MemlensError",
    "ConfigError",
    "InputError",
    "OutputError",
    "ProfilerError",
    "SetupError",
    "VerificationError",
    "GateFailed",
)
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> object:
    if name in _API:
        from memlens import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
