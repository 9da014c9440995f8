"""A results.json of named kernels, and every text memlens shows their names in: tables, gate files, reports."""

from __future__ import annotations

import json
from pathlib import Path

from memlens.cli import main
from memlens.model.results import KernelResult, RunInfo, RunResults

RULES = 'version = 1\n[[rule]]\nname = "t"\nselect = "*"\nmetric = "duration"\nmax = 1\n'


def results_file(tmp_path: Path, *names: str) -> Path:
    raw = {"duration": 1000.0, "local_ld_sectors": 0.0, "local_st_sectors": 0.0}
    kernels = tuple(KernelResult(name, None, None, i, raw) for i, name in enumerate(names))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(RunResults(RunInfo(source="x"), kernels).to_json()), encoding="utf-8")
    return path


def outputs(capsys, tmp_path: Path, path: Path) -> dict[str, str]:
    """Every text memlens shows a kernel name in: terminal tables, gate files, report formats."""
    texts: dict[str, str] = {}
    assert main(["metrics", str(path)]) == 0
    texts["metrics"] = capsys.readouterr().out
    rules = tmp_path / "r.toml"
    rules.write_text(RULES, encoding="utf-8")
    files = {kind: tmp_path / f"gate.{kind}" for kind in ("junit", "summary")}
    assert main(["gate", str(path), "--rules", str(rules), *(f"--{k}={p}" for k, p in files.items())]) == 1
    texts["gate"] = capsys.readouterr().out
    texts.update({kind: p.read_text(encoding="utf-8") for kind, p in files.items()})
    for fmt in ("html", "md"):
        target = tmp_path / f"report.{fmt}"
        assert main(["report", str(path), "--format", fmt, "-o", str(target)]) == 0
        texts[fmt] = target.read_text(encoding="utf-8")
    capsys.readouterr()
    return texts
