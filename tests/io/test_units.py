"""profiling/io/units.py: unit conversion from ncu's unit strings, and the one formatter of figures."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlens.cli import main
from memlens.io.units import (
    UnitError,
    conversion_factor,
    counted,
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration,
    format_percent,
    significant,
    to_base,
)
from tests.support.outputs import results_file


@pytest.mark.parametrize(
    ("unit", "base", "factor"),
    [
        ("ns", "ns", 1.0),
        ("nsecond", "ns", 1.0),
        ("usecond", "ns", 1e3),
        ("msecond", "ns", 1e6),
        ("second", "ns", 1e9),
        ("byte", "byte", 1.0),
        ("Kbyte", "byte", 1e3),  # ncu's prefixes are decimal
        ("Mbyte", "byte", 1e6),
        ("Gbyte", "byte", 1e9),
        ("Kibyte", "byte", 1024.0),
        ("byte/block", "byte", 1.0),  # launch__shared_mem_per_block_static
        ("Kbyte/block", "byte", 1e3),
        ("byte/second", "byte/second", 1.0),
        ("Gbyte/second", "byte/second", 1e9),
        ("Tbyte/second", "byte/second", 1e12),
        ("Mbyte/usecond", "byte/second", 1e12),
        ("%", "%", 1.0),
        ("", "%", 1.0),
        ("register/thread", "register", 1.0),
        ("inst", "inst", 1.0),
        ("Kinst", "inst", 1e3),
        ("sector", "sector", 1.0),
        ("sectors", "wavefront", 1.0),  # ncu's unit for memory_l1_wavefronts_shared
        ("", "conflict", 1.0),  # ncu gives the bank-conflict counter no unit
    ],
)
def test_conversion_factor(unit: str, base: str, factor: float) -> None:
    assert conversion_factor(unit, base) == pytest.approx(factor)


@pytest.mark.parametrize(
    ("unit", "base"),
    [
        ("byte", "ns"),
        ("furlong", "ns"),
        ("%", "byte"),
        ("byte/second", "byte"),
        ("second", "byte/second"),
        ("byte", "byte/second"),
        ("ns", "%"),
        ("byte", "inst"),
        ("usecond", "sector"),
        ("%", "register"),
        ("Xbyte", "byte"),
    ],
)
def test_conversion_factor_refuses_other_dimensions(unit: str, base: str) -> None:
    with pytest.raises(UnitError):
        conversion_factor(unit, base)


def test_to_base() -> None:
    assert to_base(85.44, "usecond", "ns") == pytest.approx(85_440)
    assert to_base(4.224, "Kbyte/block", "byte") == pytest.approx(4224)


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (554_123.0, "0.554 ms"),
        (144_000.0, "0.144 ms"),
        (17_700_000.0, "17.7 ms"),
        (85_440.0, "85.4 µs"),
        (50_000.0, "50.0 µs"),
        (812.0, "0.812 µs"),  # the rule that makes 554 µs read "0.554 ms"
        (81.0, "81.0 ns"),
        (99_960.0, "100 µs"),  # rounding carries into a new digit
        (2.5e9, "2.50 s"),
        (1234e9, "1234 s"),
        (0.0, "0 ns"),
    ],
)
def test_format_duration(ns: float, text: str) -> None:
    assert format_duration(ns) == text


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0.0, "0 B"),
        (512.0, "512 B"),
        (4224.0, "4,224 B"),  # exact below 10,000 bytes (issue 33): "4,096 B" in metrics, report and gate alike
        (9999.0, "9,999 B"),
        (10_000.0, "10.0 KB"),
        (1_073_741_824.0, "1.07 GB"),
        (2.5e12, "2.50 TB"),
    ],
)
def test_format_bytes(count: float, text: str) -> None:
    assert format_bytes(count) == text


def test_format_bandwidth_count_percent() -> None:
    assert format_bandwidth(1.67e12) == "1.67 TB/s"
    assert format_bandwidth(969.9e9) == "970 GB/s"
    assert format_bandwidth(12.0) == "12.0 B/s"
    assert format_count(65_011_712.0) == "65,011,712"
    assert format_count(1.0416) == "1.04"
    assert format_percent(40.123) == "40.1%"
    assert format_percent(7.95) == "7.95%"


@given(st.floats(min_value=1e-6, max_value=1e15, allow_nan=False))
def test_significant_keeps_three_digits_and_never_uses_exponents(value: float) -> None:
    text = significant(value)
    assert "e" not in text
    digits = text.replace(".", "").lstrip("0")
    assert len(digits) >= 3 or float(text).is_integer()
    assert math.isclose(float(text), value, rel_tol=5e-3)


@given(st.floats(min_value=0, max_value=1e13, allow_nan=False))
def test_format_duration_always_reads_a_number_and_a_unit(ns: float) -> None:
    number, unit = format_duration(ns).split(" ")
    assert unit in {"ns", "µs", "ms", "s"}
    assert float(number) >= 0


def test_one_formatter_for_a_figure_in_the_gate_the_baseline_and_the_report(capsys, tmp_path) -> None:
    from memlens.gate import evaluate as gate
    from memlens.io import units
    from memlens.reports import formatting

    assert formatting.format_value is units.format_value and gate.format_value is units.format_value
    path = results_file(tmp_path, "k")
    base = tmp_path / "base.json"
    assert main(["baseline", "save", str(path), "-o", str(base)]) == 0
    assert main(["baseline", "show", str(base)]) == 0
    table = capsys.readouterr().out.splitlines()
    header = next(line for line in table if "duration" in line)
    row = next(line for line in table[table.index(header) + 1 :] if "µs" in line)
    # with its unit, as in the gate and the report, under its column
    assert row.index("1.00 µs") <= header.index("duration") + len("duration") and "1.00 µs" in row


def test_a_size_reads_the_same_in_metrics_and_the_report(monkeypatch, capsys) -> None:
    """issue 33 (10): static shared memory read "4.10 KB" in `metrics` and "4,096 B" in the report."""
    from memlens.cli import main
    from tests.conftest import FIXTURES

    run = str(FIXTURES / "nvidia_h200" / "suite.results.json")
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["metrics", run, "-k", "transpose/conflict$", "--wide"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "transpose/conflict" in line)
    assert "4,096 B" in row and "KB" not in row
    assert main(["report", run, "--format", "md", "-o", "-"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| **conflict** (baseline)"))
    assert row.endswith("| 4,096 B |")


def test_a_percentage_prints_no_digits_the_source_lacks() -> None:
    from memlens.io.units import format_percent

    assert format_percent(0.05) == "0.05%"
    assert format_percent(0.0545) == "0.0545%"
    assert format_percent(35.0) == "35%" and format_percent(40.123) == "40.1%"
    assert format_percent(35.0123) == "35.0%"  # a zero the value has stays


def test_a_figure_of_one_takes_the_singular_noun():
    assert counted("1", "sector") == "1 sector" and counted("4", "sector") == "4 sectors"
    assert counted("1.5", "sector") == "1.5 sectors" and counted("1.00", "sector") == "1.00 sectors"
    assert counted("1", "warp-level access", "warp-level accesses") == "1 warp-level access"
    assert counted("65,536", "execution") == "65,536 executions"
