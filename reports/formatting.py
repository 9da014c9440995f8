"""Human text for report values: one function per kind of figure, all built on profiling.units."""

from __future__ import annotations

import math
import re

from memlens.units import (
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration,
    format_percent,
    significant,
)

COMPACT_STEPS = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))


def compact_count(value: float) -> str:
    """A large count in a few characters: 65_011_712 -> "65.0 M", 812 -> "812", 0 -> "0"."""
    for scale, name in COMPACT_STEPS:
        if abs(value) >= scale:
            return f"{significant(value / scale)} {name}"
    return format_count(value)


def per_instruction(value: float) -> str:
    """A ratio per instruction: whole numbers stay whole (31.0 -> "31"), else 3 digits."""
    if abs(value - round(value)) < 0.05 and abs(value) >= 1:
        return str(round(value))
    return significant(value)


def exact_bytes(value: float) -> str:
    """Bytes as an exact count, for small per-block figures: 4224 -> "4,224 B"."""
    return f"{format_count(value)} B"


def ways(value: float) -> str:
    """Wavefronts per instruction: 32.24 -> "32.2"."""
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def speedup(value: float) -> str:
    """A speed ratio: 1.6384 -> "1.64×"."""
    return f"{significant(value)}×"


def signed_percent(fraction: float) -> str:
    """A relative change to 0.1%: 0.123 -> "+12.3%", -0.5 -> "−50.0%" (a true minus sign), 2.5 -> "+250%"."""
    percent = abs(fraction) * 100
    text = f"{percent:.1f}" if percent < 100 else f"{percent:,.0f}"
    if text == "0.0":
        return "±0%"
    return f"+{text}%" if fraction > 0 else f"−{text}%"


# kind -> formatter; the report's columns name a kind
FORMATTERS = {
    "duration": format_duration,
    "milliseconds": lambda ms: format_duration(ms * 1e6),  # memlens bench times in ms
    "bandwidth": format_bandwidth,
    "gb_per_s": lambda gb: format_bandwidth(gb * 1e9),  # memlens bench bandwidths in GB/s
    "percent": format_percent,
    "ways": ways,
    "compact": compact_count,
    "count": format_count,
    "bytes": lambda v: format_bytes(v, binary=True),
    "decimal_bytes": format_bytes,
    "exact_bytes": exact_bytes,
    "speedup": speedup,
}


def format_value(value: float | None, kind: str) -> str:
    """`value` as text for a column of `kind`; "n/a" for a missing or non-finite value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return FORMATTERS[kind](value)


_SUITE_MODULE = re.compile(r"\bmemlens_suite_[0-9a-f]+_\w+::")  # how memlens imports a suite file
_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")
_RETURN_TYPE = re.compile(r"^(?:void|static|__global__)\s+")


def short_kernel(name: str) -> str:
    """A kernel's name without its arguments, return type, ABI tags or memlens' module prefix:
    "void transpose<float, 32, 32, 0>(T1 *, const T1 *)" -> "transpose<float, 32, 32, 0>",
    "memlens_suite_9945_matmul::matmul_naive[abi:v1,cw51](Array<float, 2, C>)" -> "matmul_naive"."""
    text = _ABI_TAG.sub("", _SUITE_MODULE.sub("", name))
    depth = 0
    for index, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and index > 0:
            text = text[:index]
            break
    return _RETURN_TYPE.sub("", text.strip()) or name
