"""tests/benchmarks/record_many.py's ncu command, on the CPU: the fake ncu stands in (it runs no app
here: the app needs CuPy and a GPU) and hands back a recorded report."""

from __future__ import annotations

import importlib.util
import shlex

import pytest

from memlens.collect.program_run import DEFAULT_FILTERS
from tests.conftest import FIXTURES, REPO
from tests.support.fake import install_fake_ncu


@pytest.fixture
def record_many():
    spec = importlib.util.spec_from_file_location("record_many", REPO / "tests" / "benchmarks" / "record_many.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    report = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_MODE="no-app", FAKE_NCU_REPORT=str(report))


def recorded_command(out) -> list[str]:
    notes = (out / "many.txt").read_text().splitlines()
    return shlex.split(next(line for line in notes if line.startswith("command: ")).removeprefix("command: "))


@pytest.mark.parametrize("replay", ["application", "kernel"])
def test_program_layout_uses_the_default_filters_and_the_replay_asked_for(record_many, fake_ncu, tmp_path, replay):
    out = tmp_path / "many"
    # the recorded report is not record_many's app: its "many" family is missing, hence 1
    assert record_many.record(out, 16, None, 60.0, kernels=8, replay=replay) == 1
    argv = recorded_command(out)
    assert argv[argv.index("--replay-mode") + 1] == replay
    assert [argv[i + 1] for i, arg in enumerate(argv) if arg == "--nvtx-include"] == list(DEFAULT_FILTERS)
    assert argv[argv.index("--app") + 1 :] == ["16", "--kernels", "8"]
    assert f"replay: {replay}" in (out / "many.txt").read_text()
    assert (out / "many.ncu-rep").exists() and (out / "many.csv").exists()


def test_application_replay_is_the_default(record_many, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["record_many.py", "--help"])
    with pytest.raises(SystemExit):
        record_many.main()
    assert "(default application" in capsys.readouterr().out
