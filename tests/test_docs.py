"""README.md as a quick start, docs/ as the rest (issue 48): the README's size and first screen, every relative
link of README.md and docs/*.md resolving to a file (and a heading, where it names an anchor), the glossary's
terms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
PAGES = sorted((REPO / "docs").glob("*.md"))
GLOSSARY = ("wavefront", "ideal", "n-way", "phase", "sector", "time at stake", "unverified")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The Markdown outside fenced blocks and inline code, where a link is a link."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    text = re.sub(r"^(```|~~~).*?^\1", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    headings = re.findall(r"^#{1,6} +(.+?) *$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target} (no heading #{anchor})")
    return broken


def test_the_readme_is_a_quick_start_of_at_most_15000_bytes() -> None:
    assert len(README.read_bytes()) <= 15_000


def test_the_readme_first_screen_has_the_two_commands_and_the_demo() -> None:
    first_screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:40])
    for command in ("make profile", "make test", "make demo"):
        assert f"    {command} " in first_screen, command
    # CI runs the README's test command
    assert "\nmake test\n" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "glossary.md").write_text("# Glossary\n\n## n-way\n\ntext\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[a](glossary.md#n-way) [b](gone.md) [c](glossary.md#phase) `[d](gone.md)`\n", encoding="utf-8")
    assert broken_links(page) == ["gone.md (no such file)", "glossary.md#phase (no heading #phase)"]


def test_the_readme_links_the_glossary_and_architecture() -> None:
    links = set(LINK.findall(_prose(README.read_text(encoding="utf-8"))))
    assert "ARCHITECTURE.md" in links
    assert "../ARCHITECTURE.md" in set(LINK.findall((REPO / "docs" / "development.md").read_text(encoding="utf-8")))
    for term in ("wavefront", "ideal", "n-way", "phase", "unverified"):
        assert f"docs/glossary.md#{term}" in links, term


@pytest.mark.parametrize("term", GLOSSARY)
def test_the_glossary_defines_each_term(term: str) -> None:
    text = (REPO / "docs" / "glossary.md").read_text(encoding="utf-8")
    section = re.search(rf"^## {re.escape(term)}\n\n(.+?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert section, f"no heading '## {term}'"
    assert len(section.group(1).split()) >= 20, term  # a definition, not a heading alone
    assert term.replace(" ", "-") in anchors(REPO / "docs" / "glossary.md")
