"""Tables and JSON for the terminal, fast enough for thousands of kernels.

`Column` is memlens's one column type: the terminal's tables, `memlens metrics` and the report's
variant tables (HTML, Markdown, JSON) all describe their columns with it. `rich_table` is the one
table renderer on rich: every command's table is drawn by it. `fast_table` draws the same text
without rich's renderer per cell (rich's column widths, box and wrapping). Kept because rich is
slower: 1,000 rows of 10 columns to a file take 1.05 s through rich and 0.045 s here, the same
122,610 characters (rich 15.0, Python 3.11, this repository's CPU machine; tests/io/test_tables.py
checks the text is rich's). `write_indented` lays JSON out as `json.dumps(data, indent=2)` does,
encoded by orjson, many times faster for large reports.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TextIO

import orjson
from rich.cells import cell_len  # a few ms; the rest of rich is imported where a table is drawn

if TYPE_CHECKING:
    from rich.box import Box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

LABEL_MIN_WIDTH = 28  # characters of a label (a text column) kept on one line however narrow the terminal


@dataclass(frozen=True)
class Column:
    """A column of a table, wherever it is shown: its header (on two lines where long) and what it holds;
    how a terminal lays out its cells (rich's column options); the report's group, formatting kind and
    longer title.

    key: what the column shows: a catalogue key or a report figure (a report row's cells are keyed by
        it), or the name its notes give it in `memlens metrics` ("exact excess wavefronts: n/a - ...").
    keys: the catalogue keys its cells show (`memlens metrics`: a missing one prints n/a, with a note).
    group, kind, title: the report's: the header above a run of columns, a formatting kind of
        reports.formatting.FORMATTERS, a longer explanation (its tooltip and legend).
    numeric: right-justified, else left-justified. wrap: a cell breaks over lines where the column is
        narrow (False: never, a figure stays whole). overflow: a word wider than the column folds onto
        the next line ("fold") or is cut with an ellipsis ("ellipsis").
    min_width, width, ratio: rich's (`label_width` gives a label column's minimum)."""

    header: str
    key: str = ""
    keys: tuple[str, ...] = ()
    group: str = ""
    kind: str = ""
    title: str = ""
    numeric: bool = False
    wrap: bool = True
    overflow: Literal["fold", "ellipsis"] = "fold"
    min_width: int | None = None
    width: int | None = None
    ratio: int | None = None


def table_box() -> Box:
    from rich import box

    return box.HEAVY_HEAD  # rich's Table default


def label_width(cells: Sequence[str]) -> int:
    """The minimum width of a label column: its longest line, up to LABEL_MIN_WIDTH characters, kept
    on one line however narrow the terminal (rich adds the padding to it)."""
    return min(max((cell_len(line) for cell in cells for line in cell.split("\n")), default=0), LABEL_MIN_WIDTH)


def rich_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    title: str | None = None,
    caption: str | None = None,
    expand: bool = False,
) -> Table:
    """A rich Table of `rows`, each column laid out as its `Column` says; a str cell prints as it is
    (no markup, no emoji codes), a Text with its style."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=table_box(), title=title, caption=caption, expand=expand)
    for column in columns:
        table.add_column(
            column.header,
            justify="right" if column.numeric else "left",
            overflow=column.overflow,
            no_wrap=not column.wrap,
            min_width=column.min_width,
            width=column.width,
            ratio=column.ratio,
        )
    for row in rows:
        table.add_row(*(Text(cell) if isinstance(cell, str) else cell for cell in row))
    return table


def fit_columns(columns: Sequence[Column], rows: Sequence[Sequence[str | Text]], width: int) -> list[Column] | None:
    """`columns` with the width each gets in a table of `rows` at most `width` cells wide where no word
    breaks: a column that wraps is at least as wide as its longest word (its header's too), one that does
    not as its longest line; where the table is too wide, the widest column narrows a cell at a time (as
    rich collapses a table), none under that. The columns as they are where the whole table fits; None
    where even the words do not."""
    texts = [[column.header, *(str(row[index]) for row in rows)] for index, column in enumerate(columns)]
    longest = [max(cell_len(line) for text in cells for line in text.split("\n")) for cells in texts]
    room = width - 3 * len(columns) - 1  # one space of padding a side, and the borders
    if sum(longest) <= room:
        return list(columns)
    least = [
        length if not column.wrap else max(_narrowest(line) for text in cells for line in text.split("\n"))
        for column, cells, length in zip(columns, texts, longest, strict=True)
    ]
    if sum(least) > room:
        return None
    widths = list(longest)
    for _ in range(sum(longest) - room):  # the widest column that can give a cell gives it, as rich collapses
        index = max((i for i in range(len(widths)) if widths[i] > least[i]), key=lambda i: widths[i])
        widths[index] -= 1
    step = -(-len(rows) // SEARCH_ROWS)  # a larger table is judged by a sample of its rows
    widths = _fewest_lines([cells[1::step] for cells in texts], widths, least, [c.wrap for c in columns])
    return [replace(column, width=width) for column, width in zip(columns, widths, strict=True)]


SEARCH_ROWS = 100  # rows (evenly spaced) whose lines the widths are chosen to make fewest: 0.1 s at most


def _fewest_lines(texts: list[list[str]], widths: list[int], least: list[int], wraps: list[bool]) -> list[int]:
    """`widths` with cells moved from one wrapping column to another while that makes the table's body
    fewer lines (each cell's lines counted as wrapped between words), the best such move each time."""

    @functools.cache
    def heights(index: int, width: int) -> tuple[int, ...]:
        return tuple(
            sum(
                max(1, len(textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False)))
                for line in cell.split("\n")
            )
            for cell in texts[index]
        )

    def total(candidate: list[int]) -> int:
        return sum(map(max, zip(*(heights(i, w) for i, w in enumerate(candidate)), strict=True)))

    flexible = [i for i, wrap in enumerate(wraps) if wrap]
    best = total(widths)
    while True:
        candidates = []
        for giver, taker in itertools.permutations(flexible, 2):
            for cells in range(1, widths[giver] - least[giver] + 1):
                candidate = list(widths)
                candidate[giver] -= cells
                candidate[taker] += cells
                candidates.append(candidate)
        found = min(candidates, key=total, default=None)
        if found is None or (lines := total(found)) >= best:
            return widths
        widths, best = found, lines


def _narrowest(line: str) -> int:
    """The narrowest a line can wrap to with no word broken: its longest word, its indent with its first."""
    words = line.split()
    indent = cell_len(line) - cell_len(line.lstrip(" "))
    return max([indent + cell_len(words[0]), *map(cell_len, words)]) if words else 0


def shorten_to_fit(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    index: int,
    width: int,
    shorten: Callable[[str, int], str],
) -> tuple[list[Column], list[list[str]]] | None:
    """`columns` fitted to `width` (fit_columns) with the cells of column `index` shortened by
    `shorten(cell, room)` to the room the other columns' longest words leave it; None where that room
    is under 8 cells or the table still does not fit."""
    others = [
        max(_narrowest(line) for cell in [column.header, *(str(row[i]) for row in rows)] for line in cell.split("\n"))
        for i, column in enumerate(columns)
        if i != index
    ]
    room = width - 3 * len(columns) - 1 - sum(others)
    if room < 8:
        return None
    body = [[shorten(str(cell), room) if i == index else str(cell) for i, cell in enumerate(row)] for row in rows]
    fitted = fit_columns(columns, body, width)
    return None if fitted is None else (fitted, body)


def longest_word(cells: Sequence[str]) -> int:
    """The widest word (in terminal cells) of `cells`: a column at least this wide breaks its cells
    between words, never inside one ("fp16_transpos|e")."""
    return max((cell_len(word) for cell in cells for word in cell.split()), default=0)


def fast_table(out: Console, columns: Sequence[Column], rows: list[list[str]]) -> Text | None:
    """The table `rich_table(columns, rows)` draws on `out`, made without rich's renderer per cell: rich sizes
    the columns (from a table of the few cells that decide their widths) and draws only the cells that
    do not fit on one line or are not plain text. None where the widths cannot be had."""
    from rich.text import Text

    widths = _column_widths(out, columns, rows)
    if widths is None:
        return None
    edges = table_box().substitute(out.options, safe=out.safe_box)
    header_style = out.get_style("table.header")
    text = Text(edges.get_top(widths) + "\n")
    layout = list(zip(columns, widths, strict=True))
    header = [_cell_lines(out, column.header, width, column, header=True) for column, width in layout]
    height = max(len(lines) for lines in header)
    header = [[" " * width] * (height - len(lines)) + lines for lines, width in zip(header, widths, strict=True)]
    for line_no in range(height):  # header cells are aligned to the bottom, each styled as rich styles it
        text.append(edges.head_left)
        for index, lines in enumerate(header):
            if index:
                text.append(edges.head_vertical)
            text.append(lines[line_no], header_style)
        text.append(edges.head_right + "\n")
    body = [edges.get_row(widths, "head", edge=True)]
    for number, row in enumerate(rows, 1):
        left, divider, right = (
            (edges.foot_left, edges.foot_vertical, edges.foot_right)
            if number == len(rows)
            else (edges.mid_left, edges.mid_vertical, edges.mid_right)
        )
        cells = [_cell_lines(out, cell, width, column) for cell, (column, width) in zip(row, layout, strict=True)]
        height = max(len(lines) for lines in cells)
        if height == 1:
            body.append(left + divider.join(lines[0] for lines in cells) + right)
            continue
        cells = [lines + [" " * width] * (height - len(lines)) for lines, width in zip(cells, widths, strict=True)]
        body.extend(left + divider.join(lines[line_no] for lines in cells) + right for line_no in range(height))
    body.append(edges.get_bottom(widths))
    text.append("\n".join(body))
    return text


def print_drawn(out: Console, text: Text) -> None:
    """Prints what fast_table drew, as `out.print(text, soft_wrap=True)` prints it. Where the console
    draws no style (a pipe or a file), the characters are written as they are: rich would make a Text of
    each line again (a second per 40,000 lines) to print the same."""
    if out.color_system is None and not out.record and not out.is_terminal:
        out.file.write(text.plain + "\n")
        out.file.flush()
    else:
        out.print(text, soft_wrap=True)


def _column_widths(out: Console, columns: Sequence[Column], rows: list[list[str]]) -> list[int] | None:
    """Each column's width (padding included) as rich sets it for `rows`. rich sizes a column from the
    largest minimum (longest word) and the largest maximum (longest line) of its cells, so a table of
    the cells that hold those, and of any cell that is not plain text, gets the same widths."""
    deciding: list[list[str]] = []
    for index in range(len(columns)):
        plain: list[str] = []
        lines: list[str] = []  # cells of several plain lines (a label above its kernel's name)
        picked: list[str] = []  # every cell that is neither, and three plain ones and two of lines
        for row in rows:
            cell = row[index]
            (plain if _plain(cell) else lines if _plain_lines(cell) else picked).append(cell)
        # the longest cell, the longest of one word, and the one of several with the longest word;
        # of the cells of lines (measured by their longest line and longest word), the two that hold those
        for candidates, key in (
            (plain, cell_len),
            ([cell for cell in plain if " " not in cell], cell_len),
            ([cell for cell in plain if " " in cell], _longest_word),
            (lines, _longest_line),
            (lines, _longest_word),
        ):
            if candidates:
                picked.append(max(candidates, key=key))
        deciding.append(picked)
    proxy = rich_table(
        columns, [[cells[r] if r < len(cells) else "" for cells in deciding] for r in range(max(map(len, deciding)))]
    )
    rendered = out.render_lines(proxy, out.options, pad=False)
    top = "".join(segment.text for segment in rendered[0]) if rendered else ""
    edges = table_box().substitute(out.options, safe=out.safe_box)
    if len(top) < 2 or not (top[0] == edges.top_left and top[-1] == edges.top_right):
        return None
    widths = [len(part) for part in top[1:-1].split(edges.top_divider)]
    return widths if len(widths) == len(columns) and all(widths) else None


def _longest_word(cell: str) -> int:
    return max(map(cell_len, cell.split()), default=0)


def _longest_line(cell: str) -> int:
    return max(map(cell_len, cell.split("\n")), default=0)


def _plain(cell: str) -> bool:
    """One line of printable text with no space at either end: drawn by padding it alone."""
    return cell.isprintable() and cell == cell.strip()


def _plain_lines(cell: str) -> list[str] | None:
    """The lines of a cell of several lines, each printable text with no space at its end (nor at the
    start of the first): rich draws each as a cell of its own, where it fits. None for any other cell."""
    lines = cell.split("\n")
    if len(lines) < 2 or not _plain(lines[0]):
        return None
    if all(line.isprintable() and line.strip() and line == line.rstrip() for line in lines[1:]):
        return lines
    return None


def _cell_lines(out: Console, cell: str, width: int, column: Column, header: bool = False) -> list[str]:
    """The lines of one cell padded to `width` as rich draws it in `column` (a header is a str to rich,
    a body cell a Text)."""
    numeric = column.numeric
    if _plain(cell) and (room := width - 2 - cell_len(cell)) >= 0:
        return [f" {' ' * room}{cell} " if numeric else f" {cell}{' ' * room} "]
    lines = None if numeric or header or not column.wrap else _plain_lines(cell)
    if lines is not None and all(cell_len(line) <= width - 2 for line in lines):
        return [f" {line}{' ' * (width - 2 - cell_len(line))} " for line in lines]
    from rich.padding import Padding
    from rich.text import Text

    renderable = cell if header else Text(cell)
    options = out.options.update(
        width=width,
        justify="right" if numeric else "left",
        no_wrap=not column.wrap,
        overflow=column.overflow,
        height=None,
        highlight=False,
    )
    rendered = out.render_lines(Padding(renderable, (0, 1)), options, pad=True)
    return ["".join(segment.text for segment in line) for line in rendered] or [" " * width]  # a row is 1 line or more


# --- JSON ------------------------------------------------------------------------------------------


def write_indented(data: Any, stream: TextIO, levels: int = 2) -> None:
    """Writes `data` as JSON laid out as `json.dumps(data, indent=2)` lays it out, and a newline, to
    `stream`, the items of its containers down to `levels` deep one at a time: the text of 10,000
    kernels (over 100 MB) is never held whole. Encoded by orjson (the standard library encodes
    indented JSON in pure Python: seconds for 10,000 kernels). Numbers are the shortest text that
    reads back the same (`1e-05` may print as `0.00001`); NaN and infinities print as null, which JSON
    has, not as NaN, which it lacks; text beyond ASCII is escaped as json.dumps escapes it."""
    _write(data, stream.write, "\n", levels)
    stream.write("\n")


def _write(value: Any, write: Callable[[str], Any], newline: str, levels: int) -> None:
    kind = type(value)
    if kind is dict and value and levels and all(type(key) is str for key in value):
        inner = newline + "  "
        opening = "{" + inner
        for key, item in value.items():
            write(f"{opening}{_dumps(key, inner)}: ")
            _write(item, write, inner, levels - 1)
            opening = "," + inner
        write(newline + "}")
    elif (kind is list or kind is tuple) and value and levels:
        inner = newline + "  "
        opening = "[" + inner
        for item in value:
            write(opening)
            _write(item, write, inner, levels - 1)
            opening = "," + inner
        write(newline + "]")
    else:
        write(_dumps(value, newline))


_ORJSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


def _dumps(value: Any, newline: str) -> str:
    """`value` as indented JSON text whose lines after the first start with `newline`."""
    try:
        text = orjson.dumps(value, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:  # an int beyond 64 bits, say: the standard library's text
        text = json.dumps(value, indent=2)
    if not text.isascii():  # only strings hold other characters; escape them as json.dumps does
        text = _NOT_ASCII.sub(lambda match: json.dumps(match.group())[1:-1], text)
    return text if newline == "\n" else text.replace("\n", newline)
