"""profiling/model/kernel_names.py: long kernel names elided in the middle wherever a table shows them."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from tests.support.outputs import outputs, results_file

LONG_CPP = (
    "void transpose_kernel<float, 32, 32, cub::detail::very_long_policy_name<int, 4>, 0>"
    "(float *__restrict__, const float *__restrict__, int, int, int)"
)
HUGE = "void huge_kernel<" + ", ".join(f"T{i}" for i in range(1000)) + ">(int)"  # about 5,000 characters


def test_a_huge_kernel_name_is_elided_in_the_middle_in_terminal_tables(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    texts = outputs(capsys, tmp_path, results_file(tmp_path, HUGE))
    for kind in ("metrics", "gate"):  # a name filled 50 lines of the table
        rows = [line for line in texts[kind].splitlines() if line.startswith("│")]
        assert len(rows) <= 2, texts[kind]
    assert "void huge_kernel<" in texts["metrics"] and "…" in texts["metrics"]
    for kind in ("summary", "md"):
        rows = [line for line in texts[kind].splitlines() if "huge_kernel" in line and line.startswith("|")]
        assert rows and all(len(row) < 400 for row in rows), kind  # a table line, not 5,000 characters
    names = {case.get("name") for case in ElementTree.fromstring(texts["junit"].encode()).iter("testcase")}
    assert f"{HUGE} [duration]" in names  # machines get the whole name


@pytest.mark.parametrize("name", ["transpose_conflict", "void tr<0>(float *, const float *, int)"])
def test_short_names_are_shown_whole(name: str) -> None:
    from memlens.model.kernel_names import NAME_WIDTH, elide_middle

    assert elide_middle(name, NAME_WIDTH) == name


def test_long_cpp_names_are_elided_in_the_middle_never_cut_at_the_left() -> None:
    from memlens.model.kernel_names import elide_middle

    short = elide_middle(LONG_CPP, 60)
    assert len(short) <= 60 and short.startswith("void transpose_kernel<") and "…" in short
    assert elide_middle("void tr<1>(float *, const float *, int)", 20) == "void tr<1>(…)"  # arguments go first
    assert elide_middle("short", 20) == "short"
    huge = elide_middle("k" + "x" * 5000 + "_end", 100)
    assert len(huge) == 100 and huge.startswith("kxx") and huge.endswith("_end")


def test_short_kernel_keeps_a_name_inside_an_anonymous_namespace() -> None:
    from memlens.model.kernel_names import short_kernel

    name = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(T3 *, const T1 *, int)"
    # was "at::native::": the namespace's parenthesis read as the argument list
    assert short_kernel(name) == "at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"


def test_elide_lines_shortens_each_line_keeping_its_indent() -> None:
    from memlens.model.kernel_names import elide_lines

    cell = "transpose/tile64_swizzled\n  void transpose<float, 64, 64, 1>(float *, const float *)"
    assert elide_lines(cell, 40) == "transpose/tile64_swizzled\n  void transpose<float, 64, 64, 1>(…)"
    assert elide_lines(cell, 200) == cell
