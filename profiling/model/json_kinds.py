"""The kinds of JSON file memlens writes, by the marker each carries, and the one-line error that names
what a file is when a command was given the wrong kind (`memlens metrics check.json`).

    results.json          {"schema_version": N, "info": {...}, "kernels": [...]}   (no marker of its own)
    check.json            {"kind": "memlens-static-check", ...}  memlens check --json / --into
    a baseline            {"kind": "memlens-baseline", ...}      memlens baseline save
    gate verdicts         {"kind": "memlens-gate", ...}          memlens gate --json
    bench.json            {"format": "memlens-bench", ...}       memlens bench
    a JSON report         {"format": "memlens-report", ...}      memlens report --format json
"""

from __future__ import annotations

from typing import Any

from memlens.errors import InputError

# (marker key, its value) -> what the file is, in words a user knows
KINDS: dict[tuple[str, str], str] = {
    ("kind", "memlens-static-check"): "a `memlens check` file (the static check of a build)",
    ("kind", "memlens-baseline"): "a baseline (`memlens baseline save`)",
    ("kind", "memlens-gate"): "the verdicts of `memlens gate --json`",
    ("format", "memlens-bench"): "a `memlens bench` file (bench.json)",
    ("format", "memlens-report"): "a JSON report (`memlens report --format json`)",
}
RESULTS_KEYS = ("schema_version", "info", "kernels")  # what a results.json holds
RESULTS_WORDS = "a run's results (results.json)"
WANT_RESULTS = "a run's results: a run directory, results.json, .ncu-rep or ncu CSV"


def kind_of(data: Any) -> str | None:
    """What a memlens JSON value is, in words; None where it carries none of the markers above."""
    if not isinstance(data, dict):
        return None
    for (key, value), words in KINDS.items():
        if data.get(key) == value:
            return words
    return RESULTS_WORDS if any(key in data for key in RESULTS_KEYS) else None


def wrong_kind(source: str, data: Any, marker: tuple[str, str] | None, wanted: str) -> InputError | None:
    """The error for `data` (read from `source`) where it is not the kind wanted: the file `marker`
    marks, or (marker None) a results.json. None where it is that kind, or claims to be (its own
    reader then names what is malformed inside)."""
    found = kind_of(data)
    if marker is not None and isinstance(data, dict) and data.get(marker[0]) == marker[1]:
        return None
    if marker is None and found == RESULTS_WORDS:
        return None  # a results.json, perhaps damaged: from_json says how
    if found is None:
        found = f'{_shape(data)} memlens did not write (no "kind", "format" or "schema_version")'
    return InputError(f"{source}: {found}, not {wanted}")


def _shape(data: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if isinstance(data, dict):
        return "a JSON object"
    if isinstance(data, list):
        return "a JSON array"
    if isinstance(data, str):
        return "a JSON string"
    return "JSON null" if data is None else f"a JSON {'boolean' if isinstance(data, bool) else 'number'}"
