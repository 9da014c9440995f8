"""banks.json (model/banks_file.py): read into typed records, written back the same, and every bad file a
one-line InputError naming the instruction and the field."""

from __future__ import annotations

import json

import pytest

from memlens.errors import InputError
from memlens.model.banks_file import KIND, BankAccess, ExecutionTotals, parse_banks, read_banks_file

B = 1024
WARP = [B + 4 * lane for lane in range(32)]


def document(*instructions, **fields):
    return {"kind": KIND, "version": 1, "gpu": "NVIDIA H100 80GB HBM3", "instructions": list(instructions), **fields}


def load(**fields):
    return {"kernel": "k", "pc_offset": 368, "width": 4, "access": "load", "warps": [WARP], **fields}


def test_a_file_reads_into_typed_records_and_writes_back_the_same(tmp_path):
    ldm = load(
        access="ldmatrix",
        width=16,
        matrices=2,
        warps=[[B + 16 * lane for lane in range(32)]],
        file="a.cu",
        line=7,
        pc="0x7f00",
        blocks=[[0, 0, 0]],
    )
    sources = [[4096 + 16 * lane for lane in range(32)]]
    cp = load(access="cp.async", width=16, warps=[[B + 16 * lane for lane in range(32)]], sources=sources)
    inactive = load(
        warps=[[None] * 31 + [B]], every_execution={"executions": 4096, "wavefronts": 131072, "ideal": 4096}
    )
    path = tmp_path / "banks.json"
    path.write_text(json.dumps(document(load(), ldm, cp, inactive, tool="memlens 0.9")))
    banks = read_banks_file(path)
    assert banks.gpu == "NVIDIA H100 80GB HBM3" and banks.extra == {"tool": "memlens 0.9"}
    first, matrix, copy, last = banks.instructions
    assert (first.kernel, first.pc_offset, first.width, first.access) == ("k", 368, 4, BankAccess.LOAD)
    assert first.matrices is None
    assert first.warps == (tuple(WARP),) and first.location == "pc +0x170"
    assert (matrix.access, matrix.matrices, matrix.location, dict(matrix.extra)) == (
        BankAccess.LDMATRIX,
        2,
        "a.cu:7",
        {"pc": "0x7f00", "blocks": [[0, 0, 0]]},
    )
    assert copy.sources == (tuple(sources[0]),)
    assert last.warps[0][:2] == (None, None) and last.warps[0][31] == B
    assert (last.every, first.every) == (ExecutionTotals(4096, 131072, 4096), None)
    assert parse_banks(banks.to_json(), "again") == banks
    # a matrix instruction with no count is an .x4
    stmatrix = load(access="stmatrix", width=16, warps=[[B + 16 * lane for lane in range(32)]])
    assert parse_banks(document(stmatrix), "x").instructions[0].matrices == 4


BAD = [
    ([], "not a memlens.banks file"),
    ({"kind": "memlens.other"}, "not a memlens.banks file"),
    ({"kind": KIND, "version": 2, "instructions": []}, "version 2 is not supported"),
    ({"kind": KIND, "version": 1, "instructions": {}}, '"instructions" must be a list'),
    (document(load(kernel="")), 'instruction 0: "kernel" must be a non-empty string'),
    (document(load(), load(pc_offset=-1)), 'instruction 1: "pc_offset" must be a whole number'),
    (document(load(access="tma")), "instruction 0: access 'tma' is not one memlens analyses"),
    (document(load(width=3)), "width 3 is not one of load's widths"),
    (document(load(width=True)), "width True is not one of load's widths"),
    (document(load(access="ldmatrix", width=4)), "width 4 is not one of ldmatrix's widths"),
    (document(load(access="ldmatrix", width=16, matrices=3, warps=[[B] * 32])), '"matrices" 3 is not one of'),
    (document(load(matrices=4)), '"matrices" is for ldmatrix and stmatrix, not load'),
    (document(load(warps=[])), '"warps" must be a non-empty list of warps'),
    (document(load(warps=[WARP[:31]])), '"warps"\\[0\\] must be a list of 32 offsets'),
    (document(load(warps=[WARP, [None] * 32])), '"warps"\\[1\\] has no active lane'),
    (document(load(warps=[[-4] + WARP[1:]])), "lane 0: -4 is not a byte offset"),
    (document(load(warps=[[1.5] + WARP[1:]])), "lane 0: 1.5 is not a byte offset"),
    (document(load(warps=[WARP[:5] + [B + 2] + WARP[6:]])), "lane 5: offset 1026 is not 4-byte aligned"),
    (document(load(sources=[WARP])), '"sources" is for cp.async, not load'),
    (document(load(access="cp.async", sources=[[None] + WARP[1:]])), '"sources" must give an address for each'),
    (document(load(file=3)), '"file" must be a string or null'),
    (document(load(line="7")), '"line" must be a whole number'),
    (
        document(load(every_execution=[1, 2, 3])),
        '"every_execution" must be an object of executions, wavefronts and ideal',
    ),
    (
        document(load(every_execution={"executions": 1, "wavefronts": -1, "ideal": 1})),
        '"every_execution".wavefronts must be a whole number of 0 or more, not -1',
    ),
]


@pytest.mark.parametrize(("content", "message"), BAD)
def test_a_bad_file_is_one_line_naming_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "banks.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InputError, match=message) as caught:
        read_banks_file(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


def test_missing_unreadable_and_non_json_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_banks_file(tmp_path / "none.json")
    with pytest.raises(InputError, match="is a directory"):
        read_banks_file(tmp_path)
    (tmp_path / "bad.json").write_text('{"kind": ')
    with pytest.raises(InputError, match="not JSON"):
        read_banks_file(tmp_path / "bad.json")
    (tmp_path / "nan.json").write_text('{"kind": NaN}')
    with pytest.raises(InputError, match="not JSON"):
        read_banks_file(tmp_path / "nan.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="cannot be read"):
        read_banks_file(tmp_path / "bin.json")
