"""Per-instruction values of one action (kernel launch) of an .ncu-rep, through `ncu_report`.

The instrumented shared-memory wavefront metrics carry one instance per SASS instruction that
touches shared memory (correlation id: the PC); `inst_executed` one per executed instruction. An
action disassembles its SASS on the first `sass_by_pc` (milliseconds), so opcodes are cached by
kernel and PC, and the shared load/store split decodes only instructions with excess wavefronts.
Each `sass_by_pc` costs about 75 microseconds (a suite of 14 kernels executes ~3,500 instructions), so
the other executed instructions are decoded, in search of local loads and stores, only in a launch
whose counters do not say it executed none.
"""

from __future__ import annotations

from typing import Any

from ..catalogue import CATALOGUE, PER_PC_EXECUTIONS
from ..results import printable
from ..source_lines import InstructionRecord, classify, shared_by_side

Action = Any
Decoded = tuple[str, str | None, str, int, str]  # opcode, space, side, width, SASS text
SharedSplit = tuple[float, float, "float | None", "float | None"]  # excess ld, excess st, ways ld, ways st

WAVEFRONTS = CATALOGUE["shared_wavefronts"].ncu or ""
IDEAL = CATALOGUE["shared_wavefronts_ideal"].ncu or ""
LOCAL_INSTRUCTIONS = (CATALOGUE["local_ld_instructions"].ncu_names, CATALOGUE["local_st_instructions"].ncu_names)


class InstructionReader:
    """Reads per-instruction figures of actions, caching each kernel's decoded instructions."""

    def __init__(self) -> None:
        self.decoded: dict[tuple[str, int], Decoded] = {}

    def decode(self, action: Action, kernel: str, pc: int) -> Decoded:
        key = (kernel, pc)
        found = self.decoded.get(key)
        if found is None:
            sass = printable(str(action.sass_by_pc(pc) or "")).strip()
            found = (*classify(sass), sass)
            self.decoded[key] = found
        return found

    def shared_split(self, action: Action, kernel: str) -> SharedSplit | None:
        """Exact excess shared wavefronts of loads and of stores, and each side's wavefronts over
        its ideal (PER_INSTRUCTION_METRICS' order); None where the action holds no per-instruction
        wavefronts (not collected, or a report without instances). A launch without excess needs
        no opcode: both sides are conflict-free (1-way)."""
        wavefronts, ideal = _per_pc(action, WAVEFRONTS), _per_pc(action, IDEAL)
        if wavefronts is None or ideal is None:
            return None
        if not wavefronts:
            return (0.0, 0.0, None, None) if _total(action, WAVEFRONTS) in (0.0, None) else None
        if all(value <= ideal.get(pc, 0.0) for pc, value in wavefronts.items()):
            return (0.0, 0.0, 1.0, 1.0)
        records = []
        for pc, value in wavefronts.items():
            opcode, space, side, width, sass = self.decode(action, kernel, pc)
            records.append(InstructionRecord(pc, sass, opcode, "shared", side, width,
                                             wavefronts=value, ideal=ideal.get(pc, 0.0)))  # fmt: skip
        return shared_by_side(records)

    def instructions(self, action: Action, kernel: str) -> tuple[InstructionRecord, ...]:
        """Every shared- and local-memory instruction of the action with its figures."""
        wavefronts = _per_pc(action, WAVEFRONTS) or {}
        ideal = _per_pc(action, IDEAL) or {}
        executed = _per_pc(action, PER_PC_EXECUTIONS)
        pcs = set(wavefronts)
        if not _executed_no_local_instruction(action):
            pcs |= set(executed or ())
        records = []
        for pc in sorted(pcs):
            opcode, space, side, width, sass = self.decode(action, kernel, pc)
            if pc in wavefronts:
                space = "shared"
            elif space != "local":
                continue
            file, line = _source(action, pc)
            records.append(InstructionRecord(
                pc, sass, opcode, space, side, width, file, line,
                executions=None if executed is None else executed.get(pc, 0.0),
                wavefronts=wavefronts.get(pc) if space == "shared" else None,
                ideal=ideal.get(pc) if space == "shared" else None,
            ))  # fmt: skip
        return tuple(records)


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


def _executed_no_local_instruction(action: Action) -> bool:
    """Whether the launch's counters say it executed no local load and no local store (False where
    a counter is missing)."""
    for names in LOCAL_INSTRUCTIONS:
        totals = [_total(action, name) for name in names]
        if next((t for t in totals if t is not None), None) != 0.0:
            return False
    return True


def _total(action: Action, name: str) -> float | None:
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_value():
        return None
    try:
        return float(metric.as_double())
    except (TypeError, ValueError):
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
