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
    assert format_names("gate") == ["json", "junit", "md", "table"]
    assert format_names("report") == ["html", "json", "md"]
    assert format_names("metrics") == ["csv", "json", "table"]


def test_a_format_that_cannot_render_a_kind_of_findings_is_one_line_naming_those_that_can():
    with pytest.raises(ConfigError, match=r"no report output in format 'junit' \(formats: html, json, md\)"):
        renderer("junit", "report")
    with pytest.raises(ConfigError, match="no gate output in format 'sarif'"):
        render_text("sarif", "gate", None)


def test_one_progress_bar_and_one_table_renderer():
    """rich's Progress is built in io/terminal.py alone, and a rich Table only in io/tables.py and the
    output formats (and the commands still drawing their own, listed here until they move)."""
    sources = {path: path.read_text() for folder in (PROFILING, REPORTS) for path in folder.rglob("*.py")}
    bars = sorted(str(path.relative_to(PROFILING)) for path, text in sources.items() if "rich.progress" in text)
    assert bars == ["io/terminal.py"]
    renderers = {str(path.relative_to(PROFILING.parent)) for path, text in sources.items()
                 if re.search(r"from rich.table import", text)}  # fmt: skip
    assert "profiling/gate/evaluate.py" not in renderers and "profiling/commands/metrics.py" not in renderers
