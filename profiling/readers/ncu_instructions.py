"""Per-instruction values of one action (kernel launch) of an .ncu-rep, through `ncu_report`.

The instrumented shared-memory wavefront metrics carry one instance per SASS instruction that
touches shared memory (correlation id: the PC); `inst_executed` one per executed instruction. An
action disassembles its SASS on the first `sass_by_pc` (milliseconds; about 75 microseconds an
instruction after that), so opcodes are decoded once per kernel binary (its name and the PC range of
its executed instructions) and cached; so are the instance indices of the PCs that matter, which the
launches of one binary share, so that a launch reads a few instances, not its thousands.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from memlens.model import catalogue
from memlens.model.catalogue import CATALOGUE, PER_INSTRUCTION_METRICS, PER_PC_EXECUTIONS
from memlens.model.instruction_kinds import Side, Space, classify
from memlens.model.instruction_table import (
    GLOBAL,
    LOCAL,
    SHARED,
    InstructionRecord,
    Placement,
    access_side,
    access_width_bits,
    is_library_source,
    kernel_totals,
    shared_side,
)
from memlens.model.results import printable
from memlens.readers.inline_chains import Binary, InlineCallers

Action = Any


class Decoded(NamedTuple):
    """An instruction as its opcode classifies it (instruction_kinds.classify), with its SASS text."""

    opcode: str
    space: Space | None
    side: Side
    width_bits: int
    sass: str


Totals = dict[str, "float | None"]  # PER_INSTRUCTION_METRICS' values by key
Records = tuple[InstructionRecord, ...]
Location = tuple[str | None, int | None, str | None, Placement | None]  # file, line, inlined from, placed by

WAVEFRONTS = CATALOGUE["shared_wavefronts"].ncu or ""
IDEAL = CATALOGUE["shared_wavefronts_ideal"].ncu or ""
SPLIT_KEYS = tuple(metric.key for metric in PER_INSTRUCTION_METRICS)
USER_CODE_SEARCH = 64  # instructions searched on each side for the user's line behind inlined library code


class InstructionReader:
    """Reads per-instruction figures of actions, caching each binary's decoded instructions."""

    def __init__(self, report: Path | None = None) -> None:
        self.callers = InlineCallers(report)
        self.decoded: dict[tuple[Binary, int], Decoded] = {}
        self.indices: dict[tuple[Binary, str, frozenset[int]], dict[int, int]] = {}  # PC -> instance index, per metric
        self.memory_pcs: dict[Binary, tuple[int, ...]] = {}  # executed local and TMA instructions
        self.locations: dict[tuple[Binary, int], Location] = {}

    def decode(self, action: Action, binary: Binary, pc: int) -> Decoded:
        key = (binary, pc)
        found = self.decoded.get(key)
        if found is None:
            sass = printable(str(action.sass_by_pc(pc) or "")).strip()
            found = Decoded(*classify(sass), sass)
            self.decoded[key] = found
        return found

    def figures(self, action: Action, kernel: str, lines: bool) -> tuple[Totals | None, Records]:
        """The launch's per-instruction figures (PER_INSTRUCTION_METRICS by key; None where the action
        holds no per-instruction wavefronts: not collected, or a report without instances) and, with
        `lines`, every memory instruction with its figures and source line (else none). Each instruction
        is placed by what ncu recorded for it (memory type, access type, width), by its opcode where ncu
        recorded nothing (an older report)."""
        wavefronts, ideal = _per_pc(action, WAVEFRONTS), _per_pc(action, IDEAL)
        memory_types = _per_pc(action, catalogue.MEMORY_TYPE)
        binary = _binary(action, kernel)
        pcs = set(wavefronts or ()) | set(memory_types or ())
        if lines and memory_types is None:  # else ncu's memory types already name every memory instruction
            pcs |= set(self._memory_pcs(action, binary))
        values = {
            name: self._values(action, binary, name, pcs)
            for name in (
                PER_PC_EXECUTIONS,
                catalogue.MEMORY_ACCESS_TYPE,
                catalogue.MEMORY_ACCESS_SIZE,
                catalogue.GLOBAL_SECTORS,
                catalogue.GLOBAL_SECTORS_IDEAL,
            )
        }
        executed = values[PER_PC_EXECUTIONS]
        records = []
        for pc in sorted(pcs):
            record = self._record(action, binary, pc, wavefronts, ideal, memory_types, values, lines)
            if record is not None:
                records.append(record)
        return self._totals(action, wavefronts, ideal, records, executed is not None), tuple(records) if lines else ()

    def _record(
        self,
        action: Action,
        binary: Binary,
        pc: int,
        wavefronts: dict[int, float] | None,
        ideal: dict[int, float] | None,
        memory_types: dict[int, float] | None,
        values: dict[str, dict[int, float] | None],
        lines: bool,
    ) -> InstructionRecord | None:
        opcode, by_opcode, opcode_side, opcode_width, sass = self.decode(action, binary, pc)
        if opcode_side == "never":
            return None
        executed = values[PER_PC_EXECUTIONS]
        access = _int(values[catalogue.MEMORY_ACCESS_TYPE], pc)
        memory_type = _int(memory_types, pc)
        waves = (wavefronts or {}).get(pc)
        has_waves = bool(waves) or bool((ideal or {}).get(pc))
        space = _space(by_opcode, memory_type, has_waves, wavefronts is not None and pc in wavefronts)
        if space is None:
            return None
        side = _side(space, opcode, memory_type, access, opcode_side)
        size = _int(values[catalogue.MEMORY_ACCESS_SIZE], pc)
        sectors = (values[catalogue.GLOBAL_SECTORS] or {}).get(pc)
        touches_global = memory_type is not None and bool(memory_type & GLOBAL) and sectors is not None
        file, line, inlined, placed_by = self.location(action, binary, pc) if lines else (None, None, None, None)
        start = self.callers.start(action, binary)
        return InstructionRecord(
            pc,
            sass,
            opcode,
            space,
            side,
            access_width_bits(size, opcode_width),
            file,
            line,
            executions=None if executed is None else executed.get(pc, 0.0),
            wavefronts=waves if space == Space.SHARED else None,
            ideal=(ideal or {}).get(pc, 0.0) if space == Space.SHARED else None,
            memory_type=memory_type,
            access_type=access,
            global_sectors=sectors if touches_global else None,
            global_sectors_ideal=(values[catalogue.GLOBAL_SECTORS_IDEAL] or {}).get(pc) if touches_global else None,
            inlined_from=inlined,
            placed_by=placed_by,
            pc_offset=None if start is None else pc - start,
        )

    def location(self, action: Action, binary: Binary, pc: int) -> Location:
        """(file, line, inlined-from, placement) of an instruction: where ncu's location lies in an inlined
        library function (a CUDA header, Triton's language library), the line of the user's code that called
        it, from the binary's inline chain (inline_chains.py), else the nearest instruction of the user's own
        code in address order (before it, else after it) stands for it; the library's location is named beside."""
        key = (binary, pc)
        found = self.locations.get(key)
        if found is not None:
            return found
        file, line = _source(action, pc)
        found = (file, line, None, None)
        if file and is_library_source(file):
            frame, placement = self.callers.caller(action, binary, pc, self.decode(action, binary, pc).opcode)
            caller = frame if frame is not None else _nearest_user_line(action, pc)
            if caller is not None:
                found = (caller[0], caller[1], f"{file}:{line}", placement)
        self.locations[key] = found
        return found

    @staticmethod
    def _totals(
        action: Action,
        wavefronts: dict[int, float] | None,
        ideal: dict[int, float] | None,
        records: list[InstructionRecord],
        with_executions: bool,
    ) -> Totals | None:
        if wavefronts is None or ideal is None:
            return None
        if not wavefronts and _total(action, WAVEFRONTS) not in (0.0, None):
            return None
        return kernel_totals(records, with_executions)

    def _memory_pcs(self, action: Action, binary: Binary) -> tuple[int, ...]:
        """The executed local-memory and TMA instructions of a binary where ncu recorded no memory types
        (an older report): every executed instruction decoded once per binary (neither carries shared
        wavefronts to find it by)."""
        found = self.memory_pcs.get(binary)
        if found is None:
            executed = _per_pc(action, PER_PC_EXECUTIONS) or {}
            memory = (Space.LOCAL, Space.TMA)
            found = tuple(pc for pc in sorted(executed) if self.decode(action, binary, pc).space in memory)
            self.memory_pcs[binary] = found
        return found

    def _values(self, action: Action, binary: Binary, name: str, pcs: Iterable[int]) -> dict[int, float] | None:
        """PC -> value of the metric `name` for the PCs wanted; None where the action does not hold
        the metric. The instance index of each PC is looked up once per binary and checked each launch."""
        metric = action.metric_by_name(name)
        if metric is None:
            return None
        wanted = frozenset(pcs)
        count = metric.num_instances()
        if not count or not metric.has_correlation_ids():
            return {}
        ids = metric.correlation_ids()
        key = (binary, name, wanted)
        index = self.indices.get(key)
        if index is None or any(i >= count or int(ids.as_uint64(i)) != pc for pc, i in index.items()):
            every = {int(ids.as_uint64(i)): i for i in range(count)}
            index = self.indices[key] = {pc: every[pc] for pc in wanted if pc in every}
        integer = metric.kind() in (metric.ValueKind_UINT64, metric.ValueKind_UINT32)
        get = metric.as_uint64 if integer else metric.as_double
        return {pc: float(get(i)) for pc, i in index.items()}


def _binary(action: Action, kernel: str) -> Binary:
    """What tells a kernel's binaries apart: its name, and the count and range of the PCs it executed
    (Triton's autotuned versions of one kernel share the name)."""
    metric = action.metric_by_name(PER_PC_EXECUTIONS) or action.metric_by_name(WAVEFRONTS)
    if metric is None or not metric.num_instances() or not metric.has_correlation_ids():
        return (kernel, 0, 0, 0)
    count = metric.num_instances()
    ids = metric.correlation_ids()
    return (kernel, count, int(ids.as_uint64(0)), int(ids.as_uint64(count - 1)))


def _per_pc(action: Action, name: str) -> dict[int, float] | None:
    """PC -> value of a correlated metric; None where the action does not hold it."""
    metric = action.metric_by_name(name)
    if metric is None:
        return None
    count = metric.num_instances()
    if not count or not metric.has_correlation_ids():
        return {}
    ids = metric.correlation_ids()
    integer = metric.kind() in (metric.ValueKind_UINT64, metric.ValueKind_UINT32)
    get = metric.as_uint64 if integer else metric.as_double
    return {int(ids.as_uint64(i)): float(get(i)) for i in range(count)}


def _total(action: Action, name: str) -> float | None:
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_value():
        return None
    try:
        return float(metric.as_double())
    except (TypeError, ValueError):
        return None


def _nearest_user_line(action: Action, pc: int) -> tuple[str, int | None] | None:
    """The location of the nearest instruction of the user's own code in address order (at each distance,
    before it, else after it), up to USER_CODE_SEARCH instructions away."""
    for distance in range(1, USER_CODE_SEARCH + 1):
        for near in (pc - 16 * distance, pc + 16 * distance):
            user_file, user_line = _source(action, near)
            if user_file and not is_library_source(user_file):
                return user_file, user_line
    return None


def _source(action: Action, pc: int) -> tuple[str | None, int | None]:
    info = action.source_info(pc)
    if info is None:
        return None, None
    name = str(info.file_name() or "")
    line = int(info.line() or 0)
    return (printable(name), line or None) if name else (None, None)


def embedded_sources(action: Action) -> dict[str, str]:
    """File name -> text of the sources the report embeds (ncu --import-source yes)."""
    try:
        files = action.source_files()
        return {str(name): str(files[name]) for name in files.keys()}
    except Exception:  # a third-party binding: no embedded source is not an error
        return {}


def _int(values: dict[int, float] | None, pc: int) -> int | None:
    value = (values or {}).get(pc)
    return None if value is None else int(value)


def _space(by_opcode: Space | None, memory_type: int | None, has_waves: bool, has_wave_record: bool) -> Space | None:
    """Where an instruction's accesses went, by what ncu recorded: shared where it counted shared
    wavefronts; a shared access without any (ncu counts none for a cluster partner's shared memory, reached
    through a generic address) is remote; else local, then global, by its memory-type bits. By opcode where
    ncu recorded no memory type (TMA's copy engine, or an older report)."""
    if by_opcode is Space.TMA:
        return Space.TMA
    if has_waves:
        return Space.SHARED
    if memory_type:
        if memory_type & SHARED:
            return Space.REMOTE_SHARED
        if memory_type & LOCAL:
            return Space.LOCAL
        if memory_type & GLOBAL:
            return Space.GLOBAL
    if memory_type == 0:  # recorded, never ran
        return by_opcode if by_opcode in (Space.SHARED, Space.LOCAL) else None
    if has_wave_record:
        return Space.SHARED
    return by_opcode if by_opcode in (Space.SHARED, Space.LOCAL, Space.TMA) else None


def _side(space: Space, opcode: str, memory_type: int | None, access: int | None, opcode_side: Side) -> Side:
    if space is Space.SHARED:
        return shared_side(opcode, memory_type, access, opcode_side)
    if space is Space.GLOBAL:
        return access_side(access, opcode) or Side.OTHER
    return access_side(access, opcode) or opcode_side
