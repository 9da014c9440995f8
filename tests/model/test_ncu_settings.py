"""One record of ncu settings (model/ncu_settings.py): from the command line to results.json and the gate."""

from __future__ import annotations

import json

import pytest

from memlens.cli import build_parser
from memlens.collect.ncu import Ncu, ProfileRequest, profile_argv
from memlens.commands.profile import _ncu_options
from memlens.errors import ConfigError, InputError
from memlens.gate.evaluate import from_run
from memlens.model.ncu_settings import CLOCK_CONTROL_ENV, NcuSettings
from memlens.model.results import RunResults
from tests.support.results_json import VALID_RESULTS, with_field


def test_the_defaults_are_ncus_own_and_refused_values_name_the_choices() -> None:
    assert NcuSettings() == NcuSettings("base", "all", fast=False, roofline=False, path=None)
    with pytest.raises(ConfigError, match=r"^clock control 'boost' is not one of base, none$"):
        NcuSettings(clock_control="boost")


def test_the_command_line_makes_one_record_that_ncus_argv_takes(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(CLOCK_CONTROL_ENV, raising=False)
    args = build_parser("profile").parse_args(["profile", "--fast", "--cache-control", "none", "--ncu", "/x/ncu"])
    settings = _ncu_options(args)["ncu_settings"]
    assert settings == NcuSettings("base", "none", fast=True, roofline=False, path="/x/ncu")
    monkeypatch.setenv(CLOCK_CONTROL_ENV, "none")
    args = build_parser("profile").parse_args(["profile"])
    assert _ncu_options(args)["ncu_settings"] == NcuSettings(clock_control="none")
    request = ProfileRequest(
        metrics=["m"], report=tmp_path / "r", log=tmp_path / "l", nvtx_include=(), settings=settings
    )
    argv = profile_argv(Ncu(tmp_path / "ncu", (2025, 3)), request, ["app"])
    assert argv[1:5] == ["--clock-control", "base", "--cache-control", "none"]


def test_results_json_holds_the_record_and_the_gate_reads_its_clock_control() -> None:
    results = RunResults.from_json(VALID_RESULTS)  # schema 2: flat clock_control, cache_control, fast
    assert results.info.ncu_settings == NcuSettings("none", "all", fast=False)
    data = json.loads(json.dumps(results.to_json()))
    assert data["schema_version"] == 3 and "clock_control" not in data["info"]
    assert data["info"]["ncu_settings"] == {
        "clock_control": "none",
        "cache_control": "all",
        "fast": False,
        "roofline": False,
        "path": None,
    }
    assert RunResults.from_json(data).info == results.info
    assert from_run(results).environment.clock_control == "none"


def test_a_schema_2_file_without_settings_has_none() -> None:
    old = VALID_RESULTS
    for key in ("clock_control", "cache_control", "fast"):
        old = with_field(old, ("info", key), None, True)
    results = RunResults.from_json(old)
    assert results.info.ncu_settings is None
    assert from_run(results).environment.clock_control is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"clock_control": "boost"}, "info.ncu_settings: clock control 'boost' is not one of base, none"),
        ({"fast": "yes"}, 'info.ncu_settings.fast must be true or false, not "yes"'),
        ({"speed": 1}, "info.ncu_settings: unknown field 'speed'"),
        ("base", 'info.ncu_settings must be an object, not "base"'),
    ],
)
def test_bad_settings_in_results_json_name_the_field(settings: object, message: str) -> None:
    data = with_field(
        with_field(VALID_RESULTS, ("schema_version",), 3, False), ("info", "ncu_settings"), settings, False
    )
    with pytest.raises(InputError) as info:
        RunResults.from_json(data, "r.json")
    assert str(info.value) == f"r.json: malformed results ({message})"


def test_a_schema_2_files_command_is_read_as_the_memlens_command() -> None:
    results = RunResults.from_json(VALID_RESULTS)
    assert results.info.memlens_command == VALID_RESULTS["info"]["command"]
    assert results.info.memlens_command.startswith("memlens profile kernels")
    info = json.loads(json.dumps(results.to_json()))["info"]
    assert "command" not in info and info["memlens_command"] == VALID_RESULTS["info"]["command"]
