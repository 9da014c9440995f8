"""An Nsight Compute report (.ncu-rep) -> RunResults, through NVIDIA's `ncu_report` module.

`ncu_report` (PyPI `ncu-report`) opens reports without a GPU or ncu. Each action of each range is
one profiled kernel launch; launch ids count actions in report order from 0, as ncu's CSV "ID".
A report of many launches is read by two processes or more (see PARALLEL_MIN_ACTIONS; readers/reader_processes.py).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from memlens.errors import InputError, SetupError
from memlens.model.catalogue import CATALOGUE, DEVICE_ATTRIBUTES, PER_INSTRUCTION_METRICS
from memlens.model.instruction_table import InstructionRecord
from memlens.model.kernel_names import kernel_name
from memlens.model.results import KernelResult, RunInfo, RunResults, printable
from memlens.readers import early_disassembly, reader_processes
from memlens.readers.metric_values import (
    NCU_METRICS,
    ProgramLabel,
    ReportedValue,
    absent_reason,
    compute_capability,
    convert,
    is_memlens_domain,
    program_label,
    section_count,
    suite_range,
    with_label,
)
from memlens.readers.ncu_instructions import InstructionReader, Totals, embedded_sources

# ncu_report.IMetric.value() returns str, int, float or None; as_string for the device name.
Action = Any
Context = Any
Slot = tuple[int, int]  # (range index, action index) of an action in the report
Labels = tuple[tuple[str, str] | None, ProgramLabel | None]  # the memlens range, or else the program's label
# kernel name, metric values, labels, excess shared wavefronts of loads and of stores (None: no
# per-instruction values), the launch's shared- and local-memory instructions (where asked for)
Records = tuple[InstructionRecord, ...]
Launch = tuple[str, list[object], Labels, Totals | None, Records]

DURATION = CATALOGUE["duration"].ncu
NO_INSTANCES = "no per-instruction values in the report"
NO_ACCESS = "no shared-memory instruction of this side"
NO_GLOBAL_SECTORS = (
    "this report holds no per-instruction global sectors (memory_l2_theoretical_sectors_global): re-profile with"
    " memlens profile, or ncu --section SourceCounters"
)
NO_EXECUTIONS = (
    "this report holds no per-instruction executions (inst_executed); re-profile with memlens profile, or ncu "
    "--metrics inst_executed or --section SourceCounters"
)

# From this many actions on, a forked helper process reads the later ones while this one reads the
# rest: decoding is ncu_report's (half a millisecond to a few an action, the GIL held), so two processes
# halve it where two CPUs are free. The helper takes the smaller share: an action's NVTX state costs
# more the later it comes.
PARALLEL_MIN_ACTIONS = 100
HELPER_SHARE = 0.44
# From this many actions on (a program's thousands of launches), helpers read chunks of them, as many
# at a time as there are CPUs (up to MAX_HELPERS), and exit: a helper grows by about 0.6 MB an action
# it decodes (what ncu_report keeps for as long as the process lives, and the pages of the loaded
# report it copies), so the helpers at work hold at most IN_FLIGHT_ACTIONS actions between them
# (chunks of IN_FLIGHT_ACTIONS / helpers, MIN_CHUNK_ACTIONS at least). An action takes about 2.3 ms of
# a CPU to decode. Measured on an H200's 10,000-launch report (16 CPUs; memory of all processes at
# once), in-flight actions x helpers: 8,000 x 8 (chunks of 1,000): 6.2 s, 6.0 GiB; 1,000 x 8: 3.4-3.7 s,
# 0.8 GiB; 800 x 16: 2.9 s, 0.55 GiB (tests/benchmarks/RESULTS.md).
REPORT_MAGIC = b"NVR\x00"  # the first bytes of a .ncu-rep written by ncu 2025.3
CHUNKED_MIN_ACTIONS = 2000
IN_FLIGHT_ACTIONS = 800
MIN_CHUNK_ACTIONS = 50
MAX_HELPERS = 16


def read_ncu_rep(path: Path, instructions: bool = False) -> RunResults:
    """The report's launches; with `instructions`, each with its shared- and local-memory
    instructions (file, line, figures) and the run with the sources the report embeds."""
    early_disassembly.settle()
    reader = _LaunchReader(path, _load(path), instructions)
    _read_all(reader, reader.slots())
    if reader.first is None:
        raise InputError(f"{path}: {_why_no_kernels(path)}")
    launches = reader.launches
    from_memlens = any(launch[2][0] is not None for launch in launches)
    kernels = tuple(
        _kernel(name, launch_id, values, r, reader.metrics.units, from_memlens, split, records)
        for launch_id, (name, values, r, split, records) in enumerate(launches)
    )
    embedded = embedded_sources(reader.first) if instructions else {}
    return RunResults(_run_info(reader.first, path), kernels, embedded_sources=embedded)


def _why_no_kernels(path: Path) -> str:
    """A file that starts as ncu writes its reports but holds no kernel was cut short: ncu writes no
    report at all when it profiles nothing."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(REPORT_MAGIC))
    except OSError:
        head = b""
    if head == REPORT_MAGIC and path.stat().st_size > len(REPORT_MAGIC):
        return "no complete kernel in it: a truncated or damaged Nsight Compute report (copy it again, or re-profile)"
    return "no profiled kernels (an empty report, or not an Nsight Compute report)"


def _read_all(reader: _LaunchReader, slots: list[Slot]) -> None:
    """Reads every action: the first alone (decoding it loads NVIDIA's libraries, a tenth of a second,
    which a helper forked after it has loaded already), then the rest, with a helper where there are
    PARALLEL_MIN_ACTIONS or more."""
    reader.read(slots[:1], disassemble=False)  # its instructions once the helpers are forked
    try:
        _read_rest(reader, slots)
    finally:
        reader.disassemble_pending()


def _read_rest(reader: _LaunchReader, slots: list[Slot]) -> None:
    if len(slots) >= CHUNKED_MIN_ACTIONS and reader_processes.cpus() >= 2:
        _read_chunks(reader, slots[1:])
        return
    split = len(slots) - int(len(slots) * HELPER_SHARE)
    parallel = len(slots) >= PARALLEL_MIN_ACTIONS and reader_processes.can_fork()
    helper = reader_processes.Helper.start(reader, slots[split:]) if parallel else None
    if helper is None:
        reader.read(slots[1:])
        return
    try:
        reader.read(slots[1:split])
        helped = helper.result()
    except BaseException:
        helper.stop()
        raise
    if helped is None:  # the helper failed: its share is read here, as without it (the same errors)
        reader.read(slots[split:])
    else:
        reader.merge(*helped)


def _read_chunks(reader: _LaunchReader, slots: list[Slot]) -> None:
    """Reads `slots` in chunks by forked helpers (read_in_forked_chunks). A process that cannot fork
    (another thread runs in it) has one new process read them so, forking helpers of its own; where
    that fails, they are read here, with the same errors."""
    if reader_processes.can_fork():
        read_in_forked_chunks(reader, slots, _chunk_actions())
        return
    helper = reader_processes.SpawnedHelper.start(reader.path, reader.with_instructions, slots, _chunk_actions())
    try:
        helped = helper.result() if helper is not None else None
    except BaseException:
        if helper is not None:
            helper.stop()
        raise
    if helped is None:
        reader.read(slots)
    else:
        reader.merge(*helped)


def _chunk_actions() -> int:
    """Actions a helper reads: IN_FLIGHT_ACTIONS over the helpers at work, MIN_CHUNK_ACTIONS at least."""
    return max(MIN_CHUNK_ACTIONS, IN_FLIGHT_ACTIONS // _workers())


def _workers() -> int:
    return max(1, min(MAX_HELPERS, reader_processes.cpus()))


def read_in_forked_chunks(reader: _LaunchReader, slots: Sequence[Slot], size: int) -> None:
    """Reads `slots` in chunks of `size`, each by a forked helper of its own, up to one a CPU at a
    time, merged in order; a chunk whose helper failed (or could not be forked) is read here, with the
    same errors."""
    chunks = [slots[start : start + size] for start in range(0, len(slots), size)]
    workers = _workers()
    running: list[reader_processes.Helper | None] = []
    started = 0
    try:
        for chunk in chunks:
            while started < len(chunks) and len(running) < workers:
                # a chunk read here starts the disassembler's thread: no fork after that
                forked = reader_processes.can_fork()
                running.append(reader_processes.Helper.start(reader, chunks[started]) if forked else None)
                started += 1
            helper = running.pop(0)
            helped = helper.result() if helper is not None else None
            if helped is None:
                reader.read(chunk)
            else:
                reader.merge(*helped)
    except BaseException:
        for helper in running:
            if helper is not None:
                helper.stop()
        raise


class _LaunchReader:
    """The launches of a report's actions, read in report order (launch ids count them from 0)."""

    def __init__(self, path: Path, context: Context, instructions: bool = False) -> None:
        self.path = path
        self.with_instructions = instructions
        self.instructions = InstructionReader(path)
        self.ranges = [context.range_by_idx(index) for index in range(context.num_ranges())]
        self.metrics = _MetricReader()
        self.launches: list[Launch] = []
        self.pending: list[tuple[int, int, int]] = []  # launch id, range and action index: not disassembled yet
        self.first: Action | None = None

    def slots(self) -> list[Slot]:
        return [(r, index) for r, report_range in enumerate(self.ranges) for index in range(report_range.num_actions())]

    def read(self, slots: Sequence[Slot], disassemble: bool = True) -> None:
        """Reads the actions at `slots`, which follow those read already. Each action is read as it
        is decoded, and dropped: one action object alive at a time, not a thousand. Without
        `disassemble`, their instruction figures wait for `disassemble_pending` (ncu_report's
        disassembler starts a thread, after which this process cannot fork helpers)."""
        for range_index, action_index in slots:
            action = self.ranges[range_index].action_by_idx(action_index)
            if action is None:
                continue
            values = self.metrics.values(action)
            if not action.name() or not _has_metrics(action, values[_DURATION_INDEX]):
                launch_id = len(self.launches)
                raise InputError(
                    f"{self.path}: truncated or damaged report (launch {launch_id} has no name or no metrics)"
                )
            name = _kernel_name(action)
            if disassemble:
                split, records = self._instruction_figures(action, name)
            else:
                split, records = None, ()
                self.pending.append((len(self.launches), range_index, action_index))
            self.launches.append((name, values, _labels(action), split, records))
            if self.first is None:
                self.first = action

    def _instruction_figures(self, action: Action, name: str) -> tuple[Totals | None, Records]:
        return self.instructions.figures(action, name, self.with_instructions)

    def disassemble_pending(self) -> None:
        """The instruction figures of the launches read without them."""
        for launch_id, range_index, action_index in self.pending:
            action = self.ranges[range_index].action_by_idx(action_index)
            name, values, labels, _, _ = self.launches[launch_id]
            self.launches[launch_id] = (name, values, labels, *self._instruction_figures(action, name))
        self.pending.clear()

    def merge(self, launches: list[Launch], units: dict[str, str]) -> None:
        """Adds the launches a helper read (those after all read here), and the units it met first."""
        self.launches.extend(launches)
        for name, unit in units.items():
            self.metrics.units.setdefault(name, unit)


def _load(path: Path) -> Context:
    try:
        if path.stat().st_size == 0:
            raise InputError(f"{path}: empty file")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        import ncu_report
    except ImportError as exc:
        raise SetupError(f"reading {path} needs the ncu-report package ({exc}): pip install ncu-report") from None
    try:
        return ncu_report.load_report(str(path))
    except Exception as exc:  # a third-party binding: any failure means an unreadable report
        raise InputError(f"{path}: not a readable Nsight Compute report ({type(exc).__name__}: {exc})") from None


def _has_metrics(action: Action, duration: object) -> bool:
    """Whether the action holds any metric: the duration read already where it has one, the list of
    every metric name (a third of a millisecond an action) only where it does not."""
    return duration is not _ABSENT or bool(action.metric_names())


def _labels(action: Action) -> Labels:
    """The innermost memlens suite range (family, variant) open at the launch, or else the label of
    the program's own push/pop and start/end ranges (program_label)."""
    state = action.nvtx_state()
    if state is None:
        return None, None
    domains = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is not None:
            domains.append((str(domain.name()), domain))
    suite = _suite_range([domain for name, domain in domains if is_memlens_domain(name)])
    if suite is not None:
        return suite, None
    return None, program_label([(name, range_name) for name, domain in domains for range_name in _opened(domain)])


def _opened(domain: Any) -> list[str]:
    """The ranges of one domain open at a launch: its start/end ranges (the process's: a thread's
    launches are inside one another thread started, as PyTorch's backward is inside the step's
    memlens.range) not also open as push/pop ranges, then its push/pop ranges, outermost first
    (memlens.range opens one of each: its launches show the name once)."""
    nested = [str(name) for name in domain.push_pop_ranges()]
    started = getattr(domain, "start_end_ranges", None)
    process = [str(name) for name in started()] if started is not None else []
    return [name for name in process if name not in nested] + nested


def _suite_range(memlens: list[Any]) -> tuple[str, str] | None:
    """(family, variant) of the innermost memlens push/pop range: the ranges of the memlens
    domain(s), innermost first, up to the first that names one (suite_range's choice)."""
    for domain in reversed(memlens):
        names = domain.push_pop_ranges()
        if len(names) == 1:  # the usual case: its name as listed, not from its range object (slow as the state)
            found = suite_range(names)
            if found is not None:
                return found
            continue
        for index in reversed(range(len(names))):
            nvtx_range = domain.push_pop_range(index)
            if nvtx_range is not None:
                found = suite_range((nvtx_range.name(),))
                if found is not None:
                    return found
    return None


class _Absent(enum.Enum):
    """A catalogue metric the action does not hold (None: it holds it, with no value: "n/a"). An
    enum member: it stays itself through pickle, from a helper process."""

    ABSENT = enum.auto()


_ABSENT = _Absent.ABSENT
_NAMES: tuple[str, ...] = tuple(m.ncu for m in NCU_METRICS if m.ncu is not None)  # NCU_METRICS all have one
_DURATION_INDEX = _NAMES.index(DURATION)
_ALIASES: tuple[tuple[str, tuple[str, ...]], ...] = tuple((m.ncu, m.aliases) for m in NCU_METRICS if m.ncu is not None)
_SECTION_COUNTS = {m.ncu: m for m in NCU_METRICS if m.ncu is not None and m.per_cycle}  # Metric.per_cycle


class _MetricReader:
    """The catalogue's metrics of each action, and their units: ncu gives a metric one unit in a
    report, so each name's unit is read once (from the first action holding it), not per launch."""

    def __init__(self) -> None:
        self.units: dict[str, str] = {}

    def values(self, action: Action) -> list[object]:
        """Each catalogue metric's value (float or None for "n/a"), or _ABSENT, in NCU_METRICS order."""
        values: list[object] = []
        units = self.units
        binding = _binding()
        metric_by_name, has_value, value = binding.metric_by_name, binding.has_value, binding.value
        for name, aliases in _ALIASES:
            metric = metric_by_name(action, name)
            for alias in aliases if metric is None else ():  # another ncu name of the same counter
                metric = metric_by_name(action, alias)
                if metric is not None:
                    break
            if metric is None:
                values.append(self._section_count(action, name))
                continue
            if name not in units:
                units[name] = str(metric.unit() or "")
            values.append(value(metric) if has_value(metric) else None)
        return values

    def _section_count(self, action: Action, name: str) -> object:
        """A count the report holds only as ncu's roofline sections do, a rate a cycle: its value in the
        catalogue's unit (metric_values.section_count), else _ABSENT."""
        counted = _SECTION_COUNTS.get(name)
        cell = section_count(counted, functools.partial(_cell, action)) if counted is not None else None
        if cell is None:
            return _ABSENT
        self.units.setdefault(name, cell.unit)
        return cell.value


class _Binding:
    """The functions of ncu_report's SWIG module behind the IAction and IMetric methods called per
    metric: each method is a Python frame that only calls its function, and going without them saves
    about a twentieth of the reading. The methods themselves where the module has no such function."""

    def __init__(self, ncu_report: Any) -> None:
        iaction, imetric = ncu_report.IAction, ncu_report.IMetric
        functions = getattr(ncu_report, "_ncu_report", None)

        def function(method: Callable[..., Any], name: str) -> Callable[..., Any]:
            return getattr(functions, name, method)

        self.metric_by_name = function(iaction.metric_by_name, "IAction_metric_by_name")
        self.has_value = function(imetric.has_value, "IMetric_has_value")
        self.kind = function(imetric.kind, "IMetric_kind")
        as_double = function(imetric.as_double, "IMetric_as_double")
        as_uint64 = function(imetric.as_uint64, "IMetric_as_uint64")
        # value kind -> getter, as IMetric.value() maps them (ANY and UNKNOWN: no value), without the
        # table of converters value() makes anew on each call
        self.getters: dict[int, Callable[[Any], object]] = {
            imetric.ValueKind_DOUBLE: as_double,
            imetric.ValueKind_FLOAT: as_double,
            imetric.ValueKind_STRING: function(imetric.as_string, "IMetric_as_string"),
            imetric.ValueKind_UINT32: as_uint64,
            imetric.ValueKind_UINT64: as_uint64,
        }

    def value(self, metric: Any) -> float | None:
        """The value of a metric that has one, as a float (None where it is not a number)."""
        getter = self.getters.get(self.kind(metric))
        return None if getter is None else _as_float(getter(metric))


@lru_cache(maxsize=1)
def _binding() -> _Binding:
    import ncu_report

    return _Binding(ncu_report)


def _kernel(
    name: str,
    launch_id: int,
    values: list[object],
    labels: Labels,
    units: dict[str, str],
    from_memlens: bool,
    split: Totals | None = None,
    instructions: tuple[InstructionRecord, ...] = (),
) -> KernelResult:
    raw: dict[str, float | None] = {}
    missing: dict[str, str] = {}
    reason: str | None
    for metric, ncu_name, value in zip(NCU_METRICS, _NAMES, values, strict=True):
        if value is _ABSENT:
            converted, reason = None, absent_reason(metric, from_memlens)
        else:
            converted, reason = convert(metric, value, units[ncu_name])  # type: ignore[arg-type]
        raw[metric.key] = converted
        if reason is not None:
            missing[metric.key] = reason
    for metric in PER_INSTRUCTION_METRICS:
        value = raw[metric.key] = None if split is None else split.get(metric.key)
        if value is None:
            if split is None:
                reason = missing.get("shared_wavefronts") or NO_INSTANCES
            elif "global" in metric.key and split.get("exact_global_ld_sectors") is None:
                reason = NO_GLOBAL_SECTORS
            else:
                reason = NO_EXECUTIONS if metric.key.endswith("_executions") else NO_ACCESS
            missing[metric.key] = reason
    return with_label(KernelResult(name, None, None, launch_id, raw, missing, instructions), *labels)


def _kernel_name(action: Action) -> str:
    demangled = action.name(type(action).NameBase_DEMANGLED)
    return _printable_name(str(demangled or action.name()))


@lru_cache(maxsize=4096)
def _printable_name(name: str) -> str:
    """kernel_name and printable of a name ncu_report gives: a report repeats a few names."""
    return printable(kernel_name(name))


def _cell(action: Action, name: str) -> ReportedValue | None:
    binding = _binding()
    metric = binding.metric_by_name(action, name)
    if metric is None:
        return None
    unit = str(metric.unit() or "")
    if not binding.has_value(metric):
        return ReportedValue(None, unit)
    return ReportedValue(binding.value(metric), unit)


def _as_float(value: object) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return None


def _run_info(action: Action, path: Path) -> RunInfo:
    name_metric = action.metric_by_name(DEVICE_ATTRIBUTES["gpu_name"])
    gpu_name = name_metric.as_string() if name_metric is not None else None
    gpu_name = printable(str(gpu_name)) if gpu_name else None
    capability = compute_capability(
        _number(action, DEVICE_ATTRIBUTES["cc_major"]), _number(action, DEVICE_ATTRIBUTES["cc_minor"])
    )
    return RunInfo(gpu_name=gpu_name or None, compute_capability=capability, source=str(path))


def _number(action: Action, name: str) -> float | None:
    cell = _cell(action, name)
    return None if cell is None else cell.value
