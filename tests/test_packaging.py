"""A non-editable install: the wheel holds one package `memlens` (the engine, memlens.reports, the
built-in suite memlens.kernels with its .cu sources, rules and baselines) and nothing named
`profiling` or `reports`; installed, `memlens list` and `memlens metrics` work from any directory."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot build a wheel here (no setuptools from the index?): {done.stderr.strip()[-300:]}")
    return next(out.glob("memlens-*.whl"))


def test_wheel_holds_one_memlens_package_with_the_suite_and_templates(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/", 1)[0] for name in names}
    assert top == {"memlens", "memlens-0.1.0.dist-info"}
    for needed in ("memlens/cli.py", "memlens/program_run.py", "memlens/readers/ncu_rep.py",
                   "memlens/reports/build.py", "memlens/reports/templates/report.html.j2",
                   "memlens/kernels/transpose.py", "memlens/kernels/transpose.cu", "memlens/kernels/_common.py",
                   "memlens/kernels/gates.toml", "memlens/kernels/gates-static.toml",
                   "memlens/kernels/baselines/nvidia_h200.json"):  # fmt: skip
        assert needed in names
    entry_points = zipfile.ZipFile(wheel).read("memlens-0.1.0.dist-info/entry_points.txt").decode()
    assert "memlens = memlens.cli:main" in entry_points


def test_installed_memlens_lists_the_suite_and_reads_reports_from_another_directory(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # -S: the dependencies from this interpreter's site-packages, but not its .pth files, whose
    # editable-install finder (a checkout's, possibly stale) would make `profiling` importable
    path = os.pathsep.join([str(target), *site.getsitepackages()])
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}

    def memlens(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-S", "-m", "memlens", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    where = subprocess.run([sys.executable, "-S", "-c", "import memlens, importlib.util as u; print(memlens.__file__);"
                            "print(u.find_spec('profiling'), u.find_spec('reports'))"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert where.stdout.splitlines() == [str(target / "memlens" / "__init__.py"), "None None"]
    listed = memlens("list")
    assert listed.returncode == 0, listed.stderr
    assert str(target / "memlens" / "kernels") in listed.stdout and "transpose" in listed.stdout
    metrics = memlens("metrics", str(FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"))
    assert metrics.returncode == 0, metrics.stderr
    assert "cudaapp@spill/capped" in metrics.stdout
