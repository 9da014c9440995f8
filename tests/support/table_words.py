"""Reading a rendered terminal table back into its cells, to check that a narrow terminal broke no word:
`parse_tables` gives each table's headers and rows (a cell's lines joined by a space), `assert_words_whole`
that every line fits and that each word given appears whole, or shortened in the middle with "…"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rich.cells import cell_len

ELLIPSIS = "…"
HEADER_EDGE, BODY_EDGE = "┃", "│"


@dataclass(frozen=True)
class ParsedTable:
    headers: list[str]
    rows: list[list[str]]

    def words(self) -> list[str]:
        return [word for cell in [*self.headers, *(c for row in self.rows for c in row)] for word in _words(cell)]


def parse_tables(text: str) -> list[ParsedTable]:
    """Every table of `text` (rich's HEAVY_HEAD box): a header cell's lines joined, a key broken after an
    underscore ("shared_ld_" / "instructions") rejoined; a body row starts on a line whose first cell is
    not blank and not indented (a line under it, "  kernel", continues the row)."""
    tables: list[ParsedTable] = []
    header: list[list[str]] = []
    rows: list[list[list[str]]] = []
    for line in text.splitlines():
        if line.startswith("┏"):
            header, rows = [], []
        elif line.startswith(HEADER_EDGE):
            cells = line[1:-1].split(HEADER_EDGE)
            header = header or [[] for _ in cells]
            for parts, cell in zip(header, cells, strict=True):
                parts.append(cell.strip())
        elif line.startswith(BODY_EDGE):
            cells = line[1:-1].split(BODY_EDGE)
            if not rows or (cells[0].strip() and not cells[0].startswith("  ")):
                rows.append([[] for _ in cells])
            for parts, cell in zip(rows[-1], cells, strict=True):
                parts.append(cell.strip())
        elif line.startswith("└"):
            tables.append(ParsedTable([_join(parts) for parts in header], [[_join(p) for p in row] for row in rows]))
    return tables


def _join(parts: list[str]) -> str:
    return " ".join(part for part in parts if part).replace("_ ", "_")


def _words(cell: str) -> list[str]:
    return cell.split()


def whole_or_elided(word: str, shown: str) -> bool:
    """`shown` is `word`, or `word` shortened in the middle: its start and end kept around one "…"."""
    if shown == word:
        return True
    head, mark, tail = shown.partition(ELLIPSIS)
    return (
        bool(mark) and ELLIPSIS not in tail and word.startswith(head) and word.endswith(tail) and len(shown) < len(word)
    )


def assert_words_whole(text: str, width: int, words: Iterable[str]) -> None:
    """Every line of `text` at most `width` cells; every word of `words` (each as often as it is given)
    among the words of its tables' cells, whole or shortened in the middle."""
    too_wide = [line for line in text.splitlines() if cell_len(line) > width]
    assert not too_wide, "\n".join(too_wide)
    tables = parse_tables(text)
    assert tables, text
    shown = Counter(word for table in tables for word in table.words())
    for word, times in Counter(words).items():
        found = sum(count for token, count in shown.items() if whole_or_elided(word, token))
        assert found >= times, f"{word!r}: {found} of {times} whole\n{text}"
