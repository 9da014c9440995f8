"""An Nsight Compute report (.ncu-rep) -> RunResults, through NVIDIA's `ncu_report` module.

`ncu_report` (PyPI `ncu-report`) opens reports without a GPU or ncu. Each action of each range is
one profiled kernel launch; launch ids count actions in report order from 0, as ncu's CSV "ID".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..catalogue import CATALOGUE, DEVICE_ATTRIBUTES
from ..demangle import kernel_name
from ..errors import InputError, ProfilerError
from ..results import KernelResult, RunInfo, RunResults, printable
from .common import NCU_METRICS, Cell, absent_reason, compute_capability, convert, is_memlens_domain, suite_range

# ncu_report.IMetric.value() returns str, int, float or None; as_string for the device name.
Action = Any
Context = Any

DURATION = CATALOGUE["duration"].ncu


def read_ncu_rep(path: Path) -> RunResults:
    reader = _MetricReader()
    first: Action | None = None
    launches = []  # (kernel name, metric values, memlens range) of each action, in report order
    # Each action is read as it is decoded (the decoding is most of the time: ncu_report's, about a
    # millisecond an action), and dropped: one action object alive at a time, not a thousand.
    for launch_id, action in enumerate(_actions(_load(path))):
        values = reader.values(action)
        if not action.name() or not _has_metrics(action, values[_DURATION_INDEX]):
            raise InputError(f"{path}: truncated or damaged report (launch {launch_id} has no name or no metrics)")
        launches.append((_kernel_name(action), values, _suite_range(action)))
        if first is None:
            first = action
    if first is None:
        raise InputError(f"{path}: no profiled kernels (an empty report, or not an Nsight Compute report)")
    from_memlens = any(r is not None for _, _, r in launches)
    kernels = tuple(
        _kernel(name, launch_id, values, r, reader.units, from_memlens)
        for launch_id, (name, values, r) in enumerate(launches)
    )
    return RunResults(_run_info(first, path), kernels)


def _load(path: Path) -> Context:
    try:
        if path.stat().st_size == 0:
            raise InputError(f"{path}: empty file")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        import ncu_report
    except ImportError as exc:
        raise ProfilerError(f"reading {path} needs the ncu-report package ({exc}): pip install ncu-report") from None
    try:
        return ncu_report.load_report(str(path))
    except Exception as exc:  # a third-party binding: any failure means an unreadable report
        raise InputError(f"{path}: not a readable Nsight Compute report ({type(exc).__name__}: {exc})") from None


def _actions(context: Context) -> Iterator[Action]:
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for index in range(report_range.num_actions()):
            action = report_range.action_by_idx(index)
            if action is not None:
                yield action


def _has_metrics(action: Action, duration: object) -> bool:
    """Whether the action holds any metric: the duration read already where it has one, the list of
    every metric name (a third of a millisecond an action) only where it does not."""
    return duration is not _ABSENT or bool(action.metric_names())


def _suite_range(action: Action) -> tuple[str, str] | None:
    """(family, variant) of the innermost memlens push/pop range open at the launch: the ranges of
    the memlens domain(s), innermost first, up to the first that names one (suite_range's choice)."""
    state = action.nvtx_state()
    if state is None:
        return None
    memlens = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is not None and is_memlens_domain(domain.name()):
            memlens.append(domain)
    for domain in reversed(memlens):
        for index in reversed(range(len(domain.push_pop_ranges()))):
            nvtx_range = domain.push_pop_range(index)
            if nvtx_range is not None:
                found = suite_range((nvtx_range.name(),))
                if found is not None:
                    return found
    return None


# A catalogue metric the action does not hold (None: it holds it, with no value: "n/a").
_ABSENT = object()
_NAMES: tuple[str, ...] = tuple(m.ncu for m in NCU_METRICS)  # NCU_METRICS all have one
_DURATION_INDEX = _NAMES.index(DURATION)


class _MetricReader:
    """The catalogue's metrics of each action, and their units: ncu gives a metric one unit in a
    report, so each name's unit is read once (from the first action holding it), not per launch."""

    def __init__(self) -> None:
        self.units: dict[str, str] = {}

    def values(self, action: Action) -> list[object]:
        """Each catalogue metric's value (float or None for "n/a"), or _ABSENT, in NCU_METRICS order."""
        values: list[object] = []
        units = self.units
        for name in _NAMES:
            metric = action.metric_by_name(name)
            if metric is None:
                values.append(_ABSENT)
                continue
            if name not in units:
                units[name] = str(metric.unit() or "")
            values.append(_as_float(_value(metric)) if metric.has_value() else None)
        return values


def _kernel(
    name: str,
    launch_id: int,
    values: list[object],
    ranges: tuple[str, str] | None,
    units: dict[str, str],
    from_memlens: bool,
) -> KernelResult:
    raw: dict[str, float | None] = {}
    missing: dict[str, str] = {}
    for metric, ncu_name, value in zip(NCU_METRICS, _NAMES, values, strict=True):
        if value is _ABSENT:
            converted, reason = None, absent_reason(metric, from_memlens)
        else:
            converted, reason = convert(metric, value, units[ncu_name])  # type: ignore[arg-type]
        raw[metric.key] = converted
        if reason is not None:
            missing[metric.key] = reason
    family, variant = ranges if ranges else (None, None)
    return KernelResult(name, family, variant, launch_id, raw, missing)


def _kernel_name(action: Action) -> str:
    demangled = action.name(type(action).NameBase_DEMANGLED)
    return _printable_name(str(demangled or action.name()))


@lru_cache(maxsize=4096)
def _printable_name(name: str) -> str:
    """kernel_name and printable of a name ncu_report gives: a report repeats a few names."""
    return printable(kernel_name(name))


def _cell(action: Action, name: str) -> Cell | None:
    metric = action.metric_by_name(name)
    if metric is None:
        return None
    unit = str(metric.unit() or "")
    if not metric.has_value():
        return Cell(None, unit)
    return Cell(_as_float(_value(metric)), unit)


def _value(metric: Any) -> object:
    """IMetric.value(), without the table of converters it makes anew on each call."""
    getter = _value_getters(type(metric)).get(metric.kind())
    return None if getter is None else getter(metric)


@lru_cache(maxsize=4)
def _value_getters(imetric: Any) -> dict[int, Callable[[Any], object]]:
    """Value kind -> IMetric.as_*, as IMetric.value() maps them (ANY and UNKNOWN: no value)."""
    return {
        imetric.ValueKind_DOUBLE: imetric.as_double,
        imetric.ValueKind_FLOAT: imetric.as_double,
        imetric.ValueKind_STRING: imetric.as_string,
        imetric.ValueKind_UINT32: imetric.as_uint64,
        imetric.ValueKind_UINT64: imetric.as_uint64,
    }


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
