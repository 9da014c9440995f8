"""A run's kernels by source line: each kernel's instructions rolled up by line, hottest first, the
files found as the run kept them (its sources, the files its suite declared, CuPy's temporary copies)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memlens.model.results import KernelResult, RunResults
from memlens.model.source_lines import LineRecord, SourceMap, has_line_info, roll_up


@dataclass(frozen=True)
class KernelLines:
    """One kernel launch and its lines, hottest first."""

    kernel: KernelResult
    lines: tuple[LineRecord, ...]
    line_info: bool  # False: each SASS instruction stands for its line


def kernel_lines(results: RunResults, kernels: list[KernelResult], root: Path | None = None) -> list[KernelLines]:
    """Each of `kernels` (of `results`) with its lines, file names shown relative to `root` (default:
    the working directory) and CuPy's temporary copies mapped to the files the suite declared."""
    root = (root or Path.cwd()).resolve()
    declared: dict[tuple[str | None, str | None], tuple[str, ...]]  # a kernel's family may be None
    declared = {(o.family, o.variant): o.sources for o in results.outcomes}
    found = []
    for kernel in kernels:
        sources = SourceMap(
            root, results.embedded_sources, declared.get((kernel.family, kernel.variant), ()), results.written_at
        )
        lines = roll_up(kernel.instructions, sources, kernel.kernel)
        found.append(KernelLines(kernel, tuple(lines), has_line_info(kernel.instructions)))
    return found
