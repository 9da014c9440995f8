"""`memlens metrics`' lines on tensor-core work (issue 45): each kernel's tensor-core FLOPs, their rate, and the
share of the roof it stands on (model/roofline.py), under the table. JSON and CSV carry the same figures as
catalogue keys (tensor_ops_*, tensor_flops_*, tensor_flops, tensor_flop_rate, total_flops)."""

from __future__ import annotations

from collections.abc import Iterable

from memlens.io.units import format_count, significant
from memlens.model.results import KernelResult, RunResults
from memlens.model.roofline import bound, ceilings_of


def _rate(value: float) -> str:
    return f"{significant(value / 1e12)} TFLOP/s" if value >= 1e12 else f"{significant(value / 1e9)} GFLOP/s"


def tensor_lines(results: RunResults, kernels: Iterable[KernelResult]) -> list[str]:
    """One line a kernel that did tensor-core work; none where no kernel did, or none was measured."""
    ceilings = ceilings_of(results)
    lines = []
    for kernel in kernels:
        flops = kernel.value("tensor_flops")
        if not flops:
            continue
        text = f"{kernel.label}: tensor cores: {format_count(flops)} FLOPs"
        rate = kernel.value("tensor_flop_rate")
        if rate:
            text += f", {_rate(rate)}"
        where = bound(kernel, ceilings)
        if where is not None and where.roof is not None:
            bounded = ", memory-bound" if where.memory_bound else ""
            text += f"; on the {where.roof.label} roof: {_rate(where.achieved)} of {_rate(where.peak_flops)}"
            text += f" ({significant(where.pct_of_limit)}%{bounded})"
        elif where is not None:
            text += f"; CUDA cores did more FLOPs ({format_count(kernel.value('flops') or 0)})"
        lines.append(text)
    return lines
