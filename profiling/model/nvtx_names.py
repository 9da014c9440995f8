"""How suite variants are named: the NVTX domain and range names; the -k filter on labels and kernels.

Kept free of heavy imports: readers and `memlens metrics` need it without NumPy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol, TypeVar

from memlens.errors import ConfigError

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


class _Named(Protocol):
    label: str  # "family/variant", or the name a plain report gives
    kernel: str  # the function's name


Kernel = TypeVar("Kernel", bound=_Named)


def kernels_matching(kernels: Iterable[Kernel], pattern: str | None) -> list[Kernel]:
    """The -k filter over measured kernels: those whose label or function name the regex `pattern`
    matches (a search; every kernel where None). ConfigError for a pattern that is not a regex."""
    regex = compile_filter(pattern)
    return [k for k in kernels if regex is None or regex.search(k.label) or regex.search(k.kernel)]


def labels_pattern(labels: list[str] | tuple[str, ...]) -> str:
    """A -k regex that selects exactly these family/variant labels (one GPU's share of a suite)."""
    return "^(?:" + "|".join(re.escape(label) for label in labels) + ")$"


# A variant run at one size of a sweep (--sweep FAMILY.NAME=V1,V2): "conflict@rows=1024". The name
# stands for the variant in its NVTX range ("transpose.conflict@rows=1024"), label and results.
SWEPT_PATTERN = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)@([A-Za-z][A-Za-z0-9_]*)=([0-9]+)$")


def swept_name(variant: str, size: str, value: int) -> str:
    """The name of `variant` run with size `size` = `value` in a sweep."""
    return f"{variant}@{size}={value}"


def parse_swept(name: str | None) -> tuple[str, str, int] | None:
    """(variant, size name, value) of a swept variant's name, None for any other name."""
    match = SWEPT_PATTERN.match(name or "")
    return (match.group(1), match.group(2), int(match.group(3))) if match else None
