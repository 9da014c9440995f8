"""Where in the code: per-instruction records of shared- and local-memory instructions, and their
roll-up to source lines (file, line, the line's text).

ncu's instrumented `memory_l1_wavefronts_shared` and `memory_l1_wavefronts_shared_ideal` carry one
value per SASS instruction (their correlation ids are the instructions' PCs); the source-level
`inst_executed` counts each instruction's warp-level executions. A report maps each PC to its SASS
text and, for kernels compiled with line info, to a file and line. This module knows nothing of
ncu_report: readers make the records, renderers show the lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memlens.io.cuda_tools import NVDISASM_PACKAGE
from memlens.io.files import note_input
from memlens.io.units import counted
from memlens.model.cupy_cache import cupy_cached_source
from memlens.model.instruction_kinds import Side, Space
from memlens.model.instruction_table import (
    NO_REMOTE_BANKS,
    RUNTIME_ARRAY,
    SPILL,
    InstructionRecord,
    KindTotals,
    Placement,
    SideFigures,
    coalescing_words,
    kind_totals,
    local_memory_causes,
)

LINE_INFO_HINT = (
    "no line info in this report: compile with -lineinfo (nvcc, NVRTC, CuPy options=('-lineinfo',)) "
    "or Numba cuda.jit(lineinfo=True) to name source lines"
)

# A CuPy kernel is compiled from a temporary copy of its source, named by a hash of it.
TEMPORARY_SOURCE = re.compile(r"(^|/)[0-9a-f]{40}\.cubin\.cu$")


# --- lines -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LineRecord:
    """The shared-memory, local-memory and TMA instructions of one source line (or, without line
    info, of one instruction) of one kernel launch, summed."""

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
    shared_mma: SideFigures = SideFigures()  # tensor-core operand reads (HGMMA ...)
    tma_executions: float | None = None  # TMA transfers: executions, no wavefronts
    kinds: tuple[KindTotals, ...] = ()  # each kind of instruction on the line, in address order
    # the file on disk changed after the report was written (and the run kept no copy): its text at
    # this line is another line's, so `source` is None
    stale: bool = False
    shared_atom: SideFigures = SideFigures()  # shared atomics (ATOMS ...)
    remote_executions: float | None = None  # loads and stores of a cluster partner's shared memory
    inlined_from: tuple[str, ...] = ()  # the library functions inlined here whose instructions count on the line
    pcs: tuple[int, ...] = ()  # its instructions' PCs as the report correlates them, in address order

    @property
    def excess(self) -> float:
        return self.shared_ld.excess + self.shared_st.excess + self.shared_atom.excess + self.shared_mma.excess

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
            return {
                "executions": figures.executions,
                "wavefronts": figures.wavefronts,
                "ideal": figures.ideal,
                "excess_wavefronts": figures.excess,
                "n_way": figures.ways,
            }

        return {
            "file": self.file,
            "line": self.line,
            "source": self.source,
            "temporary_file": self.temporary,
            "source_changed_since_report": self.stale,
            "sass": self.sass,
            "opcodes": list(self.opcodes),
            "excess_wavefronts": self.excess,
            "shared_ld": side(self.shared_ld),
            "shared_st": side(self.shared_st),
            "shared_mma": side(self.shared_mma),
            "shared_atom": side(self.shared_atom),
            "remote_shared_executions": self.remote_executions,
            "inlined_from": list(self.inlined_from),
            "local_ld_executions": self.local_ld_executions,
            "local_st_executions": self.local_st_executions,
            "tma_executions": self.tma_executions,
            "kinds": [kind.to_json() for kind in self.kinds],
        }


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
        note_input(found)  # the file a line names: an input, though its text may come from the run's copy
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


def _read(path: str) -> str | None:
    """The text of a source file, noted as an input of the command (no output may replace it)."""
    note_input(path)
    return _read_cached(path)


@lru_cache(maxsize=256)
def _read_cached(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _text(recorded: str, root: str) -> str:
    found = _find(recorded, root)
    return (_read(str(found)) or "") if found else ""


def roll_up(instructions: Sequence[InstructionRecord], sources: SourceMap, kernel: str = "") -> list[LineRecord]:
    """The lines of `instructions` (where there is no line info, one entry a kind of instruction, of those
    that ran), hottest first: by excess wavefronts, then local executions."""
    groups: dict[tuple[str | None, int | None, str | None], list[InstructionRecord]] = {}
    for record in sorted(instructions, key=lambda r: r.pc):
        if record.file:
            key: tuple[str | None, int | None, str | None] = (record.file, record.line, None)
        elif record.executions == 0:
            continue  # no line to name, and it never ran: nothing to say
        else:
            key = (None, None, record.kind.name)
        groups.setdefault(key, []).append(record)
    lines = [_line(records, sources, kernel) for records in groups.values()]
    lines.sort(key=lambda r: (-r.excess, -r.local_executions, -(r.tma_executions or 0.0), r.file or "", r.line or 0))
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
        file=shown,
        line=first.line if first.file else None,
        source=source,
        temporary=temporary,
        shared_ld=_side(records, Side.LD),
        shared_st=_side(records, Side.ST),
        local_ld_executions=_local(records, Side.LD),
        local_st_executions=_local(records, Side.ST),
        opcodes=tuple(dict.fromkeys(r.opcode for r in records)),
        sass=None if first.file else _kind_group(records),
        stale=stale,
        shared_mma=_side(records, Side.MMA),
        tma_executions=_counted(r.executions for r in records if r.space == Space.TMA),
        kinds=kind_totals(records),
        shared_atom=_side(records, Side.ATOM),
        remote_executions=_counted(r.executions for r in records if r.space == Space.REMOTE_SHARED),
        inlined_from=tuple(dict.fromkeys(r.inlined_from for r in records if r.inlined_from)),
        pcs=tuple(r.pc for r in records),
    )


def _side(records: list[InstructionRecord], side: Side) -> SideFigures:
    chosen = [r for r in records if r.space == Space.SHARED and r.side == side]
    return SideFigures(
        executions=_counted(r.executions for r in chosen),
        wavefronts=float(sum(r.wavefronts or 0.0 for r in chosen)),
        ideal=float(sum(r.ideal or 0.0 for r in chosen)),
    )


def _local(records: list[InstructionRecord], side: Side) -> float | None:
    return _counted(r.executions for r in records if r.space == Space.LOCAL and r.side == side)


def _counted(executions: Iterable[float | None]) -> float | None:
    """The sum of the executions; None where there are none, or one is not known."""
    values = list(executions)
    if not values or None in values:
        return None
    return float(sum(values))  # type: ignore[arg-type]


def _kind_group(records: list[InstructionRecord]) -> str:
    """How a kind's instructions are named where there is no line info: "shared loads (3 instructions, no
    line info)", or the one instruction's SASS."""
    if len(records) == 1:
        return records[0].sass
    return f"{records[0].kind.name} ({len(records)} instructions, no line info)"


def has_line_info(instructions: Iterable[InstructionRecord]) -> bool:
    return any(record.file for record in instructions)


def line_words(line: LineRecord, count: Callable[[float], str], problems_only: bool = False) -> list[str]:
    """Each kind of instruction on a line with its figures, in words: "ldmatrix loads 8-way, 28 excess
    wavefronts", "cp.async stores conflict-free (1-way)", "local loads 4,096 executions", "TMA
    transfers 64 executions (no wavefronts: ...)"; `count` formats a count. `problems_only`: only the
    kinds that conflict or touch local memory."""
    words = []
    for figures in sorted(line.kinds, key=lambda k: not _problem(k)):  # what to fix first, then the rest
        name = figures.kind.name
        always_shown = figures.kind.space in (Space.LOCAL, Space.REMOTE_SHARED, Space.GLOBAL)
        if problems_only and not figures.excess and not always_shown:
            continue
        if figures.kind.space == Space.SHARED:
            ways = figures.ways
            if figures.excess:
                words.append(f"{name} {ways:.3g}-way, {counted(count(figures.excess), 'excess wavefront')}")
            elif ways is not None:
                words.append(f"{name} conflict-free (1-way)")
            elif figures.wavefronts:
                words.append(f"{name}, {counted(count(figures.wavefronts), 'wavefront')}")
        elif figures.kind.space == Space.TMA:
            ran = f" {counted(count(figures.executions), 'execution')}" if figures.executions is not None else ""
            words.append(f"{name}{ran} (no wavefronts: ncu does not count the copy engine's shared-memory accesses)")
        elif figures.kind.space == Space.REMOTE_SHARED:
            ran = f" {counted(count(figures.executions), 'execution')}" if figures.executions is not None else ""
            words.append(f"{name}{ran} ({NO_REMOTE_BANKS})")
        elif figures.kind.space == Space.GLOBAL:
            words.extend(_global_words(figures, problems_only))
        elif figures.executions:
            words.append(f"{name} {counted(count(figures.executions), 'execution')}")
    if line.inlined_from and words:  # how the line was found: placement_note, once a kernel
        words.append(f"with inlined {', '.join(Path(where).name for where in line.inlined_from)}")
    return words


# Why inlined library code was counted on the nearest line rather than its caller's (a Placement, or None:
# a results.json written before memlens read the binary's inline chains).
_NEAREST_BECAUSE: dict[Placement | None, str] = {
    Placement.NO_NVDISASM: f"nvdisasm was not found to read its caller's line from the kernel's binary (pip "
    f"install {NVDISASM_PACKAGE}, or memlens[lines], or put a CUDA toolkit's nvdisasm on PATH)",
    Placement.NO_BINARY: "the report holds no binary of this kernel with line info to read its caller's line from",
    Placement.NO_CHAIN: "the kernel's binary records no inline chain for it (Triton's records none)",
    None: "so placed when this results.json was written; its run's profile.ncu-rep, read again, names the callers",
}


def placement_note(instructions: Iterable[InstructionRecord]) -> str | None:
    """How inlined library code was placed, said once a kernel, where it went on the nearest line of the
    kernel's own code in address order rather than its caller's (None where every instruction is on its
    caller's line, from the binary, or none is inlined)."""
    nearest = [r for r in instructions if r.inlined_from and r.placed_by is not Placement.CALLER]
    if not nearest:
        return None
    inlined = ", ".join(dict.fromkeys(Path(r.inlined_from or "").name for r in nearest))
    reasons = "; ".join(dict.fromkeys(_NEAREST_BECAUSE[r.placed_by] for r in nearest))
    return (
        f"inlined library code ({inlined}) is counted on the nearest line of the kernel's own code in address "
        f"order, which may be another statement's: {reasons}"
    )


def _problem(figures: KindTotals) -> bool:
    """A kind that conflicts, touches local memory or is uncoalesced."""
    uncoalesced = coalescing_words(figures.sectors_over_ideal) is not None
    return bool(figures.excess) or figures.kind.space == Space.LOCAL or uncoalesced


def _global_words(figures: KindTotals, problems_only: bool) -> list[str]:
    """ "global loads 32 sectors per access, 8x the ideal 4 (uncoalesced)", or "global loads coalesced
    (16 sectors per access, the ideal)"; with `problems_only`, only uncoalesced kinds."""
    per, ideal, ratio = figures.sectors_per_access, figures.ideal_sectors_per_access, figures.sectors_over_ideal
    if per is None or ideal is None or ratio is None:
        return []
    name = figures.kind.name
    words = coalescing_words(ratio)
    if words:
        return [f"{name} {words}: {counted(f'{per:.3g}', 'sector')} per access, {ratio:.3g}x the ideal {ideal:.3g}"]
    if problems_only:
        return []
    if ratio > 1:
        return [f"{name} {counted(f'{per:.3g}', 'sector')} per access, {ratio:.3g}x the ideal {ideal:.3g}"]
    return [f"{name} coalesced ({counted(f'{per:.3g}', 'sector')} per access, the ideal)"]


def local_cause(records: Sequence[InstructionRecord], line: LineRecord) -> str:
    """A local-memory line's cause, SPILL or RUNTIME_ARRAY: the kernel's one cause of local memory (what the
    report and `memlens metrics` say of it), so that a local array zeroed at fixed stack offsets
    (`STL.128 [R1+0x10]`) is not a spill on that line; only a kernel with both causes names each line by its
    own accesses (by line number and file name)."""
    causes = local_memory_causes(records)
    if len(causes) != 1:  # both (or none executed)
        name = Path(line.file).name if line.file else None
        here = [r for r in records if r.line == line.line and name and Path(r.file or "").name == name]
        causes = local_memory_causes(here) or causes
    return RUNTIME_ARRAY if RUNTIME_ARRAY in causes and SPILL not in causes else SPILL
