"""`memlens banks FILE [--json] [-k REGEX]`: the picture and the fix in the terminal, the figures as JSON,
and bad input as one line with exit 2. The files are made here from access patterns worked out in
tests/theory/test_recorded_banks.py."""

from __future__ import annotations

import json

import pytest

from memlens.cli import main
from memlens.model.banks_file import KIND

B = 1024
LANES = range(32)
COLUMN = [B + 128 * lane + 12 for lane in LANES]  # tile[lane][3] of float tile[32][32]: 32-way
ROW = [B + 4 * lane for lane in LANES]  # tile[0][lane]: 1-way
DOUBLES = [B + 256 * (lane % 16) + 16 for lane in LANES]  # 8-byte column read: 16-way


def write(tmp_path, *instructions):
    path = tmp_path / "banks.json"
    path.write_text(
        json.dumps({"kind": KIND, "version": 1, "gpu": "NVIDIA H100 80GB HBM3", "instructions": list(instructions)})
    )
    return path


def instruction(kernel, pc, warps, width=4, access="load", **fields):
    return {"kernel": kernel, "pc_offset": pc, "width": width, "access": access, "warps": warps, **fields}


@pytest.fixture
def banks_file(tmp_path):
    return write(
        tmp_path,
        instruction(
            "transpose_conflict",
            0x170,
            [COLUMN],
            file="transpose.cu",
            line=42,
            every_execution={"executions": 4096, "wavefronts": 131072, "ideal": 4096},
        ),
        instruction("transpose_conflict", 0x1A0, [ROW], access="store", file="transpose.cu", line=40),
        instruction("doubles", 0x20, [DOUBLES], width=8),
    )


def test_the_text_draws_each_conflicting_warp_and_its_proved_fix(banks_file, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(banks_file.parent)
    assert main(["banks", "banks.json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "memlens banks banks.json (NVIDIA H100 80GB HBM3): 3 instructions, 2 conflicting,",
        "    a fix proved for 2",
    ]
    start = lines.index("transpose_conflict  transpose.cu:42  pc +0x170  load, 4 bytes a lane")
    assert lines[start + 1 : start + 6] == [
        "  32-way: 32 wavefronts over an ideal of 1 (1 warp recorded)",
        "  all 4,096 executions: 32-way, 131,072 wavefronts over an ideal of 4,096",
        "     bank 0         1         2         3",
        "          01234567890123456789012345678901",
        "  wf  1   ...0............................",
    ]
    assert lines[start + 36] == "  wf 32   ...v............................"
    assert lines[start + 37].startswith("  fix (pad, proved on the 1 recorded warp: 1-way): add 4 bytes after")
    # the 8-byte read: a panel a half-warp, each lane in two banks
    doubles = lines.index("doubles  pc +0x20  load, 8 bytes a lane")
    assert lines[doubles + 4 : doubles + 6] == [
        "  phase lanes 0-15: 16 wavefronts (ideal 1)",
        "  wf  1   ....00..........................",
    ]
    assert "  phase lanes 16-31: 16 wavefronts (ideal 1)" in lines
    assert "conflict-free (1):" in lines
    assert "  transpose_conflict  transpose.cu:40  pc +0x1a0  store, 4 bytes a lane: 1-way" in lines
    assert max(len(line) for line in lines) <= 80


def test_json_gives_each_input_instruction_in_order(banks_file, capsys):
    assert main(["banks", str(banks_file), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    entries = found["instructions"]
    assert [(e["kernel"], e["pc_offset"], e["n_way"], e["wavefronts"], e["ideal"]) for e in entries] == [
        ("transpose_conflict", 0x170, 32, 32, 1),
        ("transpose_conflict", 0x1A0, 1, 1, 1),
        ("doubles", 0x20, 16, 32, 2),
    ]
    assert entries[0]["fix"] == {
        "kind": "pad",
        "row_bytes": 128,
        "base": B,
        "pad_bytes": 4,
        "n_way_after": 1,
        "words": "add 4 bytes after every 128-byte row: declare the tile [..][33] instead of [..][32] "
        "(4-byte elements)",
    }
    assert entries[1]["fix"] is None and "warps" not in entries[0]
    assert (entries[0]["file"], entries[0]["line"], found["gpu"]) == ("transpose.cu", 42, "NVIDIA H100 80GB HBM3")
    assert entries[0]["every_execution"] == {"executions": 4096, "wavefronts": 131072, "ideal": 4096, "n_way": 32}


def test_k_selects_kernels_by_regex(banks_file, capsys):
    assert main(["banks", str(banks_file), "-k", "^doub", "--json"]) == 0
    assert [e["kernel"] for e in json.loads(capsys.readouterr().out)["instructions"]] == ["doubles"]
    assert main(["banks", str(banks_file), "-k", "gemm"]) == 2
    assert "no instruction in" in capsys.readouterr().err
    assert main(["banks", str(banks_file), "-k", "("]) == 2
    assert "bad -k pattern" in capsys.readouterr().err


def test_all_draws_conflict_free_instructions_too(banks_file, capsys):
    assert main(["banks", str(banks_file), "--all", "-k", "transpose"]) == 0
    out = capsys.readouterr().out
    assert "  1-way: 1 wavefront over an ideal of 1 (1 warp recorded)" in out
    assert "  wf  1   0123456789abcdefghijklmnopqrstuv" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["banks"], "give a banks.json FILE to analyse, or -- COMMAND to record one"),
        (["banks", "x.json", "--", "prog"], "give a banks.json FILE or -- COMMAND, not both"),
        (["banks", "--warps", "0", "--", "prog"], "--warps must be 1 or more, not 0"),
        (
            ["banks", "--launches", "-1", "--", "prog"],
            "--launches '-1': give first, all, or a number of launches of each kernel from 1 to 100",
        ),
        (["banks", "nothere.json"], "nothere.json: no such file"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"memlens: error: {message}\n"


def test_a_bad_file_is_one_line_and_exit_2(tmp_path, capsys):
    path = write(tmp_path, instruction("k", 0, [COLUMN[:31]]))
    assert main(["banks", str(path)]) == 2
    assert capsys.readouterr().err == (
        f'memlens: error: {path}: instruction 0: "warps"[0] must be a list of 32 offsets (null for an inactive lane)\n'
    )


def test_a_run_directory_is_read_through_its_banks_json(banks_file, capsys):
    assert main(["banks", str(banks_file.parent), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["instructions"]) == 3


@pytest.mark.parametrize(
    ("given", "traced"), [([], 1), (["--launches", "first"], 1), (["--launches", "3"], 3), (["--launches", "all"], 0)]
)
def test_launches_are_taken_as_memlens_profile_takes_them(banks_file, monkeypatch, capsys, given, traced):
    from memlens.collect import bank_trace

    seen = []
    monkeypatch.setattr(bank_trace, "trace_program", lambda *a, **kw: seen.append(kw["launches"]) or banks_file)
    assert main(["banks", *given, "--", "prog"]) == 0
    assert seen == [traced]  # 0: the trace library's every launch
