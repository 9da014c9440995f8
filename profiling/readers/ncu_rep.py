"""An Nsight Compute report (.ncu-rep) -> RunResults, through NVIDIA's `ncu_report` module.

`ncu_report` (PyPI `ncu-report`) opens reports without a GPU or ncu. Each action of each range is
one profiled kernel launch; launch ids count actions in report order from 0, as ncu's CSV "ID".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..catalogue import CATALOGUE, DEVICE_ATTRIBUTES
from ..demangle import kernel_name
from ..errors import InputError, ProfilerError
from ..results import KernelResult, RunInfo, RunResults, printable
from .common import Cell, compute_capability, is_memlens_domain, make_kernel, suite_range

# ncu_report.IMetric.value() returns str, int, float or None; as_string for the device name.
Action = Any
Context = Any

DURATION = CATALOGUE["duration"].ncu


def read_ncu_rep(path: Path) -> RunResults:
    actions = list(_actions(_load(path)))
    if not actions:
        raise InputError(f"{path}: no profiled kernels (an empty report, or not an Nsight Compute report)")
    for launch_id, action in enumerate(actions):
        if not action.name() or not _has_metrics(action):
            raise InputError(f"{path}: truncated or damaged report (launch {launch_id} has no name or no metrics)")
    ranges = [suite_range(_memlens_ranges(action)) for action in actions]
    from_memlens = any(r is not None for r in ranges)
    kernels = tuple(
        _kernel(action, launch_id, r, from_memlens)
        for launch_id, (action, r) in enumerate(zip(actions, ranges, strict=True))
    )
    return RunResults(_run_info(actions[0], path), kernels)


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


def _actions(context: Context) -> list[Action]:
    actions = []
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        actions.extend(report_range.action_by_idx(i) for i in range(report_range.num_actions()))
    return [a for a in actions if a is not None]


def _has_metrics(action: Action) -> bool:
    """Whether the action holds any metric: one lookup where it has the duration, the list of every
    metric name (a third of a millisecond an action) only where it does not."""
    return action.metric_by_name(DURATION) is not None or bool(action.metric_names())


def _memlens_ranges(action: Action) -> list[str]:
    """Push/pop range names of the memlens domain open at the launch, outermost first."""
    state = action.nvtx_state()
    if state is None:
        return []
    names: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is None or not is_memlens_domain(domain.name()):
            continue
        for index in range(len(domain.push_pop_ranges())):
            nvtx_range = domain.push_pop_range(index)
            if nvtx_range is not None:
                names.append(nvtx_range.name())
    return names


def _kernel(action: Action, launch_id: int, ranges: tuple[str, str] | None, from_memlens: bool) -> KernelResult:
    return make_kernel(_kernel_name(action), launch_id, ranges, lambda name: _cell(action, name), from_memlens)


def _kernel_name(action: Action) -> str:
    demangled = action.name(type(action).NameBase_DEMANGLED)
    return kernel_name(str(demangled or action.name()))


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
