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


def labels_pattern(labels: list[str] | tuple[str, ...]) -> str:
    """A -k regex that selects exactly these family/variant labels (one GPU's share of a suite)."""
    return "^(?:" + "|".join(re.escape(label) for label in labels) + ")$"
