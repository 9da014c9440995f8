"""`memlens profile`: run a suite's variants in one process under one ncu invocation.

Each run gets a new run directory (its layout: profiling/model/run_layout.py) holding the raw report (never
overwritten), ncu's log, the profiled program's events and results.json; `<out>/latest` points at it.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from memlens.collect.ncu import (
    Ncu,
    NcuRun,
    NcuTimeout,
    ProfileRequest,
    check_log,
    check_permission,
    find_ncu,
    first_error,
    profile_argv,
    run_ncu,
)
from memlens.collect.pipeline import read_results, run_info, save_run, start_disassembler
from memlens.collect.run_dir import Machine, machine_of, new_run_dir, now
from memlens.errors import ConfigError, MemlensError, ProfilerError
from memlens.io.files import write_output
from memlens.io.processes import command_line, hold_interrupts
from memlens.model.catalogue import ncu_metric_names
from memlens.model.ncu_settings import NcuSettings
from memlens.model.nvtx_names import NVTX_DOMAIN, labels_pattern, parse_swept
from memlens.model.run_layout import DEFAULT_OUT, NCU_COMMAND, ProfileFiles, profile_files
from memlens.suite_path import suite_root

# The suite (NumPy, the suite contract, the selection) and the results are imported once ncu has started:
# a suite run imports before then only what builds ncu's command (tests/benchmarks/start_time.py).
if TYPE_CHECKING:
    from memlens.collect.gpus import Gpu
    from memlens.model.results import RunInfo, RunResults, VariantOutcome
    from memlens.selection import Selection
    from memlens.suite import Variant

T = TypeVar("T")
PROFILED_PROGRAM = f"{__package__}.profiled_program"  # the module ncu runs: each variant once in its NVTX range


@dataclass(frozen=True)
class ProfileOptions:
    suite: str | None = None
    pattern: str | None = None
    out_dir: Path = DEFAULT_OUT
    ncu_settings: NcuSettings = NcuSettings()  # clock and cache control, --fast, --roofline, --ncu
    timeout: float | None = None
    sizes: tuple[str, ...] = ()  # NAME=VALUE overrides
    sweeps: tuple[str, ...] = ()  # FAMILY.NAME=V1,V2,... items: each value of a family in its own range
    small: bool = False
    seed: int = 0
    memlens_command: str = ""  # the memlens command line, for results.json


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
    claiming: bool = False  # the program takes units (collect/claims.py): its cases are those it claimed
    claimed: list[str] = field(default_factory=list)
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
            self.app_pid, self.claiming = event.get("pid"), event.get("claims") is True
        elif kind == "claimed" and isinstance(event.get("variants"), list):
            self.claimed += [str(v) for v in event["variants"]]
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
        for label in self.claimed if self.claiming else self.plan or list(by_label):
            family, _, name = label.partition("/")
            swept = parse_swept(name)
            variant = by_label.get(label) or (by_label.get(f"{family}/{swept[0]}") if swept else None)
            event = self.done.get(label)
            size = None
            if event is None:
                status = "failed" if label == self.running else "not_run"
                message = stopped if status == "failed" else "not run: the suite stopped earlier"
            else:
                status, message = str(event.get("status")), str(event.get("message", ""))
                size = event.get("size") if isinstance(event.get("size"), dict) else None
            outcomes.append(_outcome(variant, label, status, message, size))
        return tuple(outcomes)


def _outcome(
    variant: Variant | None, label: str, status: str, message: str, size: dict[str, int] | None = None
) -> VariantOutcome:
    """The outcome of one case; its paper figure, where a function of the size, evaluated at the size
    it ran (none where it did not run)."""
    from memlens.model.results import VariantOutcome

    family, _, name = label.partition("/")
    if variant is None:
        return VariantOutcome(family, name, status, message)
    sources = tuple(str(k.source) for k in variant.kernels if hasattr(k, "source"))
    expect = variant.expect
    if callable(expect.excess_wavefronts):
        try:
            expect = expect.at_size(size) if size is not None else replace(expect, excess_wavefronts=None)
        except Exception as exc:  # noqa: BLE001 - the suite's function: its error is the variant's, not the run's
            expect = replace(expect, excess_wavefronts=None)
            message = (message + "; " if message else "") + f"paper figure not computed: {type(exc).__name__}: {exc}"
    return VariantOutcome(
        family,
        name,
        status,
        message,
        demonstrates=variant.demonstrates,
        expect=expect.described(),
        baseline=variant is variant.family.baseline,
        sources=sources,
    )


def _selection(options: ProfileOptions) -> Selection:
    from memlens.selection import select_variants

    return select_variants(options.suite, options.pattern, options.sizes, options.sweeps, options.small)


def profile(
    options: ProfileOptions, on_event: Callable[[dict], None] | None = None, gpu: Gpu | None = None
) -> tuple[Path, RunResults]:
    """Profile the selected variants (on `gpu` alone where given, each kernel tagged with it). Whatever
    happens once the run directory exists (a variant failing, ncu failing, the timeout, Ctrl-C),
    results.json is written there with what was done.

    Importing the suite here (a second or so with Numba) overlaps the run: it starts once ncu has started,
    as does the machine's provenance (nvidia-smi, git), each in a thread of its own, and the profiled
    program checks the same selection before it launches anything. Should the selection be wrong, ncu is
    stopped and the run directory, which then holds no profile, is removed."""
    root = suite_root(options.suite)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="memlens") as background:
        selection, check_selection = _started_later(background, lambda: _selection(options))
        machine, take_machine = _started_later(background, lambda: machine_of(root))

        def beside_ncu() -> None:  # once ncu has started, or where it never did: neither delays its start
            check_selection()
            take_machine()

        if options.sweeps:
            check_selection()
            selection.result()  # a sweep is checked in full before ncu starts
        try:
            ncu = find_ncu(options.ncu_settings.path)
        except MemlensError:
            check_selection()
            selection.result()  # a wrong selection is the first thing to say
            raise
        run_dir = new_run_dir(options.out_dir)
        try:
            return _profile(options, on_event, ncu, run_dir, selection, machine, gpu, beside_ncu)
        except ConfigError:
            if selection.done() and selection.exception() is not None:
                shutil.rmtree(run_dir, ignore_errors=True)
            raise


def _started_later(pool: ThreadPoolExecutor, work: Callable[[], T]) -> tuple[Future[T], Callable[[], None]]:
    """The future of `work`, and what starts it in `pool` (the first call; the others do nothing)."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - the future's, raised where its result is asked for
            future.set_exception(exc)

    def start() -> None:
        if not future.running() and not future.done() and future.set_running_or_notify_cancel():
            pool.submit(run)

    return future, start


def _profile(
    options: ProfileOptions,
    on_event: Callable[[dict], None] | None,
    ncu: Ncu,
    run_dir: Path,
    selection: Future[Selection],
    machine: Future[Machine],
    gpu: Gpu | None,
    beside_ncu: Callable[[], None],
) -> tuple[Path, RunResults]:
    files = profile_files(run_dir)
    started = now()
    shard = Shard(files, env=None if gpu is None else gpu.environment())
    events, cause = run_shard(options, ncu, shard, selection, on_event, ncu_started=beside_ncu)
    beside_ncu()  # where ncu never started
    with hold_interrupts():  # a second Ctrl-C waits until the partial results are saved
        results, error = conclude(options, ncu, shard, selection.result(), machine.result(), started, events, cause)
        if gpu is not None:
            results = gpu.tag(results)
        return save(options, run_dir, results, error)


@dataclass(frozen=True)
class Shard:
    """One ncu run: the files it writes, the environment it runs in (None: memlens's own), and the
    variants it profiles (None: the whole selection)."""

    files: ProfileFiles
    env: dict[str, str] | None = None
    labels: tuple[str, ...] | None = None
    sizes: tuple[str, ...] | None = None  # the --size items that apply to its variants (None: all)
    sweeps: tuple[str, ...] | None = None  # the --sweep items that apply to its variants (None: all)
    claims: tuple[str, str] | None = None  # the folder its program takes units from, and its tag (claims.py)


def run_shard(
    options: ProfileOptions,
    ncu: Ncu,
    shard: Shard,
    selection: Future[Selection],
    on_event: Callable[[dict], None] | None = None,
    stop: threading.Event | None = None,
    ncu_started: Callable[[], None] | None = None,
) -> tuple[Events, BaseException | None]:
    """Run ncu over the profiled program: what the program reported, and what cut the run short
    (None when it ran to its end). `stop`, once set, ends ncu as a Ctrl-C would; `ncu_started` is called
    once ncu has started."""
    events = Events(shard.files.events)
    app = app_argv(suite_root(options.suite), options, events.path, shard.labels, shard.sizes, shard.sweeps)
    if shard.claims is not None:
        app += ["--claims", shard.claims[0], "--tag", shard.claims[1]]
    argv = profile_argv(ncu, _request(options, shard.files), app)

    def poll() -> None:
        if selection.done() and (refused := selection.exception()) is not None:
            raise refused  # stops ncu: the profiled program refuses this selection too
        if stop is not None and stop.is_set():
            raise KeyboardInterrupt
        if not options.ncu_settings.fast:
            start_disassembler(shard.files.report)
        for event in events.poll():
            if on_event:
                on_event(event)

    request = _request(options, shard.files)
    return events, _run_profiler(
        argv, options.timeout, request, events, poll, shard.env, shard.files.command, ncu_started
    )


def _request(options: ProfileOptions, files: ProfileFiles) -> ProfileRequest:
    return ProfileRequest(
        metrics=ncu_metric_names(options.ncu_settings.fast, options.ncu_settings.roofline),
        report=files.report_stem,
        log=files.log,
        nvtx_include=f"regex:{NVTX_DOMAIN}@.*/",
        settings=options.ncu_settings,
    )


def conclude(
    options: ProfileOptions,
    ncu: Ncu,
    shard: Shard,
    selected: Selection,
    machine: Machine,
    started: dt.datetime,
    events: Events,
    cause: BaseException | None,
) -> tuple[RunResults, BaseException | None]:
    """The results of a run of ncu, and the error to raise once they are saved (None: none)."""
    events.poll()
    error, stopped = _explain(cause, events, shard.files.log.parent)
    info = run_info(
        options.ncu_settings, ncu.version_text, machine, selected.suite.path, options.memlens_command, started
    )
    variants = selected.variants
    if shard.labels is not None:
        variants = [v for v in variants if v.label in shard.labels]
    results = collect(shard.files.report, info, events.outcomes(variants, stopped), complete=error is None)
    if error is None:
        error = _nothing_measured(results, _request(options, shard.files))
        results = replace(results, complete=error is None)
    return results, error


def save(
    options: ProfileOptions, run_dir: Path, results: RunResults, error: BaseException | None
) -> tuple[Path, RunResults]:
    """Save the run (pipeline.save_run), then raise the run's error, or else name the variants that failed."""
    from memlens.suite import SKIPPED

    save_run(options.out_dir, run_dir, results, error)
    bad = [o for o in results.outcomes if o.status not in ("ok", SKIPPED)]
    if bad:
        first = bad[0]
        label = f"{first.family}/{first.variant}"
        where = "" if first.gpu_index is None else f" on GPU {first.gpu_index}"
        raise ProfilerError(
            f"{len(bad)} of {len(results.outcomes)} variants did not profile cleanly, first {label}{where}: "
            f"{first.status}: {first.message.removeprefix(label + ': ')}; results in {run_dir}"
        )
    return run_dir, results


def _run_profiler(
    argv: list[str],
    timeout: float | None,
    request: ProfileRequest,
    events: Events,
    poll: Callable[[], None],
    env: dict[str, str] | None = None,
    command_file: Path | None = None,
    ncu_started: Callable[[], None] | None = None,
) -> BaseException | None:
    """Run ncu over the profiled program; what cut the run short (None when it ran to its end). Never raises a
    MemlensError or KeyboardInterrupt: the caller saves what was done first."""
    try:
        write_output(command_file or request.log.with_name(NCU_COMMAND), command_line(argv) + "\n", record=True)
        run = run_ncu(argv, timeout, poll=poll, log=request.log, env=env, on_start=ncu_started)
        poll()
        _check_run(run, events, request)
    except (MemlensError, KeyboardInterrupt) as exc:
        return exc
    return None


def _check_run(run: NcuRun, events: Events, request: ProfileRequest) -> None:
    """Failures of a run of ncu that exited by itself, in the order that names the real cause."""
    from memlens.suite import SKIPPED

    check_permission(run.log_text)
    if events.error:
        raise ConfigError(events.error)
    reason = first_error(run.log_text)
    because = f" ({reason})" if reason else ""
    if not events.started:
        raise ProfilerError(
            f"the suite never started under ncu (ncu exit code {run.returncode}{because}); see {request.log}"
        )
    if any(event.get("status") not in ("ok", SKIPPED) for event in events.done.values()):
        return  # the variant that failed says why; reported with the outcomes
    if not events.claiming or events.claimed:  # else the others took every unit: ncu rightly profiled nothing
        check_log(run.log_text)
    if run.returncode != 0:  # every variant verified, so the profiled program exited 0: ncu itself failed
        raise ProfilerError(f"ncu exited with code {run.returncode}{because}; see {request.log}")
    report = request.report.with_name(request.report.name + ".ncu-rep")
    if any(event.get("status") == "ok" for event in events.done.values()) and not report.exists():
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


def app_argv(
    suite: Path,
    options: ProfileOptions,
    events: Path,
    labels: Sequence[str] | None = None,
    sizes: Sequence[str] | None = None,
    sweeps: Sequence[str] | None = None,
) -> list[str]:
    """The profiled program's command line; `labels`: only these variants (one GPU's share), `sizes`
    and `sweeps`: only these --size and --sweep items (those that apply to its families)."""
    argv = [sys.executable, "-m", PROFILED_PROGRAM, "--suite", str(suite.resolve()), "--events", str(events)]
    if labels is not None:
        argv += ["-k", labels_pattern(labels)]
    elif options.pattern:
        argv += ["-k", options.pattern]
    for item in options.sizes if sizes is None else sizes:
        argv += ["--size", item]
    for item in options.sweeps if sweeps is None else sweeps:
        argv += ["--sweep", item]
    if options.small:
        argv.append("--small")
    return argv + ["--seed", str(options.seed)]


def collect(report: Path, info: RunInfo, outcomes: tuple[VariantOutcome, ...], complete: bool) -> RunResults:
    """Kernels from the raw report, kept only for variants whose output verified."""
    from memlens.model.results import VariantOutcome

    ok = {(o.family, o.variant) for o in outcomes if o.status == "ok"}
    results, error = read_results(report, info, outcomes, complete, keep=lambda k: (k.family, k.variant) in ok)
    if error is not None:  # the run's results.json is still written, with the reason as an outcome
        unreadable = VariantOutcome("", "", "failed", f"report unreadable: {error}")
        results = replace(results, outcomes=(*outcomes, unreadable))
    return results
