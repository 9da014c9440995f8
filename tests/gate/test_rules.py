"""profiling/gate/rules.py: the rules format, as `memlens gate --help` prints it, and every mistake named by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlens.cli import main
from memlens.errors import ConfigError
from memlens.gate.rules import AbsoluteBound, RegressionBound, Tolerance, load_rules, metric_named, parse_rules

REPO = Path(__file__).resolve().parents[2]

EXAMPLE = """\
# comment
version = 1

[[rule]]
name = "padded transpose stays conflict-free"
select = "transpose/padded"
metric = "exact_excess_wavefronts"
equals = 0

[[rule]]
name = "time"
select = ["transpose/*", "matmul/tiled"]
exclude = "transpose/conflict"
metric = "duration"
max_regression = "10%"
warn = "2.5%"

[[rule]]
name = "bandwidth"
select_regex = "running_mean/(register|local)"
metric = "dram_bandwidth"
min = 1e12
warn = 2e12
description = "at least a TB/s"

[[rule]]
name = "registers"
select = "*"
metric = "static.registers"
max_regression = 4
"""


def test_example_parses_into_typed_rules() -> None:
    rules = parse_rules(EXAMPLE, "gates.toml").rules
    assert [r.name for r in rules] == ["padded transpose stays conflict-free", "time", "bandwidth", "registers"]
    assert [r.line for r in rules] == [4, 10, 18, 26]
    first, time, bandwidth, registers = rules
    assert first.metric.key == "exact_excess_wavefronts" and first.bound == AbsoluteBound("equals", 0.0)
    assert time.bound == RegressionBound(Tolerance(0.10, relative=True), Tolerance(0.025, relative=True))
    assert bandwidth.bound == AbsoluteBound("min", 1e12, 2e12) and bandwidth.description == "at least a TB/s"
    assert registers.bound == RegressionBound(Tolerance(4.0, relative=False)) and registers.static
    assert [r.needs_baseline for r in rules] == [False, True, False, True]


def test_selection_globs_regex_and_exclude() -> None:
    first, time, bandwidth, registers = parse_rules(EXAMPLE).rules
    assert first.selector.matches("transpose/padded") and not first.selector.matches("transpose/padded2")
    assert [
        time.selector.matches(label)
        for label in ("transpose/padded", "transpose/conflict", "matmul/tiled", "matmul/tiled_pmpp")
    ] == [True, False, True, False]
    # a regex must match the whole label
    assert bandwidth.selector.matches("running_mean/local")
    assert not bandwidth.selector.matches("running_mean/local_v2")
    # '*' matches across '/' and kernel names from plain reports
    assert registers.selector.matches("void tr<1>(float *, const float *, int)")
    assert time.selector.describe() == "transpose/*, matmul/tiled (excluding transpose/conflict)"


def test_tolerances() -> None:
    assert Tolerance(0.1, True).allowance(200.0) == pytest.approx(20.0)
    assert Tolerance(0.1, True).allowance(-200.0) == pytest.approx(20.0)
    assert Tolerance(3.0, False).allowance(200.0) == 3.0
    assert (Tolerance(0.025, True).describe(), Tolerance(4.0, False).describe()) == ("2.5%", "4")


def test_the_suite_rules_files_parse() -> None:
    profile = load_rules(REPO / "kernels" / "gates.toml")
    static = load_rules(REPO / "kernels" / "gates-static.toml")
    assert len(profile.rules) == 15 and not any(r.static for r in profile.rules)
    paper = [r for r in profile.rules if r.name == "every conflict is the one worked out on paper"]
    assert len(paper) == 1 and paper[0].metric.key == "exact_excess_wavefronts" and paper[0].selector.matches("x/y")
    assert len(static.rules) == 14 and all(r.static for r in static.rules)
    assert profile.needs_baseline and not static.needs_baseline


def test_metric_names_come_from_catalogue_and_static_table() -> None:
    assert metric_named("local_bytes").unit == "byte"
    assert metric_named("static.ptx_local").deterministic
    with pytest.raises(KeyError, match=r"did you mean static\.registers"):
        metric_named("static.register")


def rule(body: str) -> str:
    return 'version = 1\n\n[[rule]]\nname = "ok"\nselect = "*"\nmetric = "local_bytes"\nequals = 0\n\n' + body


BAD = [
    ("syntax", 'version = 1\n[[rule]]\nname = "x"\nmax = \n', r"^g\.toml:4: invalid TOML: Invalid value"),
    (
        "unknown metric",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "exact_excess_wavefront"\nmax = 1\n'),
        r"^g\.toml:12: rule 2: unknown metric 'exact_excess_wavefront' \(did you mean exact_excess_wavefronts",
    ),
    (
        "two bounds",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax = 1\nmin = 0\n'),
        r"^g\.toml:14: rule 2: give exactly one bound of equals, max, min, max_regression, equals_paper "
        r"\(found max, min\)",
    ),
    (
        "no bound",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\n'),
        r"^g\.toml:9: rule 2: give exactly one bound .*\(found none\)",
    ),
    (
        "bound not a number",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax = "fast"\n'),
        r"^g\.toml:13: rule 2: 'max' must be a finite number, not 'fast'",
    ),
    (
        "bound a boolean",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax = true\n'),
        r"'max' must be a finite number, not True",
    ),
    (
        "equals on a noisy metric",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nequals = 5\n'),
        r"^g\.toml:13: rule 2: 'equals' needs a deterministic count, and duration varies",
    ),
    (
        "warn past max",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax = 5\nwarn = 6\n'),
        r"^g\.toml:14: rule 2: warn \(6\) must be below max \(5\)",
    ),
    (
        "warn past min",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmin = 5\nwarn = 4\n'),
        r"warn \(4\) must be above min \(5\)",
    ),
    (
        "warn on equals",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "local_bytes"\nequals = 0\nwarn = 1\n'),
        r"'equals' takes no 'warn' level",
    ),
    (
        "bad percentage",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax_regression = "ten"\n'),
        r"^g\.toml:13: rule 2: 'max_regression' must be a percentage such as \"10%\" or a number, not 'ten'",
    ),
    (
        "negative tolerance",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax_regression = -1\n'),
        r"'max_regression' must not be negative",
    ),
    (
        "mixed warn form",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax_regression = "10%"\nwarn = 5\n'),
        r"'warn' must have the same form as 'max_regression'",
    ),
    (
        "warn above regression",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmax_regression = "10%"\nwarn = "20%"\n'),
        r"warn \(20%\) must be below max_regression \(10%\)",
    ),
    (
        "regression without direction",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "block_size"\nmax_regression = "1%"\n'),
        r"block_size has no better direction, so it cannot regress",
    ),
    (
        "unknown key",
        rule('[[rule]]\nname = "b"\nselect = "*"\nmetric = "duration"\nmaximum = 5\n'),
        r"^g\.toml:13: rule 2: unknown key 'maximum' \(did you mean 'max'\?\)",
    ),
    (
        "missing name",
        rule('[[rule]]\nselect = "*"\nmetric = "duration"\nmax = 5\n'),
        r"^g\.toml:9: rule 2: missing 'name'",
    ),
    (
        "duplicate name",
        rule('[[rule]]\nname = "ok"\nselect = "*"\nmetric = "duration"\nmax = 5\n'),
        r"^g\.toml:9: rule name 'ok' is used twice \(first at line 3\)",
    ),
    (
        "both selections",
        rule('[[rule]]\nname = "b"\nselect = "*"\nselect_regex = ".*"\nmetric = "duration"\nmax = 5\n'),
        r"^g\.toml:12: rule 2: give exactly one of 'select' \(globs\) and 'select_regex'",
    ),
    (
        "empty select",
        rule('[[rule]]\nname = "b"\nselect = []\nmetric = "duration"\nmax = 5\n'),
        r"^g\.toml:11: rule 2: 'select' must be a non-empty string or a list of them",
    ),
    (
        "bad regex",
        rule('[[rule]]\nname = "b"\nselect_regex = "("\nmetric = "duration"\nmax = 5\n'),
        r"^g\.toml:11: rule 2: bad select_regex '\('",
    ),
    ("no rules", "version = 1\n", r"^g\.toml: no rules: add at least one \[\[rule\]\] table"),
    ("unknown top-level key", "rules = 1\n", r"^g\.toml: unknown top-level key 'rules'"),
    ("future version", rule("").replace("version = 1", "version = 2"), r"unsupported rules version 2"),
]


@pytest.mark.parametrize(("text", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_rules_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_rules(text, "g.toml")


def test_unreadable_rules_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read rules"):
        load_rules(tmp_path / "nope.toml")
    binary = tmp_path / "b.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_rules(binary)


def test_gate_help_prints_the_rules_format(capsys) -> None:
    try:
        main(["gate", "--help"])
    except SystemExit as exit_info:
        assert exit_info.code == 0
    out = capsys.readouterr().out
    assert "rules file format:" in out
    for key in ("[[rule]]", "select_regex", "max_regression", "equals = 0", "warn"):
        assert key in out, key
    assert "`memlens gate --help`" in (REPO / "docs" / "ci.md").read_text(encoding="utf-8")


FIXTURES = REPO / "tests" / "fixtures" / "programs" / "nvidia_h100_80gb_hbm3"


@pytest.mark.parametrize(
    ("report", "label"),
    [
        ("cuda_app.ncu-rep", "transpose/conflict"),  # a family/variant-shaped range inside `iteration`
        ("pmpp_plain.ncu-rep", "step > 4-way loads"),  # the range path
    ],
)
def test_the_label_of_a_plain_report_is_its_nvtx_label_as_gate_help_says(capsys, tmp_path, report, label):
    """issue 46 (10): `gate --help` said a plain report's label is the demangled kernel name; it is the NVTX label
    where a range was open at the launch."""
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert 'The label is "family/variant" for a suite kernel and the demangled kernel name' not in text
    assert "a Numba kernel's function name, e.g. `matmul`) where no range was open" in text
    assert 'innermost "family/variant"-shaped range (e.g. `transpose/conflict`), else the path of the ranges' in text
    rules = tmp_path / "rules.toml"
    rules.write_text(f'[[rule]]\nname = "one"\nselect = "{label}"\nmetric = "duration"\nmin = 0\n')
    assert main(["gate", str(FIXTURES / report), "--rules", str(rules)]) == 0
    assert "1 check (1 pass)" in capsys.readouterr().out
