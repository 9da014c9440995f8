"""Every command's messages: the path the user gave, the compiler's own rejection, "no run yet", counts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.errors import EXIT_INPUT, EXIT_PROFILER
from memlens.io.units import plural, shown_list
from memlens.model.run_layout import NO_RUN_YET
from memlens.readers import read_report
from memlens.static.check import CompileFailure, StaticResults, arch_rejection, compiler_missing

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "fixtures" / "nvidia_h200" / "suite.results.json"  # made from a profile.ncu-rep
RULES = 'version = 1\n[[rule]]\nname = "{name}"\nselect = "{select}"\nmetric = "duration"\nmin = 0\n'


def one_line(capsys, argv: list[str], code: int = EXIT_INPUT) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: ") and err.count("\n") == 1, err
    return err.removeprefix("memlens: error: ").removesuffix("\n")


# --- the path the user gave ------------------------------------------------------------------------


@pytest.fixture
def wrong_kinds(tmp_path: Path) -> dict[str, Path]:
    """A file of each kind memlens writes that is not a run's results, and a JSON memlens did not write."""
    check = RUN.with_name("check.json")
    baseline, gate = tmp_path / "baseline.json", tmp_path / "gate.json"
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(name="any", select="*"), encoding="utf-8")
    assert main(["baseline", "save", str(RUN), "-o", str(baseline)]) == 0
    assert main(["gate", str(RUN), "--rules", str(rules), "--json", str(gate)]) == 0
    (tmp_path / "empty.json").write_text("{}", encoding="utf-8")
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    return {
        "check": check,
        "baseline": baseline,
        "gate": gate,
        "empty": tmp_path / "empty.json",
        "list": tmp_path / "list.json",
    }


WHAT = {
    "check": "a `memlens check` file (the static check of a build)",
    "baseline": "a baseline (`memlens baseline save`)",
    "gate": "the verdicts of `memlens gate --json`",
    "empty": 'a JSON object memlens did not write (no "kind", "format" or "schema_version")',
    "list": 'a JSON array memlens did not write (no "kind", "format" or "schema_version")',
}


@pytest.mark.parametrize("kind", list(WHAT))
@pytest.mark.parametrize("command", ["metrics", "lines", "report", "compare"])
def test_a_wrong_kind_of_json_is_named_with_what_the_command_wanted(
    capsys, wrong_kinds, kind: str, command: str
) -> None:
    """issue 33 (5): `metrics check.json` said "malformed results (info must be an object, not None)"."""
    path = wrong_kinds[kind]
    argv = [command, str(RUN), str(path)] if command == "compare" else [command, str(path)]
    capsys.readouterr()
    assert one_line(capsys, argv) == (
        f"{path}: {WHAT[kind]}, not a run's results: a run directory, results.json, .ncu-rep or ncu CSV"
    )


def test_a_wrong_kind_of_json_through_the_api_and_as_a_baseline(capsys, wrong_kinds) -> None:
    import memlens
    from memlens.errors import InputError

    with pytest.raises(InputError, match="a `memlens check` file .*, not a run's results"):
        memlens.load(wrong_kinds["check"])
    rules = wrong_kinds["gate"].with_name("rules.toml")
    for given, what in [(RUN, "a run's results (results.json)"), (wrong_kinds["check"], WHAT["check"])]:
        assert one_line(capsys, ["gate", str(RUN), "--rules", str(rules), "--baseline", str(given)]) == (
            f"{given}: {what}, not a memlens baseline (write one with `memlens baseline save RUN -o FILE`)"
        )


def test_metrics_k_names_the_file_given_not_the_report_it_came_from(capsys) -> None:
    assert one_line(capsys, ["metrics", str(RUN), "-k", "nomatch"]) == f"no kernel in {RUN} matches -k 'nomatch'"


def test_the_gate_names_the_file_given_in_every_output(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    rules = tmp_path / "r.toml"
    rules.write_text(RULES.format(name="all", select="*"), encoding="utf-8")
    summary, verdicts = tmp_path / "g.md", tmp_path / "g.json"
    assert main(["gate", str(RUN), "--rules", str(rules), "--summary", str(summary), "--json", str(verdicts)]) == 0
    out = capsys.readouterr().out
    # the table's title folds to the table's width, inside a path too where the paths are long (a checkout's
    # or a pytest-xdist worker's tmp_path): compared without the whitespace
    title = "".join(f"memlens gate: {rules} on {RUN}".split())
    assert title in "".join(out.split()) and "profile.ncu-rep" not in out
    assert f"on profile results `{RUN}`" in summary.read_text(encoding="utf-8")
    assert json.loads(verdicts.read_text(encoding="utf-8"))["source"] == str(RUN)


def test_a_gated_static_check_is_named_by_its_file(capsys, tmp_path: Path) -> None:
    check = REPO / "tests" / "fixtures" / "nvidia_h200" / "check.json"
    rules = tmp_path / "r.toml"
    rules.write_text(RULES.format(name="all", select="*").replace("duration", "static.registers"), encoding="utf-8")
    verdicts = tmp_path / "g.json"
    main(["gate", str(check), "--rules", str(rules), "--json", str(verdicts)])
    assert json.loads(verdicts.read_text(encoding="utf-8"))["source"] == str(check)


# --- no run yet, said one way -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["metrics"],
        ["metrics", "runs/latest"],
        ["report", "runs/latest"],
        ["gate", "runs/latest", "--rules", "{rules}"],
        ["lines", "runs/latest"],
        ["baseline", "save", "runs/latest", "-o", "b.json"],
        ["check", "--into", "runs/latest"],
        ["bench", "--into", "runs/latest"],
        ["report", "./runs/latest"],
    ],
)
def test_no_run_yet_is_said_the_same_way_by_every_command(capsys, tmp_path: Path, monkeypatch, argv) -> None:
    monkeypatch.chdir(tmp_path)
    Path("r.toml").write_text(RULES.format(name="all", select="*"), encoding="utf-8")
    assert one_line(capsys, [a.format(rules="r.toml") for a in argv]) == NO_RUN_YET
    assert NO_RUN_YET.startswith("runs/latest: no run yet; run `memlens profile`")


def test_a_latest_link_to_a_deleted_run_says_so(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("runs").mkdir()
    Path("runs/latest").symlink_to("20260101-000000-1")
    assert (
        one_line(capsys, ["report", "runs/latest"]) == "runs/latest: symbolic link to a missing file "
        "(20260101-000000-1)"
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_report_without_a_run_says_no_run_yet(tmp_path: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(REPO)}  # `python -m memlens` from a folder with no run
    done = subprocess.run(
        ["make", "-s", "-f", str(REPO / "Makefile"), "report", f"PYTHON={sys.executable}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert done.returncode != 0
    assert f"memlens: error: {NO_RUN_YET}\n" in done.stderr and "no such file or directory" not in done.stderr


# --- memlens check --arch -----------------------------------------------------------------------------

REJECTIONS = {
    "nvcc": "nvcc failed on kernels/transpose.cu (exit 1): nvcc fatal   : Unsupported gpu architecture 'sm_1000'",
    "ptxas": "ptxas (/usr/local/bin/ptxas) failed (exit 255): ptxas fatal   : Value 'sm_1000' is not defined for "
    "option 'gpu-name'",
    "nvrtc": "NVRTC failed on kernels/transpose.cu: nvrtc: error: invalid value for --gpu-architecture (-arch)",
}  # as each compiler words it (recorded from CUDA 13.0's nvcc, ptxas and NVRTC)


def failing(monkeypatch, *messages: str, compiled: int = 0) -> None:
    from memlens.commands import check
    from memlens.static.check import StaticKernel

    kernel = StaticKernel("transpose", "padded", "k", "k", "cuda", 28, 0, 0, 0, 0, 0, False)
    failures = tuple(CompileFailure(f"f/v{i}", "k", m) for i, m in enumerate(messages))
    results = StaticResults("sm_1000", "nvcc", "kernels", (kernel,) * compiled, failures)
    monkeypatch.setattr(check, "check_suite", lambda *a: results)


@pytest.mark.parametrize("compiler", sorted(REJECTIONS))
def test_an_architecture_every_compiler_rejects_is_one_line_quoting_it(capsys, monkeypatch, compiler: str) -> None:
    failing(monkeypatch, REJECTIONS[compiler], REJECTIONS[compiler])
    message = one_line(capsys, ["check", "kernels", "--arch", "sm_1000"])
    assert message == f"--arch sm_1000: the compiler rejects it ({REJECTIONS[compiler]})"
    assert "compiler is missing" not in message


def test_an_architecture_some_kernels_compile_for_quotes_the_rejection(capsys, monkeypatch) -> None:
    failing(monkeypatch, REJECTIONS["ptxas"], compiled=1)
    assert main(["check", "kernels", "-k", "^transpose/(padded|conflict)$", "--arch", "sm_1000"]) == EXIT_PROFILER
    last = capsys.readouterr().err.splitlines()[-1]
    assert (
        last == f"memlens: error: 1 of 2 kernels did not compile (--arch sm_1000: the compiler rejects it: "
        f"{REJECTIONS['ptxas']})"
    )


def test_a_missing_compiler_is_named_only_when_one_is_missing() -> None:
    def said(message: str) -> list[CompileFailure]:
        return [CompileFailure("f/v", "k", message)]

    assert compiler_missing(said("ptxas not found: pip install nvidia-cuda-nvcc-cu12, or install a CUDA toolkit"))
    assert compiler_missing(said("numba.cuda.compile_ptx failed: NvvmSupportError: libNVVM cannot be found"))
    assert compiler_missing(said("NVRTC not available: pip install cuda-bindings nvidia-cuda-nvrtc-cu12"))
    for message in (*REJECTIONS.values(), "nvcc failed on k.cu (exit 1): k.cu(1): error: identifier undefined"):
        assert not compiler_missing(said(message)), message
    assert arch_rejection(said(REJECTIONS["nvcc"])) == REJECTIONS["nvcc"]
    assert arch_rejection(said('nvcc failed on k.cu (exit 1): error: identifier "x" is undefined')) is None


def test_a_real_compiler_rejecting_an_architecture_is_quoted(capsys) -> None:
    from memlens.static import toolchain

    if toolchain.find_nvcc() is None and toolchain.nvrtc_version() is None:
        pytest.skip("no nvcc and no NVRTC here")
    message = one_line(capsys, ["check", str(REPO / "kernels"), "-k", "^transpose/padded$", "--arch", "sm_1000"])
    assert message.startswith("--arch sm_1000: the compiler rejects it (")
    assert "Unsupported gpu architecture 'sm_1000'" in message or "invalid value for --gpu-architecture" in message


# --- a suite that exits while being imported -----------------------------------------------------------


@pytest.mark.parametrize(
    "code, shown",
    [("sys.exit(3)", "sys.exit(3)"), ("sys.exit()", "sys.exit(None)"), ("raise SystemExit('bye')", "sys.exit('bye')")],
)
def test_a_suite_that_exits_on_import_is_a_one_line_suite_error(capsys, tmp_path: Path, code: str, shown: str) -> None:
    suite = tmp_path / "exits.py"
    suite.write_text(f"import sys\n{code}\n", encoding="utf-8")
    for command in ("list", "check"):
        assert one_line(capsys, [command, str(suite)]) == f"suite file {suite} called {shown} while being imported"


# --- counts and lists ------------------------------------------------------------------------------------


def test_counts_are_grammatical_and_lists_say_what_is_left() -> None:
    assert [plural(n, "check") for n in (0, 1, 2, 1024)] == ["0 checks", "1 check", "2 checks", "1,024 checks"]
    assert plural(1, "more line") == "1 more line" and plural(3, "more line") == "3 more lines"
    assert shown_list(["a", "b", "c"], 2) == "a, b and 1 more" and shown_list(["a", "b"], 2) == "a, b"
    assert shown_list([], 8) == "none"


def test_a_rule_selecting_nothing_says_how_many_labels_it_left_out(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    rules = tmp_path / "r.toml"
    rules.write_text(RULES.format(name="none", select="nothing*"), encoding="utf-8")
    verdicts = tmp_path / "g.json"
    assert main(["gate", str(RUN), "--rules", str(rules), "--json", str(verdicts)]) == 1
    message = json.loads(verdicts.read_text(encoding="utf-8"))["verdicts"][-1]["message"]
    labels = sorted({k.label for k in read_report(RUN).kernels})
    assert message == f"selects no kernel (nothing*); labels in the run: {', '.join(labels[:8])} and 11 more"
    assert len(labels) == 19 and "FAILED: 1 check (1 fail)" in capsys.readouterr().out  # 19 variants recorded
    assert labels[:5] == [f"fp16_transpose/{v}" for v in ("dense", "padded", "pitch128", "xor_128b", "xor_row")]
