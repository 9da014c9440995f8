"""profiling/tables.py, the terminal's table printer and JSON encoder, with columns of its own:
the fast printer draws what rich draws, and the encoder writes what json.dumps writes."""

from __future__ import annotations

import json
import math

from rich.console import Console

from profiling.tables import TableColumn, dumps_indented, fast_table, rich_table

COLUMNS = [TableColumn("name", numeric=False), TableColumn("count"), TableColumn("two-line\nheader")]
ROWS = [
    ["transpose<float, 32, 32, 0>(T1 *, const T1 *, int) with a long tail of words", "1,024", "3.5 ms"],
    ["f<[a]> :smile:", "7", "n/a"],
    ["x", "65,011,712", "0 (0/ld)"],
]


def _text(width: int, fast: bool) -> str:
    out = Console(width=width, record=True, markup=False, highlight=False, force_terminal=False, color_system=None)
    drawn = fast_table(out, COLUMNS, ROWS) if fast else rich_table(COLUMNS, ROWS)
    assert drawn is not None
    out.print(drawn, soft_wrap=fast)
    return out.export_text()


def test_the_fast_table_is_what_rich_draws_for_any_columns():
    for width in (60, 80, 160):
        assert _text(width, fast=True) == _text(width, fast=False)
    wide = _text(160, fast=False)
    assert "f<[a]> :smile:" in wide and "65,011,712" in wide  # names print as they are


def test_dumps_indented_writes_what_json_dumps_writes():
    data = {"a": [1, 2.5, None, True, "é<&>"], "b": {}, "c": [], "d": {"e": (1, 2)}, "f": math.inf}
    assert dumps_indented(data) == json.dumps(data, indent=2)
    assert dumps_indented({1: "int key"}) == json.dumps({1: "int key"}, indent=2)
