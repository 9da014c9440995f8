"""What `memlens profile` does before ncu starts (issues 27 and 49: at most 0.15 s from its start to ncu's,
tests/benchmarks/start_time.py): it imports what builds ncu's command and runs `ncu --version`, nothing
else. Each case runs memlens in a fresh interpreter until it starts the profiling ncu (the fake's), and
reads what it had imported and started by then."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.fake import CPU_SUITE, fake_ncu_env

# memlens as `python -m memlens ARGS` runs it, stopped where it starts ncu to profile (not `ncu --version`):
# the modules it imported and the commands it started by then, as JSON in the file $UP_TO_NCU.
UP_TO_NCU = """
import json, os, subprocess, sys

commands = []
start = subprocess.Popen.__init__


def popen(self, args, *rest, **kwargs):
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)]
    if os.path.basename(argv[0]) == "ncu" and argv[1:] != ["--version"]:
        seen(True)
        os._exit(0)
    commands.append([os.path.basename(argv[0]), *argv[1:2]])
    start(self, args, *rest, **kwargs)


def seen(ncu_started):
    with open(os.environ["UP_TO_NCU"], "w") as out:
        json.dump({"ncu_started": ncu_started, "modules": sorted(sys.modules), "commands": commands}, out)


subprocess.Popen.__init__ = popen
from memlens.cli import main

try:
    sys.exit(main(sys.argv[1:]))
finally:  # --help exits (SystemExit) from main
    seen(False)
"""
# Not one of these before ncu starts, nor any module of theirs: the heavy libraries, the suite (the profiled
# program imports it under ncu; memlens imports it beside ncu), what reads and renders the results, the
# other commands, and what a suite run over several GPUs or a program run's later passes need.
NOT_BEFORE_NCU = (
    "numpy",
    "numba",
    "cupy",
    "rich",
    "jinja2",
    "matplotlib",
    "pandas",
    "orjson",
    "ncu_report",
    "importlib.metadata",
    "email",
    "packaging",
    "concurrent.futures.process",
    "multiprocessing",
    "memlens.suite",
    "memlens.selection",
    "memlens.kernels",
    "memlens.model.results",
    "memlens.model.source_lines",
    "memlens.model.instruction_table",
    "memlens.readers",
    "memlens.reports",
    "memlens.output",
    "memlens.bench",
    "memlens.gate",
    "memlens.static",
    "memlens.theory",
    "memlens.doctor",
    "memlens.collect.scheduler",
    "memlens.collect.several_gpus",
    "memlens.collect.cluster",
    "memlens.collect.range_passes",
    "memlens.collect.program_processes",
    "memlens.collect.bank_trace",
)
# the commands' modules a profile run needs: its own and the arguments it shares
PROFILE_COMMAND = ("memlens.commands", "memlens.commands.profile", "memlens.commands.shared_arguments")


def up_to_ncu(tmp_path, *args: str) -> dict:
    env = {**fake_ncu_env(tmp_path / "bin"), "UP_TO_NCU": str(tmp_path / "seen.json")}
    done = subprocess.run(
        [sys.executable, "-c", UP_TO_NCU, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "seen.json").read_text())


def too_soon(modules: list[str]) -> list[str]:
    """The modules imported that should not be, by then."""
    return [
        m
        for m in modules
        if any(m == name or m.startswith(name + ".") for name in NOT_BEFORE_NCU)
        or m.startswith("memlens_suite_")  # a suite's module, imported by path
        or (m.startswith("memlens.commands.") and m not in PROFILE_COMMAND)
    ]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["profile", "--out", "runs", "--", sys.executable, "-c", "pass"], id="program"),
        pytest.param(["profile", str(CPU_SUITE), "--out", "runs"], id="suite"),
        pytest.param(["profile", str(CPU_SUITE), "-k", "conflict", "--fast", "--out", "runs"], id="suite-fast"),
    ],
)
def test_profile_imports_and_runs_only_what_builds_ncus_command_before_ncu_starts(tmp_path, args):
    seen = up_to_ncu(tmp_path, *args)
    assert seen["ncu_started"]
    assert too_soon(seen["modules"]) == []
    assert seen["commands"] == [["ncu", "--version"]]  # no nvidia-smi, no git: those run beside ncu


def test_profile_help_imports_none_of_them(tmp_path):
    seen = up_to_ncu(tmp_path, "profile", "--help")
    assert not seen["ncu_started"] and seen["commands"] == []
    assert too_soon(seen["modules"]) == []


def test_the_check_finds_a_module_imported_too_soon():
    """too_soon itself: what it must find, and what it must let through."""
    found = too_soon(["numpy", "numpy.linalg", "rich.console", "memlens.suite", "memlens.commands.report"])
    assert found == ["numpy", "numpy.linalg", "rich.console", "memlens.suite", "memlens.commands.report"]
    assert too_soon(["memlens.suite_path", "memlens.commands.profile", "numpyish", "memlens.collect.ncu"]) == []


def test_the_command_freezes_what_it_made_once_its_work_is_done(monkeypatch):
    """`memlens` and `python -m memlens` run `main`, then gc.freeze: Python's last collection at exit passes
    over the objects a suite run made (0.15-0.2 s with Numba and CuPy imported), and the status is main's."""
    from memlens import cli

    calls = []
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or 3)
    monkeypatch.setattr(cli.gc, "freeze", lambda: calls.append("freeze"))
    assert cli.console_main() == 3
    assert calls == ["main", "freeze"]


def test_python_dash_m_memlens_ends_with_the_commands_status(tmp_path):
    missing = tmp_path / "missing.ncu-rep"
    done = subprocess.run([sys.executable, "-m", "memlens", "metrics", str(missing)], capture_output=True, text=True)
    assert done.returncode == 2
    assert str(missing) in done.stderr and "Traceback" not in done.stderr
