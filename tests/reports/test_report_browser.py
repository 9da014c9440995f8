"""The HTML report in a real browser: headless Chromium renders the tables and verdicts, paints
a page that is not blank, and prints it. Skipped only where Chromium is not installed
(Debian: `apt-get install -y chromium`); with MEMLENS_REQUIRE_BROWSER=1 (CI) a missing Chromium fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from memlens.output import render_report as render
from memlens.reports.build import build_report
from tests.reports.test_report_samples import suite_run

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
TIMEOUT = 120


def chromium(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess:
    if CHROMIUM is None:
        reason = "needs headless Chromium: /usr/bin/chromium not found (Debian: apt-get install -y chromium)"
        if os.environ.get("MEMLENS_REQUIRE_BROWSER"):
            pytest.fail(f"MEMLENS_REQUIRE_BROWSER is set but Chromium is missing: {reason}")
        pytest.skip(reason)
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={tmp_path / 'profile'}",
        *arguments,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    before = suite_run()
    after = suite_run(conflict={"duration": 60_000.0}, padded={"shared_wavefronts": 2_097_152.0})
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render(build_report([("runs/before", before), ("runs/after", after)]), "html"), encoding="utf-8")
    return path


class Cells(HTMLParser):
    """Text of every table cell of the rendered DOM, and the tags seen."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self.tags: list[str] = []
        self._depth = 0
        self._buffer: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("td", "th"):
            self._depth += 1
            self._buffer = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._depth:
            self._depth -= 1
            self.cells.append(" ".join("".join(self._buffer).split()))

    def handle_data(self, data):
        if self._depth:
            self._buffer.append(data)


def test_tables_and_verdicts_in_the_rendered_page(page, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    parsed = Cells()
    parsed.feed(dom)
    assert parsed.tags.count("table") == 2 * 2 * 2 + 4  # figures and verdicts per family and run, 4 compared
    cells = parsed.cells
    assert "shared loads: 32-way bank conflicts, 16.3 M excess wavefronts (31 per load); no local memory." in cells
    assert "no bank conflicts, no local memory." in cells
    assert "2.53×" in cells and "85.4 µs" in cells and "16.3 M" in cells and "HW counter (shared ld + st)" in cells
    assert "MISMATCH" in cells  # the second run's padded variant now has conflicts it declared it has not
    assert "60.0 µs −29.8%" in cells
    assert parsed.tags.count("svg") == 2 * 5  # each chart drawn for a screen and for a phone


def test_screenshot_is_not_blank(page, tmp_path):
    import matplotlib.image

    shot = tmp_path / "shot.png"
    chromium(tmp_path, "--window-size=1366,2000", f"--screenshot={shot}", page.as_uri())
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (2000, 1366)
    colours = np.unique((pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200  # text, tables, chart bars: far from a blank page
    heading = pixels[15:50, 25:240, :3]  # "memlens report" in the h1
    assert (heading.max(axis=-1) < 0.5).sum() > 300, "no text painted: Chromium found no font (fonts-dejavu-core)"
    red = (np.abs(pixels[..., :3] - np.array([0xC0, 0x39, 0x2B]) / 255).sum(axis=-1) < 0.05).sum()
    assert red > 500  # the bars of the bank-conflict and local-memory panels


def test_prints_to_pdf(page, tmp_path):
    pdf = tmp_path / "report.pdf"
    chromium(tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri())
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 20_000
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 2  # landscape pages of a long report


# A page the test makes around the report (which itself carries no script): the report in a frame
# 420 px wide, as on a phone, and a script that measures its layout and writes the figures into the
# DOM that --dump-dom prints. (Headless Chromium's window is at least 500 px wide.)
PHONE = """<!doctype html><html><body style="margin:0">
<iframe id="phone" src="REPORT" style="width:420px;height:900px;border:0"></iframe>
<script>
document.getElementById("phone").addEventListener("load", () => {
  const doc = document.getElementById("phone").contentDocument;
  const width = doc.documentElement.clientWidth;
  const cards = [...doc.querySelectorAll(".compare-grid > div")].map(d => d.getBoundingClientRect());
  const overflowing = cards.filter(r => r.right > width + 1 || r.left < -1).length;
  const lefts = new Set(cards.map(r => Math.round(r.left))).size;
  // each chart is drawn twice, for a screen and for a phone: the one shown here
  const svgs = [...doc.querySelectorAll(".chart svg")].filter(svg => svg.getBoundingClientRect().width > 0);
  const widest = Math.max(...svgs.map(svg => svg.getBoundingClientRect().right));
  const smallest = Math.min(...svgs.map(svg => {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    return Math.min(...[...svg.querySelectorAll("text")].map(
      t => parseFloat(doc.defaultView.getComputedStyle(t).fontSize) * scale));
  }));
  document.body.setAttribute("data-measured",
    JSON.stringify({width, cards: cards.length, overflowing, lefts, smallest, widest}));
});
</script></body></html>"""


def test_a_phone_screen_stacks_the_cards_and_keeps_chart_text_readable(page, tmp_path):
    import json
    import re

    phone = page.parent / "phone.html"
    phone.write_text(PHONE.replace("REPORT", page.name), encoding="utf-8")
    dom = chromium(
        tmp_path, "--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom", phone.as_uri()
    ).stdout
    found = re.search(r'data-measured="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    figures = json.loads(found.group(1).replace("&quot;", '"'))
    assert figures["width"] <= 420 and figures["cards"] == 4, figures
    assert figures["overflowing"] == 0, figures  # no card wider than the screen: the second run's column shows
    assert figures["lefts"] == 1, figures  # one column of cards
    assert figures["smallest"] >= 8, figures  # chart text at least 8 px (was 3-4 px)
    assert figures["widest"] <= figures["width"], figures  # no chart wider than the page (was 880 px)
