"""A non-editable install: the wheel holds one package `memlens` (the engine, memlens.reports, the
built-in suite memlens.kernels with its .cu sources, rules and baselines) and nothing named
`profiling` or `reports`; installed, `memlens list` and `memlens metrics` work from any directory."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


from tests.collect.test_gpus import FAKE_SMI
from tests.conftest import FIXTURES, REPO
from tests.support.fake import CPU_SUITE, PROBE_SELECTION, fake_ncu_env


def test_build_system_needs_a_setuptools_that_builds_the_license_string():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert project["build-system"]["requires"] == ["setuptools>=77"]


def test_wheel_holds_one_memlens_package_with_the_suite_and_templates(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/", 1)[0] for name in names}
    assert top == {"memlens", "memlens-0.1.0.dist-info"}
    for needed in (
        "memlens/cli.py",
        "memlens/collect/program_run.py",
        "memlens/io/units.py",
        "memlens/readers/ncu_rep.py",
        "memlens/reports/build.py",
        "memlens/reports/templates/report.html.j2",
        "memlens/kernels/transpose.py",
        "memlens/kernels/transpose.cu",
        "memlens/kernels/_common.py",
        "memlens/kernels/gates.toml",
        "memlens/kernels/gates-static.toml",
        "memlens/kernels/baselines/nvidia_h200.json",
        "memlens/collect/banktrace/banktrace.cpp",
        "memlens/collect/banktrace/banktrace_patch.cu",
        "memlens/collect/banktrace/banktrace.h",
        "memlens/collect/banktrace/patches/banktrace_patch.sm_90.fatbin",
    ):
        assert needed in names
    entry_points = zipfile.ZipFile(wheel).read("memlens-0.1.0.dist-info/entry_points.txt").decode()
    assert "memlens = memlens.cli:console_main" in entry_points


def test_wheel_marks_memlens_as_typed(wheel):
    """PEP 561: memlens has a typed public API (`import memlens`), so the wheel ships memlens/py.typed and
    a type checker reads its annotations instead of treating every name as Any."""
    assert "memlens/py.typed" in zipfile.ZipFile(wheel).namelist()
    assert zipfile.ZipFile(wheel).read("memlens/py.typed") == b""


def test_installed_memlens_lists_the_suite_and_reads_reports_from_another_directory(installed, tmp_path):
    target, env = installed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def memlens(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", "-m", "memlens", *args],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    where = subprocess.run(
        [
            sys.executable,
            "-S",
            "-c",
            "import memlens, importlib.util as u; print(memlens.__file__);"
            "print(u.find_spec('profiling'), u.find_spec('reports'))",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.stdout.splitlines() == [str(target / "memlens" / "__init__.py"), "None None"]
    listed = memlens("list")
    assert listed.returncode == 0, listed.stderr
    assert str(target / "memlens" / "kernels") in listed.stdout and "transpose" in listed.stdout
    metrics = memlens("metrics", str(FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"))
    assert metrics.returncode == 0, metrics.stderr
    assert "cudaapp@spill/capped" in metrics.stdout


def test_installed_gpu_children_start_the_installed_memlens(installed, tmp_path):
    """`profile --gpus` and `bench --gpus` start a child a GPU: by the installed name, from anywhere."""
    target, env = installed
    bin_folder = tmp_path / "bin"
    env = {
        **fake_ncu_env(
            bin_folder,
            FAKE_NCU_REPORT=str(FIXTURES / "probe" / "probe.ncu-rep"),
            FAKE_NCU_LOG=str(FIXTURES / "probe" / "probe.log"),
        ),
        "PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], str(REPO)]),
    }
    (bin_folder / "nvidia-smi").write_text(FAKE_SMI)
    (bin_folder / "nvidia-smi").chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = elsewhere / "runs"
    done = subprocess.run(
        [
            sys.executable,
            "-S",
            "-m",
            "memlens",
            "profile",
            str(CPU_SUITE),
            "--gpus",
            "all",
            "--out",
            str(runs),
            "--clock-control",
            "none",
            *PROBE_SELECTION,
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    run = (runs / "latest").resolve()
    for gpu in (0, 1):  # each GPU's ncu ran the installed memlens's profiled program
        command = (run / f"ncu-command.gpu{gpu}.txt").read_text()
        assert "-m memlens.collect.profiled_program" in command
        assert '"event": "plan"' in (run / f"events.gpu{gpu}.jsonl").read_text()  # started (late: its share taken)
    code = (
        "import sys; from pathlib import Path; from memlens.bench.timing import BenchOptions; "
        "from memlens.bench.gpus import child_argv; print(*child_argv(BenchOptions(), Path(sys.argv[1]), [], "
        "Path('out'))[1:3])"
    )
    argv = subprocess.run(
        [sys.executable, "-S", "-c", code, str(CPU_SUITE)],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert argv.stdout.split() == ["-m", "memlens"], argv.stderr
    helped = subprocess.run(
        [sys.executable, "-S", "-m", "memlens", "bench", "--help"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert helped.returncode == 0 and "--gpus" in helped.stdout, helped.stderr


def test_every_package_folder_is_listed_so_setuptools_does_not_warn() -> None:
    from memlens.gate.rules import tomllib  # tomli on Python 3.10

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    installed_as = {top: name for name, top in setuptools["package-dir"].items()}  # folder -> package
    for top in ("profiling", "reports", "kernels"):
        for folder in [REPO / top, *(p for p in (REPO / top).rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__":
                continue
            dotted = ".".join((installed_as[top], *folder.relative_to(REPO / top).parts))
            assert dotted in listed, f"{dotted}: setuptools warns 'absent from the packages configuration'"
    assert setuptools["package-data"]["memlens.reports.templates"] == ["*.j2"]
