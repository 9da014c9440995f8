"""JUnit XML (the Jenkins/Ant schema) of the gate's verdicts: `gate --junit FILE`."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO
from xml.etree import ElementTree

from memlens.io.safe_text import neutral

if TYPE_CHECKING:
    from memlens.gate.evaluate import GateResult, Verdict


class JUnit:
    name = "junit"
    suffix = ".xml"

    def gate(self, result: GateResult, out: TextIO) -> None:
        out.write(to_junit(result))


FORMAT = JUnit()


def _case_name(verdict: Verdict) -> str:
    return f"{verdict.subject} [{verdict.metric}]" if verdict.metric and verdict.subject else verdict.subject or "all"


def to_junit(result: GateResult) -> str:
    """One testsuite, one testcase per check. ElementTree escapes `<`, `>`, `&` and quotes;
    characters XML 1.0 forbids are replaced first."""
    counts = {"tests": str(len(result.verdicts)), "failures": str(result.count("fail")), "errors": "0"}
    root = ElementTree.Element("testsuites", {"name": "memlens gate", **counts})  # no "skipped" there
    suite = ElementTree.SubElement(
        root,
        "testsuite",
        {
            "name": _xml_text(f"memlens gate {result.rules}"),
            **counts,
            "skipped": str(result.count("skip")),
            "time": "0",
        },
    )
    properties = ElementTree.SubElement(suite, "properties")
    for name, value in [("rules", result.rules), ("source", result.source), ("measurements", result.kind)] + [
        (f"note{i + 1}", note) for i, note in enumerate(result.notes)
    ]:
        ElementTree.SubElement(properties, "property", {"name": name, "value": _xml_text(value)})
    for verdict in result.verdicts:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            {
                "classname": _xml_text(f"memlens.gate.evaluate.{verdict.rule}"),
                "name": _xml_text(_case_name(verdict)),
                "time": "0",
            },
        )
        message = _xml_text(verdict.message)
        if verdict.status == "fail":
            failure = ElementTree.SubElement(case, "failure", {"message": message, "type": "GateFailed"})
            failure.text = message + (f"\n(rules file line {verdict.line})" if verdict.line else "")
        elif verdict.status == "skip":
            ElementTree.SubElement(case, "skipped", {"message": message})
        else:
            ElementTree.SubElement(case, "system-out").text = f"{verdict.status.upper()}: {message}"
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def _xml_text(text: str) -> str:
    """`text` without the characters XML 1.0 cannot hold (control characters other than tab/newline),
    bidirectional controls shown as their codes."""
    return "".join(
        c if c in "\t\n\r" or (" " <= c <= "\ud7ff") or ("\ue000" <= c <= "\ufffd") or c > "\uffff" else "\ufffd"
        for c in neutral(text)
    )
