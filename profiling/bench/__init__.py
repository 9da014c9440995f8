"""`memlens bench`: variants timed with CUDA events outside ncu, on one GPU or several; bench.json."""
