"""Names from reports made safe to show: bidirectional control characters shown as their codes."""

from __future__ import annotations

import re

# Characters that reorder text on screen: LRE RLE PDF LRO RLO, LRI RLI FSI PDI, LRM RLM, ALM
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def neutral(text: str) -> str:
    """`text` with every bidirectional control character shown as its code (`<U+202E>`), so a name
    cannot reverse or reorder the text around it in a terminal, a page or a CI log."""
    return _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)
