"""Fuzzing the readers of users' files: results.json (model/results.py), gate rules (gate/rules.py), ncu CSV."""

# The property everywhere: the reader returns typed results or raises the one error kind its input
# calls for (InputError for reports, ConfigError for rules) with a one-line message; nothing else
# escapes. What it accepts must then be usable: results round-trip and render, rules evaluate.
# The CSV reader's own fuzz tests live in tests/readers/test_readers.py; the ones here add column-level
# changes (another ncu version's export) on top of the same valid text.

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from memlens.errors import ConfigError, InputError
from memlens.gate.evaluate import evaluate, from_run
from memlens.gate.rules import RULE_KEYS, parse_rules
from memlens.model.catalogue import CATALOGUE
from memlens.model.results import RunResults, load_results
from memlens.output import render_text
from memlens.output.formats.junit import to_junit
from memlens.output.formats.markdown import gate_summary as to_markdown
from memlens.output.formats.table import gate_table as to_table
from memlens.readers.ncu_csv import WANTED, parse_csv
from tests.readers.test_readers import VALID, _parse_or_input_error
from tests.support.fuzz import fuzz
from tests.support.results_json import SUITE_RESULTS, VALID_RESULTS, assert_one_line, with_field

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _usable(results: RunResults) -> None:
    """What from_json accepts works downstream: round trip, every metric, the gate."""
    again = RunResults.from_json(json.loads(json.dumps(results.to_json())))
    assert again == results
    for kernel in results.kernels:
        assert isinstance(kernel.label, str)
        for key in CATALOGUE:
            value = kernel.metric(key).value
            assert value is None or math.isfinite(value)
    measurements = from_run(results)
    assert [s.measured for s in measurements.subjects] == list(results.kernels)  # each launch, once
    assert len({s.key for s in measurements.subjects}) == len(results.kernels)


# --- results.json --------------------------------------------------------------------------------


def _from_json_or_input_error(data: Any) -> None:
    try:
        results = RunResults.from_json(data, "fuzz.json")
    except InputError as exc:
        assert_one_line(exc)
        assert str(exc).startswith("fuzz.json: ")
    else:
        _usable(results)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into a JSON document, the root included."""
    found = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _paths(value, (*prefix, index))
    return found


RESULT_PATHS = _paths(VALID_RESULTS)


def test_the_recorded_results_pass_the_checks() -> None:
    results = RunResults.from_json(VALID_RESULTS)
    assert len(results.kernels) > 0
    _usable(results)


@fuzz(300)
@given(JSON_VALUES)
def test_fuzz_results_of_any_json(data: Any) -> None:
    _from_json_or_input_error(data)
    _from_json_or_input_error({"schema_version": 1, "info": {}, "kernels": [data], "outcomes": [data]})


@fuzz(500)
@given(st.sampled_from(RESULT_PATHS), JSON_VALUES, st.booleans())
def test_fuzz_one_field_of_a_recorded_results_json(path: tuple, value: Any, delete: bool) -> None:
    _from_json_or_input_error(with_field(VALID_RESULTS, path, value, delete and bool(path)))


@fuzz(150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200) | st.sampled_from([b"[" * 100_000, b"1" * 5000, b"\xef\xbb\xbf{}", b"NaN"]))
def test_fuzz_results_file_of_any_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(data)
    try:
        results = load_results(path)
    except InputError as exc:
        assert_one_line(exc)
        assert str(exc).startswith(str(path))
    else:
        _usable(results)


# --- gate rules ----------------------------------------------------------------------------------

GATE_RUN = RunResults.from_json(VALID_RESULTS, str(SUITE_RESULTS))
KEYS = st.sampled_from([*RULE_KEYS, "metrc", "maximum", "selct", "version", "Name", "warn "])
TOML_SCALARS = (
    st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(
        [
            "10%",
            "0.5%",
            "-3%",
            "%",
            "12",
            "transpose/*",
            "*",
            "[",
            "duration",
            "local_bytes",
            "exact_excess_wavefronts",
            "static.registers",
            "transpose/padded",
            "(",
            "a{99999999999}",
        ]
    )
    | st.text(max_size=10)
)
TOML_VALUES = st.recursive(TOML_SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=6)


def _toml(value: Any) -> str:
    """A TOML literal for a value hypothesis made (strings as basic strings, JSON-escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def _rules_text(rules: list[dict[str, Any]], top: dict[str, Any]) -> str:
    lines = [f"{json.dumps(k)} = {_toml(v)}" for k, v in top.items()]
    for rule in rules:
        lines.append("[[rule]]")
        lines += [f"{json.dumps(k)} = {_toml(v)}" for k, v in rule.items()]
    return "\n".join(lines) + "\n"


def _parse_or_config_error(text: str) -> None:
    try:
        rules = parse_rules(text, "fuzz.toml")
    except ConfigError as exc:
        assert_one_line(exc)
        assert str(exc).startswith("fuzz.toml")
    else:  # what parses evaluates and renders
        result = evaluate(rules, from_run(GATE_RUN))
        to_junit(result), to_markdown(result), render_text("json", "gate", result), to_table(result)


@fuzz(300)
@given(st.text())
def test_fuzz_rules_of_any_text(text: str) -> None:
    _parse_or_config_error(text)


@fuzz(500)
@given(
    st.lists(st.dictionaries(KEYS, TOML_VALUES, max_size=6), min_size=0, max_size=3),
    st.dictionaries(st.sampled_from(["version", "rules", "rule"]), TOML_SCALARS, max_size=1),
)
def test_fuzz_rules_tables(rules: list[dict[str, Any]], top: dict[str, Any]) -> None:
    _parse_or_config_error(_rules_text(rules, top))


@fuzz(300)
@given(
    st.sampled_from(
        [
            "name",
            "select",
            "select_regex",
            "exclude",
            "metric",
            "max",
            "min",
            "equals",
            "max_regression",
            "warn",
            "description",
        ]
    ),
    TOML_VALUES,
)
def test_fuzz_one_key_of_a_good_rule(key: str, value: Any) -> None:
    rule = {"name": "r", "select": "transpose/*", "metric": "local_bytes", "max": 0}
    rule[key] = value
    _parse_or_config_error(_rules_text([rule], {}))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[rule]]\nname = "r"\nselect = "*"\nmetric = "local_bytes"\nmax = ' + "9" * 400 + "\n",
            "fuzz.toml:5: rule 1: 'max' must be a finite number",
        ),
        (
            '[[rule]]\nname = "r"\nselect = "*"\nmetric = "duration"\nmax_regression = ' + "9" * 400 + "\n",
            "fuzz.toml:5: rule 1: 'max_regression' must be a finite number",
        ),
    ],
)
def test_huge_numbers_are_config_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_rules(text, "fuzz.toml")


# --- ncu CSV: columns of another ncu version -----------------------------------------------------


def _table(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line and not line.startswith("==")]
    return list(csv.reader(lines))


def _write(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


VALID_ROWS = _table(VALID)
ONE_LINE = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))  # ncu writes no line break in a cell


@fuzz(300)
@given(
    st.sets(st.integers(0, len(VALID_ROWS[0]) - 1), max_size=6),
    st.lists(st.tuples(st.text(ONE_LINE, min_size=1, max_size=12), st.text(ONE_LINE, max_size=6)), max_size=4),
    st.randoms(use_true_random=False),
)
def test_fuzz_dropped_added_and_moved_columns(dropped: set[int], added: list[tuple[str, str]], rng) -> None:
    order = [i for i in range(len(VALID_ROWS[0])) if i not in dropped]
    rng.shuffle(order)
    rows = [[row[i] for i in order] + [value for _, value in added] for row in VALID_ROWS]
    rows[0][len(order) :] = [name for name, _ in added]
    text = _write(rows)
    _parse_or_input_error(text)
    kept = rows[0][: len(order)]
    clash = any(name.strip() in VALID_ROWS[0] or name.strip() in WANTED for name, _ in added)
    if "ID" in kept and "Kernel Name" in kept and not clash:
        assert len(parse_csv(text, "cols.csv").kernels) == 2  # the essential columns are there: it reads
