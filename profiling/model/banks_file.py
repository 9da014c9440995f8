"""banks.json: the shared-memory addresses of recorded warps, instruction by instruction, as
`memlens banks -- COMMAND` writes it and anyone may write or read it (the format is documented in
the README). One typed record an instruction; reading checks every field and says what is wrong in
one line (InputError, exit 2).

    {"kind": "memlens.banks", "version": 1, "gpu": "NVIDIA H100 80GB HBM3",
     "instructions": [{"kernel": "transpose_conflict", "pc_offset": 368, "width": 4, "access": "load",
                       "file": "transpose.cu", "line": 42,
                       "warps": [[1024, 1152, ..., null], ...]}]}

Each warp is 32 byte offsets in the shared window, lane by lane, `null` for a lane that did not
take part. `width` is the bytes a lane moves (1, 2, 4, 8 or 16). ldmatrix and stmatrix give one
16-byte row address a lane and carry `matrices` (1, 2 or 4: .x1, .x2, .x4); cp.async may carry
`sources`, the global byte address each lane copies from, warp by warp beside `warps`. `every_execution`
(optional) holds the bank model's figures summed over every warp-level execution, not only the recorded
ones: `{"executions": E, "wavefronts": W, "ideal": I}` (`memlens banks -- COMMAND` counts them on the GPU).
Other fields are allowed and kept (`extra`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from memlens.errors import InputError

KIND = "memlens.banks"
VERSION = 1
WARP_LANES = 32


class BankAccess(str, Enum):
    """What a recorded shared-memory instruction does."""

    LOAD = "load"
    STORE = "store"
    ATOMIC = "atomic"
    LDMATRIX = "ldmatrix"
    STMATRIX = "stmatrix"
    CP_ASYNC = "cp.async"

    def __str__(self) -> str:
        return str(self.value)

    @property
    def matrix(self) -> bool:
        return self in (BankAccess.LDMATRIX, BankAccess.STMATRIX)


# the bytes a lane may move, by access
WIDTHS: dict[BankAccess, tuple[int, ...]] = {
    BankAccess.LOAD: (1, 2, 4, 8, 16),
    BankAccess.STORE: (1, 2, 4, 8, 16),
    BankAccess.ATOMIC: (4, 8, 16),
    BankAccess.LDMATRIX: (16,),
    BankAccess.STMATRIX: (16,),
    BankAccess.CP_ASYNC: (4, 8, 16),
}
MATRIX_COUNTS = (1, 2, 4)
KNOWN_FIELDS = (
    "kernel",
    "pc_offset",
    "width",
    "access",
    "file",
    "line",
    "warps",
    "matrices",
    "sources",
    "every_execution",
)
EVERY_EXECUTION = "every_execution"

Warp = tuple[int | None, ...]


@dataclass(frozen=True)
class ExecutionTotals:
    """The bank model's figures summed over every warp-level execution of an instruction."""

    executions: int
    wavefronts: int
    ideal: int

    def to_json(self) -> dict[str, int]:
        return {"executions": self.executions, "wavefronts": self.wavefronts, "ideal": self.ideal}


@dataclass(frozen=True)
class RecordedInstruction:
    """One shared-memory instruction and the lane offsets of its recorded warp-level executions."""

    kernel: str
    pc_offset: int  # bytes from the function's first instruction
    width: int
    access: BankAccess
    warps: tuple[Warp, ...]
    file: str | None = None
    line: int | None = None
    matrices: int | None = None  # ldmatrix / stmatrix: .x1, .x2, .x4
    sources: tuple[Warp, ...] | None = None  # cp.async: global byte addresses, warp by warp
    every: ExecutionTotals | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def location(self) -> str:
        where = f"{self.file}:{self.line}" if self.file and self.line is not None else (self.file or "")
        return where or f"pc +0x{self.pc_offset:x}"

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "kernel": self.kernel,
            "pc_offset": self.pc_offset,
            "width": self.width,
            "access": str(self.access),
            "file": self.file,
            "line": self.line,
        }
        if self.matrices is not None:
            entry["matrices"] = self.matrices
        entry["warps"] = [list(warp) for warp in self.warps]
        if self.sources is not None:
            entry["sources"] = [list(warp) for warp in self.sources]
        if self.every is not None:
            entry[EVERY_EXECUTION] = self.every.to_json()
        return {**self.extra, **entry}


@dataclass(frozen=True)
class BanksFile:
    gpu: str | None
    instructions: tuple[RecordedInstruction, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.extra,
            "kind": KIND,
            "version": VERSION,
            "gpu": self.gpu,
            "instructions": [i.to_json() for i in self.instructions],
        }


def read_banks_file(path: str | Path) -> BanksFile:
    """The file at `path`; InputError (one line) when it is missing, not JSON or not in the format."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a banks.json file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read ({exc})") from None
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not JSON ({exc})") from None
    return parse_banks(document, str(path))


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def parse_banks(document: object, source: str) -> BanksFile:
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise InputError(f'{source}: not a {KIND} file (its "kind" must be {KIND!r})')
    if document.get("version") != VERSION:
        raise InputError(f"{source}: {KIND} version {document.get('version')!r} is not supported (only {VERSION})")
    gpu = document.get("gpu")
    if gpu is not None and not isinstance(gpu, str):
        raise InputError(f'{source}: "gpu" must be a string or null')
    entries = document.get("instructions")
    if not isinstance(entries, list):
        raise InputError(f'{source}: "instructions" must be a list')
    instructions = tuple(_instruction(entry, f"{source}: instruction {n}") for n, entry in enumerate(entries))
    extra = {k: v for k, v in document.items() if k not in ("kind", "version", "gpu", "instructions")}
    return BanksFile(gpu, instructions, extra)


def _instruction(entry: object, where: str) -> RecordedInstruction:
    if not isinstance(entry, dict):
        raise InputError(f"{where}: must be an object")
    kernel = entry.get("kernel")
    if not isinstance(kernel, str) or not kernel:
        raise InputError(f'{where}: "kernel" must be a non-empty string')
    pc_offset = _count(entry.get("pc_offset"), f'{where}: "pc_offset"')
    try:
        access = BankAccess(entry.get("access"))
    except ValueError:
        names = ", ".join(repr(str(a)) for a in BankAccess)
        raise InputError(f"{where}: access {entry.get('access')!r} is not one memlens analyses ({names})") from None
    width = entry.get("width")
    if type(width) is not int or width not in WIDTHS[access]:
        raise InputError(f"{where}: width {width!r} is not one of {access}'s widths {WIDTHS[access]} (bytes a lane)")
    file, line = entry.get("file"), entry.get("line")
    if file is not None and not isinstance(file, str):
        raise InputError(f'{where}: "file" must be a string or null')
    if line is not None:
        line = _count(line, f'{where}: "line"')
    matrices = entry.get("matrices")
    if access.matrix:
        matrices = 4 if matrices is None else matrices
        if type(matrices) is not int or matrices not in MATRIX_COUNTS:
            raise InputError(f'{where}: "matrices" {matrices!r} is not one of {MATRIX_COUNTS}')
    elif matrices is not None:
        raise InputError(f'{where}: "matrices" is for ldmatrix and stmatrix, not {access}')
    warps = _warps(entry.get("warps"), width, f'{where}: "warps"')
    sources = entry.get("sources")
    if sources is not None:
        if access is not BankAccess.CP_ASYNC:
            raise InputError(f'{where}: "sources" is for cp.async, not {access}')
        sources = _warps(sources, 1, f'{where}: "sources"')
        if len(sources) != len(warps) or any(
            (s is None) != (w is None)
            for sw, ww in zip(sources, warps, strict=True)
            for s, w in zip(sw, ww, strict=True)
        ):
            raise InputError(f'{where}: "sources" must give an address for each active lane of "warps"')
    every = _totals(entry.get(EVERY_EXECUTION), f'{where}: "{EVERY_EXECUTION}"')
    extra = {k: v for k, v in entry.items() if k not in KNOWN_FIELDS}
    return RecordedInstruction(kernel, pc_offset, width, access, warps, file, line, matrices, sources, every, extra)


def _totals(value: object, what: str) -> ExecutionTotals | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(f"{what} must be an object of executions, wavefronts and ideal")
    counts = [_count(value.get(name), f"{what}.{name}") for name in ("executions", "wavefronts", "ideal")]
    return ExecutionTotals(*counts)


def _count(value: object, what: str) -> int:
    if type(value) is not int or value < 0:
        raise InputError(f"{what} must be a whole number of 0 or more, not {value!r}")
    return value


def _warps(value: object, width: int, what: str) -> tuple[Warp, ...]:
    if not isinstance(value, list) or not value:
        raise InputError(f"{what} must be a non-empty list of warps")
    warps = []
    for n, warp in enumerate(value):
        if not isinstance(warp, list) or len(warp) != WARP_LANES:
            raise InputError(f"{what}[{n}] must be a list of {WARP_LANES} offsets (null for an inactive lane)")
        for lane, offset in enumerate(warp):
            if offset is None:
                continue
            if type(offset) is not int or offset < 0:
                raise InputError(f"{what}[{n}] lane {lane}: {offset!r} is not a byte offset")
            if offset % width:
                raise InputError(
                    f"{what}[{n}] lane {lane}: offset {offset} is not {width}-byte aligned "
                    "(a misaligned shared access faults on the GPU)"
                )
        if all(offset is None for offset in warp):
            raise InputError(f"{what}[{n}] has no active lane")
        warps.append(tuple(warp))
    return tuple(warps)
