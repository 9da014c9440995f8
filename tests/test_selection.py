"""One selection path (selection.select_variants) for profile, the profiled program, bench, check and
list: every argument checked before a GPU or a compiler is touched."""

from __future__ import annotations

import pytest

import memlens.commands.check as check_command
from memlens.cli import main
from memlens.errors import ConfigError
from memlens.selection import parse_sizes, select_variants
from tests.support.fake import CPU_SUITE


def test_select_variants_parses_and_checks_the_sizes():
    selection = select_variants(CPU_SUITE, "^transpose/", ["n=64", "transpose.m=32"])
    assert [v.label for v in selection.variants] == [v.label for v in selection.suite.variants("^transpose/")]
    assert all(v.family.name == "transpose" for v in selection.variants) and selection.variants
    assert selection.sizes == {"n": 64, "transpose.m": 32}


@pytest.mark.parametrize(
    ("pattern", "sizes", "message"),
    [
        ("nothing", (), "matches -k 'nothing'"),
        ("(", (), "bad -k pattern '('"),
        (None, ("m=0",), "bad --size 'm=0': expected NAME=POSITIVE_INTEGER"),
        (None, ("nosuch=5",), "--size nosuch: no selected family has that size"),
        ("^running_mean/", ("transpose.m=5",), "--size transpose.m: no selected family has that size"),
    ],
)
def test_select_variants_refuses_a_bad_argument(pattern, sizes, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        select_variants(CPU_SUITE, pattern, sizes)


def test_parse_sizes_keeps_family_names():
    assert parse_sizes(["n=1", "matmul.k=2048"]) == {"n": 1, "matmul.k": 2048}
    with pytest.raises(ConfigError, match="bad --size 'n'"):
        parse_sizes(["n"])


@pytest.mark.parametrize("command", ["list", "check"])
def test_list_and_check_refuse_a_selection_of_nothing_before_compiling(command, capsys, monkeypatch):
    monkeypatch.setattr(check_command, "check_suite", lambda *a, **k: pytest.fail("a compiler was run"))
    assert main([command, str(CPU_SUITE), "-k", "nothing"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"memlens: error: no variant of suite {CPU_SUITE} matches -k 'nothing'"]
