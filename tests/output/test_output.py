"""profiling/output (the one rendering layer): formats found by name, one progress bar, one table renderer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memlens.errors import ConfigError
from memlens.output import format_names, render_text, renderer

PROFILING = Path(__file__).resolve().parents[2] / "profiling"
REPORTS = PROFILING.parent / "reports"


def test_each_kind_of_findings_has_its_formats_by_name():
    assert format_names("gate") == ["github", "json", "junit", "md", "sarif", "table"]
    assert format_names("report") == ["html", "json", "md"]
    assert format_names("metrics") == ["csv", "json", "table"]
    for subject in ("check", "bench", "suite", "doctor", "baseline"):  # the other commands' tables
        assert format_names(subject) == ["table"], subject
    assert format_names("lines") == ["github", "json", "sarif", "table"]
    assert format_names("compare") == ["github", "json", "md", "sarif", "table"]
    assert format_names("banks") == ["json", "table"]


def test_a_format_that_cannot_render_a_kind_of_findings_is_one_line_naming_those_that_can():
    with pytest.raises(ConfigError, match=r"no report output in format 'junit' \(formats: html, json, md\)"):
        renderer("junit", "report")
    with pytest.raises(ConfigError, match=r"no gate output in format 'html' \(formats: github, json, junit, md,"):
        render_text("html", "gate", None)
    with pytest.raises(ConfigError, match=r"no lines output in format 'csv' \(formats: github, json, sarif, table\)"):
        renderer("csv", "lines")


def test_one_progress_bar_one_table_renderer_and_one_column_type():
    """rich's Progress is built in io/terminal.py alone, a rich Table in io/tables.py alone (every
    command's table is drawn by its rich_table; others import rich's Table for its type only), and
    io/tables.Column is the one column type."""
    sources = {path: path.read_text() for folder in (PROFILING, REPORTS) for path in folder.rglob("*.py")}
    bars = sorted(str(path.relative_to(PROFILING)) for path, text in sources.items() if "rich.progress" in text)
    assert bars == ["io/terminal.py"]
    renderers = sorted(
        str(path.relative_to(PROFILING.parent))
        for path, text in sources.items()
        if "rich.table" in text and re.search(r"(?<![\w.])Table\(", text)
    )
    assert renderers == ["profiling/io/tables.py"]
    columns = sorted(
        str(path.relative_to(PROFILING.parent))
        for path, text in sources.items()
        if re.search(r"^class \w*Column\b", text, re.MULTILINE)
    )
    assert columns == ["profiling/io/tables.py"]
    drawing = [
        name
        for name in ("check", "bench", "list_suite", "doctor", "baseline", "metrics")  # hand records on
        if re.search(r"^(from|import) rich\b", sources[PROFILING / "commands" / f"{name}.py"], re.MULTILINE)
    ]
    assert drawing == []
