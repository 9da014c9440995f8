"""SARIF 2.1.0 and GitHub workflow commands from `gate`, `lines` and `compare` (--sarif, --format github,
--source-root), on the recorded builds of tests/fixtures/programs/compare_v{1,2}.cu (v2 inserts one line
at the top: every line below moves down by one) and on the recorded cuda_app program.

No Python package ships the SARIF 2.1.0 JSON schema (sarif-om and sarif-tools hold the object model and
readers only), so `assert_sarif` checks the properties the OASIS standard requires, one by one."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.output import SUBJECTS, format_names, renderer
from memlens.output.findings import RULES, place
from memlens.readers import read_lines

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
COMPARE = sorted(FIXTURES.glob("*/compare/compare_v1.ncu-rep"))[0].parent
V1, V2 = COMPARE / "compare_v1.ncu-rep", COMPARE / "compare_v2.ncu-rep"
CUDA_APP = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"
LEVELS = {"none", "note", "warning", "error"}


def build_folder() -> Path:
    """The temporary folder record_compare.sh built both versions in (mktemp -d), as the reports name it."""
    files = {r.file for k in read_lines(str(V2)).kernels for r in k.instructions if r.file}
    assert len(files) == 1 and next(iter(files)).endswith("/app.cu"), files
    return Path(files.pop()).parent


def assert_sarif(log: dict) -> None:
    """The properties SARIF 2.1.0 requires (OASIS, sarif-v2.1.0-os, section 3), each checked."""
    assert log["version"] == "2.1.0" and isinstance(log["runs"], list)  # 3.13.2, 3.13.4 sarifLog
    assert log["$schema"].endswith("sarif-2.1.0.json")
    for run in log["runs"]:
        driver = run["tool"]["driver"]  # 3.14.6 run.tool, 3.18.2 tool.driver
        assert driver["name"] == "memlens" and re.fullmatch(r"\d+\.\d+\.\d+.*", driver["version"])  # 3.19.8
        ids = [rule["id"] for rule in driver["rules"]]  # 3.49.3 reportingDescriptor.id: required
        assert len(ids) == len(set(ids))
        for rule in driver["rules"]:
            assert rule["shortDescription"]["text"] and rule["defaultConfiguration"]["level"] in LEVELS
        for base in run.get("originalUriBaseIds", {}).values():
            assert base["uri"].startswith("file:///") and base["uri"].endswith("/")  # 3.14.14: ends with /
        for result in run["results"]:
            assert result["message"]["text"]  # 3.27.11: message required, 3.11.8 text
            assert result["ruleId"] in ids and ids[result["ruleIndex"]] == result["ruleId"]  # 3.27.5, 3.27.6
            assert result["level"] in LEVELS  # 3.27.10
            assert result["locations"]  # GitHub code scanning: at least one, with a file
            for location in result["locations"]:
                physical = location["physicalLocation"]  # 3.29.2: an artifactLocation; region.startLine >= 1
                artifact = physical["artifactLocation"]
                assert artifact["uri"] and (
                    artifact.get("uriBaseId") in run["originalUriBaseIds"] or artifact["uri"].startswith("file:///")
                )
                assert physical.get("region", {"startLine": 1})["startLine"] >= 1
                kinds = [logical["kind"] for logical in location["logicalLocations"]]
                assert kinds in (["function"], ["function", "instruction"])  # the kernel, the SASS on the line
                assert all(logical["fullyQualifiedName"] for logical in location["logicalLocations"])
            assert all(isinstance(v, str) for v in result["partialFingerprints"].values())  # 3.27.17


def sarif(capsys, argv: list[str], code: int = 0) -> dict:
    assert main([*argv, "--sarif", "-"]) == code
    log = json.loads(capsys.readouterr().out)  # standard output holds the SARIF alone
    assert_sarif(log)
    return log


def located(log: dict) -> list[tuple[str, str, str, int, str]]:
    """(rule, level, uri, line, label) of each result."""
    out = []
    for result in log["runs"][0]["results"]:
        location = result["locations"][0]
        physical = location["physicalLocation"]
        kernel = location["logicalLocations"][0]["fullyQualifiedName"]
        out.append(
            (
                result["ruleId"],
                result["level"],
                physical["artifactLocation"]["uri"],
                physical["region"]["startLine"],
                kernel,
            )
        )
    return out


def fingerprints(log: dict) -> dict[str, str]:
    return {
        result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]: result["partialFingerprints"][
            "memlensLineHash/v1"
        ]
        for result in log["runs"][0]["results"]
    }


def test_sarif_and_github_are_formats_of_the_one_output_seam():
    assert {"lines", "compare"} <= set(SUBJECTS)
    for subject in ("gate", "lines", "compare"):
        assert {"sarif", "github"} <= set(format_names(subject))
    assert format_names("lines") == ["github", "json", "sarif", "table"]  # its text and JSON are formats too
    assert callable(renderer("sarif", "compare"))


# --- lines ------------------------------------------------------------------------------------------


def test_lines_lists_every_conflicting_line_relative_to_the_source_root(capsys):
    root = build_folder()
    log = sarif(capsys, ["lines", str(V1), "--source-root", str(root)])
    assert sorted(located(log)) == [
        ("ML001", "warning", "app.cu", 17, "compare/four_way"),
        ("ML001", "warning", "app.cu", 25, "compare/swizzle"),
    ]
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == root.as_uri() + "/"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(RULES)
    first = next(r for r in run["results"] if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 17)
    words = "shared loads 4-way: 393,216 excess wavefronts (100% of the kernel's)"
    stake = "at most 27% of the kernel's time at stake (an upper bound)"
    assert first["message"]["text"] == f"compare/four_way: {words}; {stake}"
    assert first["properties"]["time_at_stake"] == pytest.approx(0.27, abs=0.005)
    assert first["properties"]["excess_wavefronts"] == 393_216 and first["properties"]["n_way"] == 4
    assert first["properties"]["sass"] == ["LDS"]
    assert first["locations"][0]["logicalLocations"][1] == {
        "kind": "instruction",
        "name": "LDS",
        "fullyQualifiedName": "compare/four_way/LDS",
    }
    region = first["locations"][0]["physicalLocation"]["region"]
    assert region["snippet"]["text"] == "for (int r = 0; r < 32; ++r) sum += tile[(threadIdx.x * 4 + r) % 1024];"
    logical = first["locations"][0]["logicalLocations"][0]
    assert (logical["name"], logical["decoratedName"]) == ("four_way_read", "four_way_read(float *, const float *)")


def test_a_line_that_only_moved_keeps_its_fingerprint(capsys):
    root = str(build_folder())
    before, after = (sarif(capsys, ["lines", str(v), "--source-root", root]) for v in (V1, V2))
    assert located(after) == [
        ("ML001", "warning", "app.cu", 18, "compare/four_way"),
        ("ML001", "warning", "app.cu", 34, "compare/vector"),
    ]
    # four_way's read moved from line 17 to 18, its code the same: one fingerprint
    assert fingerprints(before)["compare/four_way"] == fingerprints(after)["compare/four_way"]
    assert len({*fingerprints(before).values(), *fingerprints(after).values()}) == 3  # swizzle and vector differ


def test_without_a_source_root_a_build_folder_outside_the_repository_stays_absolute_and_says_so(capsys):
    built = build_folder() / "app.cu"
    log = sarif(capsys, ["lines", str(V2), "-k", "vector"])
    result = log["runs"][0]["results"][0]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": built.as_uri()} and result["properties"]["outside_source_root"] is True
    assert result["message"]["text"].endswith(f"(at {built}:34, outside the source root {REPO}: an absolute path)")
    assert main(["lines", str(V2), "-k", "vector", "--format", "github"]) == 0
    assert capsys.readouterr().out == (
        f"::notice title=memlens::memlens: 1 finding without a source file in the repository: {built}:34 (outside "
        f"{REPO}): compare/vector: 16-byte shared loads 2-way: 131,072 excess wavefronts (100%25 of the kernel's); "
        "at most 8%25 of the kernel's time at stake (an upper bound)\n"
    )


def test_lines_annotations_name_the_line_and_its_figures(capsys):
    assert main(["lines", str(V2), "--format", "github", "--source-root", str(build_folder())]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "::warning file=app.cu,line=18,title=memlens%3A shared-memory bank conflict::compare/four_way: shared loads "
        "4-way: 393,216 excess wavefronts (100%25 of the kernel's); at most 28%25 of the kernel's time at stake (an "
        "upper bound)",
        "::warning file=app.cu,line=34,title=memlens%3A shared-memory bank conflict::compare/vector: 16-byte shared "
        "loads 2-way: 131,072 excess wavefronts (100%25 of the kernel's); at most 8%25 of the kernel's time at stake "
        "(an upper bound)",
    ]


def test_local_memory_is_named_by_its_cause_and_levelled_by_its_share(capsys, monkeypatch):
    monkeypatch.chdir(REPO / "tests")  # the default root is the git top level, not the working directory
    log = sarif(capsys, ["lines", str(CUDA_APP), "-k", "running_sum"])
    found = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r
        for r in log["runs"][0]["results"]
    }
    # line 60 fills the window with STL.128 at fixed stack offsets: the array's stores, not a spill (it was ML002
    # "register spill" while the kernel's cause, in the report and memlens metrics, was the array)
    assert set(found) == {("ML003", 62), ("ML003", 60)}
    array, fill = found["ML003", 62], found["ML003", 60]
    assert array["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "tests/fixtures/programs/cuda_app.cu"
    assert array["properties"]["cause"] == "array indexed at run time" and array["level"] == "warning"
    assert fill["properties"]["cause"] == "array indexed at run time" and fill["properties"]["executions"] == 1_048_576
    assert fill["properties"]["share_of_kernel"] == pytest.approx(0.2)


def test_a_kernel_with_spills_alone_names_every_local_line_a_spill(capsys, monkeypatch):
    monkeypatch.chdir(REPO / "tests")
    log = sarif(capsys, ["lines", str(CUDA_APP), "-k", "spill"])
    rules = {r["ruleId"] for r in log["runs"][0]["results"] if r["ruleId"] in ("ML002", "ML003")}
    assert rules == {"ML002"}


def test_a_small_share_of_the_kernel_is_a_note(capsys):
    log = sarif(capsys, ["lines", str(FIXTURES / "nvidia_h200" / "suite.results.json"), "-k", "^matmul/naive$"])
    levels = {(r["ruleId"], r["properties"]["kind"]): r["level"] for r in log["runs"][0]["results"]}
    assert levels == {("ML004", "global loads"): "warning", ("ML004", "global stores"): "note"}


# --- compare -----------------------------------------------------------------------------------------


def test_compare_reports_the_line_that_got_worse_at_its_new_line(capsys):
    root = str(build_folder())
    log = sarif(capsys, ["compare", str(V1), str(V2), "--source-root", root])
    assert located(log) == [("ML005", "warning", "app.cu", 34, "compare/vector")]
    result = log["runs"][0]["results"][0]
    assert result["message"]["text"] == "compare/vector: worse (line 33 in BASE): excess wavefronts 0 -> 131,072"
    assert (result["properties"]["base_line"], result["properties"]["head"]["excess_wavefronts_ld"]) == (33, 131_072)
    assert main(["compare", str(V1), str(V2), "--format", "github", "--source-root", root]) == 0
    assert capsys.readouterr().out == (
        "::warning file=app.cu,line=34,title=memlens%3A a line that got worse::"
        "compare/vector: worse (line 33 in BASE): excess wavefronts 0 -> 131,072\n"
    )


def test_compare_text_is_unchanged_beside_a_sarif_file(capsys, tmp_path):
    assert main(["compare", str(V1), str(V2)]) == 0
    plain = capsys.readouterr().out
    assert main(["compare", str(V1), str(V2), "--sarif", str(tmp_path / "c.sarif")]) == 0
    assert capsys.readouterr().out == plain
    assert_sarif(json.loads((tmp_path / "c.sarif").read_text()))


# --- gate --------------------------------------------------------------------------------------------

LINE_RULE = (
    '[[rule]]\nname = "no line gains conflicts"\nselect = "compare/*"\n'
    'metric = "line_excess_wavefronts"\nmax_regression = "0%"\n'
)


@pytest.fixture
def gated(tmp_path) -> list[str]:
    baseline, rules = tmp_path / "v1.json", tmp_path / "rules.toml"
    assert main(["baseline", "save", str(V1), "-o", str(baseline)]) == 0
    rules.write_text(LINE_RULE)
    return ["gate", str(V2), "--rules", str(rules), "--baseline", str(baseline)]


def test_a_failed_line_gate_is_a_sarif_error_and_an_annotation_at_the_line(capsys, gated, tmp_path):
    root = str(build_folder())
    capsys.readouterr()
    log = sarif(capsys, [*gated, "--source-root", root], code=1)
    assert located(log) == [("ML006", "error", "app.cu", 34, "compare/vector")]
    result = log["runs"][0]["results"][0]
    assert result["properties"] == {
        "rule": "no line gains conflicts",
        "metric": "line_excess_wavefronts",
        "value": 131_072,
        "bound": "<= baseline +0%",
        "baseline": 0,
        "rules_file_line": 1,
    }
    assert main([*gated, "--format", "github", "--source-root", root]) == 1
    captured = capsys.readouterr()
    assert captured.out == (
        "::error file=app.cu,line=34,title=memlens%3A a failed gate rule::no line gains conflicts: compare/vector: "
        f"line_excess_wavefronts at {root}/app.cu:34 (line 33 in the baseline): 131,072, baseline 0 (worse), "
        "expected <= baseline +0%25: for (int r = 0; r < 8; ++r) sum += total(tile[(2 * threadIdx.x + 32 * r) %25 "
        "1024]);\n"
    )
    assert captured.err == "memlens: error: gate FAILED: 3 checks (2 pass, 1 fail)\n"


def test_the_gate_fingerprint_matches_across_the_shift_of_its_line(capsys, gated, tmp_path):
    """The same failing line in a build with it one line lower: one fingerprint (a line moved is not new)."""
    root = str(build_folder())
    capsys.readouterr()
    head = sarif(capsys, [*gated, "--source-root", root], code=1)
    assert main(["baseline", "save", str(V2), "-o", str(tmp_path / "v2.json")]) == 0
    (tmp_path / "worse.toml").write_text(LINE_RULE.replace('max_regression = "0%"', "max = 0"))
    capsys.readouterr()
    absolute = sarif(capsys, ["gate", str(V2), "--rules", str(tmp_path / "worse.toml"), "--source-root", root], 1)
    lines = {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in absolute["runs"][0]["results"]}
    assert lines == {18, 34}
    old = sarif(capsys, ["gate", str(V1), "--rules", str(tmp_path / "worse.toml"), "--source-root", root], 1)
    assert fingerprints(old)["compare/four_way"] == fingerprints(absolute)["compare/four_way"]  # 17 -> 18
    assert fingerprints(head)["compare/vector"] == fingerprints(absolute)["compare/vector"]


def test_a_failed_rule_without_a_line_is_an_error_without_a_file(capsys, tmp_path):
    """issue 46 (7): a failed rule with no file in the repository was one blue ::notice, while SARIF called it an
    error. A failed check is an ::error (GitHub shows one without a file in the run's summary)."""
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\nname = "no conflicts"\nselect = "compare/vector"\nmetric = "exact_excess_wavefronts"\nmax = 0\n'
    )
    assert main(["gate", str(V2), "--rules", str(rules), "--format", "github"]) == 1
    assert capsys.readouterr().out == (
        "::error title=memlens%3A a failed gate rule::no source line: "
        "no conflicts: compare/vector: exact_excess_wavefronts = 131,072, expected <= 0\n"
    )
    # a failed line rule at a file outside the repository: an error each, never in the notice
    line_rules = tmp_path / "lines.toml"
    line_rules.write_text(LINE_RULE.replace('max_regression = "0%"', "max = 0"))
    assert main(["gate", str(V2), "--rules", str(line_rules), "--format", "github"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split("::")[1] for line in out] == ["error title=memlens%3A a failed gate rule"] * 2, out
    assert out[0].endswith(
        f"::{build_folder()}/app.cu:18 (outside {REPO}): no line gains conflicts: "
        "compare/four_way: line_excess_wavefronts at "
        f"{build_folder()}/app.cu:18: 393,216, expected <= 0: for (int r = 0; r < 32; ++r) sum += "
        "tile[(threadIdx.x * 4 + r) %25 1024];"
    )
    log = sarif(capsys, ["gate", str(V2), "--rules", str(rules)], code=1)
    (result,) = log["runs"][0]["results"]
    assert result["level"] == "error" and result["properties"]["no_source_line"] is True
    # GitHub code scanning rejects a log with a result without a file: one without a line is at its rule
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": rules.as_uri()},
        "region": {"startLine": 1},
    }
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "compare/vector"


# --- the output rules ----------------------------------------------------------------------------------


def one_line_exit_2(capsys, argv: list[str], message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: ") and err.count("\n") == 1 and message in err, err


def test_two_documents_on_standard_output_are_refused(capsys, gated):
    both = "would both write standard output; write one to a file"
    one_line_exit_2(capsys, ["lines", str(V2), "--sarif", "-", "--json"], f"--json and --sarif - {both}")
    one_line_exit_2(capsys, ["compare", str(V1), str(V2), "--md", "--format", "github"], "--md and --format github")
    one_line_exit_2(capsys, ["compare", str(V1), str(V2), "--sarif", "-", "--format", "github"], both)
    one_line_exit_2(capsys, [*gated, "--json", "-", "--format", "github"], f"--json - and --format github {both}")
    one_line_exit_2(capsys, [*gated, "--json", "-", "--sarif", "-"], "are one file")


def test_a_sarif_file_never_replaces_an_input(capsys, tmp_path, gated):
    copy = tmp_path / "v2.ncu-rep"
    copy.write_bytes(V2.read_bytes())
    one_line_exit_2(capsys, ["lines", str(copy), "--sarif", str(copy)], "refusing to write over a raw profiler report")
    rules = gated[3]
    before = Path(rules).read_text()
    one_line_exit_2(capsys, [*gated, "--sarif", rules], "is an input of this command")
    assert Path(rules).read_text() == before
    run = tmp_path / "run"  # a run directory: its report is an input
    run.mkdir()
    (run / "profile.ncu-rep").write_bytes(V2.read_bytes())
    (run / "results.json").write_text("{}")
    one_line_exit_2(capsys, ["compare", str(copy), str(copy), "--sarif", str(copy)], "raw profiler report")


def test_a_folder_gets_memlens_sarif_and_a_special_file_is_written_in_place(capsys, tmp_path):
    assert main(["lines", str(V2), "--sarif", f"{tmp_path}/"]) == 0
    assert_sarif(json.loads((tmp_path / "memlens.sarif").read_text()))
    assert "compare/vector" in capsys.readouterr().out  # the text as ever, beside the file
    assert main(["compare", str(V1), str(V2), "--sarif", "/dev/null"]) == 0
    one_line_exit_2(capsys, ["lines", str(V2), "--sarif", str(tmp_path / "missing" / "x.sarif")], "missing")


def test_place_is_relative_to_the_root_from_any_working_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO / "tests")
    assert place("fixtures/programs/cuda_app.cu", REPO) == place(
        str(REPO / "tests/fixtures/programs/cuda_app.cu"), REPO
    )
    assert place("fixtures/programs/cuda_app.cu", REPO).path == "tests/fixtures/programs/cuda_app.cu"
    assert place("/elsewhere/a.cu", REPO).inside is False
    assert place("CuPy transpose (0123abcd.cubin.cu)", REPO) is None and place(None, REPO) is None


# --- docs/ci.md: the workflow's memlens commands, against the recorded builds ---------------------------


def workflow_commands(doc: str, job: str) -> list[str]:
    """The `memlens ...` lines of one job of the GitHub workflow in docs/ci.md (the ```yaml block that has it)."""
    blocks = [part.split("```", 1)[0] for part in doc.split("```yaml")[1:]]
    block = next(b for b in blocks if re.search(rf"\n  {job}:", b))
    part = re.split(rf"\n  {job}:[^\n]*\n", block, maxsplit=1)[1]
    part = re.split(r"\n  [a-z-]+:[^\n]*\n", part, maxsplit=1)[0]
    return [
        line.strip().removeprefix("- run: ").removeprefix("run: ")
        for line in part.splitlines()
        if re.match(r"\s*(- run: |run: )?memlens ", line)
    ]


def test_the_ci_workflows_commands_run_against_the_recorded_builds(capsys, tmp_path, monkeypatch):
    doc = (REPO / "docs" / "ci.md").read_text()
    commands = workflow_commands(doc, "findings")
    assert [c.split()[1] for c in commands] == ["baseline", "gate", "lines", "compare", "compare"]
    (tmp_path / "run-base").mkdir()
    (tmp_path / "run-head").mkdir()
    (tmp_path / "run-base" / "profile.ncu-rep").write_bytes(V1.read_bytes())
    (tmp_path / "run-head" / "profile.ncu-rep").write_bytes(V2.read_bytes())
    (tmp_path / "memlens-rules.toml").write_text(LINE_RULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setenv("MEMLENS_BUILD_DIR", str(build_folder()))
    codes, out = [], ""
    for command in commands:
        argv = [os.path.expandvars(a) for a in shlex.split(command.split(" > ", 1)[0])][1:]
        codes.append(main(argv))
        printed = capsys.readouterr().out
        if " > " in command:
            Path(command.split(" > ", 1)[1].strip()).write_text(printed)
        else:
            out += printed
    assert codes == [0, 1, 0, 0, 0]
    assert "::error file=app.cu,line=34,title=memlens%3A a failed gate rule::" in out
    assert "::warning file=app.cu,line=34,title=memlens%3A a line that got worse::" in out
    for name in ("gate.sarif", "lines.sarif"):
        assert_sarif(json.loads((tmp_path / name).read_text()))
    assert (tmp_path / "compare.md").read_text().startswith("## memlens compare: 2 lines changed (1 worse, 1 better)")
    assert "1 fail" in (tmp_path / "summary.md").read_text()


# --- --source-root is a folder (issue 46 (3)) ----------------------------------------------------------


@pytest.mark.parametrize("command", ["lines", "compare", "gate"])
@pytest.mark.parametrize(
    ("root", "message"),
    [
        ("/nonexistent", "--source-root /nonexistent: no such folder, and no finding's file lies under it"),
        (str(V1), f"--source-root {V1}: not a folder"),
        ("", "--source-root '': empty; name the folder the findings' paths are relative to"),
    ],
)
def test_a_source_root_that_is_no_folder_is_refused(capsys, tmp_path, command: str, root: str, message: str):
    """issue 46 (3): a missing folder, a file, an empty string all exited 0, every finding in one notice
    "(outside /nonexistent)"."""
    rules = tmp_path / "rules.toml"
    rules.write_text(LINE_RULE.replace('max_regression = "0%"', "max = 0"))
    argv = {
        "lines": ["lines", str(V1)],
        "compare": ["compare", str(V1), str(V2)],
        "gate": ["gate", str(V2), "--rules", str(rules)],
    }[command]
    one_line_exit_2(capsys, [*argv, "--source-root", root, "--format", "github"], message)


def test_a_source_root_of_another_machine_that_the_findings_lie_under_is_taken(capsys):
    """The folder a report was built in, on the GPU machine, is no folder here; its findings lie under it: taken."""
    assert not build_folder().exists()
    log = sarif(capsys, ["lines", str(V1), "--source-root", str(build_folder())])
    assert {uri for _, _, uri, _, _ in located(log)} == {"app.cu"}
