"""reports/charts.py: the cross-run comparison chart."""

from __future__ import annotations

from memlens.model.results import KernelResult, RunInfo, RunResults


def test_the_comparison_chart_uses_a_log_scale() -> None:
    from memlens.reports.charts import comparison_chart
    from memlens.reports.render import build_report

    def timed(slow: float) -> RunResults:
        durations = {"small_a": 120_000.0, "small_b": 125_000.0, "big": slow}
        kernels = tuple(KernelResult(n, None, None, i, {"duration": d}) for i, (n, d) in enumerate(durations.items()))
        return RunResults(RunInfo(source=str(slow)), kernels)

    report = build_report([("a", timed(17_600_000.0)), ("b", timed(17_000_000.0))])
    svg = comparison_chart(report.comparisons, "t")
    assert svg is not None and "log scale" in svg
