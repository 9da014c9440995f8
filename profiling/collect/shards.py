"""`memlens profile --gpus`: the selected variants shared out over several GPUs of one host, one ncu
per GPU, all running at once, merged into one run directory.

Each GPU's ncu runs the profiled program with CUDA_VISIBLE_DEVICES=<that GPU's UUID> (see
profiling/collect/gpus.py), not with ncu's `--devices`: `--devices` only filters which device ncu profiles,
while the program would still launch every kernel on its device 0. Each ncu gets a temporary
folder of its own (TMPDIR), so nothing ncu keeps there is shared between the concurrent runs.

The split hands out units: a variant, or a swept family's variants at one value of its sweep (they
share one set of inputs, drawn on that GPU alone; each GPU's program gets only its values). It
balances expected cost, from one source for every case (a variant at one value; simple on purpose):
1. the seconds each case took under ncu in the previous run (`<out>/latest`, its events files),
   where that run measured every selected case;
2. else the bytes each case's family must move (`min_bytes` at its sizes), where every selected
   family declares it;
3. else one each: round robin.
Largest first, each to the GPU with the least expected work so far; each GPU then runs its share
in suite order. The run directory holds each GPU's raw report, log, command and events
(`profile.gpu<i>.ncu-rep`, ...: run_dir.profile_files) and one results.json; every kernel and
variant outcome records its GPU. A GPU that fails leaves the others' results; the error names it.
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from memlens.collect.gpus import Gpu
from memlens.collect.ncu import Ncu, find_ncu
from memlens.collect.profile_run import ProfileOptions, Shard, conclude, profile, run_shard, save
from memlens.collect.run_dir import Machine, machine_of, new_run_dir, now, take_provenance
from memlens.errors import MemlensError
from memlens.io.processes import hold_interrupts, sigterm_as_interrupt
from memlens.model.results import RunResults
from memlens.model.run_layout import LATEST, profile_files
from memlens.suite import Case, Selection, Variant, select_variants, suite_root

COST_PREVIOUS, COST_MIN_BYTES, COST_EQUAL = "previous run", "min_bytes", "equal"
Item = TypeVar("Item", "Variant", "Unit")  # what split() shares out: anything with a label


# --- the split -------------------------------------------------------------------------------------


def previous_seconds(out_dir: Path) -> dict[str, float]:
    """Seconds each variant took under ncu in `<out_dir>/latest`: from its start to its done event."""
    latest = out_dir / LATEST
    seconds: dict[str, float] = {}
    if not latest.is_dir():
        return seconds
    for path in sorted(latest.glob("events*.jsonl")):
        started: dict[str, float] = {}
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
                kind, label, time = event["event"], event.get("variant"), float(event["time"])
            except (ValueError, KeyError, TypeError):
                continue
            if kind == "start" and isinstance(label, str):
                started[label] = time
            elif kind == "done" and label in started:
                seconds[label] = max(0.0, time - started[label])
    return seconds


def case_costs(selection: Selection, small: bool, out_dir: Path) -> tuple[dict[str, float], str]:
    """Each case's expected cost (a case: a variant, or a swept variant at one value), and which source
    gave them (see the module's notes)."""
    cases = selection.cases()
    measured = previous_seconds(out_dir)
    if all(case.label in measured for case in cases):
        return {case.label: measured[case.label] for case in cases}, COST_PREVIOUS
    if all(case.variant.family.min_bytes is not None for case in cases):
        return {
            case.label: float(case.variant.family.min_bytes(case.size(selection.sizes, small))) for case in cases
        }, COST_MIN_BYTES
    return {case.label: 1.0 for case in cases}, COST_EQUAL


def expected_costs(selection: Selection, small: bool, out_dir: Path) -> tuple[dict[str, float], str]:
    """Each selected variant's expected cost: that of its cases (all the values of its sweep)."""
    costs, source = case_costs(selection, small, out_dir)
    totals = dict.fromkeys((v.label for v in selection.variants), 0.0)
    for case in selection.cases():
        totals[case.variant.label] += costs[case.label]
    return totals, source


@dataclass(frozen=True)
class Unit:
    """What the split hands a GPU whole: one variant, or every selected variant of a swept family at
    one value of its sweep (they share one set of inputs, drawn once, on that GPU alone)."""

    variants: tuple[Variant, ...]
    swept: tuple[str, int] | None = None  # (size name, value)

    @property
    def label(self) -> str:
        if self.swept is None:
            return self.variants[0].label
        return f"{self.variants[0].family.name}@{self.swept[0]}={self.swept[1]}"

    def cases(self) -> list[Case]:
        return [Case(v, self.swept) for v in self.variants]


def units(selection: Selection) -> list[Unit]:
    """The selection's cases (Selection.cases: a swept family value by value) as units, in suite order."""
    found: dict[str, Unit] = {}
    for case in selection.cases():
        unit = Unit((case.variant,), case.swept)
        grown = found.get(unit.label)
        found[unit.label] = unit if grown is None else Unit((*grown.variants, case.variant), case.swept)
    return list(found.values())


def unit_costs(selection: Selection, small: bool, out_dir: Path) -> dict[str, float]:
    costs, _ = case_costs(selection, small, out_dir)
    return {unit.label: sum(costs[case.label] for case in unit.cases()) for unit in units(selection)}


def split(items: Sequence[Item], costs: dict[str, float], count: int) -> list[list[Item]]:
    """`count` shares of the items (variants or units), largest cost first to the least loaded share
    (ties: the lower share), each in suite order. With equal costs this is round robin."""
    loads = [0.0] * count
    shares: list[list[int]] = [[] for _ in range(count)]
    order = sorted(range(len(items)), key=lambda i: -costs.get(items[i].label, 1.0))  # stable
    for position in order:
        target = min(range(count), key=lambda s: (loads[s], s))
        loads[target] += costs.get(items[position].label, 1.0)
        shares[target].append(position)
    return [[items[i] for i in sorted(share)] for share in shares]


def share_arguments(share: Sequence[Unit], options: ProfileOptions) -> tuple[tuple[str, ...], ...]:
    """The variant labels, --size items and --sweep items of the profiled program that runs `share`:
    a swept family at the values of its sweep in the share alone."""
    variants = list({v.label: v for unit in share for v in unit.variants}.values())
    values: dict[tuple[str, str], list[int]] = {}  # (family, size name) -> the share's values
    for unit in share:
        if unit.swept is not None:
            values.setdefault((unit.variants[0].family.name, unit.swept[0]), []).append(unit.swept[1])
    sweeps = tuple(f"{family}.{name}={','.join(map(str, found))}" for (family, name), found in values.items())
    return tuple(v.label for v in variants), sizes_for(variants, options.sizes), sweeps


def sizes_for(share: Sequence[Variant], items: Sequence[str]) -> tuple[str, ...]:
    """The --size items that name a size of a family in `share` (the profiled program refuses others)."""
    families = {v.family.name: v.family for v in share}
    kept = []
    for item in items:
        family, dot, name = item.partition("=")[0].rpartition(".")
        candidates = [families[family]] if dot and family in families else [] if dot else families.values()
        if any(name in f.default_size for f in candidates):
            kept.append(item)
    return tuple(kept)


# --- running the shares at once --------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """What one GPU's ncu run gave: its results (tagged with the GPU) and its error, if any."""

    gpu: Gpu
    results: RunResults
    error: BaseException | None


class _Relay:
    """Passes the events of every GPU's program to one progress display: one plan, of every variant."""

    def __init__(self, on_event: Callable[[dict], None] | None, labels: list[str]) -> None:
        self._on_event, self._labels = on_event, labels
        self._lock = threading.Lock()
        self._planned = False

    def __call__(self, event: dict) -> None:
        if self._on_event is None:
            return
        with self._lock:
            if event.get("event") == "plan":
                if self._planned:
                    return
                self._planned = True
                event = {**event, "variants": self._labels}
            self._on_event(event)


def profile_on_gpus(
    options: ProfileOptions, gpus: Sequence[Gpu], on_event: Callable[[dict], None] | None = None
) -> tuple[Path, RunResults]:
    """Profile the selected variants over `gpus`; one GPU is the single-GPU run, on that GPU."""
    if len(gpus) == 1:
        return profile(options, on_event, gpus[0])
    selection = select_variants(options.suite, options.pattern, options.sizes, options.sweeps, options.small)
    ncu = find_ncu(options.ncu)
    shares = split(units(selection), unit_costs(selection, options.small, options.out_dir), len(gpus))
    plan = [(gpu, share) for gpu, share in zip(gpus, shares, strict=True) if share]
    run_dir = new_run_dir(options.out_dir)
    started = now()
    done: Future[Selection] = Future()
    done.set_result(selection)
    relay = _Relay(on_event, [case.label for case in selection.cases()])
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=len(plan) + 1, thread_name_prefix="memlens-gpu") as pool:
        machine = pool.submit(machine_of, suite_root(options.suite))
        futures = [pool.submit(_run_share, options, ncu, run_dir, gpu, share, done, machine, started, relay, stop)
                   for gpu, share in plan]  # fmt: skip
        _wait(futures, stop)
        parts = [future.result() for future in futures]
    with hold_interrupts():  # a second Ctrl-C waits until the partial results are saved
        results, error = merge(parts, selection, machine.result(), options.command, started)
        return save(options, run_dir, results, error)


def _run_share(
    options: ProfileOptions, ncu: Ncu, run_dir: Path, gpu: Gpu, share: list[Unit], selection: Future[Selection],
    machine: Future[Machine], started, relay: _Relay, stop: threading.Event,
) -> Part:  # fmt: skip
    scratch = tempfile.mkdtemp(prefix=f"memlens-gpu{gpu.index}-")
    labels, sizes, sweeps = share_arguments(share, options)
    try:
        files, env = profile_files(run_dir, gpu.index), {**gpu.environment(), "TMPDIR": scratch}
        shard = Shard(files, env, labels, sizes, sweeps)
        events, cause = run_shard(options, ncu, shard, selection, relay, stop)
        results, error = conclude(options, ncu, shard, selection.result(), machine.result(), started, events, cause)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Part(gpu, gpu.tag(results), error)


def _wait(futures: list[Future[Part]], stop: threading.Event) -> None:
    """Wait for every GPU's run; on Ctrl-C (or SIGTERM) stop them all and wait for them to save."""
    try:
        with sigterm_as_interrupt():
            while not all(future.done() for future in futures):
                concurrent.futures.wait(futures, timeout=0.2)
    except KeyboardInterrupt:
        stop.set()
        with hold_interrupts():
            concurrent.futures.wait(futures)


# --- the merge -------------------------------------------------------------------------------------


def merge(
    parts: Sequence[Part], selection: Selection, machine: Machine, command: str, started
) -> tuple[RunResults, BaseException | None]:
    """One RunResults of every GPU's, in suite order, and the first GPU's error (named with its GPU)."""
    order = {case.label: i for i, case in enumerate(selection.cases())}

    def position(label: str) -> int:
        return order.get(label, len(order))

    outcomes = sorted((o for p in parts for o in p.results.outcomes), key=lambda o: position(f"{o.family}/{o.variant}"))
    kernels = sorted((k for p in parts for k in p.results.kernels), key=lambda k: position(k.label))
    infos = [p.results.info for p in parts]
    names = list(dict.fromkeys(info.gpu_name for info in infos if info.gpu_name))
    sources = [info.source for info in infos if info.source]
    provenance = take_provenance(machine, selection.suite.path, command, started)
    provenance.update(
        gpu_name=" + ".join(names) or None,
        compute_capability=next((i.compute_capability for i in infos if i.compute_capability), None),
        source=", ".join(sources) or None,
    )
    info = replace(infos[0], **provenance)
    complete = all(p.results.complete for p in parts)
    error = next((_named(p.error, p.gpu) for p in parts if p.error is not None), None)
    return RunResults(info, tuple(kernels), tuple(outcomes), complete), error


def _named(error: BaseException, gpu: Gpu) -> BaseException:
    """`error` with its message naming the GPU it happened on; its kind (and exit code) kept."""
    if isinstance(error, (MemlensError, KeyboardInterrupt)):
        error.args = (f"{gpu}: {error}", *error.args[1:])
    return error
