"""`memlens profile`: run a suite's variants in one process under one ncu invocation.

Each run gets a new run directory (its layout: profiling/run_dir.py) holding the raw report (never
overwritten), ncu's log, the profiled program's events and results.json; `<out>/latest` points at it.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from .catalogue import ncu_metric_names
from .errors import ConfigError, MemlensError, ProfilerError
from .fileio import write_json_atomic, write_text_atomic
from .ncu import (
    Ncu,
    NcuRun,
    NcuTimeout,
    ProfileRequest,
    check_log,
    check_permission,
    command_line,
    find_ncu,
    first_error,
    hold_interrupts,
    profile_argv,
    run_ncu,
)
from .results import KernelResult, RunInfo, RunResults, VariantOutcome
from .run_dir import (
    DEFAULT_OUT,
    EVENTS,
    NCU_COMMAND,
    NCU_LOG,
    NCU_REPORT,
    REPORT_STEM,
    RESULTS,
    Machine,
    machine_of,
    new_run_dir,
    now,
    point_latest,
    take_provenance,
)
from .suite import NVTX_DOMAIN, Selection, Variant, select_variants, suite_root

PROFILED_PROGRAM = f"{__package__}.profiled_program"  # the module ncu runs: each variant once in its NVTX range


@dataclass(frozen=True)
class ProfileOptions:
    suite: str | None = None
    pattern: str | None = None
    out_dir: Path = DEFAULT_OUT
    clock_control: str = "base"
    cache_control: str = "all"
    fast: bool = False
    timeout: float | None = None
    ncu: str | None = None
    sizes: tuple[str, ...] = ()  # NAME=VALUE overrides
    small: bool = False
    seed: int = 0
    command: str = ""


@dataclass
class Events:
    """What the profiled program reported so far (it appends JSON lines to one file)."""

    path: Path
    plan: list[str] = field(default_factory=list)
    done: dict[str, dict] = field(default_factory=dict)
    running: str | None = None
    error: str | None = None
    started: bool = False  # the profiled program sent its plan: the suite loaded under ncu
    app_pid: int | None = None
    _offset: int = 0

    def poll(self) -> list[dict]:
        """Events appended since the last poll; a line cut short is read next time, junk skipped."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        complete, newline, _ = chunk.rpartition(b"\n")
        self._offset += len(complete) + len(newline)
        new = []
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and self._take(event):
                new.append(event)
        return new

    def _take(self, event: dict) -> bool:
        kind, variant = event.get("event"), event.get("variant")
        if kind == "plan" and isinstance(event.get("variants"), list):
            self.plan, self.started = [str(v) for v in event["variants"]], True
            self.app_pid = event.get("pid")
        elif kind == "start" and isinstance(variant, str):
            self.running = variant
        elif kind == "done" and isinstance(variant, str):
            self.done[variant] = event
            self.running = None
        elif kind == "error":
            self.error = str(event.get("message"))
        elif kind != "interrupted":
            return False
        return True

    def where(self) -> str:
        """Where in the suite the run is, in words: for messages about a run cut short."""
        if self.running:
            return f"while {self.running} was running"
        if not self.done:
            return "before any variant started"
        return f"after {list(self.done)[-1]} finished"

    def outcomes(
        self, suite_variants: Sequence[Variant], stopped: str = "stopped while running"
    ) -> tuple[VariantOutcome, ...]:
        by_label = {v.label: v for v in suite_variants}
        outcomes = []
        for label in self.plan or list(by_label):
            event = self.done.get(label)
            if event is None:
                status = "failed" if label == self.running else "not_run"
                message = stopped if status == "failed" else "not run: the suite stopped earlier"
            else:
                status, message = str(event.get("status")), str(event.get("message", ""))
            outcomes.append(_outcome(by_label.get(label), label, status, message))
        return tuple(outcomes)


def _outcome(variant: Variant | None, label: str, status: str, message: str) -> VariantOutcome:
    family, _, name = label.partition("/")
    if variant is None:
        return VariantOutcome(family, name, status, message)
    sources = tuple(str(k.source) for k in variant.kernels if hasattr(k, "source"))
    return VariantOutcome(family, name, status, message, demonstrates=variant.demonstrates,
                          expect=variant.expect.described(), baseline=variant is variant.family.baseline,
                          sources=sources)  # fmt: skip


def _selection(options: ProfileOptions) -> Selection:
    return select_variants(options.suite, options.pattern, options.sizes)


def profile(options: ProfileOptions, on_event: Callable[[dict], None] | None = None) -> tuple[Path, RunResults]:
    """Profile the selected variants. Whatever happens once the run directory exists (a variant
    failing, ncu failing, the timeout, Ctrl-C), results.json is written there with what was done.

    Importing the suite here (a second or so with Numba) overlaps the run: ncu starts first, and
    the profiled program checks the same selection before it launches anything. Should the selection be wrong,
    ncu is stopped and the run directory, which then holds no profile, is removed."""
    root = suite_root(options.suite)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="memlens") as background:
        selection = background.submit(_selection, options)
        try:
            ncu = find_ncu(options.ncu)
        except MemlensError:
            selection.result()  # a wrong selection is the first thing to say
            raise
        run_dir = new_run_dir(options.out_dir)
        machine = background.submit(machine_of, root)
        try:
            return _profile(options, on_event, ncu, run_dir, selection, machine)
        except ConfigError:
            if selection.done() and selection.exception() is not None:
                shutil.rmtree(run_dir, ignore_errors=True)
            raise


def _profile(
    options: ProfileOptions, on_event: Callable[[dict], None] | None, ncu: Ncu, run_dir: Path,
    selection: Future[Selection], machine: Future[Machine],
) -> tuple[Path, RunResults]:  # fmt: skip
    request = ProfileRequest(
        metrics=ncu_metric_names(options.fast),
        report=run_dir / REPORT_STEM,
        log=run_dir / NCU_LOG,
        nvtx_include=f"regex:{NVTX_DOMAIN}@.*/",
        clock_control=options.clock_control,
        cache_control=options.cache_control,
    )
    events = Events(run_dir / EVENTS)
    argv = profile_argv(ncu, request, app_argv(suite_root(options.suite), options, events.path))
    started = now()

    def poll() -> None:
        if selection.done() and selection.exception() is not None:
            raise selection.exception()  # stops ncu: the profiled program refuses this selection too
        for event in events.poll():
            if on_event:
                on_event(event)

    cause = _run_profiler(argv, options.timeout, request, events, poll)
    selected = selection.result()
    with hold_interrupts():  # a second Ctrl-C waits until the partial results are saved
        poll()
        error, stopped = _explain(cause, events, run_dir)
        info = RunInfo(
            **take_provenance(machine.result(), selected.suite.path, options.command, started),
            ncu_version=ncu.version_text,
            clock_control=options.clock_control,
            cache_control=options.cache_control,
            fast=options.fast,
        )
        results = collect(run_dir, info, events.outcomes(selected.variants, stopped), complete=error is None)
        if error is None:
            error = _nothing_measured(results, request)
            results = replace(results, complete=error is None)
        try:
            write_json_atomic(run_dir / RESULTS, results.to_json())
        except OSError as exc:
            raise ProfilerError(f"cannot write {run_dir / RESULTS}: {exc.strerror or exc}") from None
        link_error = point_latest(options.out_dir, run_dir)
    error = error or link_error
    if error is not None:
        raise error
    bad = [o for o in results.outcomes if o.status != "ok"]
    if bad:
        first = bad[0]
        label = f"{first.family}/{first.variant}"
        raise ProfilerError(
            f"{len(bad)} of {len(results.outcomes)} variants did not profile cleanly, first {label}: "
            f"{first.status}: {first.message.removeprefix(label + ': ')}; results in {run_dir}"
        )
    return run_dir, results


def _run_profiler(
    argv: list[str], timeout: float | None, request: ProfileRequest, events: Events, poll: Callable[[], None]
) -> BaseException | None:
    """Run ncu over the profiled program; what cut the run short (None when it ran to its end). Never raises a
    MemlensError or KeyboardInterrupt: the caller saves what was done first."""
    try:
        write_text_atomic(request.log.with_name(NCU_COMMAND), command_line(argv) + "\n")
        run = run_ncu(argv, timeout, poll=poll, log=request.log)
        poll()
        _check_run(run, events, request)
    except (MemlensError, KeyboardInterrupt) as exc:
        return exc
    return None


def _check_run(run: NcuRun, events: Events, request: ProfileRequest) -> None:
    """Failures of a run of ncu that exited by itself, in the order that names the real cause."""
    check_permission(run.log_text)
    if events.error:
        raise ConfigError(events.error)
    reason = first_error(run.log_text)
    because = f" ({reason})" if reason else ""
    if not events.started:
        raise ProfilerError(
            f"the suite never started under ncu (ncu exit code {run.returncode}{because}); see {request.log}"
        )
    if any(event.get("status") != "ok" for event in events.done.values()):
        return  # the variant that failed says why; reported with the outcomes
    check_log(run.log_text)
    if run.returncode != 0:  # every variant verified, so the profiled program exited 0: ncu itself failed
        raise ProfilerError(f"ncu exited with code {run.returncode}{because}; see {request.log}")
    report = request.report.with_name(NCU_REPORT)
    if events.done and not report.exists():
        raise ProfilerError(f"ncu exited with code {run.returncode} and wrote no report {report}; see {request.log}")


def _explain(cause: BaseException | None, events: Events, run_dir: Path) -> tuple[BaseException | None, str]:
    """The error to raise for what cut a run short, and the message for the variant it stopped."""
    if isinstance(cause, NcuTimeout):
        error = ProfilerError(f"{cause} {events.where()}; partial results in {run_dir}")
        return error, f"stopped by the {cause.seconds:g} s timeout while running"
    if isinstance(cause, KeyboardInterrupt):
        return KeyboardInterrupt(f"{events.where()}; partial results in {run_dir}"), "interrupted while running"
    return cause, "stopped while running"


def _nothing_measured(results: RunResults, request: ProfileRequest) -> ProfilerError | None:
    """ncu ran to its end and every variant verified, yet no kernel was measured: never a success."""
    ran = [o for o in results.outcomes if o.status == "ok"]
    if ran and not results.kernels and all(o.status == "ok" for o in results.outcomes):
        return ProfilerError(
            f"ncu's report holds no kernel of the {len(ran)} variants that ran (were they filtered out?); "
            f"see {request.log}"
        )
    return None


def app_argv(suite: Path, options: ProfileOptions, events: Path) -> list[str]:
    argv = [sys.executable, "-m", PROFILED_PROGRAM, "--suite", str(suite.resolve()), "--events", str(events)]
    if options.pattern:
        argv += ["-k", options.pattern]
    for item in options.sizes:
        argv += ["--size", item]
    if options.small:
        argv.append("--small")
    return argv + ["--seed", str(options.seed)]


def collect(run_dir: Path, info: RunInfo, outcomes: tuple[VariantOutcome, ...], complete: bool) -> RunResults:
    """Kernels from the raw report, kept only for variants whose output verified."""
    from .readers import read_report
    from .roofline import run_ceilings

    report = run_dir / NCU_REPORT
    kernels: tuple[KernelResult, ...] = ()
    if report.exists():
        try:
            measured = read_report(report, instructions=True)
        except MemlensError as exc:  # unreadable, or no ncu-report package: results.json is still written
            outcomes += (VariantOutcome("", "", "failed", f"report unreadable: {exc}"),)
        else:
            ok = {(o.family, o.variant) for o in outcomes if o.status == "ok"}
            kernels = tuple(k for k in measured.kernels if (k.family, k.variant) in ok)
            info = replace(
                info,
                gpu_name=measured.info.gpu_name,
                compute_capability=measured.info.compute_capability,
                source=report.name,
                **run_ceilings(kernels),
            )
    return RunResults(info, kernels, outcomes, complete)
