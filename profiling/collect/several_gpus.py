"""How a run's cases are shared out as jobs over several GPUs (`--gpus`, `--cluster`), and how the jobs'
results merge into one run: the jobs run through collect/scheduler.py's backends.

Each GPU's ncu runs the profiled program with CUDA_VISIBLE_DEVICES=<that GPU's UUID> (see
profiling/collect/gpus.py), not with ncu's `--devices`: `--devices` only filters which device ncu profiles,
while the program would still launch every kernel on its device 0. Each ncu gets a temporary
folder of its own (TMPDIR), so nothing ncu keeps there is shared between the concurrent runs.

The split hands out units: a family's variants at one value of its sweep, or at its one size (they
share one set of inputs and reference, made on that GPU alone; each GPU's program gets only its
values), or one variant of a family too costly for one GPU's share. It balances expected cost, from
one source for every case (a variant at one value; simple on purpose):
1. the seconds each case took under ncu in the previous run (`<out>/latest`, its events files), but
   for the case each program ran first, which also paid for that program's start (measured_seconds);
   a case it did not measure is estimated as below, scaled by what the measured ones took against
   their estimates;
2. else, where every selected family declares `min_bytes` or `min_flops`, a fixed cost a case
   (CASE_SECONDS), a cost a byte its family must move (SECONDS_PER_BYTE) and a cost a floating-point
   operation it must do (SECONDS_PER_FLOP), at its sizes, each where declared: ncu's replay passes
   cost about the same for a small kernel, it saves and restores what a kernel writes for each, and
   it replays a compute-bound kernel for as long as its arithmetic takes;
3. else one each: round robin.
The units are shared out: largest first, each to the GPU with the least expected work so far, then
evened out by moving or swapping units between the most and the least loaded GPU (split); each GPU
runs its share in suite order. Where every job's program reaches one folder of this host (`--gpus`,
`--cluster local`), the shares are written there, and a GPU done with its share takes over, smallest
first, the units another GPU has not started, then the last cases of the units others are running
(collect/claims.py): a wrong estimate then costs about a case and its unit's inputs. The run
directory holds each job's raw report, log, command and events (`profile.gpu<i>.ncu-rep` or
`profile.job<n>.ncu-rep`, ...: run_layout.profile_files) and one results.json; every kernel and case
records where it ran. A job that fails leaves the others' results; the error names its GPU.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from memlens.collect.gpus import Gpu
from memlens.collect.profile_run import Events, ProfileOptions
from memlens.collect.run_dir import Machine, take_provenance
from memlens.errors import MemlensError
from memlens.model.results import RunResults
from memlens.model.run_layout import LATEST
from memlens.selection import Case, Selection
from memlens.suite import Family, Variant

COST_PREVIOUS, COST_DECLARED, COST_EQUAL = "previous run", "min_bytes and min_flops", "equal"
COST_PART_PREVIOUS = "previous run, the rest estimated"
# A case's expected seconds under ncu from its family's bytes and FLOPs (no previous run to learn from),
# fitted to each case's seconds in issue 37's transpose sweep on one H200 (tests/benchmarks/RESULTS.md):
# the byte terms to the transposes (within 0.7 s a family at one value), the FLOP term to the 2048^3
# matmuls (four variants: 5.87 s, where their bytes say 1.35 s). Only their ratios matter to the split.
CASE_SECONDS = 0.29
SECONDS_PER_BYTE = 0.96e-9
SECONDS_PER_FLOP = 0.066e-9
Item = TypeVar("Item", "Variant", "Unit")  # what split() shares out: anything with a label


# --- the split -------------------------------------------------------------------------------------


def previous_seconds(out_dir: Path) -> tuple[dict[str, float], set[str]]:
    """Seconds each case took under ncu in `<out_dir>/latest` (from its start to its done event), and the
    case each program ran first."""
    latest = out_dir / LATEST
    seconds: dict[str, float] = {}
    firsts: set[str] = set()
    if not latest.is_dir():
        return seconds, firsts
    for path in sorted(latest.glob("events*.jsonl")):
        started: dict[str, float] = {}
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
                kind, label, time = event["event"], event.get("variant"), float(event["time"])
            except (ValueError, KeyError, TypeError):
                continue
            if kind == "start" and isinstance(label, str):
                if not started:
                    firsts.add(label)
                started[label] = time
            elif kind == "done" and label in started:
                seconds[label] = max(0.0, time - started[label])
    return seconds, firsts


def measured_seconds(out_dir: Path) -> dict[str, float]:
    """What each case of the previous run costs: its seconds, but for the case a program ran first,
    whose seconds also hold that program's and ncu's first kernel on its GPU (1.4 to 2.6 s more on two
    H100s and two H200s): the median of its unit's other cases (a family at one value), else unmeasured."""
    seconds, firsts = previous_seconds(out_dir)
    measured = {label: took for label, took in seconds.items() if label not in firsts}
    for label in firsts & seconds.keys():
        others = [took for other, took in measured.items() if _unit_of(other) == _unit_of(label)]
        if others:
            measured[label] = statistics.median(others)
    return measured


def _unit_of(label: str) -> tuple[str, str]:
    """A case label's family and sweep value ("transpose/conflict@rows=2048": transpose, rows=2048)."""
    return label.partition("/")[0], label.partition("@")[2]


def case_costs(selection: Selection, small: bool, out_dir: Path) -> tuple[dict[str, float], str]:
    """Each case's expected cost (a case: a variant, or a swept variant at one value), and which source
    gave them (see the module's notes)."""
    cases = selection.cases()
    estimated, source = _estimates(selection, small)
    measured = measured_seconds(out_dir)
    known = [case.label for case in cases if case.label in measured]
    if not known:
        return estimated, source
    if len(known) == len(cases):
        return {case.label: measured[case.label] for case in cases}, COST_PREVIOUS
    # the cases the previous run did not measure: estimated, in the measured cases' scale
    scale = sum(measured[label] for label in known) / sum(estimated[label] for label in known) or 1.0
    return {case.label: measured.get(case.label, estimated[case.label] * scale) for case in cases}, COST_PART_PREVIOUS


def _estimates(selection: Selection, small: bool) -> tuple[dict[str, float], str]:
    cases = selection.cases()
    if all(case.variant.family.min_bytes or case.variant.family.min_flops for case in cases):
        return {
            case.label: _estimate(case.variant.family, case.size(selection.sizes, small)) for case in cases
        }, COST_DECLARED
    return {case.label: 1.0 for case in cases}, COST_EQUAL


def _estimate(family: Family, size: dict[str, int]) -> float:
    moved = family.min_bytes(size) if family.min_bytes else 0
    done = family.min_flops(size) if family.min_flops else 0
    return CASE_SECONDS + SECONDS_PER_BYTE * moved + SECONDS_PER_FLOP * done


def expected_costs(selection: Selection, small: bool, out_dir: Path) -> tuple[dict[str, float], str]:
    """Each selected variant's expected cost: that of its cases (all the values of its sweep)."""
    costs, source = case_costs(selection, small, out_dir)
    totals = dict.fromkeys((v.label for v in selection.variants), 0.0)
    for case in selection.cases():
        totals[case.variant.label] += costs[case.label]
    return totals, source


@dataclass(frozen=True)
class Unit:
    """What the split hands a GPU whole: a family's selected variants at one value of its sweep (or at
    its one size), which share one set of inputs and reference, made once, on that GPU alone; or one
    variant of an unswept family that costs more than one GPU's share (see units)."""

    variants: tuple[Variant, ...]
    swept: tuple[str, int] | None = None  # (size name, value)

    @property
    def label(self) -> str:
        first = self.variants[0]
        name = first.family.name if len(self.variants) > 1 else first.label
        return name if self.swept is None else f"{name}@{self.swept[0]}={self.swept[1]}"

    def cases(self) -> list[Case]:
        return [Case(v, self.swept) for v in self.variants]


def units(selection: Selection, costs: dict[str, float] | None = None, count: int = 1) -> list[Unit]:
    """The selection's cases as units, in suite order: each family's variants at each value of its sweep
    together (measured on two H200s: a family split over two GPUs made its inputs twice, 0.8 to 2.5 s
    more). With `costs` (a case's) over `count` GPUs, an unswept family that costs more than one GPU's
    share goes out variant by variant instead, so that no GPU waits for one share holding it whole."""
    grouped: dict[tuple[str, tuple[str, int] | None], Unit] = {}
    for case in selection.cases():
        key = (case.variant.family.name, case.swept)
        grown = grouped.get(key)
        grouped[key] = (
            Unit((case.variant,), case.swept) if grown is None else Unit((*grown.variants, case.variant), case.swept)
        )
    found = list(grouped.values())
    if costs is None:
        return found
    cost = unit_costs(found, costs)
    share = sum(cost.values()) / count
    return [part for unit in found for part in (_apart(unit) if _too_costly(unit, cost, share) else [unit])]


def _too_costly(unit: Unit, cost: dict[str, float], share: float) -> bool:
    """A family at its one size that costs more than one GPU's share (a swept family's values are its
    units already: its program is given values for all of a share's variants of it, never one each)."""
    return unit.swept is None and len(unit.variants) > 1 and cost[unit.label] > share


def _apart(unit: Unit) -> list[Unit]:
    return [Unit((variant,)) for variant in unit.variants]


def unit_costs(found: Sequence[Unit], costs: dict[str, float]) -> dict[str, float]:
    """Each unit's expected cost: that of its cases."""
    return {unit.label: sum(costs[case.label] for case in unit.cases()) for unit in found}


def split(items: Sequence[Item], costs: dict[str, float], count: int) -> list[list[Item]]:
    """`count` shares of the items (variants or units), largest cost first to the least loaded share
    (ties: the lower share), then evened out (_even_out); each in suite order. With equal costs this is
    round robin."""
    cost = [costs.get(item.label, 1.0) for item in items]
    loads = [0.0] * count
    shares: list[list[int]] = [[] for _ in range(count)]
    for position in sorted(range(len(items)), key=lambda i: -cost[i]):  # stable
        target = min(range(count), key=lambda s: (loads[s], s))
        loads[target] += cost[position]
        shares[target].append(position)
    _even_out(shares, loads, cost)
    return [[items[i] for i in sorted(share)] for share in shares]


def _even_out(shares: list[list[int]], loads: list[float], cost: list[float]) -> None:
    """Moves one item, or swaps two, between the most and the least loaded share, the exchange that
    lowers the larger of the two loads most, for as long as one does. Largest first alone can leave a
    gap: 6.7 + 4.3 + 2.5 against 6.7 + 3.7 + 3.0 + 1.4 (13.5, 14.8), where swapping 2.5 and 3.0 gives
    14.0 and 14.3. Each exchange narrows the spread of the loads, so this ends."""
    for _ in range(len(cost) * len(shares)):
        high = max(range(len(shares)), key=lambda s: (loads[s], -s))
        low = min(range(len(shares)), key=lambda s: (loads[s], s))
        gap = loads[high] - loads[low]
        # the best exchange: the pair's larger load after it, the cost it moves, the item moved, the one back
        best: tuple[float, float, int, int | None] | None = None
        for i in shares[high]:
            for j in [None, *shares[low]]:
                moved = cost[i] - (cost[j] if j is not None else 0.0)
                larger = max(loads[high] - moved, loads[low] + moved)
                if 1e-9 < moved < gap - 1e-9 and (best is None or larger < best[0]):
                    best = (larger, moved, i, j)
        if best is None:
            return
        _, moved, i, j = best
        shares[high].remove(i)
        shares[low].append(i)
        if j is not None:
            shares[low].remove(j)
            shares[high].append(j)
        loads[high] -= moved
        loads[low] += moved


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


@dataclass(frozen=True)
class Part:
    """What one job's ncu run gave: its results (tagged with where it ran) and its error, if any."""

    gpu: Gpu | None  # None: a job that never came back, where it ran unknown
    results: RunResults
    error: BaseException | None
    host: str | None = None


# --- the merge -------------------------------------------------------------------------------------


def merge(
    parts: Sequence[Part], selection: Selection, machine: Machine, memlens_command: str, started
) -> tuple[RunResults, BaseException | None]:
    """One RunResults of every GPU's, in suite order, and the first GPU's error (named with its GPU)."""
    order = {case.label: i for i, case in enumerate(selection.cases())}

    def position(label: str) -> int:
        return order.get(label, len(order))

    outcomes = [o for p in parts for o in p.results.outcomes]
    covered = {f"{o.family}/{o.variant}" for o in outcomes}
    missing = [case.label for case in selection.cases() if case.label not in covered]  # no program took them
    outcomes += Events(Path(), plan=missing).outcomes(selection.variants) if missing else ()
    outcomes.sort(key=lambda o: position(f"{o.family}/{o.variant}"))
    kernels = sorted((k for p in parts for k in p.results.kernels), key=lambda k: position(k.label))
    infos = [p.results.info for p in parts]
    names = sorted({p.gpu.name for p in parts if p.gpu is not None and p.gpu.name})  # whatever order shares end in
    sources = [info.source for info in infos if info.source]
    provenance = take_provenance(machine, selection.suite.path, memlens_command, started)
    provenance.update(
        gpu_name=" + ".join(names) or None,
        compute_capability=next((i.compute_capability for i in infos if i.compute_capability), None),
        source=", ".join(sources) or None,
    )
    info = replace(infos[0], **provenance)
    complete = all(p.results.complete for p in parts)
    hosts = len({p.host for p in parts}) > 1  # name the host where the jobs ran on several
    error = next((_named(p.error, p, hosts) for p in parts if p.error is not None), None)
    return RunResults(info, tuple(kernels), tuple(outcomes), complete), error


def _named(error: BaseException, part: Part, host: bool) -> BaseException:
    """`error` with its message naming the GPU it happened on (and its host, where `host`); its
    kind (and exit code) kept."""
    if part.gpu is not None and isinstance(error, (MemlensError, KeyboardInterrupt)):
        where = f"{part.host} {part.gpu}" if host and part.host is not None else str(part.gpu)
        error.args = (f"{where}: {error}", *error.args[1:])
    return error
