"""More passes of a program over the named ranges its first pass left without a profiled launch (issue 45;
the designs and their costs: launch_sampling.py, "Ranges"). ncu keys "each distinct kernel once" by
function and shape, not by range, so a kernel first launched in one range is not profiled in the next:

- counted ranges (the default filters): memlens.range counted a range that holds no profiled launch; one
  more pass selects those ranges by name (`--nvtx-include 'regex:^NAME$/'`): each distinct kernel in them
  once. Nothing is run again where every counted range holds a profiled launch, nor where the user gave
  --nvtx-include (a range outside it was left out on purpose: it is named, as before).
- every range (`--each-range`): pass k+1 runs the first pass's filters with an `--nvtx-exclude` by name
  for the innermost range of every launch profiled so far (push/pop and start/end: memlens.range opens
  both); the first pass that profiles nothing ends them (at most MAX_PASSES). Plain NVTX ranges too, at
  one more run of the whole program at least.

Each pass writes its own files (run_layout.profile_files(run_dir, ranges=n): profile.ranges.ncu-rep,
profile.ranges2.ncu-rep, ...); its launches join the results, their launch IDs after those before them,
and results.json `info.ranges_second_pass` says what the passes selected.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from memlens.collect.launch_sampling import ranges_not_profiled
from memlens.collect.pipeline import read_results
from memlens.collect.program_processes import with_processes
from memlens.errors import ProfilerError
from memlens.model.nvtx_names import exact_range_filter, innermost_range
from memlens.model.run_layout import ProfileFiles, profile_files

if TYPE_CHECKING:
    from memlens.collect.ncu import Ncu, NcuRun
    from memlens.model.results import RunResults

# one run of the program under ncu: its --nvtx-include and extra --nvtx-exclude filters, into these files
RunPass = Callable[[tuple[str, ...], tuple[str, ...], ProfileFiles], "tuple[NcuRun | None, BaseException | None]"]
MAX_PASSES = 8  # the first included: --each-range stops there, and says so
NOTHING_PROFILED = "No kernels were profiled"
COUNTED_AGAIN = "ranges ran with no launch profiled in them"


def counted_ranges(
    ncu: Ncu, run_pass: RunPass, run_dir: Path, results: RunResults, counts: dict[str, int]
) -> tuple[RunResults, BaseException | None]:
    """One more pass selecting by name the ranges memlens.range counted that hold no profiled launch
    (nothing where there are none); a pass that profiled nothing (the ranges launched no kernel) adds nothing."""
    names = list(dict.fromkeys(path.rsplit(" > ", 1)[-1] for path in ranges_not_profiled(counts, results.kernels)))
    if not names or not results.kernels:
        return results, None
    print(
        f"memlens: {COUNTED_AGAIN} ({', '.join(names)}): running the program once more selecting them, "
        "to profile each distinct kernel in them once",
        file=sys.stderr,
    )
    include = tuple(exact_range_filter(name) for name in names)
    said = " ".join(f"--nvtx-include {shlex.quote(f)}" for f in include)
    results = replace(results, info=replace(results.info, ranges_second_pass=said))
    results, error, _ = _one_pass(ncu, run_pass, run_dir, results, include, (), profile_files(run_dir, ranges=1))
    return results, error


def every_range(
    ncu: Ncu, run_pass: RunPass, run_dir: Path, results: RunResults, include: tuple[str, ...]
) -> tuple[RunResults, BaseException | None]:
    """Passes excluding by name the ranges of every launch profiled so far, until one profiles nothing."""
    for number in range(1, MAX_PASSES):
        exclude = seen_range_filters(results)
        if not exclude:  # nothing profiled in a named range: nothing to exclude, nothing new to find
            return results, None
        print(
            f"memlens: --each-range: pass {number + 1}, leaving out the {len(exclude) // 2} ranges profiled so far",
            file=sys.stderr,
        )
        said = f"--each-range: {number} more pass{'es' if number > 1 else ''}, the last leaving out " + " ".join(
            f"--nvtx-exclude {shlex.quote(f)}" for f in exclude
        )
        results = replace(results, info=replace(results.info, ranges_second_pass=said))
        results, error, found = _one_pass(
            ncu, run_pass, run_dir, results, include, exclude, profile_files(run_dir, ranges=number)
        )
        if error is not None or not found:
            return results, error
    print(
        f"memlens: --each-range: stopped after {MAX_PASSES} passes; ranges still hidden behind others are not "
        "profiled (--launches all profiles every launch)",
        file=sys.stderr,
    )
    return results, None


def seen_range_filters(results: RunResults) -> tuple[str, ...]:
    """`--nvtx-exclude` filters for the innermost range (a library's left out) of every profiled launch, by
    name, push/pop and start/end."""
    seen = dict.fromkeys(found for k in results.kernels if k.nvtx and (found := innermost_range(k.nvtx)))
    return tuple(exact_range_filter(name, domain, push_pop) for domain, name in seen for push_pop in (True, False))


def _one_pass(
    ncu: Ncu,
    run_pass: RunPass,
    run_dir: Path,
    results: RunResults,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    files: ProfileFiles,
) -> tuple[RunResults, BaseException | None, bool]:
    """One more pass; its launches joined to `results`: (results, its error, whether it profiled any)."""
    run, error = run_pass(include, exclude, files)
    if run is not None and run.returncode == 0 and NOTHING_PROFILED in run.log_text:
        return results, None, False
    if error is not None:
        return results, error, False
    more, read_error = read_results(files.report, results.info)
    if read_error is not None:
        return results, ProfilerError(f"report unreadable: {read_error}; kept in {run_dir}"), False
    more = with_processes(more, ncu, files.report)
    after = 1 + max((k.launch_id for k in results.kernels), default=-1)
    kernels = results.kernels + tuple(replace(k, launch_id=k.launch_id + after) for k in more.kernels)
    info = replace(results.info, source=", ".join(filter(None, (results.info.source, more.info.source))) or None)
    joined = replace(
        results, kernels=kernels, info=info, embedded_sources={**results.embedded_sources, **more.embedded_sources}
    )
    return joined, None, bool(more.kernels)
