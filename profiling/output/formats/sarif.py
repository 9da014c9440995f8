"""SARIF 2.1.0 (OASIS): the findings of `gate`, `lines` and `compare` for code scanning (GitHub,
GitLab, Azure DevOps and most static-analysis viewers show each on its line, tracked across commits):
`--sarif FILE`. One run, tool `memlens`, one rule a kind of finding (memlens.output.findings.RULES)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from memlens.output.findings import (
    RULES,
    Finding,
    FindingsFormat,
    Place,
    findings,
    fingerprints,
    place,
    resolve_root,
    short_name,
)
from memlens.version import __version__

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
ROOT_ID = "SRCROOT"  # the uriBaseId of every path relative to the source root
FINGERPRINT = "memlensLineHash/v1"
INFORMATION_URI = "https://github.com/memlens/memlens"


def write_sarif(subject: str, found: Any, out: TextIO) -> None:
    out.write(json.dumps(sarif_log(subject, found), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


FORMAT = FindingsFormat("sarif", ".sarif", write_sarif)


def sarif_log(subject: str, found: Any) -> dict[str, object]:
    root = resolve_root(getattr(found, "source_root", None))
    items = findings(subject, found)
    rule_ids = list(RULES)
    rules = [
        {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.short},
            "fullDescription": {"text": r.full},
            "defaultConfiguration": {"level": "error" if r.id == "ML006" else "warning"},
            "properties": {"tags": ["performance", "cuda"]},
        }
        for r in RULES.values()
    ]
    results = [_result(f, fp, rule_ids.index(f.rule), root) for f, fp in zip(items, fingerprints(items), strict=True)]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "memlens",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {
                    ROOT_ID: {
                        "uri": Path(root).as_uri() + "/",
                        "description": {"text": "the source root (--source-root)"},
                    }
                },
                "results": results,
                "properties": {"command": subject},
            }
        ],
    }


def _artifact(where: Place) -> dict[str, object]:
    return {"uri": where.path, "uriBaseId": ROOT_ID} if where.inside else {"uri": Path(where.path).as_uri()}


def _result(finding: Finding, fingerprint: str, index: int, root: Path) -> dict[str, object]:
    where = place(finding.file, root)
    message = finding.message
    location: dict[str, Any] = {}
    properties = dict(finding.properties)
    if where is not None and finding.line is not None:
        region: dict[str, object] = {"startLine": finding.line}
        if finding.code:
            region["snippet"] = {"text": finding.code}
        location["physicalLocation"] = {"artifactLocation": _artifact(where), "region": region}
        if not where.inside:
            message += f" (at {where.path}:{finding.line}, outside the source root {root}: an absolute path)"
            properties["outside_source_root"] = True
    elif (elsewhere := place(finding.artifact, root)) is not None:  # no source line: the rules file or the run
        location["physicalLocation"] = {"artifactLocation": _artifact(elsewhere)}
        if finding.artifact_line:
            location["physicalLocation"]["region"] = {"startLine": finding.artifact_line}
        properties["no_source_line"] = True
    logical: dict[str, object] = {
        "kind": "function",
        "fullyQualifiedName": finding.label,
        "name": short_name(finding.kernel) or finding.label,
    }
    if finding.kernel:
        logical["decoratedName"] = finding.kernel
    location["logicalLocations"] = [logical]
    if finding.sass:  # the SASS on the line, within its kernel
        properties["sass"] = list(finding.sass)
        location["logicalLocations"].append(
            {
                "kind": "instruction",
                "name": " ".join(finding.sass),
                "fullyQualifiedName": f"{finding.label}/{' '.join(finding.sass)}",
            }
        )
    return {
        "ruleId": finding.rule,
        "ruleIndex": index,
        "level": finding.level,
        "message": {"text": message},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT: fingerprint},
        "properties": properties,
    }
