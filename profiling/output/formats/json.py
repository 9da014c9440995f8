"""JSON for machines: the gate's verdicts (`gate --json FILE`), the report (`report --format json`),
every metric of every kernel (`metrics --json`) and each recorded shared-memory instruction's n-way and
fix (`banks FILE --json`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from memlens.gate.evaluate import GateResult
    from memlens.output.bank_map import BanksFindings
    from memlens.output.findings import CompareFindings, LinesFindings
    from memlens.output.kernel_metrics import KernelMetrics
    from memlens.reports.model import Report


class Json:
    name = "json"
    suffix = ".json"

    def gate(self, result: GateResult, out: TextIO) -> None:
        out.write(json.dumps(gate_json(result), indent=2) + "\n")

    def report(self, report: Report, out: TextIO) -> None:
        out.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False, allow_nan=False) + "\n")

    def metrics(self, table: KernelMetrics, out: TextIO) -> None:
        from memlens.io.tables import write_indented

        write_indented(table.to_json(), out)  # item by item: the text of 10,000 kernels is never held whole

    def banks(self, findings: BanksFindings, out: TextIO) -> None:
        out.write(json.dumps(findings.analysis.to_json(), indent=2, ensure_ascii=False, allow_nan=False) + "\n")

    # `memlens lines` (memlens/output/line_listing.py)
    def lines(self, found: LinesFindings, out: TextIO) -> None:
        from memlens.output.line_listing import lines_json

        out.write(json.dumps(lines_json(found.kernels, found.top, found.bank_maps), indent=2) + "\n")

    # `memlens compare` (memlens/output/line_comparison.py)
    def compare(self, found: CompareFindings, out: TextIO) -> None:
        from memlens.output.line_comparison import compare_json

        text = compare_json(found.base, found.head, found.compared, found.no_lines, found.notes)
        out.write(json.dumps(text, indent=2) + "\n")


FORMAT = Json()


def gate_json(result: GateResult) -> dict[str, object]:
    counts = {s: result.count(s) for s in ("pass", "warn", "fail", "skip")}
    return {
        "kind": "memlens-gate",
        "schema_version": 1,
        "passed": result.passed,
        "counts": counts,
        "rules": result.rules,
        "source": result.source,
        "measurements": result.kind,
        "notes": list(result.notes),
        "verdicts": [asdict(v) for v in result.verdicts],
    }
