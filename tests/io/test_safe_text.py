"""profiling/io/safe_text.py: bidirectional control characters shown as their codes in every output."""

from __future__ import annotations

from xml.etree import ElementTree

from tests.support.outputs import outputs, results_file

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: would show "kernel_evil" as "live_lenrek" and what follows reversed
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"


def test_bidirectional_controls_are_neutralised_everywhere(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    name = f"kernel_{RLO}live{BIDI}_end"
    texts = outputs(capsys, tmp_path, results_file(tmp_path, name))
    assert set(texts) == {"metrics", "gate", "junit", "summary", "html", "md"}
    for kind, text in texts.items():
        assert not any(c in text for c in BIDI), kind
        assert "<U+202E>" in text or "&lt;U+202E&gt;" in text, kind
    ElementTree.fromstring(texts["junit"].encode())  # still well-formed
