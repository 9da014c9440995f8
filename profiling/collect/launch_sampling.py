"""Which launches of a program ncu profiles: `memlens profile --launches first|N|all --warm-up K -- COMMAND`.

A training loop launches a few dozen distinct kernels thousands of times; launch 2 to 50 of one kernel
on the same shapes repeat launch 1's figures, at half a second to a second of replay each. By default
memlens profiles each distinct kernel once, with ncu's own filters, so nothing is launched or replayed
twice for nothing:

    --filter-mode per-launch-config --kernel-name-base mangled --kernel-id ::regex:.*:K+1

- `--kernel-id ::regex:.*:N` profiles the N-th invocation of every kernel function (ncu's filter
  examples: `--kernel-id ::regex:Bar:2`, "only 2nd invocation of all kernels which have Bar in name");
- `--filter-mode per-launch-config` applies ncu's kernel and launch filters "separately for each GPU
  launch parameter i.e. grid size, block size and shared memory", so a kernel launched with a new
  shape (a smaller last batch, a sequence-length bucket) is profiled again, once per shape.

- `--kernel-name-base mangled` keys by the mangled name: ncu's default base, `function`, counts every
  template instance of a function as one (the H100 training loop's forward and backward cutlass
  `Kernel2<...>` GEMMs, of one grid and block, were profiled once between them).

A distinct kernel is therefore (mangled function, grid, block, shared memory), as ncu keys it. Not the NVTX
range path: the same kernel with the same shape in two ranges is profiled once, in the first range
that launches it (--launches all profiles both; "Ranges" below). memlens cannot see the launches ncu
passes over, but memlens.range counts its ranges' runs: a counted range that holds no profiled launch
is selected by name in a second pass (`--nvtx-include 'regex:^NAME$/'`, nvtx_names.exact_range_filter),
which profiles each distinct kernel of that range once; one that still holds none is named after the run
(`ranges_not_profiled`, results.json `info.ranges_not_profiled`), with why.

`--warm-up K` leaves out the first K launches of each (JIT compilation, autotuning, cold caches): the
K+1-th is profiled; a kernel launched K times or fewer is not profiled at all. `--launches N`
profiles the K+1-th to K+N-th launch of each.

Why ncu's filters and not memlens's own: filtering after ncu saves nothing (every launch was replayed);
filtering in the program needs a hook on every launch (LD_PRELOAD or CUPTI) that ncu already is; and a
first pass listing the launches runs the program twice. ncu's `--range-filter` picks NVTX range
instances, not kernels: a kernel first launched in the third step, or with a new shape later, would be
missed. ncu reports only what it profiled, so how many launches each profiled one stands for is not
known from ncu; memlens.range counts how often each of its ranges ran (`range_runs`), which is what a
reader can set beside "1 profiled" (see program_run and api.range).

Ranges (issue 45). Two differently named ranges around one kernel of one shape (a copy from an aligned
and from a misaligned offset) are two things to measure; `--launches first` profiles the first. What
ncu 2025.3.1 offers and does (an H200, tests/fixtures/programs/two_ranges.cu: copy in copy/aligned and
copy/misaligned, then scale in step 3 times):
- no launch filter keys by range: `--kernel-id` is context:stream:name:invocation; `--range-filter`
  numbers the instances of every range the NVTX filter matches together (`--range-filter ::1` with
  `regex:.*/` profiled the first copy only, in copy/aligned); `per-launch-config` keys by grid, block and
  shared memory. A plain filter's `/` nests (`copy/aligned/` is a range aligned inside a range copy:
  it selected nothing), hence exact_range_filter's `regex:^copy.aligned$/`.
- the NVTX filter passes launches before the kernel-id counts them (a CuPy warm-up inside CCCL's range,
  not selected, did not take the "first launch": program_run), so one range's own filter profiles
  each of its distinct kernels once, whatever ran in other ranges.
Designs weighed, with their cost:
1. More passes, each excluding the ranges seen: pass k+1 runs with pass k's filters plus an
   `--nvtx-exclude` exact_range_filter(name) for the innermost range of every launch profiled so far,
   and adds what it profiles; the first pass that profiles nothing ends it (two_ranges: pass 2 profiles
   copy in copy/misaligned, pass 3 nothing). It needs no knowledge of the names beforehand, so it is the
   one that works for any program, but every program run pays at least one more run of the whole
   program under ncu, with nothing replayed (its start, ncu's start, its launches intercepted: on the
   suite's program about its 4.9 s bare run beside memlens's 16 s, so +30% or more), and one more for
   each generation of ranges hidden behind others. An excluded name is excluded at every depth, so a
   range nested in a seen one that itself held only repeated kernels stays unprofiled (said as today).
   Its reports are several (profile.ncu-rep and one a pass) read into one results.json.
2. An NVTX-aware kernel id: ncu has none (above); not possible without a first pass.
3. One run for each range name a first pass found: the names are those ncu profiled a launch in (then
   nothing is missing) or those memlens.range counted (ranges_not_profiled), which is the cheap case:
   one more run, only where a counted range held no profiled launch, `--nvtx-include` its names.
What is built (range_passes.py): 3 by default, costing nothing unless needed: memlens.range's counts
name the ranges with no profiled launch, and one more pass selects them by name (its launches join the
run, from profile.ranges.ncu-rep; results.json `info.ranges_second_pass` holds its filters); a range
still without one launched no kernel, and is named (not_profiled_line). A program of plain NVTX ranges
gets no second pass, since nothing says a range was skipped: `--each-range` runs 1 for it, at its cost.
tests/fixtures/record_ranges.sh runs on a GPU the cases these rest on (a range's own filter profiles its
kernel although an earlier range launched it; a regex's `/` is literal or not; `--nvtx-exclude` drops a
launch before the kernel-id counts it, for 1), with the expected outcome of each;
tests/collect/test_program_run_gpu.py runs the CuPy twin of two_ranges.cu through memlens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlens.errors import ConfigError
from memlens.model.nvtx_names import exact_range_filter

if TYPE_CHECKING:
    from memlens.model.results import RunInfo

ALL = "all"
FIRST = "first"
DEFAULT = FIRST
MAX_PER_KERNEL = 100  # more than this: --launches all


@dataclass(frozen=True)
class LaunchSampling:
    per_kernel: int | None = None  # launches profiled of each distinct kernel; None: every launch
    warm_up: int = 0  # launches of each distinct kernel left out before the profiled ones

    @property
    def every_launch(self) -> bool:
        return self.per_kernel is None

    @property
    def mode(self) -> str:
        """As --launches takes it: 'all', 'first' or N."""
        if self.per_kernel is None:
            return ALL
        return FIRST if self.per_kernel == 1 else str(self.per_kernel)

    def ncu_args(self) -> list[str]:
        """ncu's filter options for this sampling (none for every launch)."""
        if self.per_kernel is None:
            return []
        first = self.warm_up + 1
        if self.per_kernel == 1:
            invocation = str(first)
        else:
            invocation = "^(" + "|".join(str(n) for n in range(first, first + self.per_kernel)) + ")$"
        return [
            "--filter-mode",
            "per-launch-config",
            "--kernel-name-base",
            "mangled",
            "--kernel-id",
            f"::regex:.*:{invocation}",
        ]

    def describe(self) -> str:
        """One line for tables and reports: what was profiled."""
        if self.per_kernel is None:
            return "every launch profiled (--launches all)"
        which = "one launch" if self.per_kernel == 1 else f"{self.per_kernel} launches"
        after = f" after {self.warm_up} warm-up launch{'es' if self.warm_up != 1 else ''}" if self.warm_up else ""
        return (
            f"{which} of each distinct kernel (function, grid, block, shared memory){after} profiled, in the "
            f"first range it ran in (--launches {self.mode}; --each-range profiles it in each named range; "
            "--launches all profiles every launch)"
        )


def parse_launches(text: str, warm_up: int = 0) -> LaunchSampling:
    """--launches first|N|all and --warm-up K, or ConfigError saying what is wrong."""
    if warm_up < 0:
        raise ConfigError(f"--warm-up {warm_up}: give 0 or more launches")
    value = text.strip().lower()
    if value == ALL:
        if warm_up:
            raise ConfigError("--warm-up leaves out launches of each kernel: it needs --launches first or N, not all")
        return LaunchSampling(None, 0)
    if value == FIRST:
        return LaunchSampling(1, warm_up)
    if not value.isdigit() or not 1 <= int(value) <= MAX_PER_KERNEL:
        raise ConfigError(
            f"--launches {text!r}: give first, all, or a number of launches of each kernel from 1 to {MAX_PER_KERNEL}"
        )
    return LaunchSampling(int(value), warm_up)


# memlens.range counts the runs of each of its ranges in a program that memlens profiles: the program
# finds the file to write them to in this variable (set by program_run), and writes them at its exit.
RANGE_COUNTS_ENV = "MEMLENS_RANGE_COUNTS"
COUNTS_UNKNOWN = (
    "unknown: ncu reports only the launches it profiled; range_runs is how often the memlens.range around a kernel ran"
)
COUNTS_ALL = "every launch profiled"


def read_range_counts(path: Path) -> dict[str, int]:
    """The range counts a program wrote ({} where it wrote none, or something unreadable: the counts
    are a help to the reader, never a reason to fail a run)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    ranges = data.get("ranges") if isinstance(data, dict) else None
    if not isinstance(ranges, dict):
        return {}
    return {
        str(name): count
        for name, count in ranges.items()
        if isinstance(count, int) and not isinstance(count, bool) and count > 0
    }


def range_runs(nvtx: str | None, counts: dict[str, int]) -> int | None:
    """How often the memlens.range around a launch labelled `nvtx` (its ranges, outermost first,
    joined by ' > ') ran: its whole path where memlens counted that path, else its innermost range
    where exactly one counted path ends in it (other NVTX ranges between memlens's own), else None."""
    if not nvtx or not counts:
        return None
    if nvtx in counts:
        return counts[nvtx]
    innermost = nvtx.rsplit(" > ", 1)[-1]
    found = [count for path, count in counts.items() if path.rsplit(" > ", 1)[-1] == innermost]
    return found[0] if len(found) == 1 else None


def ranges_not_profiled(counts: dict[str, int], kernels: Sequence[Any]) -> dict[str, int]:
    """The memlens.range paths that ran (path -> runs) with no profiled launch in them: none whose
    NVTX label holds the path's innermost range."""
    seen = {name for kernel in kernels if kernel.nvtx for name in kernel.nvtx.split(" > ")}
    return {path: runs for path, runs in counts.items() if path.rsplit(" > ", 1)[-1] not in seen}


def sampling_lines(info: RunInfo, kernels: Sequence[Any]) -> list[str]:
    """What a table or report says below its kernels of a run that profiled one launch of many: which
    launches, per kernel "1 profiled of its range's N runs" where memlens.range counted them, and the
    counted ranges with no profiled launch. Nothing for a run of every launch (or a suite run, or a
    plain ncu report: info.launches None)."""
    lines = selection_lines(info)
    if info.launches in (None, ALL):
        return lines
    sampling = parse_launches(info.launches, info.warm_up or 0)
    lines.append(f"launches: {sampling.describe()}")
    by_runs: dict[int, dict[str, None]] = {}
    for kernel in kernels:
        if getattr(kernel, "range_runs", None) is not None:
            by_runs.setdefault(kernel.range_runs, {})[kernel.label] = None
    for runs, labels in sorted(by_runs.items(), reverse=True):
        shown = ", ".join(list(labels)[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
        of_runs = f"{runs:,} run{'s' if runs != 1 else ''}"
        lines.append(f"  {sampling.per_kernel} profiled of the {of_runs} of its range: {shown}")
    if len(by_runs) == 0 or any(getattr(k, "range_runs", None) is None for k in kernels):
        lines.append(
            "  how many launches each profiled one stands for: unknown (ncu reports only those it "
            "profiled; memlens.range counts its ranges' runs)"
        )
    if info.ranges_not_profiled:
        lines.append("  " + not_profiled_line(info.ranges_not_profiled, info.ranges_second_pass))
    return lines


def selection_lines(info: RunInfo) -> list[str]:
    """What a program run's NVTX filters selected, which launches its push/pop ranges covered, and its
    processes where there were several (nothing for a suite run or a plain ncu report)."""
    lines = [f"ranges: {info.ranges_selected}"] if info.ranges_selected else []
    if info.push_pop_scope == "process":
        lines.append("push/pop ranges cover every thread's launches (--nvtx-push-pop-scope process)")
    elif info.push_pop_scope == "thread":
        lines.append(
            "push/pop ranges cover the launches of the thread that pushed them only (--nvtx-push-pop-scope thread)"
        )
    if info.processes and len(info.processes) > 1:
        named = ", ".join(f"{number}: {name}" for name, number in sorted(info.processes.items(), key=lambda p: p[1]))
        lines.append(f"processes (each launch's label names its own): {named}")
    return lines


SHOWN_FIXES = 3  # ranges whose own --nvtx-include the line spells out


def not_profiled_line(not_profiled: dict[str, int], second_pass: str | None = None) -> str:
    """Which counted ranges hold no profiled launch, why that can be, and the two ways to profile them;
    after a second pass that selected them by name (`second_pass`: its filters), why they still hold none."""
    shown = ", ".join(f"{path} ({runs:,} run{'s' if runs != 1 else ''})" for path, runs in not_profiled.items())
    if second_pass:
        return (
            f"ranges that ran with no launch profiled in them, even by a second pass selecting them by name "
            f"({second_pass}): {shown}. They launched no kernel, or each kernel only as often as --warm-up leaves "
            "out; --launches all profiles every launch in every range"
        )
    innermost = list(dict.fromkeys(path.rsplit(" > ", 1)[-1] for path in not_profiled))
    filters = " ".join(f"--nvtx-include '{exact_range_filter(name)}'" for name in innermost[:SHOWN_FIXES])
    more = f" (and one for each of the {len(innermost) - SHOWN_FIXES} others)" if len(innermost) > SHOWN_FIXES else ""
    return (
        f"ranges that ran with no launch profiled in them: {shown}. Either they launched no kernel, or each "
        "kernel they launched had the function and shape of one profiled earlier (ncu keys a kernel without "
        "its range), or of a warm-up launch; --launches all profiles every launch in every range, and "
        f"{filters}{more} each distinct kernel of {'that range' if len(innermost) == 1 else 'those ranges'} once"
    )
