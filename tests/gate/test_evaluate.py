"""The gate: verdicts from rules and results, baselines, the four renderings, and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from rich.console import Console

from memlens.cli import main
from memlens.errors import ConfigError, InputError, OutputError
from memlens.gate.baseline import Baseline, compatibility, from_measurements, load_baseline, save_baseline
from memlens.gate.evaluate import (
    Environment,
    GateResult,
    Measurements,
    Verdict,
    evaluate,
    from_run,
    read_measurements,
)
from memlens.gate.rules import parse_rules
from memlens.io.markdown import md_code
from memlens.io.markdown import md_escape as markdown_escape
from memlens.model.results import KernelResult, RunInfo, RunResults, VariantOutcome
from memlens.output.formats.json import gate_json as to_json
from memlens.output.formats.junit import to_junit
from memlens.output.formats.markdown import gate_summary as to_markdown
from memlens.output.formats.table import gate_table as to_table
from tests.schemas.xsd_lite import validate_file

HERE = Path(__file__).resolve().parents[1]
PROBE = HERE / "fixtures" / "probe"
JUNIT_XSD = HERE / "schemas" / "junit.xsd"
H200 = RunInfo(
    gpu_name="NVIDIA H200",
    compute_capability="9.0",
    driver_version="580.159.04",
    ncu_version="2025.3.1.0",
    source="made-up run",
)
HOSTILE = "void k<float, 1>(T&, char const*) | `x` <script>&amp; *a* [b](c) \x01"


def kernel(label: str, **raw: float | None) -> KernelResult:
    family, _, variant = label.partition("/")
    if variant:
        return KernelResult(kernel=f"{variant}_kernel", family=family, variant=variant, raw=dict(raw))
    return KernelResult(kernel=label, raw=dict(raw))


def run_of(*kernels: KernelResult, info: RunInfo = H200, **extra: object) -> Measurements:
    return from_run(RunResults(info, tuple(kernels), **extra))  # type: ignore[arg-type]


def rules(text: str):  # noqa: ANN201 - a RuleSet
    return parse_rules("version = 1\n" + text, "r.toml")


def rule(name: str, select: str, metric: str, bound: str) -> str:
    return f'[[rule]]\nname = "{name}"\nselect = "{select}"\nmetric = "{metric}"\n{bound}\n\n'


def statuses(result: GateResult) -> list[tuple[str, str, str]]:
    return [(v.rule, v.subject, v.status) for v in result.verdicts]


CONFLICT_FREE = dict(shared_wavefronts=1000.0, shared_wavefronts_ideal=1000.0)
CONFLICTING = dict(shared_wavefronts=32000.0, shared_wavefronts_ideal=1000.0)


# --- evaluation ----------------------------------------------------------------------------------------


def test_pass_warn_fail_one_check_per_selected_kernel() -> None:
    ruleset = rules(
        rule("excess", "transpose/*", "exact_excess_wavefronts", "equals = 0")
        + rule("time", "*", "duration", "max = 1000\nwarn = 500")
    )
    result = evaluate(
        ruleset,
        run_of(
            kernel("transpose/padded", duration=400.0, **CONFLICT_FREE),
            kernel("transpose/conflict", duration=900.0, **CONFLICTING),
            kernel("copy/plain", duration=1500.0),
        ),
    )
    assert statuses(result) == [
        ("excess", "transpose/padded", "pass"),
        ("excess", "transpose/conflict", "fail"),
        ("time", "transpose/padded", "pass"),
        ("time", "transpose/conflict", "warn"),
        ("time", "copy/plain", "fail"),
    ]
    messages = [v.message for v in result.verdicts]
    assert messages[1] == "exact_excess_wavefronts = 31,000, expected == 0"
    assert messages[3] == "duration = 0.900 µs: within <= 1.00 µs but past the warning level <= 0.500 µs"
    assert messages[4] == "duration = 1.50 µs, expected <= 1.00 µs"
    assert not result.passed and result.summary() == "FAILED: 5 checks (2 pass, 1 warn, 2 fail)"


def test_warnings_alone_pass() -> None:
    ruleset = rules(rule("time", "*", "duration", "max = 1000\nwarn = 500"))
    result = evaluate(ruleset, run_of(kernel("a/b", duration=700.0)))
    assert statuses(result) == [("time", "a/b", "warn")] and result.passed


def test_min_bound_and_deterministic_counts_compare_exactly() -> None:
    ruleset = rules(
        rule("still conflicts", "t/c", "exact_excess_wavefronts", "min = 1")
        + rule("no local", "*", "local_bytes", "equals = 0")
    )
    measured = run_of(
        kernel(
            "t/c",
            shared_wavefronts=2.0**40 + 1,
            shared_wavefronts_ideal=2.0**40,
            local_ld_sectors=0.0,
            local_st_sectors=1.0,
        )
    )
    result = evaluate(ruleset, measured)
    assert statuses(result) == [("still conflicts", "t/c", "pass"), ("no local", "t/c", "fail")]
    assert result.verdicts[1].message == "local_bytes = 32 B, expected == 0 B"  # one 32-byte sector


def test_rule_matching_no_kernel_fails_and_lists_labels() -> None:
    result = evaluate(rules(rule("gone", "matmul/*", "duration", "max = 1")), run_of(kernel("t/a", duration=1.0)))
    (verdict,) = result.verdicts
    assert (verdict.status, verdict.subject, verdict.line) == ("fail", "", 2)
    assert verdict.message == "selects no kernel (matmul/*); labels in the run: t/a"


def test_missing_metric_fails_with_the_reason() -> None:
    fast = KernelResult(
        "k",
        "t",
        "padded",
        raw={"shared_wavefronts": None},
        missing={"shared_wavefronts": "not collected: run without --fast"},
    )
    ruleset = rules(rule("x", "*", "exact_excess_wavefronts", "equals = 0"))
    result = evaluate(ruleset, from_run(RunResults(H200, (fast,))))
    assert statuses(result) == [("x", "t/padded", "fail")]
    assert result.verdicts[0].message == (
        "exact_excess_wavefronts missing: needs memory_l1_wavefronts_shared: not collected: run without --fast"
    )


def test_empty_incomplete_and_wrong_runs_fail() -> None:
    ruleset = rules(rule("t", "*", "duration", "max = 10"))
    empty = evaluate(ruleset, run_of())
    assert statuses(empty) == [("run", "", "fail"), ("t", "", "fail")]
    assert empty.verdicts[0].message == "no kernels in made-up run"
    outcomes = (VariantOutcome("t", "a", "wrong", "wrong result at index 3"), VariantOutcome("t", "b", "ok"))
    broken = evaluate(ruleset, run_of(kernel("t/a", duration=1.0), outcomes=outcomes, complete=False))
    assert statuses(broken) == [("run", "", "fail"), ("run", "t/a", "fail"), ("t", "t/a", "pass")]
    assert [v.message for v in broken.verdicts[:2]] == [
        "the run stopped before every variant ran (incomplete)",
        "wrong: wrong result at index 3",
    ]


def test_static_rule_on_a_profile_run_fails_clearly() -> None:
    result = evaluate(rules(rule("s", "*", "static.registers", "max = 64")), run_of(kernel("t/a", duration=1.0)))
    assert result.verdicts[0].status == "fail"
    assert "static.registers is a static figure: gate `memlens check --json` output" in result.verdicts[0].message


def test_repeated_labels_get_numbered_keys() -> None:
    measured = run_of(kernel("t/a", duration=1.0), kernel("t/a", duration=2.0))
    assert [s.key for s in measured.subjects] == ["t/a", "t/a#2"]


# --- baselines ----------------------------------------------------------------------------------------


def regression_rules() -> str:
    return (
        rule("time", "*", "duration", 'max_regression = "10%"\nwarn = "5%"')
        + rule("bandwidth", "*", "dram_bandwidth", 'max_regression = "10%"')
        + rule("local", "*", "local_bytes", "max_regression = 0")
    )


def measured_run(duration: float, dram: float, local_sectors: float) -> Measurements:
    return run_of(
        kernel(
            "t/a",
            duration=duration,
            dram_read_bytes=dram,
            dram_write_bytes=0.0,
            local_ld_sectors=local_sectors,
            local_st_sectors=0.0,
        )
    )


def test_regressions_against_a_baseline(tmp_path: Path) -> None:
    path = tmp_path / "base.json"
    save_baseline(from_measurements(measured_run(1000.0, 1e6, 0.0), "2026-11-21T00:00:00+00:00"), path)
    baseline = load_baseline(path)
    assert baseline.value("t/a", "duration") == 1000.0
    assert baseline.value("t/a", "dram_bandwidth") == pytest.approx(1e12)
    ruleset = rules(regression_rules())
    same = evaluate(ruleset, measured_run(1000.0, 1e6, 0.0), baseline)
    assert [v.status for v in same.verdicts] == ["pass", "pass", "pass"]
    assert same.verdicts[0].message == "duration = 1.00 µs, baseline 1.00 µs (+0.0%)"
    # 7% slower: a warning; the bandwidth falls by 1/1.07 = 6.5%: a pass; one local sector more: a fail
    worse = evaluate(ruleset, measured_run(1070.0, 1e6, 1.0), baseline)
    assert [v.status for v in worse.verdicts] == ["warn", "pass", "fail"]
    assert worse.verdicts[2].message == "local_bytes = 32 B, baseline 0 B (+32 from zero): regressed by more than 0"
    # 20% slower: the time fails, and the bandwidth (higher is better) fails too
    slow = evaluate(ruleset, measured_run(1200.0, 1e6, 0.0), baseline)
    assert [v.status for v in slow.verdicts] == ["fail", "fail", "pass"]
    assert [v.bound for v in slow.verdicts] == ["<= baseline +10%", ">= baseline -10%", "<= baseline +0"]
    # the rule's 10% decides; the message says the change is inside the noise of a 1 µs kernel (300 ns: ±30%)
    assert slow.verdicts[0].message == (
        "duration = 1.20 µs, baseline 1.00 µs (+20.0%, within noise ±30.0%): regressed by more than 10%"
    )


def test_a_regression_says_whether_it_is_beyond_the_noise() -> None:
    baseline = from_measurements(measured_run(100_000.0, 1e6, 0.0))
    ruleset = rules(
        rule("time", "*", "duration", 'max_regression = "2%"') + rule("local", "*", "local_bytes", "max_regression = 0")
    )
    inside = evaluate(ruleset, measured_run(102_500.0, 1e6, 1.0), baseline)  # 100 µs: the 3% floor
    assert [v.status for v in inside.verdicts] == ["fail", "fail"]
    assert inside.verdicts[0].message == (
        "duration = 0.102 ms, baseline 0.100 ms (+2.5%, within noise ±3.0%): regressed by more than 2%"
    )
    assert "noise" not in inside.verdicts[1].message  # a count is exact
    beyond = evaluate(ruleset, measured_run(110_000.0, 1e6, 0.0), baseline)
    assert beyond.verdicts[0].message == (
        "duration = 0.110 ms, baseline 0.100 ms (+10.0%, beyond noise ±3.0%): regressed by more than 2%"
    )


def test_regression_exactly_at_the_tolerance_passes() -> None:
    baseline = from_measurements(measured_run(1000.0, 1e6, 0.0))
    ruleset = rules(rule("time", "*", "duration", 'max_regression = "10%"'))
    result = evaluate(ruleset, measured_run(1100.0, 1e6, 0.0), baseline)
    assert result.verdicts[0].status == "pass"


def test_without_a_baseline_regression_rules_skip_and_new_kernels_fail() -> None:
    ruleset = rules(rule("time", "*", "duration", 'max_regression = "10%"'))
    skipped = evaluate(ruleset, measured_run(1000.0, 1e6, 0.0))
    assert statuses(skipped) == [("time", "t/a", "skip")] and skipped.passed
    assert skipped.verdicts[0].message == "no baseline given (--baseline FILE)"
    baseline = from_measurements(run_of(kernel("other/x", duration=5.0)))
    new = evaluate(ruleset, measured_run(1000.0, 1e6, 0.0), baseline)
    assert new.verdicts[0].message == (
        "t/a is not in the baseline (a kernel new since, or a baseline of another program)"
    )


def test_baseline_of_another_gpu_is_refused_unless_allowed() -> None:
    baseline = from_measurements(measured_run(1000.0, 1e6, 0.0))
    a100 = RunInfo(
        gpu_name="NVIDIA A100-SXM4-80GB",
        compute_capability="8.0",
        driver_version="580.159.04",
        ncu_version="2025.3.1.0",
    )
    other = run_of(kernel("t/a", duration=1.0), info=a100)
    with pytest.raises(ConfigError, match=r"baseline gpu_name NVIDIA H200, run NVIDIA A100-SXM4-80GB: counters do"):
        compatibility(baseline, other)
    assert compatibility(baseline, other, allow_mismatch=True) == [
        "baseline gpu_name NVIDIA H200, run NVIDIA A100-SXM4-80GB: compared anyway (--allow-mismatch)",
        "baseline compute_capability 9.0, run 8.0: compared anyway (--allow-mismatch)",
    ]
    newer_driver = RunInfo(gpu_name="NVIDIA H200", compute_capability="9.0", driver_version="590.1")
    assert compatibility(baseline, run_of(info=newer_driver)) == [
        "baseline driver_version 580.159.04, run 590.1",
        "baseline ncu_version 2025.3.1.0, run unknown",
    ]
    unknown = run_of(kernel("t/a", duration=1.0), info=RunInfo())
    with pytest.raises(ConfigError, match="baseline gpu_name NVIDIA H200, run unknown"):
        compatibility(baseline, unknown)


def test_baseline_kind_must_match_and_files_are_checked(tmp_path: Path) -> None:
    static = Measurements("static", "check.json", Environment(arch="sm_90"), ())
    with pytest.raises(ConfigError, match="the baseline holds profile figures and the run static figures"):
        compatibility(from_measurements(measured_run(1.0, 1.0, 0.0)), static)
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "memlens-baseline", "schema_version": 9}')
    with pytest.raises(InputError, match="unsupported baseline schema_version 9"):
        load_baseline(bad)
    bad.write_text('{"schema_version": 1}')
    with pytest.raises(InputError, match="not a memlens baseline"):
        load_baseline(bad)
    with pytest.raises(OutputError, match="refusing to write over a raw profiler report"):
        save_baseline(Baseline("profile", Environment(), "", ""), tmp_path / "x.ncu-rep")


# --- renderings ---------------------------------------------------------------------------------------


def hostile_result() -> GateResult:
    ruleset = rules(
        rule("pipes | and `ticks`", "*", "duration", "max = 10\nwarn = 5")
        + rule("local", "*", "local_bytes", "equals = 0")
        + rule("time", "*", "duration", 'max_regression = "10%"')
    )
    hostile = KernelResult(HOSTILE, raw={"duration": 20.0, "local_ld_sectors": 0.0, "local_st_sectors": 0.0})
    measured = run_of(hostile, KernelResult("plain", raw={"duration": 7.0}))
    return evaluate(ruleset, measured, notes=["baseline <driver> | changed"])


def test_junit_validates_against_the_schema_and_keeps_names_as_text() -> None:
    result = hostile_result()
    xml = to_junit(result)
    assert validate_file(xml, JUNIT_XSD) == []
    root = ElementTree.fromstring(xml)
    suite = root.find("testsuite")
    assert suite is not None
    counts = [suite.get(name) for name in ("tests", "failures", "errors", "skipped")]
    assert counts == ["6", "2", "0", "2"]
    cases = suite.findall("testcase")
    assert len(cases) == len(result.verdicts) == 6
    first = cases[0]
    assert first.get("classname") == "memlens.gate.evaluate.pipes | and `ticks`"
    assert first.get("name") == HOSTILE.replace("\x01", "\ufffd") + " [duration]"  # escaped, then read back intact
    failure = first.find("failure")
    assert failure is not None and failure.get("message") == "duration = 20.0 ns, expected <= 10.0 ns"
    assert failure.text == "duration = 20.0 ns, expected <= 10.0 ns\n(rules file line 2)"
    warned = cases[1].find("system-out")
    assert warned is not None
    assert warned.text == "WARN: duration = 7.00 ns: within <= 10.0 ns but past the warning level <= 5.00 ns"
    assert [c.find("skipped") is not None for c in cases] == [False, False, False, False, True, True]
    assert "<script>" not in xml and "&lt;script&gt;" in xml
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["note1"] == "baseline <driver> | changed" and properties["measurements"] == "profile"


def test_schema_validator_rejects_what_the_schema_forbids() -> None:
    xml = to_junit(hostile_result())
    broken = xml.replace("<testsuite name=", '<testsuite bogus="1" name=', 1)
    broken = broken.replace(' tests="6" failures="2" errors="0" skipped', " skipped", 1)
    errors = validate_file(broken, JUNIT_XSD)
    assert "/testsuites/testsuite[0]: attribute 'bogus' is not allowed" in errors
    assert "/testsuites/testsuite[0]: missing required attribute 'tests'" in errors
    nested = xml.replace("<system-out>", "<failure><system-out>", 1)
    nested = nested.replace("</system-out>", "</system-out></failure>", 1)
    assert any("takes no child elements" in e for e in validate_file(nested, JUNIT_XSD))


def test_junit_also_validates_with_lxml_where_installed() -> None:
    etree = pytest.importorskip("lxml.etree", reason="lxml not installed: the xsd_lite check above still ran")
    schema = etree.XMLSchema(etree.parse(str(JUNIT_XSD)))
    assert schema.validate(etree.fromstring(to_junit(hostile_result()).encode())), schema.error_log


def markdown_rows(text: str) -> list[list[str]]:
    """Table rows split on unescaped pipes."""
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| status |")]
    return [re.split(r"(?<!\\)\|", row)[1:-1] for row in rows]


def test_markdown_summary_escapes_names_and_folds_passes() -> None:
    text = to_markdown(hostile_result())
    assert text.startswith("## memlens gate: FAILED: 6 checks (1 pass, 1 warn, 2 fail, 2 skip)\n")
    assert "> baseline &lt;driver&gt; \\| changed" in text
    rows = markdown_rows(text)
    assert all(len(row) == 8 for row in rows)  # no name breaks out of its cell
    fail = next(row for row in rows if "duration = 20.0 ns" in row[7])
    assert fail[0].strip() == "❌ fail" and fail[1].strip() == "pipes \\| and \\`ticks\\`"
    assert fail[2].strip() == md_code(HOSTILE)  # a code span, as the report shows a kernel name
    assert fail[2].strip() == "``void k<float, 1>(T&, char const*) \\| `x` <script>&amp; *a* [b](c) \x01``"
    assert "<script>" not in text.replace(md_code(HOSTILE), "")
    assert "<details><summary>1 passing checks</summary>" in text
    order = [row[0].strip() for row in rows]
    assert order == ["❌ fail", "❌ fail", "⚠️ warn", "⏭️ skip", "⏭️ skip", "✅ pass"]


def test_markdown_escape() -> None:
    assert markdown_escape("a|b`c<d>&e\nf") == "a\\|b\\`c&lt;d&gt;&amp;e f"


def test_json_rendering() -> None:
    data = json.loads(json.dumps(to_json(hostile_result())))
    assert data["passed"] is False and data["counts"] == {"pass": 1, "warn": 1, "fail": 2, "skip": 2}
    assert data["verdicts"][0]["subject"] == HOSTILE and data["verdicts"][0]["bound"] == "<= 10.0 ns"
    assert data["kind"] == "memlens-gate" and data["measurements"] == "profile"


def test_terminal_table_prints_names_verbatim() -> None:
    name = "k<[bold]x[/bold]>"
    result = GateResult("r.toml", "run", "profile", (Verdict("rule [red]", name, "fail", "bad [i]"),))
    console = Console(record=True, width=200, markup=False, highlight=False)
    console.print(to_table(result))
    text = console.export_text()
    assert name in text and "rule [red]" in text and "bad [i]" in text and "FAILED: 1 check (1 fail)" in text


# --- the command ------------------------------------------------------------------------------------------


def gate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["gate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


PROBE_RULES = (
    rule("padded conflict-free", "transpose/padded", "exact_excess_wavefronts", "equals = 0")
    + rule("conflict shows", "transpose/conflict", "exact_excess_wavefronts", "min = 1")
    + rule("local", "running_mean/local", "local_bytes", "min = 1")
    + rule("time", "*", "duration", 'max_regression = "25%"\nwarn = "10%"')
)

needs_probe = pytest.mark.skipif(not (PROBE / "probe.csv").exists(), reason="probe fixtures not recorded")


@needs_probe
def test_probe_recording_passes_and_writes_every_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules_file = tmp_path / "probe.toml"
    rules_file.write_text(PROBE_RULES)
    outputs = [tmp_path / name for name in ("junit.xml", "summary.md", "gate.json")]  # a folder that exists
    code, out, err = gate(
        capsys,
        str(PROBE / "probe.csv"),
        "--rules",
        str(rules_file),
        "--junit",
        str(outputs[0]),
        "--summary",
        str(outputs[1]),
        "--json",
        str(outputs[2]),
    )
    assert (code, err) == (0, "")
    assert "PASSED: 6 checks (3 pass, 3 skip)" in out and "16,252,928" in out
    assert validate_file(outputs[0].read_text(), JUNIT_XSD) == []
    assert json.loads(outputs[2].read_text())["counts"] == {"pass": 3, "warn": 0, "fail": 0, "skip": 3}
    assert outputs[1].read_text().startswith("## memlens gate: PASSED")


@needs_probe
def test_probe_baseline_round_trip_and_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules_file = tmp_path / "probe.toml"
    rules_file.write_text(PROBE_RULES)
    base = tmp_path / "base.json"
    assert main(["baseline", "save", str(PROBE / "probe.csv"), "-o", str(base)]) == 0
    assert "baseline of 3 kernels (NVIDIA H200) written to" in capsys.readouterr().out
    saved = json.loads(base.read_text())
    assert saved["environment"]["gpu_name"] == "NVIDIA H200" and saved["environment"]["compute_capability"] == "9.0"
    assert {k["key"] for k in saved["kernels"]} == {"transpose/conflict", "transpose/padded", "running_mean/local"}
    # the same run against its own baseline: every check passes
    code, out, _ = gate(capsys, str(PROBE / "probe.csv"), "--rules", str(rules_file), "--baseline", str(base))
    assert code == 0 and "PASSED: 6 checks (6 pass)" in out
    # the --fast recording lacks the exact excess: exit 1, written outputs say why
    junit = tmp_path / "fast.xml"
    code, out, err = gate(
        capsys,
        str(PROBE / "probe_fast.csv"),
        "--rules",
        str(rules_file),
        "--baseline",
        str(base),
        "--junit",
        str(junit),
    )
    assert code == 1 and err == "memlens: error: gate FAILED: 6 checks (4 pass, 2 fail)\n"
    assert junit.read_text().count("run without --fast") == 4  # message attribute and text, two kernels
    # a baseline from another GPU: exit 2, unless allowed
    saved["environment"]["gpu_name"] = "NVIDIA A100-SXM4-80GB"
    base.write_text(json.dumps(saved))
    code, _, err = gate(capsys, str(PROBE / "probe.csv"), "--rules", str(rules_file), "--baseline", str(base))
    assert code == 2 and err.startswith("memlens: error: baseline gpu_name NVIDIA A100-SXM4-80GB, run NVIDIA H200")
    code, out, _ = gate(
        capsys, str(PROBE / "probe.csv"), "--rules", str(rules_file), "--baseline", str(base), "--allow-mismatch"
    )
    assert code == 0 and "note: baseline gpu_name NVIDIA A100-SXM4-80GB, run NVIDIA H200: compared anyway" in out


@needs_probe
def test_probe_regression_fails_the_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    assert main(["baseline", "save", str(PROBE / "probe.csv"), "-o", str(base)]) == 0
    saved = json.loads(base.read_text())
    for item in saved["kernels"]:
        item["values"]["duration"] /= 2  # the baseline was twice as fast
    base.write_text(json.dumps(saved))
    rules_file = tmp_path / "time.toml"
    rules_file.write_text(rule("time", "*", "duration", 'max_regression = "25%"'))
    code, out, _ = gate(capsys, str(PROBE / "probe.csv"), "--rules", str(rules_file), "--baseline", str(base))
    assert code == 1 and out.count("regressed by more than 25%") == 3


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(rule("t", "*", "duration", "max = 1"))
    bad.write_text('[[rule]]\nname = "t"\nselect = "*"\nmetric = "durration"\nmax = 1\n')
    run = tmp_path / "results.json"
    run.write_text(json.dumps(RunResults(H200, (kernel("t/a", duration=1.0),)).to_json()))
    code, _, err = gate(capsys, str(run), "--rules", str(bad))
    assert code == 2 and err == (
        f"memlens: error: {bad}:4: rule 1: unknown metric 'durration' (did you mean duration?)\n"
    )
    code, _, err = gate(capsys, str(tmp_path / "missing"), "--rules", str(good))
    assert code == 2 and "no such file or directory" in err
    code, _, err = gate(capsys, str(run), "--rules", str(good), "--baseline", str(tmp_path / "none.json"))
    assert code == 2 and "cannot read baseline" in err
    code, out, _ = gate(capsys, str(run), "--rules", str(good))
    assert code == 0 and "PASSED: 1 check (1 pass)" in out


def test_read_measurements_tells_static_json_from_runs(tmp_path: Path) -> None:
    static = tmp_path / "check.json"
    static.write_text(
        json.dumps(
            {
                "kind": "memlens-static-check",
                "schema_version": 1,
                "arch": "sm_90",
                "compiler": "nvrtc 12.9",
                "kernels": [],
                "failures": [],
            }
        )
    )
    measured = read_measurements(static)
    assert (measured.kind, measured.environment.arch, measured.subjects) == ("static", "sm_90", ())
    run = tmp_path / "results.json"
    run.write_text(json.dumps(RunResults(RunInfo(gpu_name="NVIDIA H200"), (kernel("t/a"),)).to_json()))
    measured = read_measurements(run)
    assert (measured.kind, measured.source, [s.key for s in measured.subjects]) == ("profile", str(run), ["t/a"])
