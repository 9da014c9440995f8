"""profiling/io/tables.py, the terminal's table printer and JSON encoder, with columns of its own:
the fast printer draws what rich draws, and the encoder writes what json.dumps writes."""

from __future__ import annotations

import io
import json
import math

import pytest
from rich.console import Console

from memlens.io.tables import Column, fast_table, fit_columns, label_width, rich_table, shorten_to_fit, write_indented
from memlens.model.kernel_names import elide_lines

ROWS = [
    ["transpose<float, 32, 32, 0>(T1 *, const T1 *, int) with a long tail of words", "1,024", "3.5 ms"],
    ["f<[a]> :smile:", "7", "n/a"],
    ["x", "65,011,712", "0 (0/ld)"],
    # a program's label above its kernel's name, as `memlens metrics` prints them; one line too long to fit
    ["iteration > cudaapp@spill/capped\n  spill_capped(float *, int)", "12", "1 ms"],
    ["step12 > many/k3\n  many_scale_3 with a name long enough to be folded on a narrow terminal", "3", "2 ms"],
]

# `memlens metrics`' columns: a label kept LABEL_MIN_WIDTH wide, figures right-justified and never wrapped
COLUMNS = [
    Column("name", min_width=label_width([row[0] for row in ROWS])),
    *(Column(header, numeric=True, wrap=False) for header in ("count", "two-line\nheader")),
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


def test_the_fast_table_draws_cells_of_lines_without_rich():
    """Thousands of labelled kernels (two lines a cell) cost rich's renderer a few cells, not one a row."""
    out = Console(width=160, record=True, markup=False, highlight=False, force_terminal=False, color_system=None)
    rendered, depth = [], [0]
    render_lines = out.render_lines

    def counted(renderable, *args, **kwargs):  # what fast_table asks rich to draw (not what rich draws inside)
        if not depth[0]:
            rendered.append(type(renderable).__name__)
        depth[0] += 1
        try:
            return render_lines(renderable, *args, **kwargs)
        finally:
            depth[0] -= 1

    out.render_lines = counted  # type: ignore[method-assign]
    rows = [[f"step{i} > many/k{i % 8}\n  many_scale_{i % 8}", str(i), "1 ms"] for i in range(1000)]
    drawn = fast_table(out, COLUMNS, rows)
    assert drawn is not None
    assert rendered == ["Table", "Padding"]  # the table that sizes the columns, the two-line header
    assert "│ step999 > many/k7" in drawn.plain and "│   many_scale_7 " in drawn.plain


def indented(data, levels: int = 2) -> str:
    stream = io.StringIO()
    write_indented(data, stream, levels)
    return stream.getvalue()


@pytest.mark.parametrize("levels", [0, 2])  # encoded whole, and a piece at a time
def test_write_indented_writes_what_json_dumps_writes(levels: int):
    data = {"a": [1, 2.5, None, True, "é<&>", "😀"], "b": {}, "c": [], "d": {"e": (1, 2)}, "big": 2**70}
    assert indented(data, levels) == json.dumps(data, indent=2) + "\n"
    assert indented({1: "int key"}, levels) == json.dumps({1: "int key"}, indent=2) + "\n"


def test_write_indented_writes_valid_json_for_what_json_dumps_would_not():
    text = indented({"nan": math.nan, "inf": [math.inf, -math.inf], "small": 1e-05}, levels=0)
    assert json.loads(text) == {"nan": None, "inf": [None, None], "small": 1e-05}
    assert "NaN" not in text and "Infinity" not in text
    with pytest.raises(TypeError):
        indented({"path": object()})


def test_write_indented_writes_it_a_piece_at_a_time():
    kernels = [
        {"label": f"k{i}", "metrics": {"d": {"value": 1.5 * i, "unit": "ns"}, "x": {"value": None}}} for i in range(3)
    ]
    data = {
        "info": {"gpu": "H200", "n": 3},
        "kernels": kernels,
        "empty": [],
        "odd": {1: [None, {2: "x"}]},
        "deep": [[{"a": [1, {"b": ()}]}]],
        "none": {},
    }
    for levels in (0, 1, 2, 5):
        pieces: list[str] = []
        stream = io.StringIO()
        stream.write = lambda text, pieces=pieces: pieces.append(text)  # type: ignore[method-assign]
        write_indented(data, stream, levels)
        assert "".join(pieces) == json.dumps(data, indent=2) + "\n"
        assert len(pieces) > (8 if levels == 2 else 1) or levels == 0
        if levels == 2:  # one piece a kernel, none holding two
            labelled = [piece.count('"label"') for piece in pieces]
            assert sum(labelled) == 3 and max(labelled) == 1


# --- fit_columns, shorten_to_fit: tables that break no word ---------------------------------------------


def _drawn(columns, rows, width: int) -> list[str]:
    out = Console(width=width, record=True, markup=False, highlight=False, file=io.StringIO())
    out.print(rich_table(columns, rows))
    return out.export_text().splitlines()


FIT_ROWS = [
    ("PASS", "padded and swizzled transposes stay conflict-free", "global_load_sectors_per_request = 4 (<= 4)"),
    ("FAIL", "the naive matmul still shows low intensity", "arithmetic_intensity_l1 = 0.1176 (<= 0.2500)"),
]


def test_fit_columns_keeps_every_word_whole_and_makes_the_fewest_lines():
    columns = [Column("status"), Column("rule"), Column("detail")]
    assert fit_columns(columns, FIT_ROWS, 200) == columns  # the whole table fits: as it is
    fitted = fit_columns(columns, FIT_ROWS, 60)
    assert fitted is not None and sum(c.width for c in fitted) + 10 <= 60
    assert fitted[2].width >= len("global_load_sectors_per_request")  # no column under its longest word
    lines = _drawn(fitted, FIT_ROWS, 60)
    words = " ".join(line.replace("│", " ") for line in lines).split()
    assert "global_load_sectors_per_request" in words and "conflict-free" in words and max(map(len, lines)) <= 60
    assert fit_columns(columns, FIT_ROWS, 45) is None  # its longest words need 6 + 13 + 31 + 10 cells


def test_shorten_to_fit_elides_one_column_to_the_room_the_others_leave():
    name = "void transpose_kernel<float, 32, 8, true>(float *, const float *, int)"
    columns = [Column("kernel", wrap=False), Column("detail")]
    rows = [(name, "global_load_sectors_per_request = 4")]
    fitted = shorten_to_fit(columns, rows, 0, 70, elide_lines)  # 70 - 7 - 31: 32 cells for the name
    assert fitted is not None
    assert fitted[1] == [["void transpose_kernel<…>(…)", rows[0][1]]]
    assert max(map(len, _drawn(*fitted, 70))) <= 70
    assert shorten_to_fit(columns, [(name, "x" * 60)], 0, 70, elide_lines) is None  # under 8 cells left
