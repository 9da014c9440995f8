"""profiling/suite.py: importing a suite file, and the errors a suite file's own imports give."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from memlens.cli import main
from tests.conftest import REPO


def readme_suite(tmp_path: Path) -> Path:
    readme = (REPO / "docs" / "own-kernels.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# my_suite\.py.*?)```", readme, re.S)
    assert code, "the own-suite example of docs/own-kernels.md"
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
