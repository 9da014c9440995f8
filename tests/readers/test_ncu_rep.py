"""profiling/readers/ncu_rep.py: ncu's other names of a counter (the reader's other tests: test_readers.py)."""

from __future__ import annotations

import pytest


def test_an_ncu_rep_with_ncus_other_name_for_shared_loads_is_measured(monkeypatch) -> None:
    from memlens.readers import ncu_rep

    class Metric:
        def __init__(self, value: float, unit: str) -> None:
            self.value, self._unit = value, unit

        def unit(self) -> str:
            return self._unit

    class Binding:
        def metric_by_name(self, action: dict, name: str) -> Metric | None:
            return action.get(name)

        def has_value(self, metric: Metric) -> bool:
            return True

        def value(self, metric: Metric) -> float:
            return metric.value

    monkeypatch.setattr(ncu_rep, "_binding", lambda: Binding())
    action = {
        "gpu__time_duration.sum": Metric(5.0, "nsecond"),
        "smsp__sass_inst_executed_op_shared_ld.sum": Metric(2_097_152.0, "inst"),
        "sass__inst_executed_shared_stores": Metric(2_097_152.0, "inst"),
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": Metric(67_633_152.0, ""),
    }
    reader = ncu_rep._MetricReader()
    values = reader.values(action)
    kernel = ncu_rep._kernel("k", 0, values, (None, None), reader.units, False)
    assert kernel.metric("shared_ld_instructions").value == 2_097_152.0
    assert kernel.metric("shared_st_instructions").value == 2_097_152.0
    assert kernel.metric("shared_ld_ways").value == pytest.approx(32.25)
