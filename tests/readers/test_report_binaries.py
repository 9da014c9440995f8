"""The cubins an .ncu-rep holds (memlens.readers.report_binaries), read from the report's container on the
recordings: a C++ probe's one module, a Python program's modules (Triton's, PyTorch's and cuBLAS's), a
truncated copy and files that are not reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlens.readers.report_binaries import EM_CUDA, parse_cubin, report_cubins
from tests.support.packed import unpacked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KINDS = FIXTURES / "nvidia_h200" / "kinds"
MEMORY_KINDS_FUNCTIONS = {
    "_Z14global_atomicsPfPj",
    "_Z14global_stridedPfPKf",
    "_Z16global_coalescedPfPKf",
    "_Z26struct_array_runtime_indexPfPKii",
    "_Z19spill_launch_boundsPfPKfi",
    "_Z18dsmem_partner_readPf",
    "_Z11shared_3wayPf",
    "_Z18shared_1byte_16wayPj",
    "_Z17shared_8byte_2wayPd",
    "_Z20atomics_same_addressPj",
    "_Z14atomics_spreadPj",
    "_Z16atomics_one_bankPj",
}


@pytest.mark.parametrize("name", ["memory_kinds", "memory_kinds_no_source", "memory_kinds_sourcecounters"])
def test_the_probes_one_module_with_its_twelve_kernels(name):
    """memlens's metric list, without embedded sources, and ncu's own SourceCounters: the same module."""
    (cubin,) = report_cubins(KINDS / f"{name}.ncu-rep")
    assert len(cubin.image) == 136_936  # the varint before the image in the report
    assert cubin.image[:4] == b"\x7fELF" and int.from_bytes(cubin.image[0x12:0x14], "little") == EM_CUDA
    assert set(cubin.functions) == MEMORY_KINDS_FUNCTIONS
    assert cubin.functions["_Z14global_atomicsPfPj"] == 31  # its index in the symbol table, for nvdisasm -fun
    assert cubin.line_info


def test_a_python_programs_modules():
    """Triton's add kernel (line info), then modules of PyTorch and cuBLAS (none)."""
    cubins = report_cubins(unpacked(FIXTURES / "nvidia_h100_80gb_hbm3" / "programs" / "torch_triton.ncu-rep.xz"))
    assert [len(c.image) for c in cubins] == [6_936, 20_907, 6_157_440, 5_055_952, 5_727_264]
    assert [c.line_info for c in cubins] == [True, False, False, False, False]
    assert list(cubins[0].functions) == ["add_kernel"]
    assert len({c.digest for c in cubins}) == 5


def test_a_truncated_report_gives_the_modules_before_the_cut(tmp_path):
    data = (KINDS / "memory_kinds.ncu-rep").read_bytes()
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[:100_000])  # inside the one module
    assert report_cubins(cut) == ()
    cut.write_bytes(data[: len(data) // 2])
    assert len(report_cubins(cut)) == 1


@pytest.mark.parametrize("content", [b"", b"NVR\x00", b"not a report at all", b"NVR\x00\xff\xff\xff\xff"])
def test_what_is_not_a_report_holds_no_module(tmp_path, content):
    path = tmp_path / "x.ncu-rep"
    path.write_bytes(content)
    assert report_cubins(path) == ()
    assert report_cubins(tmp_path / "missing.ncu-rep") == ()


def test_an_image_cut_short_or_of_another_machine_is_not_a_cubin():
    (cubin,) = report_cubins(KINDS / "memory_kinds.ncu-rep")
    assert parse_cubin(cubin.image) is not None
    assert parse_cubin(cubin.image[:-1]) is None  # its section table past the end
    x86 = cubin.image[:0x12] + (62).to_bytes(2, "little") + cubin.image[0x14:]
    assert parse_cubin(x86) is None
