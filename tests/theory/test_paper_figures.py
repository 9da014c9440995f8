"""Figures on paper (Expect(excess_wavefronts=...)) against the recorded measurements: every built-in
variant's figure equals the exact excess recorded on the H200 and the H100; `memlens metrics`, the
report and the gate's `equals_paper` say "as on paper" or show both figures; a suite's function of
the size is evaluated at the size run; a family that needs a newer GPU is skipped with its reason."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.collect.profile_run import Events
from memlens.commands import metrics
from memlens.errors import ConfigError
from memlens.gate.evaluate import evaluate, from_run
from memlens.gate.rules import parse_rules
from memlens.model.results import Expect, RunResults
from memlens.readers import read_report
from memlens.reports.build import build_run
from memlens.selection import select_variants
from memlens.suite import load_suite
from memlens.theory import paper_figures
from tests.conftest import FIXTURES, REPO

SUITE = load_suite(REPO / "kernels")
GPUS = ("nvidia_h200", "nvidia_h100_80gb_hbm3")
NEW_FAMILY = "fp16_transpose"
NOT_RECORDED = "fixtures of fp16_transpose not recorded yet"


def _with_paper(results: RunResults, overrides: dict[str, int] | None = None) -> RunResults:
    """`results` with each outcome's paper figure as the suite declares it today, at the family's
    default size (the size the fixtures were recorded at), or as `overrides` gives it."""
    variants = {v.label: v for v in SUITE.variants()}
    outcomes = []
    for outcome in results.outcomes:
        label = f"{outcome.family}/{outcome.variant}"
        variant = variants.get(label)
        if variant is None or outcome.expect is None:
            outcomes.append(outcome)
            continue
        figure = variant.expect.at_size(variant.family.size()).excess_wavefronts
        figure = (overrides or {}).get(label, figure)
        outcomes.append(replace(outcome, expect=replace(outcome.expect, excess_wavefronts=figure)))
    return replace(results, outcomes=tuple(outcomes))


def _recorded(gpu: str) -> RunResults:
    return read_report(FIXTURES / gpu / "suite.results.json")


def _without_paper(results: RunResults) -> RunResults:
    """`results` as a run recorded before the variants declared figures on paper reads."""
    outcomes = tuple(
        o if o.expect is None else replace(o, expect=replace(o.expect, excess_wavefronts=None))
        for o in results.outcomes
    )
    return replace(results, outcomes=outcomes)


# --- every built-in variant's figure against the recordings --------------------------------------


def test_every_built_in_variant_declares_its_figure() -> None:
    undeclared = [v.label for v in SUITE.variants() if v.expect.excess_wavefronts is None]
    assert undeclared == []
    figures = {v.label: v.expect.at_size(v.family.size()).excess_wavefronts for v in SUITE.variants()}
    assert figures["transpose/conflict"] == 65_011_712  # 31 a column read, 8192^2 / 32 column reads
    assert figures["matmul/tiled_article"] == 1_040_187_392  # 62 a warp and 16-wide tile of k
    assert figures["transpose/conflict"] > 0 and figures["running_mean/local"] == 0


@pytest.mark.parametrize("gpu", GPUS)
def test_paper_figures_match_the_recorded_measurements(gpu: str) -> None:
    results = _with_paper(_recorded(gpu))
    found = paper_figures.checks(results)
    old = {label: c for label, c in found.items() if not label.startswith(f"{NEW_FAMILY}/")}
    recorded = {k.label for k in results.kernels if not k.label.startswith(f"{NEW_FAMILY}/")}
    assert set(old) == recorded  # every recorded variant has a figure
    assert {label: c.words() for label, c in old.items()} == {label: paper_figures.AS_ON_PAPER for label in old}
    assert old["transpose/conflict"].measured == 65_011_712


@pytest.mark.parametrize("gpu", GPUS)
def test_fp16_transpose_figures_match_the_recorded_measurements(gpu: str) -> None:
    """Needs the fixtures re-recorded with the family (tests/fixtures/record.sh on an H100 and an H200)."""
    results = _recorded(gpu)
    labels = {k.label for k in results.kernels if k.label.startswith(f"{NEW_FAMILY}/")}
    if not labels:
        pytest.skip(NOT_RECORDED)
    assert labels == {v.label for v in SUITE.family(NEW_FAMILY).variants}
    today = paper_figures.checks(_with_paper(results))  # the suite's figures today (the bank model's), at n = 8192
    assert all(today[label].as_on_paper for label in labels)


# --- metrics, report, gate ------------------------------------------------------------------------


@pytest.fixture
def mismatched() -> RunResults:
    return _with_paper(_recorded("nvidia_h200"), {"transpose/padded": 5})


def test_metrics_json_says_as_on_paper_or_not(mismatched: RunResults, capsys) -> None:
    kernels = [k for k in mismatched.kernels if k.label.startswith("transpose/")]
    metrics.render(mismatched, kernels, "json")
    data = {k["label"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert (data["transpose/conflict"]["paper_excess_wavefronts"], data["transpose/conflict"]["as_on_paper"]) == (
        65_011_712,
        True,
    )
    assert (data["transpose/padded"]["paper_excess_wavefronts"], data["transpose/padded"]["as_on_paper"]) == (5, False)


def test_metrics_table_names_the_variants_as_on_paper_and_both_figures_otherwise(mismatched, capsys) -> None:
    kernels = [k for k in mismatched.kernels if k.label in ("transpose/conflict", "transpose/padded")]
    metrics.render(mismatched, kernels, "table")
    out = capsys.readouterr().out
    assert "exact excess wavefronts as on paper: transpose/conflict\n" in out
    assert "transpose/padded: exact excess wavefronts measured 0, on paper 5\n" in out


def test_a_run_without_paper_figures_prints_no_paper_line(capsys) -> None:
    recorded = _recorded("nvidia_h200")  # recorded with the figures: every variant as on paper
    metrics.render(recorded, list(recorded.kernels), "table")
    assert f"exact excess wavefronts as on paper: {', '.join(k.label for k in recorded.kernels)}\n" in (
        capsys.readouterr().out
    )
    results = _without_paper(recorded)
    metrics.render(results, list(results.kernels), "table")
    out = capsys.readouterr().out
    assert "on paper" not in out and "transpose/conflict" in out


def test_report_checks_the_paper_figure(mismatched: RunResults) -> None:
    rows = {row.label: row for row in build_run(mismatched, "h200").variants}
    conflict, padded = rows["transpose/conflict"], rows["transpose/padded"]
    assert conflict.declared == "shared loads: 32-way conflict; on paper 65,011,712 excess wavefronts"
    assert conflict.expectation.measured.endswith("; exact excess wavefronts as on paper")
    assert conflict.expectation.state == "match"
    assert padded.expectation.measured.endswith("; exact excess wavefronts measured 0, on paper 5")
    assert padded.expectation.state == "mismatch"
    aspect = padded.expectation.checks[-1]
    assert (aspect.aspect, aspect.expected, aspect.measured, aspect.state) == ("excess_wavefronts", 5, 0.0, "mismatch")


RULE = '[[rule]]\nname = "on paper"\nselect = "transpose/*"\nmetric = "exact_excess_wavefronts"\nequals_paper = true\n'


def test_gate_equals_paper(mismatched: RunResults) -> None:
    result = evaluate(parse_rules(RULE, "g.toml"), from_run(mismatched))
    verdicts = {v.subject: v for v in result.verdicts if v.rule == "on paper"}
    assert verdicts["transpose/conflict"].status == "pass"
    assert verdicts["transpose/conflict"].message == "exact_excess_wavefronts = 65,011,712, as on paper"
    assert verdicts["transpose/padded"].status == "fail"
    assert verdicts["transpose/padded"].message == "exact_excess_wavefronts measured 0, on paper 5"
    assert verdicts["transpose/padded"].bound == "== paper 5"
    assert not result.passed


def test_gate_equals_paper_fails_a_variant_without_a_figure() -> None:
    recorded = evaluate(parse_rules(RULE, "g.toml"), from_run(_recorded("nvidia_h200")))  # with its figures
    assert recorded.passed and {v.status for v in recorded.verdicts} == {"pass"}
    result = evaluate(parse_rules(RULE, "g.toml"), from_run(_without_paper(_recorded("nvidia_h200"))))
    verdict = next(v for v in result.verdicts if v.subject == "transpose/conflict")
    assert verdict.status == "fail"
    assert verdict.message == (
        "transpose/conflict declares no exact excess wavefronts on paper (Expect(excess_wavefronts=...) in its suite)"
    )


@pytest.mark.parametrize("name", ["suite.ncu-rep", "suite.csv"])
def test_gate_equals_paper_on_a_raw_report_says_it_holds_no_figures_and_what_to_gate(capsys, name: str) -> None:
    """issue 33 (7): on the raw report each variant "declared no figure on paper", though the suite declares them."""
    report = FIXTURES / "nvidia_h200" / name
    rules = FIXTURES.parent.parent / "kernels" / "gates.toml"
    assert main(["gate", str(report), "--rules", str(rules), "--json", "-"]) == 1
    verdicts = [v for v in json.loads(capsys.readouterr().out)["verdicts"] if v["rule"].endswith("worked out on paper")]
    assert len(verdicts) == 19 and {v["status"] for v in verdicts} == {"fail"}
    assert {v["message"] for v in verdicts} == {
        f"{report} holds no suite's figures on paper (a raw ncu report or CSV keeps no Expect(...)): "
        "gate the run directory or its results.json instead"
    }
    assert main(["gate", str(report.with_name("suite.results.json")), "--rules", str(rules)]) == 0  # as said


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('metric = "exact_excess_wavefronts"\nequals_paper = 1\n', r"g\.toml:5: rule 1: 'equals_paper' must be true"),
        (
            'metric = "duration"\nequals_paper = true\n',
            r"g\.toml:4: rule 1: 'equals_paper' compares exact_excess_wavefronts, .* not duration",
        ),
        (
            'metric = "exact_excess_wavefronts"\nequals_paper = true\nwarn = 1\n',
            r"g\.toml:6: rule 1: 'equals_paper' takes no 'warn' level",
        ),
    ],
)
def test_bad_equals_paper_rules(body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_rules(f'[[rule]]\nname = "p"\nselect = "*"\n{body}', "g.toml")


# --- the figure as a function of the size; skipping a family on an older GPU -----------------------

SUITE_FILE = textwrap.dedent("""
    import numpy as np
    from memlens.suite import Expect, Family, Launch

    def make_inputs(rng, size): return {"x": rng.random(size["n"]).astype(np.float32) + 1}
    def launch(inputs, size):
        out = 2 * inputs["x"]
        return Launch(run=lambda: None, output=lambda: out.copy())

    old = Family("old", "y = 2 x", make_inputs, lambda inputs, size: 2 * inputs["x"], default_size={"n": 8})
    old.variant("any", demonstrates="anywhere", expect=Expect(excess_wavefronts=lambda size: 3 * size["n"]))(launch)
    new = Family("new", "y = 2 x", make_inputs, lambda inputs, size: 2 * inputs["x"], default_size={"n": 8},
                 min_compute_capability=(9, 0), needs="stmatrix")
    new.variant("a", demonstrates="needs Hopper", expect=Expect(excess_wavefronts=0))(launch)
    new.variant("b", demonstrates="needs Hopper too")(launch)
""")


def test_profiled_program_skips_a_family_the_gpu_is_too_old_for(tmp_path: Path, monkeypatch) -> None:
    import memlens.collect.profiled_program as program

    suite = tmp_path / "suite.py"
    suite.write_text(SUITE_FILE)
    monkeypatch.setattr(program, "gpu_compute_capability", lambda: (8, 0))
    events = tmp_path / "events.jsonl"
    assert program.main(["--suite", str(suite), "--events", str(events), "--size", "n=5"]) == 0
    done = [json.loads(line) for line in events.read_text().splitlines()]
    done = [(e["variant"], e["status"], e.get("message", "")) for e in done if e["event"] == "done"]
    reason = "needs compute capability 9.0 or newer (stmatrix); this GPU is 8.0"
    assert done == [("old/any", "ok", ""), ("new/a", "skipped", reason), ("new/b", "skipped", reason)]
    record = Events(events)
    record.poll()
    outcomes = {f"{o.family}/{o.variant}": o for o in record.outcomes(select_variants(suite, None).variants)}
    assert outcomes["old/any"].expect.excess_wavefronts == 15  # 3 n at the size run, n = 5
    assert (outcomes["new/a"].status, outcomes["new/a"].message) == ("skipped", reason)


def test_bench_skips_a_family_the_gpu_is_too_old_for(tmp_path: Path, monkeypatch, capsys) -> None:
    import memlens.bench.timing as bench_module
    from tests.bench.test_bench import FakeDevice

    class OldDevice(FakeDevice):
        compute_capability = (8, 6)

    suite = tmp_path / "suite.py"
    suite.write_text(SUITE_FILE)
    monkeypatch.setattr(bench_module, "open_device", OldDevice)
    assert main(["bench", str(suite), "--out", str(tmp_path / "runs"), "--repeats", "20"]) == 0
    out = capsys.readouterr().out
    assert "new: 2 variants skipped: needs compute capability 9.0 or newer (stmatrix); this GPU is 8.6" in out
    (run,) = (tmp_path / "runs").iterdir()
    data = json.loads((run / "bench.json").read_text())
    assert [(f["variant"], f["status"]) for f in data["failures"]] == [("a", "skipped"), ("b", "skipped")]
    assert [t["variant"] for t in data["variants"]] == ["any"]


def test_paper_figures_are_counts() -> None:
    with pytest.raises(ValueError, match=r"Expect: excess_wavefronts is -1, not a count \(an int >= 0\)"):
        Expect(excess_wavefronts=-1)
    with pytest.raises(ValueError, match=r"Expect: excess_wavefronts\(\{'n': 2\}\) is 1\.5, not a count"):
        Expect(excess_wavefronts=lambda size: size["n"] * 0.75).at_size({"n": 2})
    assert Expect(excess_wavefronts=7).at_size({"n": 2}).excess_wavefronts == 7


def test_a_bad_min_compute_capability_is_refused() -> None:
    from memlens.suite import Family

    with pytest.raises(ConfigError, match=r"family 'f': min_compute_capability '9\.0' is not \(major, minor\)"):
        Family("f", "d", lambda rng, size: {}, lambda inputs, size: None, default_size={}, min_compute_capability="9.0")


def test_list_names_the_gpu_a_family_needs(capsys) -> None:
    assert main(["list", str(REPO / "kernels"), "-k", "^fp16_transpose/"]) == 0
    out = capsys.readouterr().out
    needs = "fp16_transpose: needs compute capability 9.0 or newer (stmatrix); profile and bench skip it on an older"
    assert needs in out
    assert "on paper" in out
