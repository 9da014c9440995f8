"""`memlens profile -- COMMAND`: any program under ncu with memlens's metrics, into a run directory.

What is profiled: the kernels launched inside the program's own NVTX ranges, those the filters
select, in ncu's own `--nvtx-include` syntax (validated here, passed through as written):

- `RANGE/`, `DOMAIN@RANGE/`: a push/pop range of the default domain or of DOMAIN; a trailing `/` is
  what makes ncu match push/pop ranges (without it ncu matches start/end ranges only, silently).
- `regex:EXPR/`, `regex:DOMAIN@EXPR/`: the same with a regular expression.
- default (OWN_RANGE_FILTERS): every push/pop and start/end range of NVTX's default domain (where
  `memlens.range`, `torch.cuda.nvtx.range_push` and `nvtxRangePushA` put them) and of every named
  domain but the libraries' (nvtx_names.LIBRARY_DOMAINS: CCCL, NCCL), whose domain regex
  (nvtx_names.domains_other_than) matches any name but theirs. A library's range never selects a
  launch: a CuPy reduction warmed up outside the program's ranges (inside CCCL's own) is not the
  "first launch" that stands for the one inside them, since ncu counts a kernel's invocations
  among the launches its NVTX filter passes. Inside a range of the program's, a library's range
  only adds to the label (readers.common.program_label). A program that opened no range of its own
  that launched a kernel (ncu: "No kernels were profiled") is run once more with ANY_RANGE_FILTERS,
  every range of every domain, libraries' included (what memlens did before), and the run says so.
- push/pop ranges cover every thread's launches (`--nvtx-push-pop-scope process`, the default here;
  ncu's own is `thread`): PyTorch runs backward on its autograd thread, outside a push/pop range
  that the main thread pushed around the step. `--nvtx-push-pop-scope thread` keeps ncu's default,
  for programs whose threads nest ranges of their own independently. A start/end range belongs to
  the process either way. `memlens.range` opens both kinds (api.py).
- the program's child processes are profiled too (`--target-processes all`: a `multiprocessing`
  worker, a `torchrun` rank); ncu's log names each process it connected to (`info.processes`).

Which launches: `--launches first` (the default) profiles each distinct kernel (function, grid, block,
shared memory) once, `--launches N` N times, `--launches all` every launch; `--warm-up K` leaves out
the first K launches of each (launch_sampling.py says how, with ncu's own filters, and why). Where a
memlens.range ran with no profiled launch (its kernels ran first in another range), the program is run
once more selecting those ranges by name (profile.ranges.ncu-rep, ncu.ranges.log), and their launches
join the run; `--each-range` runs it again leaving out the ranges profiled so far, until a run profiles
nothing, for plain NVTX ranges too (range_passes.py; launch_sampling.py, "Ranges").

`--nvtx-exclude FILTER` (same syntax, repeatable) leaves out the kernels in the ranges it selects, from
the filters above or from --all-kernels. `--all-kernels` profiles every kernel instead of NVTX
ranges, the first `--launch-count` launches (default 100).
The run directory is a suite run's: the raw profile.ncu-rep (never overwritten), ncu's log, the
command, the program's stderr, results.json; `<out>/latest` points at it. Errors (exit 3 unless said):
the program fails (its exit status and last stderr line), the filters match nothing, ncu missing,
a command that is not there (2), a bad filter (2). The raw report is kept whatever happens.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from memlens.collect.launch_sampling import (
    COUNTS_ALL,
    COUNTS_UNKNOWN,
    RANGE_COUNTS_ENV,
    LaunchSampling,
    range_runs,
    ranges_not_profiled,
    read_range_counts,
)
from memlens.collect.ncu import (
    PUSH_POP_SCOPES,
    Ncu,
    NcuRun,
    NcuTimeout,
    ProfileRequest,
    check_permission,
    find_ncu,
    first_error,
    profile_argv,
    run_ncu,
)
from memlens.collect.pipeline import read_results, run_info, save_run, start_disassembler
from memlens.collect.run_dir import Machine, driver_version, new_run_dir, now
from memlens.errors import ConfigError, ProfilerError
from memlens.io.files import write_output
from memlens.io.processes import command_line
from memlens.model.catalogue import ncu_metric_names
from memlens.model.cupy_cache import CUPY_SAVE_SOURCE
from memlens.model.ncu_settings import NcuSettings
from memlens.model.nvtx_names import LIBRARY_DOMAINS, domains_other_than
from memlens.model.run_layout import (
    NCU_COMMAND,
    NCU_LOG,
    NCU_REPORT,
    OWN_RANGES_LOG,
    RANGE_COUNTS_FILE,
    STDERR_FILE,
    ProfileFiles,
    profile_files,
)

if TYPE_CHECKING:  # imported where used, after ncu has started (tests/benchmarks/start_time.py)
    from memlens.model.results import RunResults


def own_range_filters(library: tuple[str, ...] = LIBRARY_DOMAINS) -> tuple[str, ...]:
    """push/pop ranges of the default domain and of every named one but the libraries'; start/end ranges of the same"""
    other = domains_other_than(library)
    return ("regex:.*/", f"regex:{other}@.*/", "regex:.*", f"regex:{other}@.*")


OWN_RANGE_FILTERS = own_range_filters()
DEFAULT_FILTERS = OWN_RANGE_FILTERS
# every range of every domain, the libraries' included: for a program that opened none of its own
ANY_RANGE_FILTERS = ("regex:.*/", "regex:.*@.*/", "regex:.*", "regex:.*@.*")
DEFAULT_SCOPE = "process"
DEFAULT_LAUNCH_COUNT = 100
_APP_FAILED = re.compile(r"The application returned an error code \((-?\d+)\)")


@dataclass(frozen=True)
class ProgramOptions:
    program: tuple[str, ...]  # the profiled program's command line
    nvtx_include: tuple[str, ...] = ()  # () -> DEFAULT_FILTERS, unless all_kernels
    nvtx_exclude: tuple[str, ...] = ()
    all_kernels: bool = False
    launch_count: int | None = None
    sampling: LaunchSampling = LaunchSampling()  # --launches all
    out_dir: Path = Path("runs")
    ncu_settings: NcuSettings = NcuSettings()  # clock and cache control, --fast, --roofline, --ncu
    timeout: float | None = None
    memlens_command: str = ""  # the memlens command line, for results.json
    push_pop_scope: str = DEFAULT_SCOPE  # ncu --nvtx-push-pop-scope: "process" (every thread's launches) or "thread"
    each_range: bool = False  # --each-range: more passes, each distinct kernel once in each named range (range_passes)

    @property
    def filters(self) -> tuple[str, ...]:
        if self.all_kernels:
            return ()
        return self.nvtx_include or DEFAULT_FILTERS

    @property
    def launches(self) -> int | None:
        if self.all_kernels and self.launch_count is None and self.sampling.every_launch:
            return DEFAULT_LAUNCH_COUNT
        return self.launch_count


def validate_filter(nvtx_filter: str, option: str = "--nvtx-include") -> str:
    """One --nvtx-include (or --nvtx-exclude) filter as ncu takes it, or ConfigError saying what is
    wrong with it."""
    shown = f"{option} {nvtx_filter!r}"
    body = nvtx_filter.removeprefix("regex:")
    if not body.strip("/"):
        raise ConfigError(f"{shown}: names no range (e.g. 'mine/v1/', 'regex:.*/')")
    if not body.endswith("/"):
        raise ConfigError(
            f"{shown}: a push/pop range filter ends in '/' (ncu matches a filter without it against "
            f"start/end ranges only): did you mean {nvtx_filter + '/'!r}?"
        )
    domain, at, ranges = body.rpartition("@") if "@" in body else ("", "", body)
    if at and not domain:
        raise ConfigError(f"{shown}: empty domain before '@' (leave out '@' for the default domain)")
    if nvtx_filter.startswith("regex:"):
        for part in (domain, ranges[:-1]):
            try:
                re.compile(part)
            except re.error as exc:
                raise ConfigError(f"{shown}: bad regular expression {part!r}: {exc}") from None
    return nvtx_filter


def validate(options: ProgramOptions) -> None:
    if not options.program:
        raise ConfigError("no program to profile: memlens profile [options] -- COMMAND [ARGS...]")
    if options.all_kernels and options.nvtx_include:
        raise ConfigError("--all-kernels profiles every kernel: leave out --nvtx-include, or --all-kernels")
    if options.launch_count is not None and options.launch_count < 1:
        raise ConfigError(f"--launch-count {options.launch_count}: give 1 or more")
    if options.launch_count is not None and not options.sampling.every_launch:
        mode = options.sampling.mode
        raise ConfigError(
            f"--launch-count counts every launch: give it with --launches all (--launches {mode} "
            "profiles each distinct kernel, not the first N launches)"
        )
    if options.each_range and (options.all_kernels or options.sampling.every_launch):
        raise ConfigError(
            "--each-range profiles each distinct kernel once in each named range: give it with "
            "--launches first or N, not --launches all or --all-kernels"
        )
    if options.push_pop_scope not in PUSH_POP_SCOPES:
        raise ConfigError(f"--nvtx-push-pop-scope {options.push_pop_scope!r}: give {' or '.join(PUSH_POP_SCOPES)}")
    for nvtx_filter in options.nvtx_include:
        validate_filter(nvtx_filter)
    for nvtx_filter in options.nvtx_exclude:
        validate_filter(nvtx_filter, "--nvtx-exclude")
    program = options.program[0]
    if shutil.which(program) is None:
        where = "not an executable file" if os.sep in program else "not found on PATH"
        raise ConfigError(f"cannot run {program!r}: {where}")


def profile_program(options: ProgramOptions) -> tuple[Path, RunResults]:
    """Profile the program; results.json is written whatever happens once the run directory exists."""
    validate(options)
    ncu = find_ncu(options.ncu_settings.path)
    run_dir = new_run_dir(options.out_dir)
    started = now()
    commands: list[str] = []
    filters = options.filters
    run, error = _run_pass(ncu, options, filters, run_dir, commands)
    if _opened_no_range_of_its_own(options, run, run_dir):
        print(
            f"memlens: {OWN_RANGES_NONE}: running it once more, selecting every range of every domain, "
            "the libraries' included",
            file=sys.stderr,
        )
        (run_dir / NCU_LOG).replace(run_dir / OWN_RANGES_LOG)
        filters = ANY_RANGE_FILTERS
        run, error = _run_pass(ncu, options, filters, run_dir, commands)
    from memlens.collect import range_passes  # here, not above: what follows ncu's run is imported after it
    from memlens.collect.program_processes import connected_processes, with_processes

    info = run_info(
        options.ncu_settings,
        ncu.version_text,
        Machine(driver_version(), None),
        None,
        options.memlens_command,
        started,
        launches=options.sampling.mode,
        warm_up=options.sampling.warm_up,
        launch_counts=COUNTS_ALL if options.sampling.every_launch else COUNTS_UNKNOWN,
        push_pop_scope=options.push_pop_scope,
        ranges_selected=_selected(options, filters),
        processes=connected_processes(run.log_text) if run else None,
    )
    report = run_dir / NCU_REPORT
    results, read_error = read_results(report, info, complete=error is None and report.exists())
    if read_error is not None:
        read_error = ProfilerError(f"report unreadable: {read_error}; kept in {run_dir}")
        results = replace(results, complete=False)
    results = with_processes(results, ncu, report)
    counts = read_range_counts(run_dir / RANGE_COUNTS_FILE)
    if error is None and read_error is None and not options.sampling.every_launch and not options.all_kernels:

        def run_pass(
            include: tuple[str, ...], exclude: tuple[str, ...], files: ProfileFiles
        ) -> tuple[NcuRun | None, BaseException | None]:
            return _run_pass(ncu, options, include, run_dir, commands, files, exclude)

        if options.each_range:
            results, error = range_passes.every_range(ncu, run_pass, run_dir, results, filters)
        elif not options.nvtx_include:  # a counted range outside the user's own filters was left out on purpose
            results, error = range_passes.counted_ranges(ncu, run_pass, run_dir, results, counts)
    results = _with_range_counts(results, options, counts)
    error = error or read_error
    if error is None and not results.kernels:
        error = ProfilerError(_nothing_profiled(options, run_dir))
        results = replace(results, complete=False)
    save_run(options.out_dir, run_dir, results, error)
    return run_dir, results


OWN_RANGES_NONE = "the program opened no NVTX range of its own that launched a kernel"


def _run_pass(
    ncu: Ncu,
    options: ProgramOptions,
    filters: tuple[str, ...],
    run_dir: Path,
    commands: list[str],
    files: ProfileFiles | None = None,
    exclude: tuple[str, ...] = (),
) -> tuple[NcuRun | None, BaseException | None]:
    """One run of the program under ncu with these NVTX filters (and `exclude` beside the options'), into
    `files` (the run's own where None): what ncu did, and what went wrong."""
    files = files or profile_files(run_dir)
    request = ProfileRequest(
        metrics=ncu_metric_names(options.ncu_settings.fast, options.ncu_settings.roofline),
        report=files.report_stem,
        log=files.log,
        nvtx_include=filters,
        nvtx_exclude=(*options.nvtx_exclude, *exclude),
        settings=options.ncu_settings,
        launch_count=options.launches,
        launch_filter=tuple(options.sampling.ncu_args()),
        push_pop_scope=options.push_pop_scope,
        all_processes=True,
    )
    argv = profile_argv(ncu, request, options.program)
    commands.append(command_line(argv))
    write_output(run_dir / NCU_COMMAND, "\n".join(commands) + "\n", record=True)
    stderr = _StderrTee(run_dir / STDERR_FILE)
    error: BaseException | None = None
    run: NcuRun | None = None
    try:
        warm = None if options.ncu_settings.fast else lambda: start_disassembler(files.report)
        env = {**program_env(), RANGE_COUNTS_ENV: str(run_dir / RANGE_COUNTS_FILE)}  # memlens.range counts its runs
        run = run_ncu(argv, options.timeout, poll=warm, log=request.log, stderr=stderr.write_end, env=env)
    except NcuTimeout as exc:
        error = ProfilerError(f"{exc}; partial results in {run_dir}")
    except KeyboardInterrupt:
        error = KeyboardInterrupt(f"partial results in {run_dir}")
    finally:
        last_line = stderr.close()
    if run is not None:
        error = _failure(run, options, last_line, run_dir)
    return run, error


def _opened_no_range_of_its_own(options: ProgramOptions, run: NcuRun | None, run_dir: Path) -> bool:
    """Whether the default filters, the program's own ranges, selected nothing in a run that went well
    otherwise: ncu exited 0, said it profiled no kernel and wrote no report."""
    if options.nvtx_include or options.all_kernels or run is None or run.returncode != 0:
        return False
    return "No kernels were profiled" in run.log_text and not (run_dir / NCU_REPORT).exists()


def _selected(options: ProgramOptions, filters: tuple[str, ...]) -> str:
    """What the NVTX filters of the run selected, in a line for results.json and the report."""
    if options.all_kernels:
        return "every kernel (--all-kernels)"
    if options.nvtx_include:
        return "the ranges of --nvtx-include " + " ".join(repr(f) for f in options.nvtx_include)
    if filters == ANY_RANGE_FILTERS:
        return (
            f"every range of every domain, the libraries' included: {OWN_RANGES_NONE} (the labels name the ranges seen)"
        )
    return (
        f"the program's own ranges; those of {', '.join(LIBRARY_DOMAINS)} (libraries' domains) only add to "
        "the label of a launch inside them"
    )


def _with_range_counts(results: RunResults, options: ProgramOptions, counts: dict[str, int]) -> RunResults:
    """Each kernel with the runs of its memlens.range, and the counted ranges with no profiled launch."""
    if not counts:
        return results
    kernels = tuple(replace(k, range_runs=range_runs(k.nvtx, counts)) for k in results.kernels)
    not_profiled = None if options.sampling.every_launch else ranges_not_profiled(counts, kernels)
    info = replace(results.info, ranges_not_profiled=not_profiled or None)
    return replace(results, kernels=kernels, info=info)


def program_env() -> dict[str, str]:
    """The profiled program's environment: memlens's, with CuPy asked to save each kernel's source in
    its cache (CUPY_CACHE_SAVE_CUDA_SOURCE=1, unless set), so its temporary copy can be shown."""
    return {**os.environ, CUPY_SAVE_SOURCE: os.environ.get(CUPY_SAVE_SOURCE, "1")}


def _failure(run: NcuRun, options: ProgramOptions, last_line: str, run_dir: Path) -> ProfilerError | None:
    """What went wrong in a run of ncu that ended by itself, or None."""
    check_permission(run.log_text)
    failed = _APP_FAILED.search(run.log_text)
    if failed or (run.returncode != 0 and "Connected to process" in run.log_text):
        status = failed.group(1) if failed else str(run.returncode)
        said = f": {last_line}" if last_line else " (it wrote nothing to stderr)"
        return ProfilerError(
            f"the program {command_line(options.program[:1])} exited with status {status}{said}; "
            f"what was profiled is in {run_dir}"
        )
    if run.returncode != 0:
        reason = first_error(run.log_text)
        because = f" ({reason})" if reason else ""
        return ProfilerError(f"ncu exited with code {run.returncode}{because}; see {run_dir / NCU_LOG}")
    if "No kernels were profiled" in run.log_text:
        return ProfilerError(_nothing_profiled(options, run_dir))
    return None


def _nothing_profiled(options: ProgramOptions, run_dir: Path) -> str:
    excluded = "".join(f" --nvtx-exclude {f!r}" for f in options.nvtx_exclude)
    if options.sampling.warm_up:
        excluded += f" (or each kernel ran --warm-up {options.sampling.warm_up} times or fewer)"
    if options.all_kernels:
        but = f" outside{excluded}" if excluded else ""
        return f"ncu profiled no kernel: the program launched none{but}; see {run_dir / NCU_LOG}"
    filters = " ".join(f"--nvtx-include {f!r}" for f in options.filters)
    default = " (the default)" if not options.nvtx_include else ""
    return (
        f"ncu profiled no kernel: {filters}{default}{excluded} matched no NVTX range that launched one "
        f"(--all-kernels profiles every kernel); see {run_dir / NCU_LOG}"
    )


class _StderrTee:
    """The profiled program's stderr (and ncu's), shown here as it comes and kept in a file: its last
    line names why a failing program failed."""

    def __init__(self, path: Path) -> None:
        read_end, self.write_end = os.pipe()
        self.reader = os.fdopen(read_end, "rb")
        self.file: BinaryIO = path.open("wb")
        self.last_line = b""
        self.thread = threading.Thread(target=self._copy, name="memlens-stderr", daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        target = getattr(sys.stderr, "buffer", None)
        for line in self.reader:
            self.file.write(line)
            if line.strip():
                self.last_line = line
            if target is not None:
                target.write(line)
                target.flush()
            else:
                sys.stderr.write(line.decode("utf-8", errors="replace"))

    def close(self) -> str:
        """Stops copying (once the program and ncu are gone) and returns the last non-empty line."""
        os.close(self.write_end)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():  # else a process the program left holds the pipe: leave it be
            self.file.close()
            self.reader.close()
        from memlens.model.results import printable

        text = printable(self.last_line.decode("utf-8", errors="replace").strip())
        return text if len(text) <= 200 else text[:197] + "..."
