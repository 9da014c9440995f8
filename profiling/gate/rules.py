"""Gate rules: a TOML file parsed into frozen dataclasses, every mistake a ConfigError naming its line.

The file format
---------------
A rules file is a list of `[[rule]]` tables. Each rule selects kernels, names one metric and sets
one bound on it::

    [[rule]]
    name = "padded transpose stays conflict-free"   # unique in the file; the JUnit test name
    select = "transpose/padded"                     # glob on the label (or a list of globs)
    metric = "exact_excess_wavefronts"              # a catalogue key, or a static.* key
    equals = 0

Keys of a rule:

- `name` (required): a unique, non-empty string.
- `select` (a glob or a list of globs) or `select_regex` (a Python regex that must match the whole
  label): which kernels the rule checks. The label is "family/variant" for a suite kernel. For a plain
  ncu report (a program's) it is the NVTX label of the ranges open at the launch: the innermost
  "family/variant"-shaped range (e.g. `transpose/conflict`), else the path of the ranges (e.g.
  `step > 4-way loads`); and the demangled kernel name (e.g. `void tr<1>(float *, const float *,
  int)`; a Numba kernel's function name, e.g. `matmul`) where no range was open. In
  a glob `*` matches anything (including `/`), `?` one character, `[...]` a set: to match a literal
  `[` in a kernel name, use `select_regex`. Matching is case-sensitive.
- `exclude` (optional, a glob or a list of globs): kernels to leave out of the selection.
- `metric` (required): a key of memlens's metric catalogue, `memlens.model.catalogue`, as `memlens
  metrics --json` names them (the profile run's figures, e.g. `duration`,
  `local_bytes`) or of the static-check table (`static.registers`, `static.spill_bytes`, ...:
  the figures of `memlens check --json`), or a line metric: `line_excess_wavefronts` (the exact
  excess shared-memory wavefronts of one source line) or `line_local_accesses` (its local loads and
  stores executed), checked on every source line of each selected kernel; a failure names the line
  (file:line and its code). With `max_regression` a line is compared with its line in the baseline,
  matched by file and code across edits; a line the baseline lacks counts as from 0. An unknown key
  is refused with the closest names.
- exactly one bound:
  - `max = N`: fail when the value is above N;
  - `min = N`: fail when the value is below N;
  - `equals = N`: fail unless the value is exactly N. Only for metrics the catalogue marks
    deterministic (counts that do not vary between runs of one input); they are compared exactly.
  - `equals_paper = true`: fail unless the variant's exact excess wavefronts (all its launches
    together) equal the figure its suite declares on paper, `Expect(excess_wavefronts=...)` (a
    number, or a function of the size computed with profiling/theory/bank_model.py), as results.json
    records it at the size the variant ran. Only with `metric = "exact_excess_wavefronts"`; a
    variant that declares no figure fails.
  - `max_regression = "10%"` (relative to the baseline value) or `= N` (absolute, in the metric's
    unit): fail when the value is worse than the baseline's by more than that. "Worse" is the
    catalogue's `better` direction: up for "lower is better", down for "higher is better". Needs
    `memlens gate --baseline FILE`; without one the check is skipped and says so.
- `warn` (optional): a level below the fail level that turns a pass into a warning (exit code 0):
  a number under `max`, over `min`, or a smaller tolerance than `max_regression`, in the same
  form ("5%" with "10%"). `equals` takes no `warn`.
- `description` (optional): one line on why the rule exists, shown with a failure.

One bound per rule keeps each check and its message simple: for a range, write two rules.
A top-level `version = 1` is accepted (and is the only version). A rule that selects no kernel
fails, and so does a rule whose metric the run lacks, with the reason the run gives.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memlens.errors import ConfigError
from memlens.io.files import note_input
from memlens.io.units import format_bytes
from memlens.model.catalogue import CATALOGUE, Metric, lookup
from memlens.model.line_compare import LINE_METRICS
from memlens.static.check import STATIC_METRICS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FORMAT_VERSION = 1
MAX_RULES_BYTES = 2**20
RULE_KEYS = (
    "name",
    "select",
    "select_regex",
    "exclude",
    "metric",
    "equals",
    "max",
    "min",
    "max_regression",
    "equals_paper",
    "warn",
    "description",
)
BOUND_KEYS = ("equals", "max", "min", "max_regression", "equals_paper")
PAPER_METRIC = "exact_excess_wavefronts"  # the one figure a suite declares on paper
TOP_LEVEL_KEYS = ("version", "rule")
FORMAT_HEADING = "The file format\n---------------\n"


def format_help() -> str:
    """The rules file format, as `memlens gate --help` prints it (this module's docstring)."""
    return "rules file format:\n" + (__doc__ or "").partition(FORMAT_HEADING)[2].replace("::\n", ":\n")


ALL_METRICS: dict[str, Metric] = {**CATALOGUE, **STATIC_METRICS, **LINE_METRICS}

AbsoluteKind = Literal["equals", "max", "min"]


@dataclass(frozen=True)
class Selector:
    """Which kernels a rule checks, by label."""

    patterns: tuple[str, ...]
    regex: re.Pattern[str] | None = None  # set for select_regex; patterns then holds its source
    exclude: tuple[str, ...] = ()

    def matches(self, label: str) -> bool:
        if any(fnmatch.fnmatchcase(label, pattern) for pattern in self.exclude):
            return False
        if self.regex is not None:
            return self.regex.fullmatch(label) is not None
        return any(fnmatch.fnmatchcase(label, pattern) for pattern in self.patterns)

    def describe(self) -> str:
        text = f"regex {self.patterns[0]}" if self.regex is not None else ", ".join(self.patterns)
        return f"{text} (excluding {', '.join(self.exclude)})" if self.exclude else text


@dataclass(frozen=True)
class AbsoluteBound:
    """`max`, `min` or `equals` a fixed number in the metric's unit."""

    kind: AbsoluteKind
    limit: float
    warn: float | None = None


@dataclass(frozen=True)
class Tolerance:
    """How much worse than the baseline a value may be: a fraction of it, or an amount."""

    amount: float
    relative: bool  # True: `amount` is a fraction of the baseline value ("10%" -> 0.1)

    def allowance(self, baseline: float) -> float:
        return abs(baseline) * self.amount if self.relative else self.amount

    def describe(self) -> str:
        if self.relative:
            return f"{self.amount * 100:g}%"
        return f"{self.amount:g}"


@dataclass(frozen=True)
class RegressionBound:
    """`max_regression`: no worse than the baseline by more than a tolerance."""

    limit: Tolerance
    warn: Tolerance | None = None


@dataclass(frozen=True)
class PaperBound:
    """`equals_paper = true`: the variant's figure equals the one its suite declares on paper."""


Bound = AbsoluteBound | RegressionBound | PaperBound


@dataclass(frozen=True)
class Rule:
    name: str
    selector: Selector
    metric: Metric
    bound: Bound
    line: int | None = None  # line of the rule's [[rule]] header in the rules file
    description: str = ""

    @property
    def needs_baseline(self) -> bool:
        return isinstance(self.bound, RegressionBound)

    @property
    def static(self) -> bool:
        """True for a rule on a figure of `memlens check`, not of a profile run."""
        return self.metric.key in STATIC_METRICS

    @property
    def per_line(self) -> bool:
        """True for a rule checked on every source line of a kernel (line_compare.LINE_METRICS)."""
        return self.metric.key in LINE_METRICS


@dataclass(frozen=True)
class RuleSet:
    path: Path
    rules: tuple[Rule, ...]

    @property
    def needs_baseline(self) -> bool:
        return any(rule.needs_baseline for rule in self.rules)

    @property
    def needs_lines(self) -> bool:
        return any(rule.per_line for rule in self.rules)


def metric_named(key: str) -> Metric:
    """A catalogue or static-check metric; KeyError suggesting the closest names of both."""
    return lookup(key, ALL_METRICS)


def load_rules(path: str | Path) -> RuleSet:
    path = note_input(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_RULES_BYTES + 1)  # bounded: a device or a huge file is one error
        text = data.decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read rules ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: rules file is not UTF-8 text") from None
    if len(data) > MAX_RULES_BYTES:
        raise ConfigError(f"{path}: over {format_bytes(MAX_RULES_BYTES)}: not a rules file")
    return parse_rules(text, path)


def parse_rules(text: str, path: str | Path = "<rules>") -> RuleSet:
    path = Path(path)
    data = _parse_toml(text, path)
    lines = text.splitlines()
    unknown = sorted(set(data) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key {unknown[0]!r} (expected [[rule]] tables)")
    version = data.get("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ConfigError(f"{path}: unsupported rules version {version!r} (this memlens reads {FORMAT_VERSION})")
    tables = data.get("rule")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{path}: no rules: add at least one [[rule]] table")
    headers = _rule_header_lines(lines)
    rules: list[Rule] = []
    for index, table in enumerate(tables):
        where = _Where(path, lines, headers[index] if len(headers) == len(tables) else None, index)
        rules.append(_rule(table, where))
    _check_unique_names(rules, path)
    return RuleSet(path, tuple(rules))


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc.args[0]) if exc.args else str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", message)
        line = getattr(exc, "lineno", None) or (int(found.group(1)) if found else None)
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message)
        where = f"{path}:{line}" if line else str(path)
        raise ConfigError(f"{where}: invalid TOML: {message}") from None


_HEADER = re.compile(r"^\s*\[\[\s*rule\s*\]\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")


def _rule_header_lines(lines: Sequence[str]) -> list[int]:
    """1-based line numbers of the [[rule]] headers, in order. A multi-line string could hide
    a header-like line; then the counts differ and errors name the rule by number only.

    Kept (measured, issue 35): tomllib gives no positions, nor does tomlkit, the style-keeping parser
    (its items carry no line; it parses kernels/gates.toml in 4.2 ms against tomllib's 0.5 ms and
    this whole parse_rules' 0.7 ms: tests/benchmarks/handwritten_vs_libraries.py)."""
    return [number for number, line in enumerate(lines, 1) if _HEADER.match(line)]


@dataclass(frozen=True)
class _Where:
    """Where a rule is, for error messages: its header line, and the line of any of its keys."""

    path: Path
    lines: Sequence[str]
    header: int | None
    index: int

    def line_of(self, key: str | None) -> int | None:
        if self.header is None or key is None:
            return self.header
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for number in range(self.header + 1, len(self.lines) + 1):
            text = self.lines[number - 1]
            if _TABLE.match(text):
                break
            if pattern.match(text):
                return number
        return self.header

    def error(self, message: str, key: str | None = None) -> ConfigError:
        line = self.line_of(key)
        where = f"{self.path}:{line}" if line else str(self.path)
        return ConfigError(f"{where}: rule {self.index + 1}: {message}")


def _rule(table: Any, where: _Where) -> Rule:
    if not isinstance(table, dict):
        raise where.error("a rule must be a table")
    unknown = [key for key in table if key not in RULE_KEYS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], RULE_KEYS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise where.error(f"unknown key {unknown[0]!r}{hint}", unknown[0])
    name = _string(table, "name", where)
    metric = _metric(table, where)
    description = _string(table, "description", where) if "description" in table else ""
    return Rule(name, _selector(table, where), metric, _bound(table, metric, where), where.header, description)


def _string(table: dict[str, Any], key: str, where: _Where) -> str:
    value = table.get(key)
    if value is None:
        raise where.error(f"missing {key!r}")
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"{key!r} must be a non-empty string", key)
    return value.strip()


def _metric(table: dict[str, Any], where: _Where) -> Metric:
    key = _string(table, "metric", where)
    try:
        return metric_named(key)
    except KeyError as exc:
        raise where.error(str(exc.args[0]), "metric") from None


def _patterns(table: dict[str, Any], key: str, where: _Where) -> tuple[str, ...]:
    value = table[key]
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(p, str) and p for p in items):
        raise where.error(f"{key!r} must be a non-empty string or a list of them", key)
    return tuple(items)


def _selector(table: dict[str, Any], where: _Where) -> Selector:
    has_glob, has_regex = "select" in table, "select_regex" in table
    if has_glob == has_regex:
        raise where.error("give exactly one of 'select' (globs) and 'select_regex'", "select_regex")
    exclude = _patterns(table, "exclude", where) if "exclude" in table else ()
    if has_glob:
        return Selector(_patterns(table, "select", where), None, exclude)
    source = table["select_regex"]
    if not isinstance(source, str) or not source:
        raise where.error("'select_regex' must be a non-empty string", "select_regex")
    try:
        regex = re.compile(source)
    except re.error as exc:
        raise where.error(f"bad select_regex {source!r}: {exc}", "select_regex") from None
    return Selector((source,), regex, exclude)


def _bound(table: dict[str, Any], metric: Metric, where: _Where) -> Bound:
    given = [key for key in BOUND_KEYS if key in table]
    if len(given) != 1:
        found = f"found {', '.join(given)}" if given else "found none"
        raise where.error(f"give exactly one bound of {', '.join(BOUND_KEYS)} ({found})", given[-1] if given else None)
    kind = given[0]
    if kind == "max_regression":
        return _regression(table, metric, where)
    if kind == "equals_paper":
        return _paper(table, metric, where)
    limit = _number(table, kind, where)
    if kind == "equals":
        if not metric.deterministic:
            raise where.error(
                f"'equals' needs a deterministic count, and {metric.key} varies between runs: use 'max' or 'min'",
                kind,
            )
        if "warn" in table:
            raise where.error("'equals' takes no 'warn' level", "warn")
        return AbsoluteBound("equals", limit)
    warn = _number(table, "warn", where) if "warn" in table else None
    if warn is not None and ((kind == "max" and warn >= limit) or (kind == "min" and warn <= limit)):
        side = "below" if kind == "max" else "above"
        raise where.error(f"warn ({warn:g}) must be {side} {kind} ({limit:g}): it warns before the rule fails", "warn")
    return AbsoluteBound(kind, limit, warn)  # type: ignore[arg-type]


def _paper(table: dict[str, Any], metric: Metric, where: _Where) -> PaperBound:
    if table["equals_paper"] is not True:
        raise where.error(f"'equals_paper' must be true, not {table['equals_paper']!r}", "equals_paper")
    if metric.key != PAPER_METRIC:
        raise where.error(
            f"'equals_paper' compares {PAPER_METRIC}, the figure suites declare on paper, not {metric.key}", "metric"
        )
    if "warn" in table:
        raise where.error("'equals_paper' takes no 'warn' level", "warn")
    return PaperBound()


def _number(table: dict[str, Any], key: str, where: _Where) -> float:
    value = table[key]
    try:  # float(): a TOML integer has no size limit, and one past 1e308 overflows
        finite = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(float(value))
    except OverflowError:
        finite = False
    if not finite:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise where.error(f"{key!r} must be a finite number, not {shown}", key)
    return float(value)


def _regression(table: dict[str, Any], metric: Metric, where: _Where) -> RegressionBound:
    if metric.better is None:
        raise where.error(
            f"{metric.key} has no better direction, so it cannot regress: use 'max', 'min' or 'equals'",
            "max_regression",
        )
    limit = _tolerance(table, "max_regression", where)
    if "warn" not in table:
        return RegressionBound(limit)
    warn = _tolerance(table, "warn", where)
    if warn.relative != limit.relative:
        raise where.error("'warn' must have the same form as 'max_regression' (both \"N%\" or both numbers)", "warn")
    if warn.amount >= limit.amount:
        raise where.error(
            f"warn ({warn.describe()}) must be below max_regression ({limit.describe()}):"
            " it warns before the rule fails",
            "warn",
        )
    return RegressionBound(limit, warn)


_PERCENT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


def _tolerance(table: dict[str, Any], key: str, where: _Where) -> Tolerance:
    value = table[key]
    if isinstance(value, str):
        found = _PERCENT.match(value)
        if not found:
            raise where.error(f'{key!r} must be a percentage such as "10%" or a number, not {value!r}', key)
        return Tolerance(float(found.group(1)) / 100, relative=True)
    amount = _number(table, key, where)
    if amount < 0:
        raise where.error(f"{key!r} must not be negative ({amount:g})", key)
    return Tolerance(amount, relative=False)


def _check_unique_names(rules: Sequence[Rule], path: Path) -> None:
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.name in seen:
            first = seen[rule.name].line
            where = f"{path}:{rule.line}" if rule.line else str(path)
            also = f" (first at line {first})" if first else ""
            raise ConfigError(f"{where}: rule name {rule.name!r} is used twice{also}")
        seen[rule.name] = rule
