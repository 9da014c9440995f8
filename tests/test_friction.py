"""What a newcomer trips over: packaging warnings, the README's own-suite
example without CuPy, where the rules format is, and what `memlens doctor` says."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from memlens.cli import main

REPO = Path(__file__).resolve().parent.parent


# --- item 15: every importable folder of the packages is a listed package ---------------------------


def test_every_package_folder_is_listed_so_setuptools_does_not_warn() -> None:
    from memlens.gate.rules import tomllib  # tomli on Python 3.10

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    installed_as = {top: name for name, top in setuptools["package-dir"].items()}  # folder -> package
    for top in ("profiling", "reports", "kernels"):
        for folder in [REPO / top, *(p for p in (REPO / top).rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__":
                continue
            dotted = ".".join((installed_as[top], *folder.relative_to(REPO / top).parts))
            assert dotted in listed, f"{dotted}: setuptools warns 'absent from the packages configuration'"
    assert setuptools["package-data"]["memlens.reports.templates"] == ["*.j2"]


# --- item 16: the README's own-suite example without CuPy -------------------------------------------


def readme_suite(tmp_path: Path) -> Path:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# my_suite\.py.*?)```", readme, re.S)
    assert code, "the README's own-suite example"
    path = tmp_path / "my_suite.py"
    path.write_text(code.group(1), encoding="utf-8")
    return path


def test_the_readme_suite_without_cupy_says_how_to_install_it(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # as after `make test`: CuPy is an extra
    assert main(["list", str(readme_suite(tmp_path))]) == 3
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: suite file ") and err.count("\n") == 1
    assert "needs CuPy" in err and "pip install 'memlens[cuda13]'" in err


def test_a_suite_missing_another_module_is_still_a_suite_error(tmp_path, capsys) -> None:
    suite = tmp_path / "other.py"
    suite.write_text("import no_such_module_for_memlens\n", encoding="utf-8")
    assert main(["list", str(suite)]) == 2
    assert "ModuleNotFoundError: No module named 'no_such_module_for_memlens'" in capsys.readouterr().err


# --- item 17: the rules format is in `memlens gate --help` -----------------------------------------


def test_gate_help_prints_the_rules_format(capsys) -> None:
    try:
        main(["gate", "--help"])
    except SystemExit as exit_info:
        assert exit_info.code == 0
    out = capsys.readouterr().out
    assert "rules file format:" in out
    for key in ("[[rule]]", "select_regex", "max_regression", "equals = 0", "warn"):
        assert key in out, key
    assert "`memlens gate --help`" in (REPO / "README.md").read_text(encoding="utf-8")


# --- item 18: doctor ----------------------------------------------------------------------------------


def test_doctor_detail_and_fix_never_repeat(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["doctor", "--probe"]) == 3
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    by_check = {row[0]: row for row in rows if row[0]}
    for name, _status, detail, fix in by_check.values():
        for clause in filter(None, (c.strip() for c in re.split(r"[:;,]", fix))):
            assert clause not in detail, (name, clause)
    assert by_check["ncu"][2] == "ncu (Nsight Compute) not found"
    probe = by_check["profile probe"]
    assert "not run" in probe[2] and "ncu is missing" in probe[2] and "doctor --probe" in probe[3]


def test_doctor_counter_permission_warning_has_a_fix(monkeypatch) -> None:
    from memlens.commands import doctor

    monkeypatch.setattr(doctor, "Path", lambda _: REPO / "no" / "such" / "params")
    check = doctor.check_permission()
    assert not check.ok and not check.required
    assert check.fix and "install the NVIDIA driver" in check.fix
