"""The built-in suite, one module a kernel family (with its .cu sources), its gate rules and baselines.

memlens loads its files by path, as it loads any suite (`memlens profile` without --suite)."""

if __name__ != "memlens.kernels":  # the checkout's folder imported by its folder name: a second copy
    raise ImportError(f"this folder is the package memlens.kernels, not {__name__}: import memlens.kernels")
