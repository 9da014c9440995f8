"""GPU tier: `memlens profile` on the whole built-in suite under real ncu, then `memlens metrics`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memlens.readers import read_report
from memlens.suite import load_suite
from tests.conftest import REPO
from tests.support.family_runs import memlens_profile

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    done = memlens_profile(out, str(REPO / "kernels"), timeout=900)
    assert done.returncode == 0, done.stderr
    return (out / "latest").resolve()


def test_every_variant_profiled_and_verified(run_dir):
    data = json.loads((run_dir / "results.json").read_text())
    labels = {v.label for v in load_suite(REPO / "kernels").variants()}
    assert {f"{o['family']}/{o['variant']}" for o in data["outcomes"]} == labels
    assert {o["status"] for o in data["outcomes"]} == {"ok"}
    assert {f"{k['family']}/{k['variant']}" for k in data["kernels"]} == labels
    assert (run_dir / "profile.ncu-rep").stat().st_size > 0
    assert data["info"]["ncu_version"] and data["info"]["gpu_name"]


def test_counters_show_the_physics(run_dir):
    kernels = {k.label: k for k in read_report(run_dir).kernels}
    conflict = kernels["transpose/conflict"]
    excess = conflict.metric("exact_excess_wavefronts").value
    assert excess == 31 * conflict.metric("shared_ld_instructions").value
    for label in ("transpose/padded", "transpose/swizzled", "matmul/tiled"):
        assert kernels[label].metric("exact_excess_wavefronts").value == 0, label
    assert kernels["running_mean/local"].metric("local_ld_sectors").value > 0
    assert kernels["running_mean/register"].metric("local_bytes").value == 0
    spill = kernels["running_mean/spill"]  # capped at 32 registers: the spills reach local memory
    assert spill.metric("local_st_sectors").value > 0 and spill.metric("local_ld_sectors").value > 0
    assert kernels["matmul/tiled_article"].metric("exact_excess_wavefronts").value > 0


def test_metrics_prints_every_kernel(run_dir):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
        "COLUMNS": "250",
    }
    done = subprocess.run(
        [sys.executable, "-m", "memlens", "metrics", str(run_dir)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for variant in load_suite(REPO / "kernels").variants():
        assert variant.label in done.stdout


def test_lines_name_the_conflict_and_local_lines(run_dir):
    """`memlens lines` on a fresh run: results.json holds the instructions, CuPy's temporary copy
    maps back to the declared .cu, and inst_executed gives the local lines their executions."""
    from memlens.model.kernel_lines import kernel_lines
    from memlens.readers import read_lines

    results = read_lines(run_dir)
    by_label = {k.label: k for k in results.kernels}
    conflict = kernel_lines(results, [by_label["transpose/conflict"]], REPO)[0].lines[0]
    assert conflict.file == "kernels/transpose.cu" and conflict.shared_ld.ways == 32
    assert "tile[tx][tile_col<SWIZZLE>(tx, r)]" in (conflict.source or "")
    local_lines = kernel_lines(results, [by_label["running_mean/local"]], REPO)[0].lines
    source = (REPO / "kernels" / "running_mean.cu").read_text().splitlines()
    load_line = source.index("    for (unsigned int j = 0; j < W; ++j) sum += window[(j + n) % W];") + 1
    store_line = source.index("    for (unsigned int j = 0; j < W; ++j) window[(j + n) % W] = x[i + j];") + 1
    by_line = {line.line: line for line in local_lines if line.file == "kernels/running_mean.cu"}
    assert by_line[load_line].local_ld_executions and not by_line[load_line].local_st_executions
    assert by_line[store_line].local_st_executions and not by_line[store_line].local_ld_executions
    assert by_line[load_line].source == "for (unsigned int j = 0; j < W; ++j) sum += window[(j + n) % W];"


def test_every_paper_figure_holds(run_dir):
    """Each variant's exact excess equals the figure its suite declares on paper (bank_model.py)."""
    from memlens.theory import paper_figures

    found = paper_figures.checks(read_report(run_dir / "results.json"))
    assert set(found) == {v.label for v in load_suite(REPO / "kernels").variants()}
    assert {label: c.words() for label, c in found.items()} == {label: paper_figures.AS_ON_PAPER for label in found}
