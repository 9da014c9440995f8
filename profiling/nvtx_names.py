"""How suite variants are named: the NVTX domain and range names, and -k filters on labels.

Kept free of heavy imports: readers and `memlens metrics` need it without NumPy.
"""

from __future__ import annotations

import re

from .errors import ConfigError

NVTX_DOMAIN = "memlens"
# Names become NVTX ranges "family.variant" that ncu filters with a regex; keep them plain.
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def compile_filter(pattern: str | None) -> re.Pattern[str] | None:
    """The -k regex, searched in "family/variant" labels (or kernel names)."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"bad -k pattern {pattern!r}: {exc}") from None
