"""`memlens gate --baseline-dir`: the baseline of the run's GPU model picked from a folder, on the
recorded H200 and H100 runs of the suite. CPU only."""

from __future__ import annotations

import json

import pytest

from memlens.cli import main
from memlens.gate.baseline import gpu_slug
from tests.conftest import FIXTURES

REPO = FIXTURES.parent.parent
BASELINES = REPO / "kernels" / "baselines"
RULES = REPO / "kernels" / "gates.toml"
H200 = FIXTURES / "nvidia_h200" / "suite.results.json"
H100 = FIXTURES / "nvidia_h100_80gb_hbm3" / "suite.results.json"


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("NVIDIA H200", "nvidia_h200"),
        ("NVIDIA H100 80GB HBM3", "nvidia_h100_80gb_hbm3"),
        ("NVIDIA GeForce RTX 4090 ", "nvidia_geforce_rtx_4090"),
        ("NVIDIA A100-SXM4-40GB", "nvidia_a100_sxm4_40gb"),
    ],
)
def test_gpu_slug_names_the_fixture_and_baseline_folders(name, slug):
    assert gpu_slug(name) == slug


def test_the_runs_gpu_picks_its_baseline(tmp_path, capsys):
    verdicts = tmp_path / "verdicts.json"
    assert (
        main(["gate", str(H200), "--rules", str(RULES), "--baseline-dir", str(BASELINES), "--json", str(verdicts)]) == 0
    )
    assert f"note: baseline {BASELINES / 'nvidia_h200.json'} (for NVIDIA H200)" in capsys.readouterr().out
    compared = [v for v in json.loads(verdicts.read_text())["verdicts"] if v["metric"] == "duration"]
    assert compared and all(v["baseline"] is not None for v in compared)  # max_regression rules ran, not skipped


def test_no_baseline_for_the_runs_gpu_is_one_line_and_exit_2(capsys):
    assert main(["gate", str(H100), "--rules", str(RULES), "--baseline-dir", str(BASELINES)]) == 2
    assert capsys.readouterr().err == (
        f"memlens: error: --baseline-dir {BASELINES}: no baseline for NVIDIA H100 80GB HBM3 "
        "(nvidia_h100_80gb_hbm3.json; there: nvidia_h200.json)\n"
    )


def test_a_baseline_dir_that_is_not_a_folder_is_exit_2(tmp_path, capsys):
    assert main(["gate", str(H200), "--rules", str(RULES), "--baseline-dir", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err == f"memlens: error: --baseline-dir {tmp_path / 'none'}: not a folder\n"


def test_baseline_and_baseline_dir_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "gate",
                str(H200),
                "--rules",
                str(RULES),
                "--baseline",
                str(BASELINES / "nvidia_h200.json"),
                "--baseline-dir",
                str(BASELINES),
            ]
        )
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
