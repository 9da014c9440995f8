"""The report's formats (output/formats/html.py, markdown.py): names, messages and paths show as text in
HTML, Markdown and JSON; HTML fetches nothing."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from memlens.io.markdown import md_code, md_escape
from memlens.model.results import RunResults
from memlens.output import render_report as render
from memlens.reports.build import build_report
from tests.reports.test_report_samples import CONFLICT, INFO, LOCAL, PADDED, kernel, outcome, suite_run

TEMPLATE_NAME = "void transpose<float, 32, 32, 0>(T1 *, const T1 *, ...)"
SCRIPT = "<script>alert(1)</script>"
QUOTES = "a \"double\" 'single' & more"
MARKDOWN = "k`x`|y *b* _i_ [l](u) ``two``"
HOSTILE_KERNELS = (TEMPLATE_NAME, SCRIPT, QUOTES, MARKDOWN)
IMG = '<img src=x onerror="alert(2)">'


def hostile_run() -> RunResults:
    """Every text field a report shows, hostile: kernel names, family/variant names as a
    hand-edited results.json may hold them, messages, expectations, paths and the command."""
    kernels = tuple(kernel(name, None, None, CONFLICT, i) for i, name in enumerate(HOSTILE_KERNELS))
    kernels += (
        kernel(SCRIPT, "fam<b>|`", "v\"'&|", PADDED, 10),
        kernel(TEMPLATE_NAME, "fam<b>|`", "wrong<i>", LOCAL, 11),
    )
    outcomes = (
        outcome("fam<b>|`", "v\"'&|", False, True, note=IMG, demonstrates=f"{SCRIPT} | `tick`", baseline=True),
        outcome("fam<b>|`", "wrong<i>", False, True, status="wrong", message=f"{IMG} at | index `3`"),
    )
    info = replace(INFO, memlens_command=f'memlens profile "{SCRIPT}" & `x` | y', gpu_name=IMG, source=SCRIPT)
    return RunResults(info, kernels, outcomes)


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes.extend(attrs)

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> Collector:
    collector = Collector()
    collector.feed(html)
    return collector


def hostile_report(label: str = f"runs/{SCRIPT}"):
    return build_report([(label, hostile_run()), ("runs/clean", suite_run())])


@pytest.fixture(scope="module")
def hostile_html() -> str:
    """hostile_report() as HTML, rendered once for the tests that read it."""
    return render(hostile_report(), "html")


@pytest.fixture(scope="module")
def hostile_md() -> str:
    return render(hostile_report(), "md")


def test_html_shows_hostile_names_as_text(hostile_html):
    html = hostile_html
    clean = parse(render(build_report([("runs/a", suite_run()), ("runs/b", suite_run())]), "html"))
    page = parse(html)
    assert page.tags <= clean.tags  # no element came from data: no script, img, b, i
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert not any(name.startswith("on") for name, _ in page.attributes)
    text = "".join(page.text)
    for name in (*HOSTILE_KERNELS, "fam<b>|`", IMG, f"runs/{SCRIPT}"):
        assert name in text
    assert "void transpose&lt;float, 32, 32, 0&gt;(T1 *, const T1 *, ...)" in html
    assert "a &#34;double&#34; &#39;single&#39; &amp; more" in html


def test_html_attributes_and_chart_labels_are_escaped(hostile_html):
    html = hostile_html
    titles = [value for name, value in parse(html).attributes if name == "title"]
    assert f"runs/{SCRIPT}" in titles  # the run label in the comparison's header, as an attribute
    svg_text = re.findall(r"<text\b[^>]*>(.*?)</text>", html, re.S)
    assert any("&lt;script&gt;alert" in t for t in svg_text)  # shortened to the name before "("


def test_html_fetches_nothing(hostile_html):
    html = hostile_html
    assert not re.search(r"<(script|link|iframe|object|embed|img)\b", html, re.I)
    for name, value in parse(html).attributes:
        if name in ("src", "href", "xlink:href", "action", "srcset"):
            assert value is not None and value.startswith("#"), (name, value)
    assert not re.search(r"url\(\s*['\"]?(?!#)", html)  # CSS and SVG url() only to ids in the page
    assert "@import" not in html
    clean = render(build_report([("runs/clean", suite_run())]), "html")
    assert "http" not in clean  # not even SVG namespace URLs


def _table_rows(markdown: str) -> list[list[str]]:
    """Cells of every table row, split on pipes that are not backslash-escaped."""
    rows = []
    for line in markdown.splitlines():
        if line.startswith("|"):
            rows.append(re.split(r"(?<!\\)\|", line)[1:-1])
    return rows


def test_markdown_tables_keep_their_shape(hostile_md):
    md = hostile_md
    tables: list[list[list[str]]] = []
    previous = ""
    for line in md.splitlines() + [""]:
        if line.startswith("|") and not previous.startswith("|"):
            tables.append([])
        if line.startswith("|"):
            tables[-1].append(_table_rows(line)[0])
        previous = line
    assert len(tables) >= 8
    for table in tables:
        assert {len(row) for row in table} == {len(table[0])}, table[0]


def test_markdown_renders_hostile_names_as_text(hostile_md):
    md = hostile_md
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)  # code spans show < as text
    assert "<script" not in outside_code and "<img" not in outside_code and "<" not in outside_code
    html = MarkdownIt("commonmark").enable("table").render(md)  # raw HTML on, as GitHub reads it
    page = parse(html)
    assert page.tags <= {
        "h1",
        "h2",
        "h3",
        "p",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "code",
        "strong",
        "blockquote",
    }
    text = "".join(page.text)
    for name in (*HOSTILE_KERNELS, "fam<b>|`", IMG, f"runs/{SCRIPT}", "v\"'&|"):
        assert name in text, name


def test_markdown_escaping_functions():
    assert md_escape("a|b`c*d_e[f]<g>&h\ni#~") == "a\\|b\\`c\\*d\\_e\\[f\\]&lt;g&gt;&amp;h i\\#\\~"
    assert md_code("k`x`|y") == "``k`x`\\|y``"
    assert md_code("`edge`") == "`` `edge` ``"
    assert md_code("plain") == "`plain`"


def test_json_keeps_names_exact():
    data = json.loads(render(hostile_report(), "json"))
    run = data["runs"][0]
    assert [row["label"] for row in run["others"]] == list(HOSTILE_KERNELS)
    assert run["label"] == f"runs/{SCRIPT}"
    family = run["families"][0]
    assert family["name"] == "fam<b>|`"
    assert [v["name"] for v in family["variants"]] == ["v\"'&|", "wrong<i>"]
    assert family["variants"][0]["declared"] == IMG
    assert run["info"]["memlens_command"] == f'memlens profile "{SCRIPT}" & `x` | y'
