"""Markdown escaping, one home for the report and the gate summary: literal text (`md_escape`),
and names in code spans (`md_code`), so a kernel name comes out the same in both."""

from __future__ import annotations

import re
from typing import Any

from memlens.io.safe_text import neutral


class MdSafe(str):
    """Text already in Markdown form: the Markdown template's escaping leaves it alone."""


_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]|~#])")
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def md_escape(value: Any) -> str:
    """Text as literal Markdown inline content, safe in a table cell: punctuation that Markdown
    reads is backslash-escaped, HTML's characters become entities, line breaks become spaces."""
    if isinstance(value, MdSafe):
        return value
    text = neutral("" if value is None else str(value))
    text = re.sub(r"[&<>]", lambda m: _MD_ENTITIES[m.group()], text)
    text = _MD_PUNCTUATION.sub(r"\\\1", text)
    return re.sub(r"\s*[\r\n]+\s*", " ", text)


def md_code(value: Any) -> MdSafe:
    """Text as a Markdown code span (for kernel names): a fence longer than any run of backticks
    inside, `|` escaped for tables (GFM reads `\\|` as `|` even in code), one line."""
    text = re.sub(r"\s*[\r\n]+\s*", " ", neutral(str(value))).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return MdSafe(f"{fence}{pad}{text}{pad}{fence}")
