"""Where in the code: per-instruction records of shared- and local-memory instructions, and their
roll-up to source lines (file, line, the line's text).

ncu's instrumented `memory_l1_wavefronts_shared` and `memory_l1_wavefronts_shared_ideal` carry one
value per SASS instruction (their correlation ids are the instructions' PCs); the source-level
`inst_executed` counts each instruction's warp-level executions. A report maps each PC to its SASS
text and, for kernels compiled with line info, to a file and line. This module knows nothing of
ncu_report: readers make the records, renderers show the lines.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

LINE_INFO_HINT = (
    "no line info in this report: compile with -lineinfo (nvcc, NVRTC, CuPy options=('-lineinfo',)) "
    "or Numba cuda.jit(lineinfo=True) to name source lines"
)

_PREDICATE = re.compile(r"^\s*@!?U?P[T0-9]+\s+")
# A CuPy kernel is compiled from a temporary copy of its source, named by a hash of it.
TEMPORARY_SOURCE = re.compile(r"(^|/)[0-9a-f]{40}\.cubin\.cu$")

SHARED_LOADS = ("LDS", "LDSM")
SHARED_STORES = ("STS", "STSM", "ATOMS", "LDGSTS")  # an atomic or async copy writes shared memory
LOCAL_LOADS = ("LDL",)
LOCAL_STORES = ("STL",)


@dataclass(frozen=True)
class InstructionRecord:
    """One SASS instruction that touches shared or local memory, in one kernel launch."""

    pc: int  # the instruction's address, as the report correlates it
    sass: str  # the instruction as disassembled, e.g. "LDS.128 R12, [R2]"
    opcode: str  # with its modifiers, e.g. "LDS.128", "STL"
    space: str  # "shared" or "local"
    side: str  # "ld", "st" or "other" (a shared access neither a load nor a store)
    width_bits: int  # bits a thread accesses: 32 unless the opcode says .64, .128, .U8 ...
    file: str | None = None  # as the report names it; None without line info
    line: int | None = None
    executions: float | None = None  # warp-level executions (inst_executed), None where not collected
    wavefronts: float | None = None  # shared memory only
    ideal: float | None = None

    @property
    def excess(self) -> float | None:
        if self.wavefronts is None or self.ideal is None:
            return None
        return max(self.wavefronts - self.ideal, 0.0)

    @property
    def ways(self) -> float | None:
        """Wavefronts over the conflict-free ideal of this very access (its width included): 1.0 is
        conflict-free, 32.0 a 32-way conflict; a 16-byte load at 4 wavefronts a warp reads 1.0."""
        if self.wavefronts is None or not self.ideal:
            return None
        return self.wavefronts / self.ideal


def classify(sass: str) -> tuple[str, str | None, str, int]:
    """(opcode, space, side, width in bits) of a SASS instruction's text; space None for an
    instruction touching neither shared nor local memory."""
    opcode = _PREDICATE.sub("", sass).split(" ", 1)[0].strip()
    base, _, modifiers = opcode.partition(".")
    width = _width(modifiers.split(".") if modifiers else [])
    if base in SHARED_LOADS:
        return opcode, "shared", "ld", width
    if base in SHARED_STORES:
        return opcode, "shared", "st", width
    if base in LOCAL_LOADS:
        return opcode, "local", "ld", width
    if base in LOCAL_STORES:
        return opcode, "local", "st", width
    return opcode, None, "other", width


def _width(modifiers: Sequence[str]) -> int:
    for modifier in modifiers:
        digits = re.fullmatch(r"[USF]?(8|16|32|64|128)", modifier)
        if digits:
            return int(digits.group(1))
    return 32


def shared_by_side(instructions: Iterable[InstructionRecord]) -> tuple[float, float, float | None, float | None]:
    """Exact excess shared wavefronts of the load instructions and of the store instructions, and
    each side's wavefronts over its ideal (None for a side without instructions)."""
    wavefronts = {"ld": 0.0, "st": 0.0}
    ideal = {"ld": 0.0, "st": 0.0}
    excess = {"ld": 0.0, "st": 0.0}
    for record in instructions:
        if record.space != "shared" or record.side not in excess:
            continue
        wavefronts[record.side] += record.wavefronts or 0.0
        ideal[record.side] += record.ideal or 0.0
        excess[record.side] += record.excess or 0.0
    ways = {side: wavefronts[side] / ideal[side] if ideal[side] else None for side in ideal}
    return excess["ld"], excess["st"], ways["ld"], ways["st"]


# --- lines -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SideFigures:
    """One side (loads or stores) of one line's shared-memory accesses."""

    executions: float | None = None
    wavefronts: float = 0.0
    ideal: float = 0.0

    @property
    def excess(self) -> float:
        return max(self.wavefronts - self.ideal, 0.0)

    @property
    def ways(self) -> float | None:
        return self.wavefronts / self.ideal if self.ideal else None


@dataclass(frozen=True)
class LineRecord:
    """The shared- and local-memory instructions of one source line (or, without line info, of one
    instruction) of one kernel launch, summed."""

    file: str | None  # as shown: relative to the root where under it; None without line info
    line: int | None
    source: str | None  # the line's text, where the file could be read or the report embeds it
    temporary: bool  # the file is a compiler's temporary copy that memlens could not map back
    shared_ld: SideFigures
    shared_st: SideFigures
    local_ld_executions: float | None
    local_st_executions: float | None
    opcodes: tuple[str, ...]  # the SASS opcodes on the line, in address order, each once
    sass: str | None = None  # the instruction, where the line stands for one (no line info)
    # the file on disk changed after the report was written (and the run kept no copy): its text at
    # this line is another line's, so `source` is None
    stale: bool = False

    @property
    def excess(self) -> float:
        return self.shared_ld.excess + self.shared_st.excess

    @property
    def local_executions(self) -> float:
        return (self.local_ld_executions or 0.0) + (self.local_st_executions or 0.0)

    @property
    def location(self) -> str:
        if self.file is None:
            return self.sass or "?"
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, object]:
        def side(figures: SideFigures) -> dict[str, object]:
            return {"executions": figures.executions, "wavefronts": figures.wavefronts, "ideal": figures.ideal,
                    "excess_wavefronts": figures.excess, "n_way": figures.ways}

        return {
            "file": self.file, "line": self.line, "source": self.source, "temporary_file": self.temporary,
            "source_changed_since_report": self.stale,
            "sass": self.sass, "opcodes": list(self.opcodes),
            "excess_wavefronts": self.excess,
            "shared_ld": side(self.shared_ld), "shared_st": side(self.shared_st),
            "local_ld_executions": self.local_ld_executions, "local_st_executions": self.local_st_executions,
        }  # fmt: skip


@dataclass(frozen=True)
class SourceMap:
    """How recorded file names become shown ones: `root` (paths under it shown relative; a path
    recorded on another machine is found under it by its longest existing tail), the text the run
    kept per file (ncu --import-source, or memlens's copy in results.json), the declared sources of
    the launch's variant (for CuPy's temporary copies), and when the report was written (`written_at`,
    seconds since the epoch): a file read from disk that changed after it is not quoted."""

    root: Path
    embedded: Mapping[str, str] | None = None
    declared: tuple[str, ...] = ()
    written_at: float | None = None

    def resolve(self, recorded: str, kernel: str = "") -> tuple[str, Path | None, bool]:
        """(shown name, readable file or None, whether it is an unmapped temporary copy)."""
        if TEMPORARY_SOURCE.search(recorded):
            declared = self._declared_for(kernel)
            if declared is None:
                cached = cupy_cached_source(recorded)
                if cached is not None or (self.embedded and recorded in self.embedded):
                    return cupy_name(recorded, kernel), cached, False
                return recorded, None, True
            recorded = declared
        found = _find(recorded, str(self.root))
        if found is None:
            return recorded, None, False
        try:
            return str(found.relative_to(self.root)), found, False
        except ValueError:
            return str(found), found, False

    def _declared_for(self, kernel: str) -> str | None:
        cuda = [d for d in self.declared if d.endswith((".cu", ".cuh"))]
        if len(cuda) == 1:
            return cuda[0]
        base = re.split(r"[<(\[]", kernel, maxsplit=1)[0].strip()
        matching = [d for d in cuda if base and base in _text(d, str(self.root))]
        return matching[0] if len(matching) == 1 else None

    def line_text(self, recorded: str, shown_file: Path | None, line: int) -> str | None:
        text, _ = self.file_text(recorded, shown_file)
        if text is None:
            return None
        lines = text.splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else None

    def file_text(self, recorded: str, shown_file: Path | None) -> tuple[str | None, bool]:
        """(the file's text as the run kept it, else as on disk; whether the file on disk changed
        after the report was written, when its text is then None)."""
        text = self.embedded.get(recorded) if self.embedded else None
        if text is not None or shown_file is None:
            return text, False
        if self.changed_since_report(shown_file):
            return None, True
        return _read(str(shown_file)), False

    def changed_since_report(self, path: Path) -> bool:
        if self.written_at is None:
            return False
        try:
            return path.stat().st_mtime > self.written_at + CHANGE_TOLERANCE_S
        except OSError:
            return False


# A file written this long after the report still reads as unchanged: a checkout or a copy writes a
# report and its sources within moments of each other, in either order.
CHANGE_TOLERANCE_S = 2.0
# CuPy compiles `<cache>/<hash>.cubin` from a temporary `<hash>.cubin.cu`; with
# CUPY_CACHE_SAVE_CUDA_SOURCE=1 it saves the source as `<cache>/<hash>.cubin.cu`, the same name.
CUPY_SAVE_SOURCE = "CUPY_CACHE_SAVE_CUDA_SOURCE"


def cupy_cache_dirs() -> tuple[Path, ...]:
    """Where CuPy keeps its kernel cache: $CUPY_CACHE_DIR, else ~/.cupy/kernel_cache."""
    configured = os.environ.get("CUPY_CACHE_DIR")
    return (Path(configured),) if configured else (Path.home() / ".cupy" / "kernel_cache",)


def cupy_cached_source(recorded: str) -> Path | None:
    """The source CuPy saved in its cache for the temporary file `recorded`, where it did."""
    name = Path(recorded).name
    for folder in cupy_cache_dirs():
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def cupy_name(recorded: str, kernel: str) -> str:
    """How a recovered CuPy source is shown: by its kernel, with the cache's file name."""
    words = re.split(r"[<(\[]", kernel, maxsplit=1)[0].split()
    base = words[-1] if words else "kernel"
    return f"CuPy {base} ({Path(recorded).name})"


@lru_cache(maxsize=256)
def _find(recorded: str, root: str) -> Path | None:
    """The file `recorded` names: under `root` by its longest tail that exists there (a report made
    on another machine, or in another checkout, names the same files), else the path itself."""
    path = Path(recorded)
    parts = path.parts[1:] if path.is_absolute() else path.parts
    for start in range(len(parts)):
        candidate = Path(root, *parts[start:])
        if candidate.is_file():
            return candidate.resolve()
    return path.resolve() if path.is_file() else None


@lru_cache(maxsize=256)
def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _text(recorded: str, root: str) -> str:
    found = _find(recorded, root)
    return (_read(str(found)) or "") if found else ""


def roll_up(instructions: Sequence[InstructionRecord], sources: SourceMap, kernel: str = "") -> list[LineRecord]:
    """The lines of `instructions` (one entry an instruction where there is no line info), hottest
    first: by excess wavefronts, then local executions."""
    groups: dict[tuple[str | None, int | None, int | None], list[InstructionRecord]] = {}
    for record in sorted(instructions, key=lambda r: r.pc):
        key = (record.file, record.line, None) if record.file else (None, None, record.pc)
        groups.setdefault(key, []).append(record)
    lines = [_line(records, sources, kernel) for records in groups.values()]
    lines.sort(key=lambda r: (-r.excess, -r.local_executions, r.file or "", r.line or 0))
    return lines


def _line(records: list[InstructionRecord], sources: SourceMap, kernel: str) -> LineRecord:
    first = records[0]
    shown = source = None
    temporary = stale = False
    if first.file:
        shown, path, temporary = sources.resolve(first.file, kernel)
        if first.line:
            source = sources.line_text(first.file, path, first.line)
            stale = source is None and sources.file_text(first.file, path)[1]
    return LineRecord(
        file=shown, line=first.line if first.file else None, source=source, temporary=temporary,
        shared_ld=_side(records, "ld"), shared_st=_side(records, "st"),
        local_ld_executions=_local(records, "ld"), local_st_executions=_local(records, "st"),
        opcodes=tuple(dict.fromkeys(r.opcode for r in records)),
        sass=None if first.file else first.sass, stale=stale,
    )  # fmt: skip


def _side(records: list[InstructionRecord], side: str) -> SideFigures:
    chosen = [r for r in records if r.space == "shared" and r.side == side]
    executions = [r.executions for r in chosen]
    return SideFigures(
        executions=None if not chosen or None in executions else float(sum(executions)),  # type: ignore[arg-type]
        wavefronts=float(sum(r.wavefronts or 0.0 for r in chosen)),
        ideal=float(sum(r.ideal or 0.0 for r in chosen)),
    )


def _local(records: list[InstructionRecord], side: str) -> float | None:
    chosen = [r.executions for r in records if r.space == "local" and r.side == side]
    if not chosen or None in chosen:
        return None
    return float(sum(chosen))  # type: ignore[arg-type]


def has_line_info(instructions: Iterable[InstructionRecord]) -> bool:
    return any(record.file for record in instructions)
