"""reports/charts.py: the cross-run comparison chart; reports/chart_processes.py: charts in several processes."""

from __future__ import annotations

import subprocess
import sys

from memlens.model.results import KernelResult, RunInfo, RunResults
from tests.conftest import FIXTURES, REPO
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


DRAW_BOTH_WAYS = """
import sys
from functools import partial
from memlens.readers import read_report
from memlens.reports.build import build_report
from memlens.reports.chart_processes import draw_charts
from memlens.reports.charts import family_chart, roofline_chart
families = build_report([("suite", read_report(sys.argv[1]))]).runs[0].families[:2]
charts = [(f"t-{f.name}", partial(family_chart, f.rows, exact=True)) for f in families]
charts += [(f"t-{families[0].name}-roofline", partial(roofline_chart, families[0]))]
charts.append(("t-empty", partial(family_chart, [], exact=True)))
one = draw_charts(charts, workers=1)
assert one[-1] is None and all(drawn and drawn[0].startswith("<svg") for drawn in one[:-1]), one
print("same" if draw_charts(charts, workers=3) == one else "different")
"""


def test_charts_drawn_in_several_processes_are_the_ones_drawn_in_one() -> None:
    """draw_charts: processes forked from a one-thread process (memlens report; not pytest-xdist's worker,
    hence a process of its own) give the page byte for byte what one process gives, in order, None where
    there is nothing to draw."""
    suite = FIXTURES / "nvidia_h100_80gb_hbm3" / "suite.results.json"
    done = subprocess.run(
        [sys.executable, "-c", DRAW_BOTH_WAYS, str(suite)], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert (done.returncode, done.stdout.strip()) == (0, "same"), done.stderr[-2000:]


def test_where_no_process_can_be_started_one_process_draws_the_charts(monkeypatch) -> None:
    """A machine that refuses the pool (no /dev/shm, a process limit) still gets its charts, drawn here."""
    import memlens.reports.chart_processes as processes
    from memlens.reports.charts import NARROW, WIDE

    def refused(*args, **kwargs):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(processes.threading, "active_count", lambda: 1)
    monkeypatch.setattr(processes, "ProcessPoolExecutor", refused)
    drawn = processes.draw_charts([("a", lambda salt, width: f"<svg {salt} {width}>")] * 2, workers=2)
    assert drawn == [(f"<svg a-wide {WIDE}>", f"<svg a-narrow {NARROW}>")] * 2
