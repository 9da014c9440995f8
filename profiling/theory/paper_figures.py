"""Figures on paper against the measurement: the exact excess shared wavefronts a suite variant
declares (`Expect(excess_wavefronts=...)`, computed with profiling/theory/bank_model.py or by hand, recorded
in results.json at the size the variant ran) beside the exact excess ncu measured. `memlens
metrics`, the report and the gate's `equals_paper` bound all compare them here.

A variant's measured figure is the sum over its launches (the label's kernels); it is "as on
paper" when it equals the declared figure exactly, and otherwise both figures are shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memlens.model.results import KernelResult, RunResults

METRIC = "exact_excess_wavefronts"  # the measured figure a paper figure is compared with
AS_ON_PAPER = "as on paper"


@dataclass(frozen=True)
class PaperCheck:
    label: str
    paper: int  # the declared figure
    measured: float | None  # the exact excess over the label's launches; None where not measured

    @property
    def as_on_paper(self) -> bool | None:
        return None if self.measured is None else self.measured == self.paper

    def words(self) -> str:
        """ "as on paper" where the figures agree, else both figures."""
        if self.measured is None:
            return f"on paper {self.paper:,}, measured n/a"
        if self.as_on_paper:
            return AS_ON_PAPER
        return f"measured {self.measured:,.0f}, on paper {self.paper:,}"


def declared(results: RunResults) -> dict[str, int]:
    """label -> the paper figure of each verified variant that declares one (as results.json records it)."""
    figures = {}
    for outcome in results.outcomes:
        figure = outcome.expect.excess_wavefronts if outcome.expect is not None else None
        if outcome.status == "ok" and outcome.family and outcome.variant and isinstance(figure, int):
            figures[f"{outcome.family}/{outcome.variant}"] = figure
    return figures


def measured(kernels: Iterable[KernelResult]) -> float | None:
    """The exact excess of a variant's launches together; None where any launch lacks it or there are none."""
    values = [kernel.value(METRIC) for kernel in kernels]
    if not values or any(v is None for v in values):
        return None
    return float(sum(v for v in values if v is not None))


def check(label: str, paper: int, kernels: Iterable[KernelResult]) -> PaperCheck:
    return PaperCheck(label, paper, measured(kernels))


def checks(results: RunResults) -> dict[str, PaperCheck]:
    """label -> its check, for every variant of the run with a paper figure."""
    figures = declared(results)
    by_label: dict[str, list[KernelResult]] = {}
    for kernel in results.kernels:
        if kernel.label in figures:
            by_label.setdefault(kernel.label, []).append(kernel)
    return {label: check(label, paper, by_label.get(label, [])) for label, paper in figures.items()}


def lines(found: dict[str, PaperCheck], labels: Iterable[str]) -> list[str]:
    """Lines for below a table of kernels with these labels: one naming every variant as on paper,
    one per variant whose figures differ or were not measured."""
    shown = [found[label] for label in dict.fromkeys(labels) if label in found]
    same = [c.label for c in shown if c.as_on_paper]
    out = [f"exact excess wavefronts {AS_ON_PAPER}: {', '.join(same)}"] if same else []
    out += [f"{c.label}: exact excess wavefronts {c.words()}" for c in shown if c.as_on_paper is False]
    unmeasured = [c.label for c in shown if c.measured is None]
    if unmeasured:  # one line, not one a variant: a --fast run measures none of them
        out.append(
            f"exact excess wavefronts on paper, not measured in this run ({len(unmeasured)} of "
            f"{len(shown)}): {', '.join(unmeasured)}"
        )
    return out
