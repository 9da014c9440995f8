"""profiling/commands/shared_arguments.py: one convention for choosing an output. `--format NAME` picks what
`metrics`, `lines`, `compare`, `banks`, `gate` and `check` print; the flags `--json`, `--md`, `--csv` are
its older spellings, kept: the same bytes, and one line of --help each; gate's documents on standard output
are its `--json -`, ...; two different choices are one line, exit 2."""

from __future__ import annotations

import pytest

from memlens.cli import main

FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures"
SUITE = str(FIXTURES / "nvidia_h200" / "suite.results.json")
COMPARE = FIXTURES / "nvidia_h100_80gb_hbm3" / "compare"
V1, V2 = str(COMPARE / "compare_v1.ncu-rep"), str(COMPARE / "compare_v2.ncu-rep")


def printed(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


@pytest.mark.parametrize(
    ("argv", "older", "name"),
    [
        (["metrics", SUITE], "--json", "json"),
        (["metrics", SUITE], "--csv", "csv"),
        (["lines", SUITE, "--top", "2"], "--json", "json"),
        (["compare", V1, V2], "--json", "json"),
        (["compare", V1, V2], "--md", "md"),
    ],
)
def test_an_older_flag_prints_what_format_name_prints(capsys, argv, older, name):
    new = printed(capsys, [*argv, "--format", name])
    assert new == printed(capsys, [*argv, older])
    assert new != printed(capsys, argv)  # not the table
    assert new == printed(capsys, [*argv, older, "--format", name])  # both spellings of one format: one


def test_format_sarif_prints_what_sarif_dash_prints(capsys):
    assert printed(capsys, ["lines", SUITE, "--format", "sarif"]) == printed(capsys, ["lines", SUITE, "--sarif", "-"])


@pytest.mark.parametrize(
    ("name", "option"), [("json", "--json"), ("md", "--summary"), ("junit", "--junit"), ("sarif", "--sarif")]
)
def test_gate_format_name_prints_what_its_file_option_prints_on_dash(capsys, name, option):
    gate = ["gate", SUITE, "--rules", str(FIXTURES.parents[1] / "kernels" / "gates.toml")]
    document = printed(capsys, [*gate, "--format", name])
    assert document == printed(capsys, [*gate, option, "-"])
    assert document != printed(capsys, gate)  # not the table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["metrics", SUITE, "--json", "--format", "csv"],
            "--json is --format json: give one of --json and",
        ),
        (
            ["lines", SUITE, "--json", "--format", "github"],
            "--json and --format github would both write",
        ),
        (["compare", V1, V2, "--md", "--format", "json"], "--md and --format json would both write standard output"),
        (["lines", SUITE, "--format", "json", "--sarif", "-"], "--format json and --sarif - would both write"),
    ],
)
def test_two_choices_of_output_are_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(
    ("command", "formats", "older"),
    [
        ("metrics", ["table", "json", "csv"], ["--json", "--csv"]),
        ("lines", ["table", "json", "github", "sarif"], ["--json"]),
        ("compare", ["table", "json", "md", "github", "sarif"], ["--json", "--md"]),
        ("banks", ["table", "json"], ["--json"]),
        ("gate", ["table", "github", "json", "md", "junit", "sarif"], []),
        ("check", ["table", "json"], []),
    ],
)
def test_help_names_each_format_and_each_older_spelling(capsys, monkeypatch, command, formats, older):
    monkeypatch.setenv("COLUMNS", "400")  # one line an option
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    option = next(line for line in text.splitlines() if line.strip().startswith("--format NAME"))
    assert [name for name in formats if f" {name}: " in option or f"({name}: " in option] == formats
    for flag in older:
        name = flag.removeprefix("--")
        assert any(
            line.split()[:1] == [flag] and f"the older spelling of --format {name}:" in line
            for line in text.splitlines()
        ), flag
