"""A program's own NVTX push/pop ranges label its kernels: in both readers, the same from CSV and
.ncu-rep of one recording (tests/fixtures/programs/nvidia_h100_80gb_hbm3, made by
tests/fixtures/record_programs.sh), and in metrics, the report, the gate and cross-run comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.readers import read_report
from memlens.readers.metric_values import ProgramLabel, program_label
from memlens.readers.ncu_csv import parse_csv
from memlens.reports.build import build_run

PROGRAMS = Path(__file__).resolve().parents[1] / "fixtures" / "programs" / "nvidia_h100_80gb_hbm3"
CUDA_APP_REP = PROGRAMS / "cuda_app.ncu-rep"
CUDA_APP_CSV = PROGRAMS / "cuda_app.csv"

# (label, family, NVTX path, kernel) of each launch of tests/fixtures/programs/cuda_app.cu
CUDA_APP = [
    (
        "transpose/conflict",
        "transpose",
        "iteration > transpose/conflict",
        "transpose_conflict(float *, const float *, int)",
    ),
    ("transpose/padded", "transpose", "iteration > transpose/padded", "transpose_padded(float *, const float *, int)"),
    (
        "transpose/store_conflict",
        "transpose",
        "iteration > transpose/store_conflict",
        "transpose_store_conflict(float *, const float *, int)",
    ),
    (
        "copy/float2_shared",
        "copy",
        "iteration > copy/float2_shared",
        "copy_float2_shared(float2 *, const float2 *, int)",
    ),
    ("local/running_sum", "local", "iteration > local/running_sum", "running_sum_local(float *, const float *, int)"),
    (
        "cudaapp@spill/capped",
        "cudaapp@spill",
        "iteration > cudaapp@spill/capped",
        "spill_capped(float *, const float *, int)",
    ),
]


@pytest.mark.parametrize("path", [CUDA_APP_REP, CUDA_APP_CSV], ids=["ncu-rep", "csv"])
def test_cuda_app_kernels_are_labelled_by_their_ranges(path):
    kernels = read_report(path).kernels
    assert [(k.label, k.family, k.nvtx, k.kernel) for k in kernels] == CUDA_APP
    assert kernels[0].variant == "conflict"
    assert kernels[0].metric("exact_excess_wavefronts").value == 4_063_232


def test_csv_and_ncu_rep_of_one_recording_give_the_same_labels():
    from_rep, from_csv = read_report(CUDA_APP_REP), read_report(CUDA_APP_CSV)
    assert [(k.label, k.nvtx) for k in from_rep.kernels] == [(k.label, k.nvtx) for k in from_csv.kernels]


def test_program_label_forms():
    default = "<default domain>"
    assert program_label([]) is None
    assert program_label([(default, "step")]) == ProgramLabel("step")
    nested = program_label([(default, "step"), (default, "add/torch")])
    assert nested == ProgramLabel("step > add/torch", "add", "torch")
    # a domain other than the default is named once, before its first range; its family carries it
    assert program_label([("app", "outer"), ("app", "mm/v1")]) == ProgramLabel("app@outer > mm/v1", "app@mm", "v1")
    # the innermost family/variant range wins; a range with two slashes or a space is no family
    assert program_label([(default, "a/b"), (default, "c/d")]) == ProgramLabel("a/b > c/d", "c", "d")
    assert program_label([(default, "a/b/c")]) == ProgramLabel("a/b/c")
    assert program_label([(default, "my range/x")]) == ProgramLabel("my range/x")


def _program_csv(*ranges: str, kernel: str = "k") -> str:
    nvtx = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    cell = "7  " + "  ".join(f'"{r}"' for r in ranges)
    return (
        f'"ID","{nvtx}","Kernel Name","gpu__time_duration.sum"\n"","","","nsecond"\n'
        f'"0","{cell.replace(chr(34), chr(34) * 2)}","{kernel}","1000"\n'
    )


def test_csv_range_names_with_colons_and_messages():
    text = _program_csv("<default domain>:a:b/c:none:none:none:none:none:none")
    assert parse_csv(text).kernels[0].nvtx == "a:b/c"
    text = _program_csv("app:x:y/z:none:none:none:none:ASCII:x:y/z")
    kernel = parse_csv(text).kernels[0]
    assert (kernel.nvtx, kernel.family, kernel.variant) == ("app@x:y/z", "app@x:y", "z")


def test_several_kernels_in_one_range_are_listed_under_it_with_their_names():
    text = (
        '"ID","thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name",'
        '"gpu__time_duration.sum"\n"","","","nsecond"\n'
        '"0","7  ""<default domain>:softmax:none:none:none:none:none:none""","reduce_max","1000"\n'
        '"1","7  ""<default domain>:softmax:none:none:none:none:none:none""","exp_sum","2000"\n'
        '"2","","outside","3000"\n'
    )
    run = build_run(parse_csv(text, "s.csv"), "s")
    assert [(r.label, r.name) for r in run.others] == [
        ("softmax", "reduce_max"),
        ("softmax", "exp_sum"),
        ("outside", "outside"),
    ]


def test_report_groups_family_ranges_into_families(tmp_path):
    run = build_run(read_report(CUDA_APP_REP), "cuda_app")
    assert [(f.name, [r.name for r in f.rows]) for f in run.families] == [
        ("transpose", ["conflict", "padded", "store_conflict"]),
        ("copy", ["float2_shared"]),
        ("local", ["running_sum"]),
        ("cudaapp@spill", ["capped"]),
    ]
    assert run.others == ()
    out = tmp_path / "r.md"
    assert main(["report", str(CUDA_APP_CSV), "--format", "md", "-o", str(out)]) == 0
    assert "### ranges `cudaapp@spill/…` (a program's ranges: no speedups between them)" in out.read_text()


def test_metrics_shows_the_kernel_name_under_a_range_label(capsys):
    assert main(["metrics", str(CUDA_APP_CSV), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(k["label"], k["nvtx"]) for k in data["kernels"]][5] == (
        "cudaapp@spill/capped",
        "iteration > cudaapp@spill/capped",
    )
    assert main(["metrics", str(CUDA_APP_REP), "-k", "spill"]) == 0
    out = capsys.readouterr().out
    assert "cudaapp@spill/capped" in out and "spill_capped(float *" in out and "transpose" not in out


def test_gate_selects_and_baselines_key_by_range_labels(tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text(
        'version = 1\n[[rule]]\nname = "no conflicts"\nselect = "transpose/padded"\n'
        'metric = "exact_excess_wavefronts"\nequals = 0\n'
    )
    assert main(["gate", str(CUDA_APP_REP), "--rules", str(rules)]) == 0
    baseline = tmp_path / "base.json"
    assert main(["baseline", "save", str(CUDA_APP_CSV), "-o", str(baseline)]) == 0
    keys = [k["key"] for k in json.loads(baseline.read_text())["kernels"]]
    assert keys == [label for label, *_ in CUDA_APP]
    assert main(["gate", str(CUDA_APP_REP), "--rules", str(rules), "--baseline", str(baseline)]) == 0


def test_cross_run_comparison_matches_kernels_by_range_label(tmp_path):
    out = tmp_path / "both.md"
    assert main(["report", str(CUDA_APP_CSV), str(CUDA_APP_REP), "--format", "md", "-o", str(out)]) == 0
    comparison = out.read_text().split("## Comparison across runs", 1)[1].split("\n## ", 1)[0]
    assert "cudaapp@spill/capped" in comparison and "transpose/conflict" in comparison
    assert "absent" not in comparison


class _Domain:
    """An ncu_report NVTX domain at one launch: its push/pop and start/end ranges."""

    def __init__(self, push_pop, start_end=()):
        self._push_pop, self._start_end = push_pop, start_end

    def push_pop_ranges(self):
        return self._push_pop

    def start_end_ranges(self):
        return self._start_end


class _OldDomain:
    """An ncu_report whose domains list no start/end ranges."""

    def push_pop_ranges(self):
        return ["step"]


def test_start_end_ranges_label_the_launches_of_other_threads():
    from memlens.readers.ncu_rep import _opened

    # PyTorch's autograd thread: no push/pop range of its own, the step's start/end range open
    assert _opened(_Domain([], ["step"])) == ["step"]
    # the thread that opened memlens.range("step") > memlens.range("forward"): each name once
    assert _opened(_Domain(["step", "forward"], ["step", "forward"])) == ["step", "forward"]
    # a start/end range of another thread, open around this thread's push/pop ranges: outermost
    assert _opened(_Domain(["train > forward"], ["load"])) == ["load", "train > forward"]
    assert _opened(_Domain(["step"])) == ["step"]
    assert _opened(_OldDomain()) == ["step"]
