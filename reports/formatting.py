"""Human text for report values: re-exports memlens.io.units' formatters (one home for every
figure's text, shared with the CLI and the gate) and the report's own relative changes."""

from __future__ import annotations

from memlens.io.units import (  # noqa: F401  re-exported: the report's modules import them from here
    FORMATTERS,
    compact_count,
    counted,
    exact_bytes,
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration,
    format_percent,
    format_value,
    per_instruction,
    significant,
    speedup,
    ways,
)
from memlens.model.kernel_names import short_kernel as short_kernel  # re-exported for the templates

STATUS_WORDS = {
    "wrong": "output wrong",
    "failed": "failed",
    "not_run": "not run",
    "skipped": "skipped (GPU too old)",
    "no_kernel": "no kernel profiled",
}


def signed_percent(fraction: float) -> str:
    """A relative change to 0.1%: 0.123 -> "+12.3%", -0.5 -> "−50.0%" (a true minus sign), 2.5 -> "+250%"."""
    percent = abs(fraction) * 100
    text = f"{percent:.1f}" if percent < 100 else f"{percent:,.0f}"
    if text == "0.0":
        return "±0%"
    return f"+{text}%" if fraction > 0 else f"−{text}%"
