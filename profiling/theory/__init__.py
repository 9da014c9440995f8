"""Figures worked out on paper: the shared-memory bank model, the XOR swizzle, expected wavefronts."""
