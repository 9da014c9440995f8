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
from typing import Any

from memlens.model.catalogue import CATALOGUE, PER_INSTRUCTION_METRICS, PER_PC_EXECUTIONS
from memlens.model.instruction_kinds import classify
from memlens.model.results import printable
from memlens.model.source_lines import InstructionRecord, shared_totals

Action = Any
Decoded = tuple[str, str | None, str, int, str]  # opcode, space, side, width, SASS text
SharedSplit = tuple["float | None", ...]  # PER_INSTRUCTION_METRICS' values, in its order
Binary = tuple[str, int, int, int]  # kernel name, executed instructions, first and last PC
Records = tuple[InstructionRecord, ...]

WAVEFRONTS = CATALOGUE["shared_wavefronts"].ncu or ""
IDEAL = CATALOGUE["shared_wavefronts_ideal"].ncu or ""
SPLIT_KEYS = tuple(metric.key for metric in PER_INSTRUCTION_METRICS)


class InstructionReader:
    """Reads per-instruction figures of actions, caching each binary's decoded instructions."""

    def __init__(self) -> None:
        self.decoded: dict[tuple[Binary, int], Decoded] = {}
        self.indices: dict[tuple[Binary, str, frozenset[int]], dict[int, int]] = {}  # PC -> instance index, per metric
        self.memory_pcs: dict[Binary, tuple[int, ...]] = {}  # executed local and TMA instructions

    def decode(self, action: Action, binary: Binary, pc: int) -> Decoded:
        key = (binary, pc)
        found = self.decoded.get(key)
        if found is None:
            sass = printable(str(action.sass_by_pc(pc) or "")).strip()
            found = (*classify(sass), sass)
            self.decoded[key] = found
        return found

    def figures(self, action: Action, kernel: str, lines: bool) -> tuple[SharedSplit | None, Records]:
        """The launch's per-instruction shared-memory figures (PER_INSTRUCTION_METRICS, in its order; None
        where the action holds no per-instruction wavefronts: not collected, or a report without
        instances) and, with `lines`, every shared-memory, local-memory and TMA instruction with its
        figures and source line (else none). The per-PC values are read once for both."""
        wavefronts, ideal = _per_pc(action, WAVEFRONTS), _per_pc(action, IDEAL)
        binary = _binary(action, kernel)
        pcs = set(wavefronts or ()) | (set(self._memory_pcs(action, binary)) if lines else set())
        executed = self._values(action, binary, PER_PC_EXECUTIONS, pcs)
        records = []
        for pc in sorted(pcs):
            opcode, space, side, width, sass = self.decode(action, binary, pc)
            if side == "never":
                continue
            shared = wavefronts is not None and pc in wavefronts
            file, line = _source(action, pc) if lines else (None, None)
            records.append(InstructionRecord(
                pc, sass, opcode, "shared" if shared else space or "shared", side, width, file, line,
                executions=None if executed is None else executed.get(pc, 0.0),
                wavefronts=wavefronts.get(pc) if shared else None,
                ideal=(ideal or {}).get(pc, 0.0) if shared else None,
            ))  # fmt: skip
        return self._split(action, wavefronts, ideal, records, executed is not None), tuple(records) if lines else ()

    @staticmethod
    def _split(action: Action, wavefronts: dict[int, float] | None, ideal: dict[int, float] | None,
               records: list[InstructionRecord], with_executions: bool) -> SharedSplit | None:  # fmt: skip
        if wavefronts is None or ideal is None:
            return None
        if not wavefronts and _total(action, WAVEFRONTS) not in (0.0, None):
            return None
        totals = shared_totals(records, with_executions)
        return tuple(totals[key] for key in SPLIT_KEYS)

    def _memory_pcs(self, action: Action, binary: Binary) -> tuple[int, ...]:
        """The executed local-memory and TMA instructions of a binary: every executed instruction
        decoded once per binary (neither carries shared wavefronts to find it by)."""
        found = self.memory_pcs.get(binary)
        if found is None:
            executed = _per_pc(action, PER_PC_EXECUTIONS) or {}
            found = tuple(pc for pc in sorted(executed) if self.decode(action, binary, pc)[1] in ("local", "tma"))
            self.memory_pcs[binary] = found
        return found

    def _values(self, action: Action, binary: Binary, name: str, pcs: Iterable[int]) -> dict[int, float] | None:
        """PC -> value of the metric `name` for the PCs wanted; None where the action does not hold
        the metric. The instance index of each PC is looked up once per binary and checked each launch."""
        metric = action.metric_by_name(name)
        if metric is None:
            return None
        wanted = frozenset(pcs)  # type: ignore[arg-type]
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
