"""One rendering layer: every command hands typed findings to an output format picked by name.

A format is one module in `memlens/output/formats/` that defines `FORMAT`, an object with a `name`
(what `--format NAME` calls it), a `suffix` (the file it writes in a FOLDER/, e.g. ".xml") and one
method per kind of findings it renders, each `(findings, out: TextIO) -> None`:

    gate(result: memlens.gate.evaluate.GateResult, out)      the gate's verdicts
    report(report: memlens.reports.model.Report, out)        a report of one or more runs
    metrics(table: memlens.output.kernel_metrics.KernelMetrics, out)   `memlens metrics`
    check(results: memlens.static.check.StaticResults, out)   `memlens check`
    bench(table: memlens.output.command_tables.BenchTable, out)   `memlens bench`
    suite(listing: memlens.output.command_tables.SuiteListing, out)   `memlens list`
    doctor(checks: list[memlens.doctor.Check], out)   `memlens doctor`
    baseline(view: memlens.output.command_tables.BaselineView, out)   `memlens baseline show`
    lines(found: memlens.output.findings.LinesFindings, out)     `memlens lines` (table, json, sarif, github)
    compare(found: memlens.output.findings.CompareFindings, out)  `memlens compare` (table, json, md, sarif, github)
    banks(found: memlens.output.bank_map.BanksFindings, out)     `memlens banks FILE` (table, json)

A format renders only the findings it has a method for (JUnit renders the gate's verdicts alone);
`renderer` says so in one line. Adding a format is adding its module (model: pytest-benchmark's one
class per output, picked by name; ruff's `--output-format`).
"""

from __future__ import annotations

import importlib
import io
import pkgutil
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol, TextIO

from memlens.errors import ConfigError

# the kinds of findings; a format implements a method of each it renders
SUBJECTS = ("gate", "report", "metrics", "check", "bench", "suite", "doctor", "baseline", "lines", "compare", "banks")

Render = Callable[[Any, TextIO], None]


class Format(Protocol):
    name: str  # what --format calls it
    suffix: str  # of the file it writes into a FOLDER/ ("" where it writes to the terminal only)


@cache
def all_formats() -> dict[str, Format]:
    """Every format, by name: the `FORMAT` of each module in memlens/output/formats/."""
    from memlens.output import formats as package

    found: dict[str, Format] = {}
    for module in sorted(info.name for info in pkgutil.iter_modules(package.__path__)):
        fmt = importlib.import_module(f"{package.__name__}.{module}").FORMAT
        if fmt.name in found:
            raise ValueError(f"two output formats named {fmt.name!r}")
        found[fmt.name] = fmt
    return found


def format_names(subject: str) -> list[str]:
    """The names of the formats that render `subject`, in the order of their modules' names."""
    return [name for name, fmt in all_formats().items() if callable(getattr(fmt, subject, None))]


def renderer(name: str, subject: str) -> Render:
    """The method of format `name` that renders `subject`; ConfigError (exit 2) naming the formats
    that do, where `name` is none of them."""
    if subject not in SUBJECTS:
        raise ValueError(f"unknown kind of findings {subject!r}")
    method = getattr(all_formats().get(name), subject, None)
    if not callable(method):
        raise ConfigError(f"no {subject} output in format {name!r} (formats: {', '.join(format_names(subject))})")
    return method


def render_text(name: str, subject: str, findings: Any) -> str:
    """What format `name` renders of `findings`, as text (for a file written whole)."""
    buffer = io.StringIO()
    renderer(name, subject)(findings, buffer)
    return buffer.getvalue()


def render_report(report: Any, name: str) -> str:
    """The report in format `name` (html, md, json), as text."""
    return render_text(name, "report", report)
