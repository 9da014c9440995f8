"""Sweeps (`--sweep FAMILY.NAME=V1,V2,...`): checked before ncu starts, each value of a swept family
run in its own NVTX range "family.variant@NAME=VALUE", read back as its own kernel label with the
size recorded, and reported against size and on the roofline. CPU only: the CPU suite, a fake ncu,
and results built here from a recorded fixture's kernels (relabelled; their numbers as recorded)."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.collect.profile_run import Events, ProfileOptions, app_argv
from memlens.errors import ConfigError
from memlens.model.nvtx_names import parse_swept, swept_name
from memlens.model.results import KernelResult, RunResults, load_results
from memlens.output import render_report as render
from memlens.readers.metric_values import suite_range, with_label
from memlens.readers.ncu_csv import _nvtx_ranges
from memlens.reports.build import build_report, build_run
from memlens.selection import parse_sweeps, select_variants
from tests.conftest import FIXTURES, REPO
from tests.support.fake import CPU_SUITE, install_fake_ncu

FULL = FIXTURES / "nvidia_h100_80gb_hbm3" / "suite_full_small.results.json"


# --- the option: parsed and checked before anything runs ---------------------------------------------


def test_sweep_items_parse_into_family_size_and_values():
    (sweep,) = parse_sweeps(["transpose.m=16,32,64"])
    assert (sweep.family, sweep.name, sweep.values) == ("transpose", "m", (16, 32, 64))
    assert parse_sweeps([]) == ()


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("m=16,32", "bad --sweep 'm=16,32': expected FAMILY.NAME=V1,V2,..."),
        ("transpose.m", "bad --sweep 'transpose.m': expected FAMILY.NAME="),
        ("transpose.m=", "(not a positive integer: '')"),
        ("transpose.m=16,,32", "(not a positive integer: '')"),
        ("transpose.m=16,big", "(not a positive integer: 'big')"),
        ("transpose.m=0,16", "(not a positive integer: '0')"),
        ("transpose.m=-16", "(not a positive integer: '-16')"),
        ("transpose.m=16,16", "bad --sweep 'transpose.m=16,16': a value is given twice"),
    ],
)
def test_malformed_sweeps_are_refused(item, message):
    with pytest.raises(ConfigError) as caught:
        parse_sweeps([item])
    assert message in str(caught.value)


def test_one_sweep_per_family():
    with pytest.raises(ConfigError, match="one --sweep per family"):
        parse_sweeps(["transpose.m=16,32", "transpose.n=8,16"])


@pytest.mark.parametrize(
    ("suite", "item", "message"),
    [
        (CPU_SUITE, "matmul.n=16,32", "--sweep matmul.n=16,32: no selected family 'matmul' (families: transpose, "),
        (CPU_SUITE, "transpose.rows=16", "--sweep transpose.rows=16: family transpose has no size 'rows' (sizes: m,"),
        (
            REPO / "kernels",
            "transpose.rows=1024,3000000",
            "--sweep transpose.rows=1024,3000000: transpose refuses rows=3000000: transpose: sizes (24576000000,)",
        ),
    ],
)
def test_sweeps_the_selection_cannot_run_are_refused(suite, item, message):
    with pytest.raises(ConfigError) as caught:
        select_variants(suite, None, (), [item])
    assert message in str(caught.value)


def test_a_swept_family_runs_value_by_value_each_variant_its_own_case():
    selection = select_variants(
        CPU_SUITE, "transpose/(conflict|padded)|running_mean/local", ["n=40"], ["transpose.m=16,32"]
    )
    cases = selection.cases()
    assert [c.label for c in cases] == [
        "transpose/conflict@m=16",
        "transpose/padded@m=16",
        "transpose/conflict@m=32",
        "transpose/padded@m=32",
        "running_mean/local",
    ]
    assert [c.range_name for c in cases[:2]] == ["transpose.conflict@m=16", "transpose.padded@m=16"]
    assert cases[2].size(selection.sizes) == {"m": 32, "n": 40}  # the sweep's value, the --size override
    assert cases[4].size(selection.sizes) == {"n": 40}
    assert parse_swept("conflict@m=16") == ("conflict", "m", 16) == parse_swept(swept_name("conflict", "m", 16))
    assert parse_swept("conflict") is None


@pytest.mark.parametrize(
    ("command", "item", "message"),
    [
        ("profile", "transpose.m=16,x", "bad --sweep 'transpose.m=16,x'"),
        ("profile", "nothing.m=16", "--sweep nothing.m=16: no selected family 'nothing'"),
        ("profile", "transpose.q=16", "family transpose has no size 'q' (sizes: m, n)"),
        ("bench", "transpose.m=", "bad --sweep 'transpose.m='"),
        ("bench", "transpose.q=16", "family transpose has no size 'q'"),
    ],
)
def test_a_bad_sweep_is_one_line_exit_2_before_ncu_starts(tmp_path, monkeypatch, capsys, command, item, message):
    record = tmp_path / "ncu-calls.jsonl"
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_RECORD=str(record))
    extra = ["--clock-control", "none"] if command == "profile" else ["--repeats", "20"]
    assert main([command, str(CPU_SUITE), "--out", str(tmp_path / "runs"), "--sweep", item, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not record.exists()  # ncu never ran
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []


# --- the profiled program: its command line, ranges and events --------------------------------------


def test_app_argv_passes_the_sweeps_on():
    options = ProfileOptions(sizes=("n=40",), sweeps=("transpose.m=16,32",), small=True)
    argv = app_argv(CPU_SUITE, options, Path("events.jsonl"))
    assert argv[argv.index("--sweep") + 1] == "transpose.m=16,32"
    assert argv[argv.index("--size") + 1] == "n=40"
    assert argv[-3:] == ["--small", "--seed", "0"]
    assert "--sweep" not in app_argv(CPU_SUITE, ProfileOptions(), Path("events.jsonl"))  # as before sweeps


def test_the_profiled_program_runs_each_value_in_its_own_range(tmp_path, monkeypatch):
    import nvtx

    from memlens.collect.profiled_program import main as app_main

    opened: list[tuple[str, str]] = []
    real = nvtx.annotate

    def annotate(message, domain):
        opened.append((domain, message))
        return real(message, domain=domain)

    monkeypatch.setattr(nvtx, "annotate", annotate)
    events = tmp_path / "events.jsonl"
    argv = [
        "--suite",
        str(CPU_SUITE),
        "--events",
        str(events),
        "-k",
        "^transpose/(conflict|padded)$",
        "--sweep",
        "transpose.m=16,32",
    ]
    assert app_main(argv) == 0
    assert opened == [
        ("memlens", "transpose.conflict@m=16"),
        ("memlens", "transpose.padded@m=16"),
        ("memlens", "transpose.conflict@m=32"),
        ("memlens", "transpose.padded@m=32"),
    ]
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert lines[0]["variants"] == [
        "transpose/conflict@m=16",
        "transpose/padded@m=16",
        "transpose/conflict@m=32",
        "transpose/padded@m=32",
    ]
    done = [(e["variant"], e["status"], e["size"]) for e in lines if e["event"] == "done"]
    assert done == [(f"transpose/{v}@m={m}", "ok", {"m": m, "n": 48}) for m in (16, 32) for v in ("conflict", "padded")]
    # the outcomes carry each size as its own variant, with what the suite declares for the variant
    record = Events(events)
    record.poll()
    outcomes = record.outcomes(select_variants(CPU_SUITE, "^transpose/").variants)
    assert [(o.variant, o.status, o.baseline) for o in outcomes] == [
        ("conflict@m=16", "ok", True),
        ("padded@m=16", "ok", False),
        ("conflict@m=32", "ok", True),
        ("padded@m=32", "ok", False),
    ]
    assert outcomes[1].demonstrates == "padded (CPU)"


def test_profile_runs_the_app_with_the_sweep_under_ncu(tmp_path, monkeypatch):
    record = tmp_path / "ncu-calls.jsonl"
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_RECORD=str(record),
        FAKE_NCU_REPORT=str(FIXTURES / "probe" / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(FIXTURES / "probe" / "probe.log"),
    )
    # the recorded report holds unswept ranges: no kernel of the swept variants, so exit 3 (nothing measured)
    assert (
        main(
            [
                "profile",
                str(CPU_SUITE),
                "--out",
                str(tmp_path / "runs"),
                "--clock-control",
                "none",
                "-k",
                "^transpose/conflict$",
                "--sweep",
                "transpose.m=16,32",
            ]
        )
        == 3
    )
    (call,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert call["argv"][call["argv"].index("--sweep") + 1] == "transpose.m=16,32"
    data = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    assert [(o["variant"], o["status"]) for o in data["outcomes"]] == [("conflict@m=16", "ok"), ("conflict@m=32", "ok")]


# --- readers: a swept range is its own label, the size recorded ---------------------------------------


def test_readers_take_a_swept_range_as_its_own_variant_with_its_size():
    assert suite_range(["transpose.conflict@rows=1024:none:none:none:none:none:none"]) == (
        "transpose",
        "conflict@rows=1024",
    )
    assert suite_range(["transpose.conflict"]) == ("transpose", "conflict")
    cell = '1346  "<default domain>:iteration:none:none:none:none:none:none"  "memlens:transpose.padded@rows=64:none:none:none:none:none:none"'  # noqa: E501
    assert _nvtx_ranges(cell)[1] == ("memlens", "transpose.padded@rows=64")
    kernel = with_label(KernelResult("void transpose_padded(...)"), ("transpose", "padded@rows=64"), None)
    assert (kernel.label, kernel.sweep_size, kernel.sweep_value) == ("transpose/padded@rows=64", "rows", 64)
    plain = with_label(KernelResult("k"), ("transpose", "padded"), None)
    assert (plain.sweep_size, plain.sweep_value) == (None, None)


def swept_results(full: RunResults, family: str, size: str, values: tuple[int, ...]) -> RunResults:
    """The fixture's kernels and outcomes of `family` as if swept: each value a copy, relabelled."""
    kernels, outcomes = [], []
    for value in values:
        for outcome in (o for o in full.outcomes if o.family == family):
            outcomes.append(replace(outcome, variant=swept_name(outcome.variant, size, value)))
        for kernel in (k for k in full.kernels if k.family == family):
            kernels.append(
                replace(kernel, variant=swept_name(kernel.variant, size, value), sweep_size=size, sweep_value=value)
            )
    return replace(full, kernels=tuple(kernels), outcomes=tuple(outcomes))


def test_results_json_records_the_size_and_a_run_without_sweeps_is_unchanged(tmp_path):
    full = load_results(FULL)
    assert "sweep_size" not in json.dumps(full.to_json())
    before_sweeps = [
        {k: v for k, v in asdict(kernel).items() if not k.startswith("sweep_") and k not in ("range_runs", "process")}
        for kernel in full.kernels
    ]  # a program run's fields, left out where unknown
    assert full.to_json()["kernels"] == before_sweeps  # every field as before, in the same order
    swept = swept_results(full, "transpose", "rows", (64, 128))
    data = swept.to_json()
    assert (data["kernels"][0]["variant"], data["kernels"][0]["sweep_size"], data["kernels"][0]["sweep_value"]) == (
        "conflict@rows=64",
        "rows",
        64,
    )
    again = RunResults.from_json(json.loads(json.dumps(data)))
    assert again.kernels == swept.kernels


def test_metrics_shows_each_size_as_its_own_row(tmp_path, capsys):
    swept = swept_results(load_results(FULL), "transpose", "rows", (64, 128))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(swept.to_json()))
    assert main(["metrics", str(path), "--json"]) == 0
    labels = [k["label"] for k in json.loads(capsys.readouterr().out)["kernels"]]
    assert labels[:2] == ["transpose/conflict@rows=64", "transpose/padded@rows=64"]
    assert "transpose/conflict@rows=128" in labels and len(labels) == 14
    assert main(["metrics", str(path)]) == 0
    table = capsys.readouterr().out
    assert "transpose/conflict@rows=64" in table and "transpose/vec4_swizzled@rows=128" in table


# --- the report: figures against size, every size on the roofline --------------------------------------


def test_report_groups_a_sweep_by_size_with_speedups_at_the_same_size():
    full = load_results(FULL)
    swept = swept_results(full, "transpose", "rows", (64, 1024))
    duration = {k.variant: k.metric("duration").value for k in swept.kernels}
    (family,) = build_run(swept, "x").families
    assert [r.name for r in family.rows][:8] == [
        "conflict@rows=64",
        "padded@rows=64",
        "swizzled@rows=64",
        "tile64_padded@rows=64",
        "tile64_swizzled@rows=64",
        "vec4_padded@rows=64",
        "vec4_swizzled@rows=64",
        "conflict@rows=1024",
    ]
    padded = next(r for r in family.rows if r.name == "padded@rows=1024")
    assert padded.cells["speedup"].value == pytest.approx(duration["conflict@rows=1024"] / duration["padded@rows=1024"])
    assert [r.name for r in family.rows if r.baseline] == ["conflict@rows=64"]


def test_html_report_plots_a_swept_family_against_size_and_each_size_on_the_roofline():
    full = load_results(FULL)
    swept = swept_results(full, "matmul", "n", (33, 1024))
    html = render(build_report([("x", swept)]), "html")
    assert html.count('class="chart sweep-chart"') == 1
    for text in (
        "matmul against n (33, 1024)",
        "naive (baseline)",
        "excess wavefronts (exact)",
        "local-memory bytes (ld + st)",
        "DRAM bandwidth",
    ):
        assert f">{text}<" in html or text in html, text
    # the roofline places each size of each variant
    assert html.count('class="chart roofline-chart"') == 1
    for name in ("naive@n=33 (baseline)", "naive@n=1024", "tiled@n=33", "tiled@n=1024"):
        assert name in html, name
    unswept = render(build_report([("x", full)]), "html")
    assert "sweep-chart" not in unswept


def test_sweep_chart_uses_log_axes_where_sizes_span_decades():
    from memlens.reports.sweeps import family_sweep, log_scale

    swept = swept_results(load_results(FULL), "transpose", "rows", (64, 8192))
    (family,) = build_run(swept, "x").families
    sweep = family_sweep(family)
    assert (sweep.size, sweep.values) == ("rows", (64, 8192))
    assert sweep.variants[0] == ("conflict", True) and len(sweep.variants) == 7
    assert log_scale(sweep.values) and not log_scale((64, 128))
    plain = build_run(load_results(FULL), "x").families[0]
    assert family_sweep(plain) is None


# --- bench ----------------------------------------------------------------------------------------------


def test_bench_times_each_value_as_its_own_variant(tmp_path, monkeypatch, capsys):
    import memlens.bench.timing as bench_module
    from tests.bench.test_bench import FakeDevice

    monkeypatch.setattr(bench_module, "open_device", FakeDevice)
    assert (
        main(
            [
                "bench",
                str(CPU_SUITE),
                "--out",
                str(tmp_path / "runs"),
                "--repeats",
                "20",
                "-k",
                "^transpose/",
                "--sweep",
                "transpose.n=8,16",
            ]
        )
        == 0
    )
    (run,) = (tmp_path / "runs").iterdir()
    data = json.loads((run / "bench.json").read_text())
    timed = [(v["variant"], v["size"]) for v in data["variants"]]
    assert timed == [
        ("conflict@n=8", {"m": 64, "n": 8}),
        ("padded@n=8", {"m": 64, "n": 8}),
        ("swizzled@n=8", {"m": 64, "n": 8}),
        ("conflict@n=16", {"m": 64, "n": 16}),
        ("padded@n=16", {"m": 64, "n": 16}),
        ("swizzled@n=16", {"m": 64, "n": 16}),
    ]
    assert "transpose/padded@n=16" in capsys.readouterr().out


def test_sweep_option_is_on_profile_and_bench(capsys):
    for command in ("profile", "bench"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--sweep FAMILY.NAME=V1,V2,..." in capsys.readouterr().out
