"""GitHub Actions workflow commands (`--format github`): one `::error` or `::warning` a finding at a line
of a file in the repository, shown on the pull request's diff; an error without such a file (a failed gate
check) an `::error` of its own, without a file; the other findings without such a file in one `::notice`.
As ruff's `--output-format github`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from memlens.io.units import plural
from memlens.output.findings import RULES, Finding, FindingsFormat, findings, place, resolve_root

NOTICE_SHOWN = 10  # findings the notice names one by one


def write_commands(subject: str, found: Any, out: TextIO) -> None:
    out.writelines(
        line + "\n"
        for line in workflow_commands(findings(subject, found), resolve_root(getattr(found, "source_root", None)))
    )


def workflow_commands(items: list[Finding], root: Path) -> list[str]:
    lines, elsewhere = [], []
    for finding in items:
        where = place(finding.file, root)
        if (where is None or not where.inside or finding.line is None) and finding.level == "error":
            title = f"memlens: {RULES[finding.rule].short}"  # a failed check: an error, at no file
            lines.append(f"::error title={_property(title)}::{_data(f'{_away(finding, root)}: {finding.message}')}")
            continue
        if where is None or not where.inside or finding.line is None:
            elsewhere.append(finding)
            continue
        command = "error" if finding.level == "error" else "warning"
        title = f"memlens: {RULES[finding.rule].short}"
        lines.append(
            f"::{command} file={_property(where.path)},line={finding.line},title={_property(title)}::"
            f"{_data(finding.message)}"
        )
    if elsewhere:
        named = [f"{_away(f, root)}: {f.message}" for f in elsewhere[:NOTICE_SHOWN]]
        more = len(elsewhere) - len(named)
        text = (
            f"memlens: {plural(len(elsewhere), 'finding')} without a source file in the repository: "
            + "; ".join(named)
            + (f"; and {more} more" if more else "")
        )
        lines.append(f"::notice title=memlens::{_data(text)}")
    return lines


FORMAT = FindingsFormat("github", "", write_commands)


def _away(finding: Finding, root: Path) -> str:
    where = place(finding.file, root)
    if where is None or finding.line is None:
        return "no source line" if not finding.sass else " ".join(finding.sass)
    return f"{where.path}:{finding.line} (outside {root})"


def _data(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped (GitHub's toolkit `escapeData`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value: also : and , escaped (`escapeProperty`)."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")
