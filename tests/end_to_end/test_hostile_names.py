"""Hostile kernel, family and variant names through every output of the CLI: `memlens metrics`
(terminal table, --json, --csv), `memlens gate` (terminal table, JUnit, Markdown summary, JSON) and
`memlens report` (HTML, Markdown, JSON). Each name shows as text: rich markup is off, Markdown and
HTML characters are escaped, XML is well formed, JSON keeps the name exact; terminal control
characters read from a file never reach the output (readers replace them with U+FFFD)."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest

from memlens.cli import main
from memlens.io.markdown import md_code
from memlens.model.catalogue import RAW_METRICS
from memlens.model.results import KernelResult, RunInfo, RunResults, VariantOutcome

SCRIPT = "<script>alert(1)</script>"
MARKUP = "[bold red]loud[/bold red] [link=https://example.com]x[/link]"
PIPE = "left|right"
TICKS = "tick`s` ``two``"
QUOTES = "quote\"s' & amp;"
NEWLINE = "line1\nline2"
TEMPLATE = "void tr<float, 32>(T1 *, const T1 *, int) [&]"
ESCAPE = "esc\x1b[31mred\x07"  # an ANSI colour and a bell: must not drive the terminal
NAMES = (SCRIPT, MARKUP, PIPE, TICKS, QUOTES, NEWLINE, TEMPLATE, ESCAPE)
FAMILY, VARIANT = "fam<i>[b]", 'v|`x`&"'
RAW = {m.key: 1.0 for m in RAW_METRICS}


def write_results(
    path: Path,
    names,
    family: str = FAMILY,
    variant: str = VARIANT,
    text: str = SCRIPT,
    gpu: str = f"<img src=x onerror=alert(1)> {MARKUP}",
) -> Path:
    kernels = tuple(KernelResult(name, None, None, i, RAW, {}) for i, name in enumerate(names))
    kernels += (KernelResult(text, family, variant, 99, RAW, {}),)
    outcomes = (VariantOutcome(family, variant, "ok", "", demonstrates=text, baseline=True),)
    info = RunInfo(gpu_name=gpu, source=f"{text}.ncu-rep")
    path.write_text(json.dumps(RunResults(info, kernels, outcomes).to_json()))
    return path


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A results.json (as a hand-edited or foreign file may be) full of hostile names."""
    return write_results(tmp_path / "results.json", NAMES)


def shown(name: str) -> str:
    """A name as memlens shows it read from a file: control characters other than tab and newline
    replaced by U+FFFD."""
    return "".join("\ufffd" if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F else c for c in name)


def run_cli(capsys, *argv: str, code: int = 0) -> str:
    assert main(list(argv)) == code
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    return out


# --- memlens metrics --------------------------------------------------------------------------------


def test_metrics_table_prints_names_as_text(hostile, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    out = run_cli(capsys, "metrics", str(hostile))
    for name in (
        SCRIPT,
        MARKUP,
        PIPE,
        TICKS,
        QUOTES,
        TEMPLATE,
        "line1",
        "line2",
        shown(ESCAPE),
        f"{FAMILY}/{VARIANT}",
        f"results.json (<img src=x onerror=alert(1)> {MARKUP})",
    ):
        assert name in out, name
    assert "loud" in out and "[bold red]loud" in out  # markup printed, not applied


def test_metrics_json_and_csv_keep_names_exact(hostile, capsys):
    kernels = json.loads(run_cli(capsys, "metrics", str(hostile), "--json"))["kernels"]
    assert [k["kernel"] for k in kernels] == [shown(n) for n in NAMES] + [SCRIPT]
    assert (kernels[-1]["family"], kernels[-1]["variant"], kernels[-1]["label"]) == (
        FAMILY,
        VARIANT,
        f"{FAMILY}/{VARIANT}",
    )
    rows = list(csv.reader(io.StringIO(run_cli(capsys, "metrics", str(hostile), "--csv"))))
    assert [row[1] for row in rows[1:]] == [shown(n) for n in NAMES] + [SCRIPT]


# --- memlens gate -----------------------------------------------------------------------------------

RULE = '[[rule]]\nname = "rule <b>[bold]|`x`&"\nselect = "*"\nmetric = "local_bytes"\nmax = 10\n'


@pytest.fixture
def gate_outputs(hostile, tmp_path, capsys, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("COLUMNS", "400")
    rules = tmp_path / "rules.toml"
    rules.write_text(RULE)
    given = tmp_path / "run <b>|`x`&" / "results.json"  # the gate names the path given, hostile too
    given.parent.mkdir()
    given.write_bytes(hostile.read_bytes())
    outputs = {kind: tmp_path / f"gate.{kind}" for kind in ("junit", "summary", "json")}
    out = run_cli(
        capsys, "gate", str(given), "--rules", str(rules), *(f"--{k}={p}" for k, p in outputs.items()), code=1
    )  # every kernel has local memory: the rule fails for each
    written = {kind: path.read_text(encoding="utf-8") for kind, path in outputs.items()}
    return {"table": out, "given": str(given), **written}


def test_gate_table_prints_names_as_text(gate_outputs):
    table = gate_outputs["table"]
    for name in (SCRIPT, MARKUP, PIPE, TICKS, QUOTES, TEMPLATE, shown(ESCAPE), "rule <b>[bold]|`x`&"):
        assert name in table, name


def test_gate_junit_is_well_formed_and_holds_the_names(gate_outputs):
    xml = gate_outputs["junit"]
    assert "<script>" not in xml and "&lt;script&gt;alert(1)&lt;/script&gt;" in xml
    assert "quote&quot;s' &amp; amp;" in xml
    root = ElementTree.fromstring(xml.encode())
    cases = root.findall(".//testcase")
    names = {case.get("name") for case in cases}
    for name in (SCRIPT, MARKUP, PIPE, TICKS, QUOTES, NEWLINE, TEMPLATE, shown(ESCAPE)):
        assert f"{name} [local_bytes]" in names, name
    assert {case.get("classname") for case in cases} == {"memlens.gate.evaluate.rule <b>[bold]|`x`&"}


def test_gate_markdown_summary_escapes_every_name(gate_outputs):
    summary = gate_outputs["summary"]
    # kernel names are code spans, as in `memlens report --format md` (one escaper for both)
    spans = [md_code(shown(name)) for name in (*NAMES, f"{FAMILY}/{VARIANT}")]
    for span in spans:
        assert span in summary, span
    assert r"rule &lt;b&gt;\[bold\]\|\`x\`&amp;" in summary  # other text escaped
    assert f"results `{gate_outputs['given'].replace('`', chr(39))}`" in summary  # a code span: shown literally
    table = "\n".join(line for line in summary.splitlines() if line.startswith("|"))
    for span in sorted(spans, key=len, reverse=True):
        table = table.replace(span, "KERNEL")
    for raw in (SCRIPT, "<b>", "<i>", "left|right", "line1\nline2"):
        assert raw not in table, raw
    for line in table.splitlines():  # 8 columns in every row: no name added a cell or split a row
        assert len(re.findall(r"(?<!\\)\|", line)) == 9, line


def test_gate_json_keeps_names_exact(gate_outputs):
    subjects = {v["subject"] for v in json.loads(gate_outputs["json"])["verdicts"]}
    assert {shown(n) for n in NAMES} | {f"{FAMILY}/{VARIANT}"} <= subjects


# --- memlens report ---------------------------------------------------------------------------------


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.handlers: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]

    def handle_data(self, data):
        self.text.append(data)


def report(capsys, hostile: Path, fmt: str) -> str:
    return run_cli(capsys, "report", str(hostile), "--format", fmt, "-o", "-")


def test_report_html_shows_names_as_text(hostile, capsys, tmp_path):
    html = report(capsys, hostile, "html")
    assert "<script>alert" not in html and "<img src" not in html and "<i>[b]" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page, clean = Page(), Page()
    page.feed(html)
    names = [f"k{i}" for i in range(len(NAMES))]
    clean.feed(report(capsys, write_results(tmp_path / "clean.json", names, "fam", "v", "k", "GPU"), "html"))
    assert page.tags <= clean.tags and page.handlers == []  # no element came from a name
    text = "".join(page.text)
    for name in (SCRIPT, MARKUP, PIPE, TICKS, QUOTES, TEMPLATE, shown(ESCAPE), FAMILY, VARIANT):
        assert name in text, name


def test_report_markdown_escapes_names(hostile, capsys):
    from markdown_it import MarkdownIt

    markdown = report(capsys, hostile, "md")
    assert "\n| line2" not in markdown  # a newline in a name does not start a table row
    assert r"`left\|right`" in markdown and "``` tick`s` ``two`` ```" in markdown
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown and "<img" not in markdown.replace("`", "")
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    page = Page()
    page.feed(html)
    assert page.tags <= {
        "h1",
        "h2",
        "h3",
        "h4",
        "p",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "code",
        "strong",
        "em",
        "ul",
        "li",
        "details",
        "summary",
        "br",
        "blockquote",
        "hr",
        "a",
    }
    assert page.handlers == []
    text = "".join(page.text)
    for name in (SCRIPT, TICKS, QUOTES, TEMPLATE, shown(ESCAPE)):
        assert name in text, name


def test_report_json_keeps_names_exact(hostile, capsys):
    data = json.loads(report(capsys, hostile, "json"))
    text = json.dumps(data, ensure_ascii=False)
    for name in (*map(shown, NAMES), FAMILY, VARIANT):
        assert json.dumps(name, ensure_ascii=False)[1:-1] in text, name
