"""Collecting: ncu, the run directory, suite and program runs, the profiled program, GPUs and shards."""
