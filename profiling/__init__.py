"""memlens: Nsight Compute's evidence of what CUDA kernels do to the memory hierarchy."""

__version__ = "0.1.0"
