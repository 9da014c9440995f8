"""Each recorded instruction's source line (collect/cubin_lines.py): nvdisasm -g -gi on a cubin of
tests/fixtures/programs/bank_probe.cu compiled here (nvcc and the nvidia-cuda-nvdisasm wheel of the test
extra; skipped, saying so, where either is missing), and banks.json's file and line from it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memlens.collect import bank_trace as bt
from memlens.collect import cubin_lines as cubin_lines_module
from memlens.collect.cubin_lines import cubin_lines, disassemblies, parse_lines
from memlens.io.cuda_tools import find_nvdisasm
from memlens.readers.report_binaries import parse_cubin, report_cubins

PROBE = Path(__file__).parents[1] / "fixtures" / "programs" / "bank_probe.cu"


def source_line(text: str) -> int:
    return next(n for n, line in enumerate(PROBE.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def probe_cubin(tmp_path_factory) -> tuple[Path, Path]:
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None)
    nvdisasm = find_nvdisasm()
    if nvcc is None or nvdisasm is None:
        pytest.skip(f"needs nvcc ({nvcc}) and nvdisasm ({nvdisasm}): pip install nvidia-cuda-nvdisasm")
    cubin = tmp_path_factory.mktemp("cubin") / "bank_probe.cubin"
    subprocess.run([nvcc, "-lineinfo", "-arch=sm_90", "-cubin", "-o", str(cubin), str(PROBE)], check=True)
    return cubin, nvdisasm


def offsets_of(cubin: Path, nvdisasm: Path, function: str, opcode: str) -> list[int]:
    listing = subprocess.run([nvdisasm, "-g", str(cubin)], capture_output=True, text=True, check=True).stdout
    section = listing.split(f".text.{function}:", 1)[1].split(".section", 1)[0]
    return [int(row.split("*/")[0].split("/*")[1], 16) for row in section.splitlines() if f" {opcode}" in row]


def test_an_inlined_atomic_is_placed_on_the_users_line_not_the_headers(probe_cubin):
    cubin, nvdisasm = probe_cubin
    lines = cubin_lines(cubin, nvdisasm)
    (atomic,) = offsets_of(cubin, nvdisasm, "_Z13atomics_4_wayPj", "ATOMS")
    file, line = lines[("_Z13atomics_4_wayPj", atomic)]
    assert (Path(file).name, line) == ("bank_probe.cu", source_line("atomicAdd(&hist[32 * (LANE % 4)], 1u);"))


def test_the_column_read_is_on_its_line(probe_cubin):
    cubin, nvdisasm = probe_cubin
    lines = cubin_lines(cubin, nvdisasm)
    loads = offsets_of(cubin, nvdisasm, "_Z17column_read_32x32Pf", "LDS")
    assert {lines[("_Z17column_read_32x32Pf", pc)][1] for pc in loads} == {
        source_line("out[blockIdx.x * 32 + LANE] = tile[LANE][3];")
    }
    assert lines[("_Z17column_read_32x32Pf", 0)][1] == source_line("__global__ void column_read_32x32(float* out) {")


def test_a_binary_nvdisasm_cannot_read_gives_no_lines(tmp_path, probe_cubin):
    _, nvdisasm = probe_cubin
    (tmp_path / "junk.cubin").write_bytes(b"not an elf")
    assert cubin_lines(tmp_path / "junk.cubin", nvdisasm) == {}
    assert parse_lines("") == {}


def test_banks_json_names_each_instructions_line_from_its_launchs_cubin():
    offsets = [1024 + 128 * lane for lane in range(32)]
    record = {
        "pc_offset": 0x290,
        "kind": bt.SHARED,
        "size": 4,
        "flags": 3,
        "block": [0, 0, 0],
        "warp": 0,
        "offsets": offsets,
    }
    events = [
        {"event": "launch", "kernel": "_Z1kv", "cubin": "module.7.0.cubin", "records": [record]},
        {"event": "launch", "kernel": "_Z1jv", "cubin": "module.7.1.cubin", "records": [record]},
    ]
    lines = {("module.7.0.cubin", "_Z1kv", 0x290): ("/src/probe.cu", 65)}
    first, second = bt.banks_from_traces(events, 4, lines=lines).instructions
    assert (first.file, first.line, first.location) == ("/src/probe.cu", 65, "/src/probe.cu:65")
    assert (second.file, second.line) == (None, None)


# --- a large cubin: the launched functions only (a PyTorch module's tens of MB took 122 s whole, issue 50) ---


@pytest.fixture(scope="module")
def kinds_cubin(tmp_path_factory) -> Path:
    """The memory-kinds probe's module (136,936 bytes, twelve kernels), as the library keeps it."""
    (cubin,) = report_cubins(Path(__file__).parents[1] / "fixtures" / "nvidia_h200" / "kinds" / "memory_kinds.ncu-rep")
    path = tmp_path_factory.mktemp("kinds") / "module.1.0.cubin"
    path.write_bytes(cubin.image)
    return path


def test_a_small_cubin_is_disassembled_whole_and_a_large_one_in_the_launched_functions_only(kinds_cubin, monkeypatch):
    launched = {"_Z14global_atomicsPfPj", "_Z11shared_3wayPf", "not_in_this_module"}
    assert disassemblies(kinds_cubin, launched) == [None]  # 136,936 bytes: whole, one nvdisasm
    assert disassemblies(kinds_cubin, None) == [None]
    monkeypatch.setattr(cubin_lines_module, "WHOLE_CUBIN_BYTES", 100_000)
    shared_3way = parse_cubin(kinds_cubin.read_bytes()).functions["_Z11shared_3wayPf"]
    assert disassemblies(kinds_cubin, launched) == sorted([31, shared_3way])  # global_atomics is symbol 31
    assert disassemblies(kinds_cubin, {"not_in_this_module"}) == []
    (kinds_cubin.parent / "junk.cubin").write_bytes(b"not an elf" * 20_000)
    assert disassemblies(kinds_cubin.parent / "junk.cubin", launched) == [None]  # nvdisasm says what it can


def test_one_functions_lines_are_those_of_the_whole_disassembly(kinds_cubin):
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        pytest.skip("needs nvdisasm: pip install nvidia-cuda-nvdisasm")
    whole = cubin_lines(kinds_cubin, nvdisasm)
    one = cubin_lines(kinds_cubin, nvdisasm, 31)
    assert one and {function for function, _ in one} == {"_Z14global_atomicsPfPj"}
    assert one == {key: where for key, where in whole.items() if key[0] == "_Z14global_atomicsPfPj"}
