"""Units: converting ncu's unit strings to the catalogue's base units, and human formatting.

Pure functions only. ncu writes units such as "nsecond", "usecond", "Kbyte", "Gbyte/second",
"byte/block", "register/thread" or "%"; with `--print-units base` it writes the base unit.
ncu's byte prefixes are decimal (16,896 bytes print as "16.896 Kbyte").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

TIME_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "µs": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
PREFIXES = {
    "": 1.0,
    "K": 1e3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}
# Denominators that qualify a quantity without changing it: "byte/block" is bytes of one block.
PER_CONTEXT = {"block", "thread", "warp", "launch", "kernel", "sm", "cta"}
PERCENT = {"%", "pct", "percent"}


class UnitError(ValueError):
    """A unit that cannot be converted to the unit asked for."""


def conversion_factor(unit: str, base: str) -> float:
    """What to multiply a value given in ncu's `unit` by to express it in the catalogue's `base`.

    `base` is one of "ns", "byte", "byte/second", "%" or a count ("inst", "sector", ...).
    An empty `unit` is taken as `base` itself. Raises UnitError when the two cannot match."""
    unit = unit.strip()
    if unit in ("", base):
        return 1.0
    if base == "ns":
        return _time_factor(unit)
    if base == "%":
        if unit in PERCENT:
            return 1.0
        raise UnitError(f"unit {unit!r} is not a percentage")
    if base == "byte/second":
        return _rate_factor(unit)
    if base == "byte":
        return _prefixed_factor(_strip_context(unit), "byte")
    return _count_factor(unit, base)


def _time_factor(unit: str) -> float:
    try:
        return TIME_NS[unit]
    except KeyError:
        raise UnitError(f"unit {unit!r} is not a time") from None


def _rate_factor(unit: str) -> float:
    numerator, _, denominator = unit.partition("/")
    if not denominator:
        raise UnitError(f"unit {unit!r} is not a rate")
    seconds = _time_factor(denominator) / 1e9
    return _prefixed_factor(numerator, "byte") / seconds


def _strip_context(unit: str) -> str:
    numerator, _, denominator = unit.partition("/")
    if denominator and denominator.lower() not in PER_CONTEXT:
        raise UnitError(f"unit {unit!r} is a rate, not an amount")
    return numerator


def _prefixed_factor(unit: str, base: str) -> float:
    if unit.endswith(base):
        prefix = unit[: -len(base)]
        if prefix in PREFIXES:
            return PREFIXES[prefix]
    raise UnitError(f"unit {unit!r} is not a multiple of {base}")


def _count_factor(unit: str, base: str) -> float:
    """Counts are dimensionless: ncu may name one differently ("conflict" vs nothing), but a
    time, a byte amount, a rate or a percentage is never a count."""
    numerator = _strip_context(unit)
    if numerator == base:
        return 1.0
    if numerator.endswith(base) and numerator[: -len(base)] in PREFIXES:
        return PREFIXES[numerator[: -len(base)]]
    if numerator in TIME_NS or numerator in PERCENT or numerator.endswith("byte"):
        raise UnitError(f"unit {unit!r} is not a count of {base}")
    return 1.0


def to_base(value: float, unit: str, base: str) -> float:
    """`value` in ncu's `unit` expressed in the catalogue's `base` unit."""
    return value * conversion_factor(unit, base)


# --- human formatting -------------------------------------------------------------------------

DURATION_STEPS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
DECIMAL_BYTES = ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB"))


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits, never in exponent form: 0.554, 17.7, 1234."""
    if value == 0 or not math.isfinite(value):
        return f"{value:.0f}" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:.{decimals}f}"
    # rounding can carry into a new digit (9.996 -> "10.00"): drop the extra decimal
    if decimals and len(text.replace("-", "").replace(".", "").lstrip("0")) > digits:
        text = f"{value:.{decimals - 1}f}"
    return text


def format_duration(ns: float) -> str:
    """A duration in nanoseconds in the largest unit where it reads at least 0.1:
    554_123 -> "0.554 ms", 50_000 -> "50.0 µs", 17_700_000 -> "17.7 ms", 81 -> "81.0 ns"."""
    for scale, name in DURATION_STEPS:
        if abs(ns) >= 0.1 * scale:
            return f"{significant(ns / scale)} {name}"
    return f"{significant(ns)} ns"


EXACT_BYTES_BELOW = 10_000  # a byte figure under this reads exact ("4,096 B", a tile's size), above in SI units


def format_bytes(count: float) -> str:
    """The one rule for a byte figure, sizes and traffic alike, in every command and the report:
    exact below 10,000 ("4,096 B", "512 B"), else in the largest decimal (SI) unit where it reads
    at least 1, as ncu writes them: 2_147_483_648 -> "2.15 GB"."""
    if abs(count) < EXACT_BYTES_BELOW and float(count).is_integer():
        return exact_bytes(count)
    for scale, name in DECIMAL_BYTES:
        if abs(count) >= scale:
            return f"{significant(count / scale)} {name}"
    return f"{count:,.0f} B" if float(count).is_integer() else f"{significant(count)} B"


def format_bandwidth(bytes_per_second: float) -> str:
    """A rate in bytes per second, decimal: 1.67e12 -> "1.67 TB/s"."""
    for scale, name in DECIMAL_BYTES:
        if abs(bytes_per_second) >= scale:
            return f"{significant(bytes_per_second / scale)} {name}/s"
    return f"{significant(bytes_per_second)} B/s"


def format_count(value: float) -> str:
    """A count with thousands separators when whole (65011712 -> "65,011,712"), else 3 digits."""
    if float(value).is_integer():
        return f"{value:,.0f}"
    return significant(value)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """The count and its noun: "1 kernel", "2 kernels", "1,024 kernels" (`nouns` where an s is wrong)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def counted(figure: str, noun: str, nouns: str | None = None) -> str:
    """A figure already in words and its noun, singular where the figure reads 1: "1 sector", "1.5 sectors",
    "4 sectors", "1 execution" (`nouns` where an s is wrong)."""
    return f"{figure} {noun if figure == '1' else nouns or noun + 's'}"


def shown_list(items: Sequence[str], limit: int) -> str:
    """The first `limit` items, comma-separated, and how many are left: "a, b, c and 11 more"; "none"."""
    shown = ", ".join(items[:limit]) or "none"
    return shown if len(items) <= limit else f"{shown} and {len(items) - limit:,} more"


def format_percent(value: float) -> str:
    """A percentage to 3 significant digits, without zeros the value does not have: a figure ncu's
    CSV gives as "0.05" prints "0.05%", never "0.0500%" (precision the source lacks); 35.012 keeps
    its "35.0%", 40.123 -> "40.1%", 0.0545 -> "0.0545%"."""
    text = significant(value)
    while "." in text and text.endswith("0") and float(text[:-1]) == value:
        text = text[:-1]
    return f"{text.removesuffix('.')}%"


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


def n_way_words(value: float) -> str:
    """A bank conflict's n-way in words: 32.0 -> "32-way", 2.666 -> "2.67-way"."""
    return f"{value:.0f}-way" if value == int(value) else f"{value:.2f}-way"


def speedup(value: float) -> str:
    """A speed ratio: 1.6384 -> "1.64×"."""
    return f"{significant(value)}×"


# kind -> formatter; the report's columns name a kind, the gate a catalogue unit (ns, byte, ...)
FORMATTERS = {
    "ns": format_duration,
    "byte": format_bytes,
    "byte/second": format_bandwidth,
    "%": format_percent,
    "flag": lambda v: "yes" if v else "no",
    "duration": format_duration,
    "milliseconds": lambda ms: format_duration(ms * 1e6),  # memlens bench times in ms
    "bandwidth": format_bandwidth,
    "gb_per_s": lambda gb: format_bandwidth(gb * 1e9),  # memlens bench bandwidths in GB/s
    "percent": format_percent,
    "ways": ways,
    "compact": compact_count,
    "count": format_count,
    "bytes": format_bytes,
    "exact_bytes": exact_bytes,
    "speedup": speedup,
}


def format_value(value: float | None, kind: str) -> str:
    """`value` as text for a report column's `kind` or a catalogue unit (a count unit such as
    "inst" or "wavefront" prints as a count); "n/a" for a missing or non-finite value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return FORMATTERS.get(kind, plain_number)(value)


def plain_number(value: float) -> str:
    """A count in full (65,011,712), else 4 significant digits (0.5543)."""
    return format_count(value) if float(value).is_integer() else significant(value, 4)
