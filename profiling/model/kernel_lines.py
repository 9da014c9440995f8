"""A run's kernels by source line: each kernel's instructions rolled up by line, the line with the most time at
stake first (model/time_at_stake.py), the files found as the run kept them (its sources, the files its suite
declared, CuPy's temporary copies)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memlens.model.results import KernelResult, RunResults
from memlens.model.source_lines import LineRecord, SourceMap, has_line_info, roll_up
from memlens.model.time_at_stake import DramCeiling, Stake, kernel_stake, line_stake


@dataclass(frozen=True)
class KernelLines:
    """One kernel launch and its lines, the most time at stake first."""

    kernel: KernelResult
    lines: tuple[LineRecord, ...]
    line_info: bool  # False: each SASS instruction stands for its line
    stakes: tuple[Stake | None, ...] = ()  # each line's time at stake, in the order of `lines`
    headroom: Stake | None = None  # the kernel's own: how far it runs from its floor
    ceiling: DramCeiling | None = None  # the run's measured DRAM ceiling the stakes took (None: the GPU's peak)

    def stake(self, index: int) -> Stake | None:
        return self.stakes[index] if index < len(self.stakes) else None


def kernel_lines(
    results: RunResults, kernels: list[KernelResult], root: Path | None = None, ceiling: DramCeiling | None = None
) -> list[KernelLines]:
    """Each of `kernels` (of `results`) with its lines, file names shown relative to `root` (default:
    the working directory) and CuPy's temporary copies mapped to the files the suite declared; `ceiling`: the
    run's measured DRAM ceiling, which the time at stake takes DRAM bytes at (None: the GPU's peak)."""
    root = (root or Path.cwd()).resolve()
    declared: dict[tuple[str | None, str | None], tuple[str, ...]]  # a kernel's family may be None
    declared = {(o.family, o.variant): o.sources for o in results.outcomes}
    found = []
    for kernel in kernels:
        sources = SourceMap(
            root, results.embedded_sources, declared.get((kernel.family, kernel.variant), ()), results.written_at
        )
        lines = roll_up(kernel.instructions, sources, kernel.kernel)
        staked = [(line, line_stake(kernel, line, results.info.compute_capability, ceiling)) for line in lines]
        staked.sort(
            key=lambda pair: -(pair[1].seconds if pair[1] is not None else 0.0)
        )  # stable: ties stay hottest first
        found.append(
            KernelLines(
                kernel,
                tuple(line for line, _ in staked),
                has_line_info(kernel.instructions),
                tuple(stake for _, stake in staked),
                kernel_stake(kernel, ceiling),
                ceiling,
            )
        )
    return found
