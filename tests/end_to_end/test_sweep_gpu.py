"""GPU tier: `memlens profile --sweep` on the built-in transposes under real ncu: one kernel per
variant and size, each labelled and sized as swept, then the report's size and roofline charts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.support.family_runs import memlens_env, memlens_profile

pytestmark = pytest.mark.gpu

SIZES = (256, 1024)
VARIANTS = ("conflict", "padded")


def test_a_sweep_profiles_each_variant_at_each_size(tmp_path):
    out = tmp_path / "runs"
    done = memlens_profile(
        out,
        str(REPO / "kernels"),
        "-k",
        "^transpose/(conflict|padded)$",
        "--size",
        "transpose.cols=512",
        "--sweep",
        f"transpose.rows={','.join(map(str, SIZES))}",
        "--roofline",
    )
    assert done.returncode == 0, done.stderr
    run = (out / "latest").resolve()
    data = json.loads((run / "results.json").read_text())
    expected = [f"{v}@rows={n}" for n in SIZES for v in VARIANTS]
    assert [o["variant"] for o in data["outcomes"]] == expected
    assert {o["status"] for o in data["outcomes"]} == {"ok"}
    kernels = [(k["variant"], k["sweep_size"], k["sweep_value"]) for k in data["kernels"] if k["family"] == "transpose"]
    assert sorted(kernels) == sorted((f"{v}@rows={n}", "rows", n) for n in SIZES for v in VARIANTS)
    # the work grows with the size: 4x the rows, 4x the DRAM bytes read (within 25%)
    read = {k["variant"]: k["raw"]["dram_read_bytes"] for k in data["kernels"]}
    assert read["padded@rows=1024"] / read["padded@rows=256"] == pytest.approx(4, rel=0.25)
    report = tmp_path / "report.html"
    shown = subprocess.run(
        [sys.executable, "-m", "memlens", "report", str(run), "-o", str(report)],
        capture_output=True,
        text=True,
        env=memlens_env(),
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    html = report.read_text()
    assert 'class="chart sweep-chart"' in html and "transpose against rows (256, 1024)" in html
    assert 'class="chart roofline-chart"' in html and "conflict@rows=1024: DRAM" in html
