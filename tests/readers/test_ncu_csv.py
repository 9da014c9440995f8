"""profiling/readers/ncu_csv.py: ncu's other names of a counter (the CSV reader's other tests: test_readers.py)."""

from __future__ import annotations

import pytest

from memlens.readers.ncu_csv import parse_csv
from tests.conftest import FIXTURES

PROBE = FIXTURES / "probe"

# --- item 6: ncu's other names of the shared-memory instruction counts -------------------------------

OTHER_NAMES = {
    "smsp__inst_executed_op_shared_ld.sum": (
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "sass__inst_executed_shared_loads",
    ),
    "smsp__inst_executed_op_shared_st.sum": (
        "smsp__sass_inst_executed_op_shared_st.sum",
        "sass__inst_executed_shared_stores",
    ),
}


@pytest.mark.parametrize("which", [0, 1])
def test_a_csv_with_ncus_other_name_for_shared_loads_is_measured(which: int) -> None:
    text = (PROBE / "probe.csv").read_text(encoding="utf-8")
    original = {k.label: k for k in parse_csv(text, "probe.csv").kernels}
    for name, others in OTHER_NAMES.items():
        assert f'"{name}"' in text
        text = text.replace(f'"{name}"', f'"{others[which]}"')  # the header only: the recorded values stay
    renamed = {k.label: k for k in parse_csv(text, "renamed.csv").kernels}
    conflict = renamed["transpose/conflict"]
    for key in ("shared_ld_instructions", "shared_st_instructions", "shared_ld_ways"):
        assert conflict.metric(key).value == original["transpose/conflict"].metric(key).value, key
    assert conflict.metric("shared_ld_ways").value == pytest.approx(32.25, abs=0.01)
