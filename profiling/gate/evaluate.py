"""The gate: rules evaluated against measured kernels (and a baseline) -> typed verdicts
(`GateResult`). Its renderers (JUnit XML, Markdown, JSON, the terminal table) are output formats:
memlens/output/formats/.

What can be gated is `Measurements`: the kernels of a profile run (`from_run`) or of a static
check (`from_static`). One check per (rule, selected kernel); a rule that selects nothing, a
metric the run lacks, an empty run, an incomplete run and a variant with a wrong result all fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

from memlens.gate.rules import AbsoluteBound, PaperBound, RegressionBound, Rule, RuleSet, Tolerance
from memlens.io.units import format_value, plural, shown_list
from memlens.model.catalogue import Metric
from memlens.model.line_compare import LineChange, LineSet, SourceLine, compare_lines, kernel_line_set
from memlens.model.noise import Band, band_of, judge
from memlens.model.results import MetricValue, RunResults
from memlens.static.check import StaticResults, is_static_json, load_static
from memlens.theory.paper_figures import PaperCheck, checks

Status = Literal["pass", "warn", "fail", "skip"]
Kind = Literal["profile", "static"]
RUN_CHECK = "run"  # the rule name of checks on the run itself
SHOWN_LABELS = 8  # labels a rule that selects nothing lists, and how many more there are


class Measured(Protocol):
    """A kernel with figures: a profile run's KernelResult or a static check's StaticKernel."""

    @property
    def label(self) -> str: ...

    def metric(self, key: str) -> MetricValue: ...


@dataclass(frozen=True)
class Subject:
    key: str  # the label, or "label#2" for its second launch: how a baseline finds it
    label: str
    measured: Measured


@dataclass(frozen=True)
class Environment:
    """What a comparison with a baseline depends on."""

    gpu_name: str | None = None
    compute_capability: str | None = None
    driver_version: str | None = None
    ncu_version: str | None = None
    clock_control: str | None = None  # the run's NcuSettings.clock_control, as a baseline file records it
    arch: str | None = None  # static check: the target, e.g. sm_90
    compiler: str | None = None  # static check: e.g. "nvrtc 12.9, ptxas 12.9.86"


@dataclass(frozen=True)
class Measurements:
    kind: Kind
    source: str
    environment: Environment
    subjects: tuple[Subject, ...]
    problems: tuple[tuple[str, str], ...] = ()  # (subject, message): the run's own failures
    paper: dict[str, PaperCheck] = field(default_factory=dict)  # label -> figure on paper against the measured
    lines: Mapping[str, LineSet] | None = None  # subject key -> its source lines; None: not read
    declares: bool = True  # records what its suite declared (results.json); a raw report or CSV does not


class BaselineValues(Protocol):
    def value(self, subject_key: str, metric_key: str) -> float | None: ...

    def lines_of(self, subject_key: str) -> tuple[SourceLine, ...] | None: ...

    def has_kernel(self, subject_key: str) -> bool: ...


def _not_in_baseline(subject: Subject) -> str:
    return f"{subject.key} is not in the baseline (a kernel new since, or a baseline of another program)"


@dataclass(frozen=True)
class Verdict:
    rule: str  # the rule's name, or RUN_CHECK
    subject: str  # the kernel's key, or "" for a check on the whole rule or run
    status: Status
    message: str
    metric: str | None = None
    value: float | None = None
    bound: str = ""  # the bound in words, e.g. "<= 0", "<= baseline +10%"
    baseline: float | None = None
    line: int | None = None  # the rule's line in the rules file
    source_file: str | None = None  # a line rule's source line: its file, number and code
    source_line: int | None = None
    source_code: str | None = None


@dataclass(frozen=True)
class GateResult:
    rules: str
    source: str
    kind: Kind
    verdicts: tuple[Verdict, ...]
    notes: tuple[str, ...] = ()  # environment differences and other remarks
    source_root: Path | None = None  # where SARIF and annotations make paths relative (None: the git top level)

    def count(self, status: Status) -> int:
        return sum(1 for v in self.verdicts if v.status == status)

    @property
    def passed(self) -> bool:
        return self.count("fail") == 0

    def summary(self) -> str:
        counts = ", ".join(f"{self.count(s)} {s}" for s in ("pass", "warn", "fail", "skip") if self.count(s))
        return f"{'PASSED' if self.passed else 'FAILED'}: {plural(len(self.verdicts), 'check')} ({counts or 'none'})"


# --- what can be gated -------------------------------------------------------------------------


def _subjects(items: Iterable[Measured]) -> tuple[Subject, ...]:
    seen: dict[str, int] = {}
    subjects = []
    for item in items:
        seen[item.label] = seen.get(item.label, 0) + 1
        key = item.label if seen[item.label] == 1 else f"{item.label}#{seen[item.label]}"
        subjects.append(Subject(key, item.label, item))
    return tuple(subjects)


def from_run(run: RunResults) -> Measurements:
    info = run.info
    problems = [("", "the run stopped before every variant ran (incomplete)")] if not run.complete else []
    problems += [
        (f"{o.family}/{o.variant}", f"{o.status}: {o.message}".rstrip(": "))
        for o in run.outcomes
        if o.status in ("wrong", "failed")
    ]
    clock_control = None if info.ncu_settings is None else info.ncu_settings.clock_control
    environment = Environment(
        info.gpu_name, info.compute_capability, info.driver_version, info.ncu_version, clock_control
    )
    return Measurements(
        "profile",
        info.source or "",
        environment,
        _subjects(run.kernels),
        tuple(problems),
        checks(run),
        declares=bool(run.outcomes),
    )


def from_static(results: StaticResults) -> Measurements:
    environment = Environment(arch=results.arch, compiler=results.compiler)
    problems = tuple((f.label, f"did not compile: {f.message}") for f in results.failures)
    return Measurements("static", results.source, environment, _subjects(results.kernels), problems)


def read_measurements(path: str | Path, lines: bool = False) -> Measurements:
    """A static-check JSON (`memlens check --json`), or anything `read_report` reads: a run
    directory, results.json, .ncu-rep or ncu CSV; with `lines`, each kernel's source lines too."""
    from memlens.readers import read_report, read_with_instructions  # ncu_report only when needed

    path = Path(path)
    if is_static_json(path):
        static = from_static(load_static(path))
        return replace(static, source=str(path))
    run = read_with_instructions(path) if lines else read_report(path)
    measurements = from_run(run)
    if lines and any(k.instructions for k in run.kernels):
        by_key = {s.key: kernel_line_set(run, s.measured) for s in measurements.subjects}  # type: ignore[arg-type]
        measurements = replace(measurements, lines=by_key)
    return replace(measurements, source=str(path))  # named as the user gave it, not as the file it was made from


# --- evaluation --------------------------------------------------------------------------------


def evaluate(
    rules: RuleSet, measurements: Measurements, baseline: BaselineValues | None = None, notes: Sequence[str] = ()
) -> GateResult:
    verdicts = list(_run_verdicts(measurements))
    for rule in rules.rules:
        verdicts.extend(_rule_verdicts(rule, measurements, baseline))
    return GateResult(str(rules.path), measurements.source, measurements.kind, tuple(verdicts), tuple(notes))


def _run_verdicts(measurements: Measurements) -> Iterable[Verdict]:
    if not measurements.subjects:
        yield Verdict(RUN_CHECK, "", "fail", f"no kernels in {measurements.source or 'the run'}")
    for subject, message in measurements.problems:
        yield Verdict(RUN_CHECK, subject, "fail", message)


def _rule_verdicts(rule: Rule, measurements: Measurements, baseline: BaselineValues | None) -> Iterable[Verdict]:
    selected = [s for s in measurements.subjects if rule.selector.matches(s.label)]
    if not selected:
        labels = shown_list(sorted({s.label for s in measurements.subjects}), SHOWN_LABELS)
        message = f"selects no kernel ({rule.selector.describe()}); labels in the run: {labels}"
        yield Verdict(rule.name, "", "fail", message, rule.metric.key, line=rule.line)
        return
    for subject in selected:
        if isinstance(rule.bound, PaperBound):
            yield _check_paper(rule, subject, measurements)
        elif rule.per_line and measurements.kind == "profile":
            yield from _check_lines(rule, subject, measurements, baseline)
        else:
            yield _check(rule, subject, measurements.kind, baseline)


def _check(rule: Rule, subject: Subject, kind: Kind, baseline: BaselineValues | None) -> Verdict:
    metric = rule.metric
    verdict = _verdict_maker(rule, subject)
    if rule.static != (kind == "static"):
        wanted = "a static figure: gate `memlens check --json` output" if rule.static else "a profiler metric"
        return verdict("fail", f"{metric.key} is {wanted}, not part of this {kind} result")
    measured = subject.measured.metric(metric.key)
    if measured.value is None:
        return verdict("fail", f"{metric.key} missing: {measured.missing_reason or 'no value'}")
    if isinstance(rule.bound, AbsoluteBound):
        return _check_absolute(rule.bound, metric, measured.value, verdict)
    if baseline is None:
        return verdict("skip", "no baseline given (--baseline FILE)", measured.value)
    before = baseline.value(subject.key, metric.key)
    if before is None and not baseline.has_kernel(subject.key):
        return verdict("fail", _not_in_baseline(subject), measured.value)
    if before is None:
        return verdict(
            "fail", f"{subject.key} has no {metric.key} in the baseline (save a new baseline)", measured.value
        )
    assert isinstance(rule.bound, RegressionBound)  # a paper rule is checked by _check_paper
    band = band_of(metric, baseline.value(subject.key, "duration"))  # the rule's threshold decides; this is said
    return _check_regression(rule.bound, metric, measured.value, before, verdict, band)


def _check_paper(rule: Rule, subject: Subject, measurements: Measurements) -> Verdict:
    """`equals_paper`: the label's exact excess (all its launches) against its declared figure."""
    verdict = _verdict_maker(rule, subject)
    if measurements.kind == "static":
        return verdict("fail", f"{rule.metric.key} is a profiler metric, not part of this static result")
    found = measurements.paper.get(subject.label)
    if found is None and not measurements.declares:
        return verdict(
            "fail",
            f"{measurements.source} holds no suite's figures on paper (a raw ncu report "
            "or CSV keeps no Expect(...)): gate the run directory or its results.json instead",
        )
    if found is None:
        return verdict(
            "fail",
            f"{subject.label} declares no exact excess wavefronts on paper "
            "(Expect(excess_wavefronts=...) in its suite)",
        )
    words = f"== paper {found.paper:,}"
    if found.measured is None:
        reason = subject.measured.metric(rule.metric.key).missing_reason or "no value"
        return verdict("fail", f"{rule.metric.key} missing: {reason}", None, words)
    if not found.as_on_paper:
        return verdict("fail", f"{rule.metric.key} {found.words()}", found.measured, words)
    return verdict("pass", f"{rule.metric.key} = {found.paper:,}, {found.words()}", found.measured, words)


VerdictMaker = Callable[..., Verdict]


def _verdict_maker(rule: Rule, subject: Subject) -> VerdictMaker:
    def make(
        status: Status, message: str, value: float | None = None, bound: str = "", baseline: float | None = None
    ) -> Verdict:
        return Verdict(rule.name, subject.key, status, message, rule.metric.key, value, bound, baseline, rule.line)

    return make


_SYMBOL = {"max": "<=", "min": ">=", "equals": "=="}


def _check_absolute(bound: AbsoluteBound, metric: Metric, value: float, verdict: VerdictMaker) -> Verdict:
    words = f"{_SYMBOL[bound.kind]} {figure_text(bound.limit, metric.unit)}"
    shown = figure_text(value, metric.unit)
    if not _within(bound.kind, value, bound.limit):
        return verdict("fail", f"{metric.key} = {shown}, expected {words}", value, words)
    if bound.warn is not None and not _within(bound.kind, value, bound.warn):
        warn = f"{_SYMBOL[bound.kind]} {figure_text(bound.warn, metric.unit)}"
        return verdict(
            "warn", f"{metric.key} = {shown}: within {words} but past the warning level {warn}", value, words
        )
    return verdict("pass", f"{metric.key} = {shown} ({words})", value, words)


def _within(kind: str, value: float, limit: float) -> bool:
    # Exact comparisons: deterministic counts are whole numbers, exact in a float up to 2**53.
    if kind == "max":
        return value <= limit
    if kind == "min":
        return value >= limit
    return value == limit


def _check_regression(
    bound: RegressionBound, metric: Metric, value: float, before: float, verdict: VerdictMaker, band: Band | None = None
) -> Verdict:
    lower = metric.better == "lower"
    words = f"{'<=' if lower else '>='} baseline {'+' if lower else '-'}{bound.limit.describe()}"
    change = _change(value, before) + _noise_words(value, before, band)
    detail = f"{metric.key} = {figure_text(value, metric.unit)}, baseline {figure_text(before, metric.unit)} ({change})"
    if not _no_worse(value, before, bound.limit.allowance(before), lower, metric.deterministic):
        return verdict("fail", f"{detail}: regressed by more than {bound.limit.describe()}", value, words, before)
    if bound.warn is not None and not _no_worse(
        value, before, bound.warn.allowance(before), lower, metric.deterministic
    ):
        return verdict(
            "warn", f"{detail}: regressed by more than the warning level {bound.warn.describe()}", value, words, before
        )
    return verdict("pass", detail, value, words, before)


def _no_worse(value: float, before: float, allowance: float, lower: bool, exact: bool) -> bool:
    # A non-deterministic figure gets a hair of slack for float rounding of "baseline * 1.1".
    slack = 0.0 if exact else 1e-9 * max(abs(before), abs(value))
    return value <= before + allowance + slack if lower else value >= before - allowance - slack


# --- rules on every source line ------------------------------------------------------------------


NO_LINES = (
    "no per-line figures: the run has no per-instruction values (profile without --fast, from a"
    " run directory, results.json or .ncu-rep, not a CSV)"
)


def _check_lines(
    rule: Rule, subject: Subject, measurements: Measurements, baseline: BaselineValues | None
) -> list[Verdict]:
    """One verdict per line that fails (or warns), naming it; one passing verdict where none does."""
    metric, bound, verdict = rule.metric, rule.bound, _verdict_maker(rule, subject)
    head = (measurements.lines or {}).get(subject.key)
    if head is None:
        return [verdict("fail", f"{metric.key}: {NO_LINES}")]
    checked: list[tuple[SourceLine, LineChange | None]] = [(line, None) for line in head.lines]
    if isinstance(bound, AbsoluteBound):
        words = f"{_SYMBOL[bound.kind]} {figure_text(bound.limit, metric.unit)}"

        def status(line: SourceLine, change: LineChange | None) -> Status:
            value = line.figures.value(metric.key)
            if not _within(bound.kind, value, bound.limit):
                return "fail"
            return "warn" if bound.warn is not None and not _within(bound.kind, value, bound.warn) else "pass"
    else:
        assert isinstance(bound, RegressionBound)  # a paper rule is checked by _check_paper
        if baseline is None:
            return [verdict("skip", "no baseline given (--baseline FILE)")]
        before_lines = baseline.lines_of(subject.key) if hasattr(baseline, "lines_of") else None
        if before_lines is None and not baseline.has_kernel(subject.key):
            return [verdict("fail", _not_in_baseline(subject))]
        if before_lines is None:
            return [
                verdict(
                    "fail",
                    f"{subject.key} has no per-line figures in the baseline (save a new baseline with this memlens)",
                )
            ]
        changes = compare_lines(subject.key, LineSet(before_lines, texts_own=True), head).lines
        by_head = {(c.file, c.head_line, c.source): c for c in changes if c.head is not None}
        checked = [(line, by_head.get((line.file, line.line, line.source))) for line in head.lines]
        words = f"<= baseline +{bound.limit.describe()}"

        def status(line: SourceLine, change: LineChange | None) -> Status:
            if not _line_no_worse(bound.limit, metric.key, line, change):
                return "fail"
            warn = bound.warn is not None and not _line_no_worse(bound.warn, metric.key, line, change)
            return "warn" if warn else "pass"

    judged = [(status(line, change), line, change) for line, change in checked]
    bad = sorted((j for j in judged if j[0] != "pass"), key=lambda j: j[0] != "fail")
    if not bad:
        worst = max(head.lines, key=lambda line: line.figures.value(metric.key), default=None)
        top = (
            ""
            if worst is None
            else (f", the most {figure_text(worst.figures.value(metric.key), metric.unit)} at {worst.location}")
        )
        return [verdict("pass", f"{metric.key}: {len(checked)} lines {words}{top}", None, words)]
    return [_line_verdict(rule, subject, state, line, change, words) for state, line, change in bad]


def _line_no_worse(tolerance: Tolerance, key: str, line: SourceLine, change: LineChange | None) -> bool:
    before = change.base.value(key) if change is not None and change.base is not None else 0.0
    return line.figures.value(key) <= before + tolerance.allowance(before)


def _line_verdict(
    rule: Rule, subject: Subject, status: Status, line: SourceLine, change: LineChange | None, words: str
) -> Verdict:
    metric = rule.metric
    value = line.figures.value(metric.key)
    where = line.location
    before = None
    detail = f"{figure_text(value, metric.unit)}, expected {words}"
    if rule.needs_baseline:
        before = change.base.value(metric.key) if change is not None and change.base is not None else 0.0
        if change is not None and change.base_line not in (None, line.line):
            where += f" (line {change.base_line} in the baseline)"
        kind = "new line" if change is None or change.base is None else change.change
        shown, baseline = figure_text(value, metric.unit), figure_text(before, metric.unit)
        detail = f"{shown}, baseline {baseline} ({kind}), expected {words}"
    level = "" if status == "fail" else " (past the warning level)"
    code = f": {line.source}" if line.file and line.source else ""
    return Verdict(
        rule.name,
        subject.key,
        status,
        f"{metric.key} at {where}{level}: {detail}{code}",
        metric.key,
        value,
        words,
        before,
        rule.line,
        line.file,
        line.line,
        line.source,
    )


def _noise_words(value: float, before: float, band: Band | None) -> str:
    """Whether a change of a figure that varies between runs is inside its noise band (model/noise.py)."""
    if band is None or value == before or before == 0:
        return ""
    inside = judge(before, value, None, band) == "same"
    return f", {'within' if inside else 'beyond'} noise {band.text}"


def _change(value: float, before: float) -> str:
    if before == 0:
        return "unchanged" if value == 0 else f"{value - before:+g} from zero"
    return f"{(value - before) / abs(before) * 100:+.1f}%"


def figure_text(value: float | None, unit: str) -> str:
    """A figure with its unit: "0.554 ms", "4,224 B", "12.3 MB", "yes"; counts as plain numbers."""
    return "—" if value is None else format_value(value, unit)
