"""The kernel binaries (cubins) an .ncu-rep holds, read from the report's own container format.

ncu embeds each profiled module's cubin in its report, whatever the program (nvcc, NVRTC, Numba, CuPy,
Triton, cuBLAS ...), in reports of every section set. The container, as ncu's file-format definitions
(Nsight Compute's extras/FileFormat/*.proto) lay it out and as the recordings under tests/fixtures show it:

    "NVR\\0", u32 n, FileHeader (n bytes)
    then blocks: u32 n, BlockHeader (n bytes: 1 NumSources, 2 NumResults, 5 PayloadSize),
                 NumSources x (u32 n, SourceData: 1 Reference, 4 Binary = the module's ELF image),
                 NumResults x (u32 n, ProfileResult: one kernel launch)

Only the block headers and the sources are read (the results, the bulk of a report, are skipped by their
sizes), so a report of thousands of launches is walked in milliseconds. Each binary is kept where it is a
CUDA ELF image (e_machine 190) whose section table lies within it; its symbol table names its functions.
Nothing here raises on a damaged report: ncu_report judges the report, this finds what binaries it can.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

REPORT_MAGIC = b"NVR\x00"
ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190  # e_machine of a CUDA ELF image
SHT_SYMTAB = 2
STT_FUNC = 2
# field numbers of ncu's file-format messages (BlockHeader, SourceData)
NUM_SOURCES, NUM_RESULTS, PAYLOAD_SIZE = 1, 2, 5
SOURCE_BINARY = 4
MAX_HEADER_BYTES = 64 * 1024 * 1024  # a block header past this is not one: the walk stops


@dataclass(frozen=True)
class Cubin:
    """One module's CUDA ELF image: its bytes, their SHA-256 (the key of what is derived from it), its
    functions (symbol name -> index in the symbol table, what nvdisasm -fun takes), and whether it has
    line info (a .debug_line section)."""

    image: bytes = field(repr=False)
    digest: str
    functions: dict[str, int]
    line_info: bool


def report_cubins(path: Path) -> tuple[Cubin, ...]:
    """The distinct cubins of the report at `path`, in the order it holds them (none where it holds none,
    or cannot be read)."""
    found: dict[str, Cubin] = {}
    try:
        with path.open("rb") as handle:
            for image in _source_binaries(handle):
                cubin = parse_cubin(image)
                if cubin is not None:
                    found.setdefault(cubin.digest, cubin)
    except (OSError, ValueError, struct.error):
        pass  # what was found before the damage stands
    return tuple(found.values())


def _source_binaries(handle: BinaryIO) -> Iterator[bytes]:
    if handle.read(len(REPORT_MAGIC)) != REPORT_MAGIC:
        return
    handle.seek(_size(handle), 1)  # the file header
    while True:
        head = handle.read(4)
        if len(head) < 4:
            return
        (size,) = struct.unpack("<I", head)
        if size > MAX_HEADER_BYTES:
            return
        header = _fields(handle.read(size))
        sources = header.get(NUM_SOURCES, 0)
        payload = header.get(PAYLOAD_SIZE, 0)
        if not isinstance(sources, int) or not isinstance(payload, int):
            return
        start = handle.tell()
        for _ in range(sources):
            binary = _fields(handle.read(_size(handle))).get(SOURCE_BINARY)
            if isinstance(binary, bytes) and binary.startswith(ELF_MAGIC):
                yield binary
        handle.seek(start + payload)  # past the results


def _size(handle: BinaryIO) -> int:
    head = handle.read(4)
    if len(head) < 4:
        raise ValueError("truncated")
    (size,) = struct.unpack("<I", head)
    return int(size)


def _fields(message: bytes) -> dict[int, int | bytes]:
    """The top-level fields of a protobuf message: varints as ints, length-delimited fields as bytes (the
    last of a repeated field); fixed-width fields skipped."""
    fields: dict[int, int | bytes] = {}
    index = 0
    while index < len(message):
        key, index = _varint(message, index)
        number, wire = key >> 3, key & 7
        if wire == 0:
            fields[number], index = _varint(message, index)
        elif wire == 2:
            length, index = _varint(message, index)
            if index + length > len(message):
                raise ValueError("field past the end of its message")
            fields[number] = message[index : index + length]
            index += length
        elif wire in (1, 5):
            index += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
    return fields


def _varint(data: bytes, index: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if index >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[index]
        index += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, index


def parse_cubin(image: bytes) -> Cubin | None:
    """`image` as a Cubin where it is a whole 64-bit little-endian CUDA ELF image (its headers and sections
    within it), else None."""
    if len(image) < 64 or not image.startswith(ELF_MAGIC) or image[4] != 2 or image[5] != 1:
        return None
    (machine,) = struct.unpack_from("<H", image, 0x12)
    programs, table = struct.unpack_from("<QQ", image, 0x20)
    program_size, program_count, entry_size, count, names_index = struct.unpack_from("<HHHHH", image, 0x36)
    if machine != EM_CUDA or entry_size < 64 or names_index >= count:
        return None
    if table + entry_size * count > len(image) or programs + program_size * program_count > len(image):
        return None  # its section or program headers past its end: cut short
    sections = [struct.unpack_from("<IIQQQQIIQQ", image, table + i * entry_size) for i in range(count)]
    if any(offset + size > len(image) for _, kind, _, _, offset, size, *_ in sections if kind != 8):  # 8: NOBITS
        return None
    names = sections[names_index]
    section_names = [_string(image, names[4], name) for name, *_ in sections]
    functions: dict[str, int] = {}
    for _, kind, _, _, offset, size, link, _, _, symbol_size in sections:
        if kind != SHT_SYMTAB or not symbol_size or link >= count:
            continue
        strings = sections[link][4]
        for index in range(size // symbol_size):
            name, info = struct.unpack_from("<IB", image, offset + index * symbol_size)
            if info & 0xF == STT_FUNC:
                functions[_string(image, strings, name)] = index
    digest = hashlib.sha256(image).hexdigest()
    return Cubin(image, digest, functions, ".debug_line" in section_names)


def _string(image: bytes, table: int, offset: int) -> str:
    start = table + offset
    end = image.find(b"\x00", start)
    return image[start : end if end >= 0 else len(image)].decode("utf-8", errors="replace")
