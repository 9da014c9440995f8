"""First contact: a folder of runs (`profile --out DIR` writes DIR/<time>-<pid>/ and
DIR/latest) read as its latest run by every command that reads a run; "not found" errors that name what
would work; `report --format md` for every input kind `--format html` takes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memlens.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200 = FIXTURES / "nvidia_h200"
H100 = FIXTURES / "nvidia_h100_80gb_hbm3"
PROGRAM = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"
RULES = Path(__file__).resolve().parents[2] / "kernels" / "gates.toml"


@pytest.fixture
def runs_root(tmp_path: Path) -> Path:
    """DIR as `memlens profile --out DIR` leaves it: two run directories, `latest` at the newer."""
    root = tmp_path / "out"
    older, newer = root / "20261120-100000-1", root / "20261121-100000-2"
    for directory in (older, newer):
        directory.mkdir(parents=True)
    shutil.copy(H100 / "suite.results.json", older / "results.json")
    shutil.copy(H200 / "suite.results.json", newer / "results.json")
    os.symlink(newer.name, root / "latest")
    return root


def test_metrics_lines_and_report_read_the_latest_run_of_a_runs_folder(runs_root, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["metrics", str(runs_root), "-k", "transpose/conflict$"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "65,011,712" in out  # the newer run (H200), not the older (H100)
    assert main(["lines", str(runs_root), "-k", "transpose/conflict$", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert (
        "kernels/transpose.cu:40  shared loads 32-way, 65,011,712 excess wavefronts; global stores coalesced (4"
        " sectors per access, the ideal)  (at most 65% of the kernel's time at stake)  [LDS STG.E]"
    ) in out
    assert main(["report", str(runs_root), "--format", "md"]) == 0
    target = Path(capsys.readouterr().out.strip())
    assert target == runs_root / "latest" / "report.md"  # into the latest run, as for its directory
    assert "NVIDIA H200" in target.read_text(encoding="utf-8")


def test_gate_and_baseline_save_read_the_latest_run_of_a_runs_folder(runs_root, tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    assert main(["baseline", "save", str(runs_root), "-o", str(baseline)]) == 0
    assert "(NVIDIA H200) written to" in capsys.readouterr().out
    assert main(["gate", str(runs_root), "--rules", str(RULES), "--baseline", str(baseline)]) == 0


def test_a_runs_folder_without_latest_names_a_run_that_would_work(runs_root, capsys):
    (runs_root / "latest").unlink()
    assert main(["metrics", str(runs_root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "a folder of 2 runs with no latest link: name one, e.g." in err
    assert str(runs_root / "20261121-100000-2") in err


def test_an_empty_folder_says_what_would_work(tmp_path, capsys):
    for command in (["metrics"], ["lines"], ["report"], ["baseline", "save"]):
        extra = ["-o", str(tmp_path / "b.json")] if command[0] == "baseline" else []
        assert main([*command, str(tmp_path), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert "no results.json, .ncu-rep or ncu CSV in this directory: give a run directory" in err, command
        assert "runs for its latest run" in err


def _plain_inputs() -> dict[str, list[Path]]:
    return {
        "results.json": [H200 / "suite.results.json"],
        "suite .ncu-rep": [H200 / "suite.ncu-rep"],
        "suite CSV": [H200 / "suite.csv"],
        "plain .ncu-rep": [H200 / "plain_ncu.ncu-rep"],
        "plain CSV": [H200 / "plain_ncu.csv"],
        "two plain reports": [H200 / "plain_ncu.ncu-rep", H100 / "plain_ncu.ncu-rep"],
        "program .ncu-rep": [PROGRAM],
        "program CSV": [FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.csv"],
        "two program CSVs": [H200 / "programs" / "torch_triton.csv", H200 / "programs" / "cuda_app.csv"],
    }


@pytest.mark.parametrize("kind", list(_plain_inputs()))
def test_markdown_report_for_every_input_kind(kind, tmp_path, capsys):
    paths = _plain_inputs()[kind]
    target = tmp_path / "r.md"
    assert main(["report", *map(str, paths), "--format", "md", "-o", str(target)]) == 0, capsys.readouterr().err
    md = target.read_text(encoding="utf-8")
    assert md.startswith("# memlens report")
    assert md.count("\n## Run") == len(paths)
    assert "Traceback" not in md
    if len(paths) > 1:
        assert "## Comparison across runs" in md


def test_markdown_of_plain_reports_names_range_and_kernel(tmp_path):
    """The crash of the issue: Markdown of kernels in a program's own NVTX ranges, outside any family
    ("No filter named 'short_kernel'"): each shows its range and, beside it, its kernel's short name."""
    target = tmp_path / "r.md"
    torch = H200 / "programs" / "torch_triton.csv"
    assert main(["report", str(torch), str(torch), "--format", "md", "-o", str(target)]) == 0
    md = target.read_text(encoding="utf-8")
    assert "`torchapp@softmax` `<unnamed>::softmax_warp_forward<float, float, float, 10, 0, 0>`" in md
