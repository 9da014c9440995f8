"""The import rules: pyproject's [tool.importlinter] contracts, checked by import-linter on the installed
wheel (where reports/ is memlens.reports): each stage imports only the stages below it, no two modules
of one folder import each other in a circle, and timing code, the profiled program and the report
readers stay apart. Each rule is shown to fail once on a copy of the package with a planted import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

LINT = Path(sys.executable).with_name("lint-imports")


def lint(site: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    if not LINT.exists():
        pytest.fail(f"{LINT} not found: import-linter comes with the test extra (make setup)")
    path = os.pathsep.join([str(site), env["PYTHONPATH"]])
    return subprocess.run(
        [str(LINT), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env={**env, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_installed_package_keeps_every_contract(installed, tmp_path):
    target, env = installed
    done = lint(target, env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Contracts: 5 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        ("io/files.py", "import memlens.model.results", "Stages: each imports only those below it"),
        (
            "collect/ncu.py",
            "import memlens.collect.several_gpus",
            "No import circles between the modules of one folder",
        ),
        ("bench/timing.py", "import memlens.collect.profiled_program", "Timing stays out of profiling"),
        ("reports/build.py", "import memlens.bench.timing", "Reading bench.json and rendering reports need no"),
        (  # a circle through type-checking imports is a circle (issue 47)
            "reports/model.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import memlens.reports.roofline",
            "No import circles between the modules of one folder",
        ),
    ],
)
def test_a_planted_import_breaks_its_contract(installed, tmp_path, module, planted, broken):
    target, env = installed
    site = tmp_path / "site"
    shutil.copytree(target / "memlens", site / "memlens")
    path = site / "memlens" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{planted}  # planted\n", encoding="utf-8")
    done = lint(site, env, tmp_path)
    assert done.returncode == 1
    verdicts = [line for line in done.stdout.splitlines() if line.endswith((" KEPT", " BROKEN"))]
    assert len(verdicts) == 5
    assert [line for line in verdicts if line.startswith(broken)][0].endswith(" BROKEN"), verdicts


def test_the_checkout_laid_out_as_the_package_keeps_every_contract(tmp_path):
    """`make lint` checks the contracts (and types) on the checkout, with no wheel: tools/package_tree.py
    links every .py file of profiling/, reports/ and kernels/ under memlens/, and a planted import there
    (a link replaced by a changed copy) breaks its contract."""
    from tools.package_tree import lay_out

    linked = lay_out(tmp_path / "tree")
    sources = [
        p
        for top in ("profiling", "reports", "kernels")
        for p in (REPO / top).rglob("*.py")
        if "__pycache__" not in p.parts
    ]
    assert linked == len(sources) > 90
    files = tmp_path / "tree" / "memlens"
    assert (files / "reports" / "build.py").resolve() == REPO / "reports" / "build.py"
    assert (files / "kernels" / "transpose.py").resolve() == REPO / "kernels" / "transpose.py"
    env = {**os.environ, "PYTHONPATH": ""}
    kept = lint(tmp_path / "tree", env, tmp_path)
    assert "Contracts: 5 kept, 0 broken." in kept.stdout, kept.stdout[-3000:]
    planted = files / "io" / "files.py"
    text = planted.read_text(encoding="utf-8")
    planted.unlink()
    planted.write_text(text + "\nimport memlens.model.results  # planted\n", encoding="utf-8")
    broken = lint(tmp_path / "tree", env, tmp_path)
    assert broken.returncode == 1
    assert "Stages: each imports only those below it BROKEN" in broken.stdout
