"""reports/charts.py: the cross-run comparison chart."""

from __future__ import annotations

from memlens.model.results import KernelResult, RunInfo, RunResults
from tests.model.test_kernel_names import LONG_CPP


def test_the_comparison_chart_uses_a_log_scale() -> None:
    from memlens.reports.build import build_report
    from memlens.reports.charts import comparison_chart

    def timed(slow: float) -> RunResults:
        durations = {"small_a": 120_000.0, "small_b": 125_000.0, "big": slow}
        kernels = tuple(KernelResult(n, None, None, i, {"duration": d}) for i, (n, d) in enumerate(durations.items()))
        return RunResults(RunInfo(source=str(slow)), kernels)

    report = build_report([("a", timed(17_600_000.0)), ("b", timed(17_000_000.0))])
    svg = comparison_chart(report.comparisons, "t")
    assert svg is not None and "log scale" in svg


def test_chart_labels_fit_the_margin_and_keep_the_kernels_name() -> None:
    from memlens.reports.charts import LABEL_CHARS, short

    label = short(LONG_CPP)
    assert len(label) <= LABEL_CHARS <= 30  # 0.2 of an 11-inch figure at 9 pt: longer ones are cut at the left
    assert label.startswith("void transpose_kernel")
    assert short("transpose/padded", " (baseline)") == "transpose/padded (baseline)"
