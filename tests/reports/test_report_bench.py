"""reports/ with `memlens bench` results: a run directory's bench.json as columns, charts and header lines."""

# The run directory holds the recorded H200 suite's results.json and a bench.json written as `memlens
# bench --into RUN` writes it. The family tables gain the bench median, bandwidth and % of copy bandwidth,
# each family a % of copy chart, the header the copy bandwidth; where the variants were compared with
# copies of their own bytes (bench.json schema 2), the header and each family say which copy; runs
# without bench.json render as before. CPU only.

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from memlens.bench.results import (
    BENCH_FILE,
    BenchFailure,
    BenchInfo,
    BenchResults,
    CopyBandwidth,
    TimeSummary,
    VariantTiming,
    load_bench,
)
from memlens.cli import main
from memlens.commands.report import bench_of
from memlens.output import render_report as render
from memlens.readers import read_report
from memlens.reports.build import build_report
from tests.support.json_file import write_json

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_h200" / "suite.results.json"
pytestmark = pytest.mark.skipif(not RECORDED.is_file(), reason="suite fixtures not recorded yet")

GIB = 1 << 30
COPY_MS = 0.56  # 2 GiB moved in 0.56 ms: 3834.76 GB/s
TRANSPOSE = {"rows": 8192, "cols": 8192}
RUNNING_MEAN = {"n": 1 << 24}
MATMUL = {"m": 2048, "k": 2048, "n": 2048}
# family -> (size, min_bytes, {variant: median ms}); min_bytes as the suite's families declare it
TIMED = {
    "transpose": (TRANSPOSE, 2 * 4 * 8192 * 8192, {"conflict": 0.3, "padded": 0.15, "swizzled": 0.16}),
    "running_mean": (RUNNING_MEAN, 4 * ((1 << 24) + 127) + 4 * (1 << 24), {"register": 0.12, "local": 0.48}),
    "matmul": (MATMUL, 4 * 3 * 2048 * 2048, {"naive": 17.5, "tiled_article": 8.4, "tiled": 2.2}),
}
WRONG = BenchFailure("matmul", "tiled_pmpp", "wrong", "index 3: got 1.0, expected 2.0")


def samples(median_ms: float) -> list[float]:
    """21 launch times spread ±1% around `median_ms`: p10 and p90 at ±0.8%."""
    return [median_ms * (1 + 0.001 * (i - 10)) for i in range(21)]


# family -> median ms of a copy of the family's min_bytes (half read, half written), 2 buffer pairs
SAME_BYTES_MS = {"transpose": 0.142, "running_mean": 0.036, "matmul": 0.0145}


def bench_results(
    gpu: str = "NVIDIA H200",
    timed: dict = TIMED,
    failures=(WRONG,),
    min_bytes: bool = True,
    same_bytes: dict | None = None,
):
    """Every variant compared with the one 1 GiB copy (as a schema 1 bench.json reads), or with
    `same_bytes`: a copy of its family's min_bytes, as `memlens bench` now times it."""
    copy = CopyBandwidth(GIB, TimeSummary.of(samples(COPY_MS)))

    def reference(family: str, nbytes: int | None) -> CopyBandwidth:
        if same_bytes is None or nbytes is None:
            return copy
        return CopyBandwidth(nbytes // 2, TimeSummary.of(samples(same_bytes[family])), input_sets=2)

    variants = tuple(
        VariantTiming.build(
            family,
            variant,
            size,
            nbytes if min_bytes else None,
            4,
            1 << 28,
            TimeSummary.of(samples(ms)),
            reference(family, nbytes),
        )
        for family, (size, nbytes, medians) in timed.items()
        for variant, ms in medians.items()
    )
    info = BenchInfo(gpu_name=gpu, l2_bytes=60 * (1 << 20), repeats=21, started_at="2026-11-22T10:00:00+00:00")
    return BenchResults(info, copy, variants, tuple(failures))


def make_run(directory: Path, bench: BenchResults | None = None) -> Path:
    """A run directory: the recorded results.json and, if given, bench.json as `memlens bench` writes it."""
    directory.mkdir(parents=True)
    shutil.copyfile(RECORDED, directory / "results.json")
    if bench is not None:
        write_json(directory / BENCH_FILE, bench.to_json())
    return directory


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path / "runs" / "20261122-100000-1", bench_results())


@pytest.fixture(scope="module")
def run_dir_html(tmp_path_factory) -> tuple[Path, str]:
    """A run directory as `run_dir` makes it, and the report.html `memlens report RUN` writes into it: rendered
    once for the tests that read it."""
    directory = make_run(tmp_path_factory.mktemp("html") / "runs" / "20261122-100000-1", bench_results())
    assert main(["report", str(directory)]) == 0
    return directory, (directory / "report.html").read_text(encoding="utf-8")


def report_of(*paths: Path):
    return build_report([(str(p), read_report(p)) for p in paths], [bench_of(p) for p in paths])


def rows_of(run) -> dict:
    return {row.label: row for row in run.variants}


def test_the_bench_json_is_the_one_the_bench_writes(run_dir):
    assert load_bench(run_dir) == bench_results()
    source, bench = bench_of(run_dir)
    assert source == str(run_dir / BENCH_FILE) and bench == bench_results()
    assert bench_of(run_dir / "results.json") == (source, bench)  # a results.json: its folder is the run


def test_family_tables_gain_the_bench_columns_after_the_time_group(run_dir):
    report = report_of(run_dir)
    run = report.runs[0]
    keys = [c.key for c in report.family_columns(run)]
    assert keys[:5] == ["duration", "speedup", "bench_median", "bench_bandwidth", "bench_pct_of_copy"]
    assert keys[5:] == [c.key for c in report.run_columns(run)[2:]]  # the n-ways of the kinds the run has
    assert [c.header for c in report.bench_columns] == ["bench median", "bench bandwidth", "% of copy bandwidth"]
    assert run.bench.copy_gb_per_s == pytest.approx(2 * GIB / COPY_MS / 1e6)
    assert run.bench.copy_text == "3.83 TB/s"


def test_column_values(run_dir):
    rows = rows_of(report_of(run_dir).runs[0])
    padded = rows["transpose/padded"]
    assert padded.cells["bench_median"].value == pytest.approx(0.15)
    assert padded.cells["bench_median"].text == "0.150 ms"
    assert padded.cells["bench_median"].exact == "median 0.15 ms; p10 0.149 ms, p90 0.151 ms over 21 launches"
    gb = 2 * 4 * 8192 * 8192 / 0.15 / 1e6  # 3579.1 GB/s
    assert padded.cells["bench_bandwidth"].value == pytest.approx(gb)
    assert padded.cells["bench_bandwidth"].unit == "GB/s" and padded.cells["bench_bandwidth"].text == "3.58 TB/s"
    pct = 100 * gb / (2 * GIB / COPY_MS / 1e6)  # 93.3%
    assert padded.cells["bench_pct_of_copy"].value == pytest.approx(pct)
    assert padded.cells["bench_pct_of_copy"].text == "93.3%"
    assert padded.bench.p10_ms == pytest.approx(0.15 * 0.992) and padded.bench.p90_ms == pytest.approx(0.15 * 1.008)
    assert padded.bench.launches == 21 and padded.bench.min_bytes == 2 * 4 * 8192 * 8192
    assert rows["transpose/conflict"].cells["bench_pct_of_copy"].text == "46.7%"
    assert rows["running_mean/register"].cells["bench_pct_of_copy"].text == "29.2%"
    assert rows["matmul/naive"].cells["bench_median"].text == "17.5 ms"
    assert rows["matmul/naive"].bench.pct_of_copy == pytest.approx(0.075)
    # the recording's roofline counters find matmul compute-bound: no % of copy bandwidth in its table
    naive_pct = rows["matmul/naive"].cells["bench_pct_of_copy"]
    assert (naive_pct.value, naive_pct.text) == (None, "n/a")
    assert naive_pct.missing_reason == (
        "compute-bound: judged by its roofline bound (the verdict), not by copy bandwidth"
    )
    # the ncu figures beside them are unchanged
    assert padded.cells["duration"].text == "0.147 ms" and padded.cells["speedup"].text == "2.08×"


def test_a_variant_the_bench_could_not_time_is_n_a_with_the_reason(run_dir, run_dir_html):
    run = report_of(run_dir).runs[0]
    pmpp = rows_of(run)["matmul/tiled_pmpp"]
    assert pmpp.valid and pmpp.bench is None
    for key in ("bench_median", "bench_bandwidth", "bench_pct_of_copy"):
        cell = pmpp.cells[key]
        assert cell.value is None and cell.text == "n/a"
        assert cell.missing_reason == "memlens bench: output wrong (index 3: got 1.0, expected 2.0)"
    assert "memlens bench did not time: matmul/tiled_pmpp: output wrong (index 3: got 1.0, expected 2.0)" in run.notes
    _, html = run_dir_html
    assert 'title="memlens bench: output wrong (index 3: got 1.0, expected 2.0)">n/a</td>' in html


def test_a_variant_missing_from_the_bench_and_a_family_without_min_bytes(tmp_path):
    timed = {**TIMED, "transpose": (TRANSPOSE, None, {"conflict": 0.3})}  # padded, swizzled not timed
    directory = make_run(tmp_path / "run", bench_results(timed=timed, failures=()))
    report = report_of(directory)
    rows = rows_of(report.runs[0])
    conflict, padded = rows["transpose/conflict"], rows["transpose/padded"]
    assert conflict.cells["bench_median"].text == "0.300 ms"
    assert conflict.cells["bench_bandwidth"].text == "n/a"
    assert conflict.cells["bench_pct_of_copy"].missing_reason == "the family declares no min_bytes: no bandwidth"
    assert padded.cells["bench_median"].missing_reason == "not timed by memlens bench (not in its bench.json)"
    html = render(report, "html")
    # 4 ncu charts, 4 roofline charts (the transposes' without points), 1 % of copy chart: none for transpose (no
    # variant has the figure), none for matmul (compute-bound), none for fp16_transpose (not in bench.json)
    assert html.count('<div class="wide"><svg') == 4 + 4 + 1
    assert (
        html.count("% of copy bandwidth (memlens bench; copy 3.83 TB/s)") == 2 * 1
    )  # a chart drawn for a screen and for a phone


def test_html_has_the_column_the_chart_and_the_copy_bandwidth(run_dir_html):
    run_dir, html = run_dir_html
    # per family (fp16_transpose, matmul, running_mean, transpose) the ncu chart; the % of copy chart but for
    # compute-bound matmul and fp16_transpose (not timed); roofline charts of every family (the transposes' without
    # points: no floating-point work)
    assert html.count('<div class="wide"><svg') == 4 + 2 + 4
    assert (
        html.count("% of copy bandwidth (memlens bench; copy 3.83 TB/s)") == 2 * 2
    )  # each chart drawn for a screen and for a phone
    charts = re.findall(r'<div class="chart bench-chart"><div class="wide">(.*?)</div>', html, re.S)
    assert len(charts) == 2 and all(c.lstrip().startswith("<svg") for c in charts)
    transpose = charts[1]  # running_mean, transpose: the order of results.json
    assert ">padded<" in transpose and "93.3%" in transpose and "(3.58 TB/s, median 0.150 ms)" in transpose
    # the column's header in each of the 4 family tables
    assert html.count('<span class="nw">%</span> <span class="nw">of</span> <span class="nw">copy</span>') == 4
    spread = "median 0.15 ms; p10 0.149 ms, p90 0.151 ms over 21 launches"
    assert f'<td class="num bench" title="{spread}">0.150 ms</td>' in html
    copy_hover = "of a device-to-device copy of 2.15 GB (the bench&#39;s copy): 3.83 TB/s, median 0.560 ms"
    assert f'<td class="num bench" title="{copy_hover}">93.3%</td>' in html
    assert "bench-copy" not in html and "copy, same bytes" not in html  # one copy for every variant: said once
    assert "<dt>copy bandwidth</dt><dd>3.83 TB/s (memlens bench: device-to-device copy of 1.07 GB," in html
    assert f"<dt>bench</dt><dd>{run_dir / BENCH_FILE} · NVIDIA H200 · 2026-11-22T10:00:00+00:00" in html
    assert "http" not in html and "<script" not in html and "<link" not in html  # self-contained
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))


def test_each_family_says_the_copy_of_its_bytes_its_percentages_are_of(tmp_path, capsys):
    """bench.json schema 2: each variant compared with a copy of its family's min_bytes, timed the same way."""
    directory = make_run(tmp_path / "run", bench_results(same_bytes=SAME_BYTES_MS))
    report = report_of(directory)
    run = report.runs[0]
    rows = rows_of(run)
    padded = rows["transpose/padded"]
    copy_gb = 2 * 4 * 8192 * 8192 / 0.142 / 1e6  # 3780.8 GB/s: the same 537 MB, not the 1 GiB copy's 3834.8
    assert padded.cells["bench_pct_of_copy"].value == pytest.approx(100 * (2 * 4 * 8192 * 8192 / 0.15 / 1e6) / copy_gb)
    assert padded.cells["bench_pct_of_copy"].text == "94.7%"
    assert padded.cells["bench_pct_of_copy"].exact == (
        "of a device-to-device copy of 537 MB (the variant's min_bytes, half read, half written): 3.78 TB/s,"
        " median 0.142 ms"
    )
    assert (padded.bench.copy_bytes, padded.bench.copy_median_ms) == (2 * 4 * 8192 * 8192, pytest.approx(0.142))
    assert padded.bench.copy_gb_per_s == pytest.approx(copy_gb)
    assert rows["matmul/naive"].bench.copy_bytes == 4 * 3 * 2048 * 2048
    # the header keeps the GPU's copy over 1 GiB and lists the copy of each family's bytes
    header = {item.label: item.text for item in run.header}
    assert header["copy bandwidth"].startswith("3.83 TB/s (memlens bench: device-to-device copy of 1.07 GB,")
    assert header["copy, same bytes"] == (
        "each variant's % of copy bandwidth is of a device-to-device copy of its family's min_bytes"
        " (half read, half written), timed the same way: transpose 3.78 TB/s over 537 MB"
        " · running_mean 3.73 TB/s over 134 MB · matmul 3.47 TB/s over 50.3 MB"
    )
    assert [item.label for item in run.header][-3:] == ["copy bandwidth", "copy, same bytes", "bench"]
    families = {f.name: f.bench_copy for f in run.families}
    assert families["transpose"] == (
        "% of copy bandwidth: of a device-to-device copy of 537 MB, the variants' min_bytes (half read, half written),"
        " timed the same way: 3.78 TB/s, median 0.142 ms over 21 launches"
    )
    assert "of 50.3 MB" in families["matmul"] and "median 14.5 µs" in families["matmul"]
    assert run.bench.copy_gb_per_s == pytest.approx(2 * GIB / COPY_MS / 1e6)  # the summary: still the GPU's copy
    assert run.bench.copy_text == "of the same bytes as the variants"  # the charts' copy: there are several
    html = render(report, "html")
    assert html.count('<p class="subtitle bench-copy">% of copy bandwidth: of a device-to-device copy of ') == 3
    assert "median 0.142 ms over 21 launches</p>" in html
    # not matmul; each chart drawn for a screen and for a phone
    assert html.count("% of copy bandwidth (memlens bench; copy of the same bytes as the variants)") == 2 * 2
    md = render(report, "md")
    assert "\n\n% of copy bandwidth: of a device-to-device copy of 537 MB, the variants' min\\_bytes" in md
    assert "| **padded** | ok | 0.147 ms | 2.08× | 0.150 ms | 3.58 TB/s | 94.7% | " in md
    assert "| copy, same bytes | each variant's % of copy bandwidth is of a device-to-device copy" in md
    assert main(["report", str(directory), "--format", "json", "-o", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    transpose = next(f for f in data["runs"][0]["families"] if f["name"] == "transpose")
    assert transpose["bench_copy"] == families["transpose"]
    recorded = next(v for v in transpose["variants"] if v["name"] == "padded")["bench"]
    assert recorded["copy_bytes"] == 2 * 4 * 8192 * 8192 and recorded["copy_gb_per_s"] == pytest.approx(copy_gb)


def test_one_family_one_copy_of_its_bytes_is_the_charts_copy(tmp_path):
    timed = {"transpose": TIMED["transpose"]}
    directory = make_run(tmp_path / "run", bench_results(timed=timed, failures=(), same_bytes=SAME_BYTES_MS))
    report = report_of(directory)
    assert report.runs[0].bench.copy_text == "3.78 TB/s over 537 MB"
    assert "% of copy bandwidth (memlens bench; copy 3.78 TB/s over 537 MB)" in render(report, "html")


def test_a_results_json_reads_the_bench_json_beside_it(run_dir, capsys):
    assert main(["report", str(run_dir / "results.json"), "--format", "md", "-o", "-"]) == 0
    assert "| copy bandwidth | 3.83 TB/s (memlens bench:" in capsys.readouterr().out


def test_markdown(run_dir, capsys):
    assert main(["report", str(run_dir), "--format", "md", "-o", "-"]) == 0
    md = capsys.readouterr().out
    header = "| variant | status | duration | speedup | bench median | bench bandwidth | % of copy bandwidth |"
    assert md.count(header) == 4  # every family of the run; fp16_transpose's bench cells n/a (not timed)
    assert "| **dense** (baseline) | ok | 80.1 µs | 1.00× | n/a | n/a | n/a | " in md
    assert "| **padded** | ok | 0.147 ms | 2.08× | 0.150 ms | 3.58 TB/s | 93.3% | " in md
    assert "| **tiled\\_pmpp** | ok | 2.10 ms | 8.40× | n/a | n/a | n/a | " in md
    assert "| copy bandwidth | 3.83 TB/s (memlens bench: device-to-device copy of 1.07 GB, read plus written," in md
    assert "> ⚠️ memlens bench did not time: matmul/tiled\\_pmpp: output wrong" in md


def test_json(run_dir, capsys):
    assert main(["report", str(run_dir), "--format", "json", "-o", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["key"] for c in data["bench_columns"]] == ["bench_median", "bench_bandwidth", "bench_pct_of_copy"]
    run = data["runs"][0]
    assert run["bench"]["source"] == str(run_dir / BENCH_FILE)
    assert run["bench"]["copy_gb_per_s"] == pytest.approx(3834.79, abs=0.01)
    assert run["bench"]["copy_buffer_bytes"] == GIB and run["bench"]["gpu_name"] == "NVIDIA H200"
    assert run["header"][-2]["label"] == "copy bandwidth" and run["header"][-2]["text"].startswith("3.83 TB/s")
    transpose = next(f for f in run["families"] if f["name"] == "transpose")
    padded = next(v for v in transpose["variants"] if v["name"] == "padded")
    assert padded["cells"]["bench_pct_of_copy"]["value"] == pytest.approx(93.33, abs=0.01)
    assert padded["cells"]["bench_pct_of_copy"]["unit"] == "%"
    assert padded["cells"]["bench_median"]["value"] == pytest.approx(0.15)
    assert padded["bench"]["p90_ms"] == pytest.approx(0.1512)


def test_a_run_without_bench_json_renders_as_before(tmp_path, capsys):
    directory = make_run(tmp_path / "plain")
    assert bench_of(directory) is None
    report = report_of(directory)
    run = report.runs[0]
    assert run.bench is None and report.family_columns(run) == report.run_columns(run)
    assert all(not key.startswith("bench") for row in run.variants for key in row.cells)
    assert all(item.label not in ("copy bandwidth", "bench") for item in run.header)
    assert report_of(directory) == build_report([(str(directory), read_report(directory))])
    html = render(report, "html")
    for absent in ("memlens bench", "bench median", "bench-chart", "num bench"):
        assert absent not in html
    # only the roofline's note on compute-bound matmul names copy bandwidth
    assert html.count("% of copy") == html.count("copy bandwidth") == html.count("not by % of copy bandwidth") == 1
    # the ncu charts and the roofline charts of 4 families (the transposes' without points)
    assert html.count('<div class="wide"><svg') == 4 + 4
    md = render(report, "md")
    assert "bench median" not in md and md.count("copy bandwidth") == md.count("not by % of copy bandwidth") == 1
    assert "| variant | status | duration | speedup | bandwidth |" in md
    data = json.loads(render(report, "json"))
    assert data["runs"][0]["bench"] is None


def test_comparison_adds_the_bench_median_when_both_runs_have_it(tmp_path):
    faster = {**TIMED, "transpose": (TRANSPOSE, 2 * 4 * 8192 * 8192, {"conflict": 0.2, "padded": 0.15})}
    first = make_run(tmp_path / "a", bench_results())
    second = make_run(tmp_path / "b", bench_results(timed=faster))
    report = report_of(first, second)
    by_label = {c.label: c for c in report.comparisons}
    median = {m.key: m for m in by_label["transpose/conflict"].metrics}["bench_median"]
    assert median.header == "bench median" and median.better == "lower"
    assert [c.text for c in median.cells] == ["0.300 ms", "0.200 ms"]
    assert (median.cells[1].change_text, median.cells[1].direction) == ("−33.3%", "better")
    swizzled = {m.key: m for m in by_label["transpose/swizzled"].metrics}["bench_median"]
    assert [c.text for c in swizzled.cells] == ["0.160 ms", "n/a"] and swizzled.cells[1].direction == "n/a"
    same = {m.key: m for m in by_label["transpose/padded"].metrics}["bench_median"]
    assert same.cells[1].direction == "same"
    md = render(report, "md")
    assert "| bench median |" in md and "0.300 ms → 0.200 ms (🟢 −33.3%)" in md
    html = render(report, "html")
    assert "0.300 ms → 0.200 ms" not in html  # HTML: one cell per run
    # both runs' bench p10-p90 spread 1.6% (samples ±1%): the band is their mean
    assert '<td class="num">0.200 ms <span class="better" title="noise ±1.6% (bench)">−33.3%</span></td>' in html
    without = report_of(first, make_run(tmp_path / "c"))
    assert all(m.key != "bench_median" for c in without.comparisons for m in c.metrics)


def test_a_bench_of_another_gpu_is_noted(tmp_path):
    directory = make_run(tmp_path / "run", bench_results(gpu="NVIDIA H100 80GB HBM3"))
    notes = report_of(directory).runs[0].notes
    assert any(n.startswith("the bench was timed on NVIDIA H100 80GB HBM3, the profile on NVIDIA H200") for n in notes)


def test_bench_text_is_escaped_in_html_and_markdown(tmp_path):
    hostile = BenchFailure("matmul", "tiled_pmpp", "failed", '<img src=x onerror="alert(1)"> | `x` **y**')
    directory = make_run(tmp_path / "run", bench_results(gpu="<b>GPU</b>", failures=(hostile,)))
    report = report_of(directory)
    html = render(report, "html")
    assert "<img" not in html and "<b>GPU" not in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html and "&lt;b&gt;GPU&lt;/b&gt;" in html
    md = render(report, "md")
    assert "<img" not in md and '&lt;img src=x onerror="alert(1)"&gt; \\| \\`x\\` \\*\\*y\\*\\*' in md


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "invalid JSON at line 1 column 2"),
        ('{"format": "memlens-report"}', "a JSON report (`memlens report --format json`), not a memlens bench file"),
        (None, "malformed bench results (KeyError: 'copy')"),
    ],
)
@pytest.mark.parametrize("target", ["directory", "results.json"])
def test_a_damaged_bench_json_exits_2_with_one_line_naming_the_file(run_dir, capsys, content, message, target):
    bench = run_dir / BENCH_FILE
    if content is None:
        data = json.loads(bench.read_text(encoding="utf-8"))
        del data["copy"]
        content = json.dumps(data)
    bench.write_text(content, encoding="utf-8")
    argument = run_dir if target == "directory" else run_dir / "results.json"
    assert main(["report", str(argument)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlens: error: {bench}: ") and message in err and err.count("\n") == 1
    assert not (run_dir / "report.html").exists()
