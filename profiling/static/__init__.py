"""`memlens check`: the suite compiled without a GPU, and the CUDA compilers that do it."""
