"""The run directory's layout: its file names, where runs are found, the files a command reads (never
written over), and the record of a run's provenance.

    runs/                      DEFAULT_OUT (`--out`)
      latest -> <time>-<pid>   LATEST: the newest profile run (bench --into leaves it)
      <time>-<pid>/            new_run_dir(): one per profile (or bench without --into)
        profile.ncu-rep        NCU_REPORT: ncu's raw report, never overwritten
        ncu.log                NCU_LOG
        ncu-command.txt        NCU_COMMAND: the exact ncu command line
        events.jsonl           EVENTS: what the profiled program reported, one JSON line each
        profile.gpu<i>.ncu-rep, ncu.gpu<i>.log, ncu-command.gpu<i>.txt, events.gpu<i>.jsonl
                               profile_files(run_dir, i): the same, per GPU, for `--gpus` over several
        profile.job<n>.ncu-rep, ...  profile_files(run_dir, job=n): per job, for `--cluster`
        profile.ranges.ncu-rep, ncu.ranges.log, profile.ranges2.ncu-rep, ...
                               profile_files(run_dir, ranges=n): a program run's passes over named ranges
                               its first left without a profiled launch (collect/range_passes.py)
        results.json           RESULTS: RunResults (profiling/model/results.py)
        bench.json             BENCH: BenchResults (profiling/bench/results.py)
        check.json             CHECK: StaticResults (profiling/static/check.py)
        banks.json, banktrace/ BANKS_FILE, BANK_TRACE: `memlens banks -- COMMAND` (model/banks_file.py)
        report.html|md|json    report_file(): `memlens report`
        program.stderr, ranges.json, ncu.own-ranges.log   a program run's (collect/program_run.py)

A run's own files (`run_record`: the names above, present or not, in a folder that holds a run) are
never an output's: only what makes the run writes them (io.files.write_output's `record=True`).

Creating one, the `latest` pointer and taking provenance: collect/run_dir.py.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from memlens.io import files
from memlens.io.files import RAW_REPORT_SUFFIXES

DEFAULT_OUT = Path("runs")
LATEST = "latest"
LATEST_RUN = DEFAULT_OUT / LATEST
NO_RUN_YET = (
    f"{LATEST_RUN}: no run yet; run `memlens profile` or name a run directory, results.json, .ncu-rep or ncu CSV"
)
REPORT_STEM = "profile"  # ncu is given the stem and adds .ncu-rep
NCU_REPORT = f"{REPORT_STEM}.ncu-rep"
NCU_LOG = "ncu.log"
NCU_COMMAND = "ncu-command.txt"
EVENTS = "events.jsonl"
RESULTS = "results.json"
BENCH = "bench.json"
CHECK = "check.json"  # `memlens check --into RUN`: the static check of the run's build
BANKS_FILE = "banks.json"  # `memlens banks -- COMMAND`: the recorded warps' shared-memory addresses
BANK_TRACE = "banktrace"  # beside it: the Sanitizer library's lines, one file a process
BANK_EVENTS = "events.banks.jsonl"  # `profile --banks`: the suite program's events of its run under the trace
# what the trace records by default (`memlens banks`, `profile --banks`): the first warp-level executions of each
# instruction, in each kernel's first launches (its later ones run unpatched, at full speed)
BANK_WARPS = 4
BANK_LAUNCHES = 1
REPORT_FILE_STEM = "report"  # memlens report writes report.<format> into a run directory
STDERR_FILE = "program.stderr"  # what a profiled program wrote on its standard error
RANGE_COUNTS_FILE = "ranges.json"  # a program's memlens.range counts: {"ranges": {"step > forward": 50, ...}}
OWN_RANGES_LOG = "ncu.own-ranges.log"  # the first pass's log, where the program opened no range of its own


def no_run_yet(path: str | Path) -> bool:
    """Whether `path` is the default run (runs/latest) and no profile run has made it yet: every
    command then says NO_RUN_YET."""
    return os.path.normpath(path) == str(LATEST_RUN) and not os.path.lexists(path)


def report_file(run_dir: Path, fmt: str) -> Path:
    return run_dir / f"{REPORT_FILE_STEM}.{fmt}"


@dataclass(frozen=True)
class ProfileFiles:
    """The files one ncu run writes into a run directory."""

    report_stem: Path  # ncu is given the stem and adds .ncu-rep
    log: Path
    command: Path
    events: Path

    @property
    def report(self) -> Path:
        return self.report_stem.with_name(self.report_stem.name + ".ncu-rep")

    @property
    def tag(self) -> str:
        """What tells this ncu run's files from the others' (`gpu1`, `job3`); "run" for a run's only one."""
        return self.report_stem.name.partition(".")[2] or "run"


def profile_files(
    run_dir: Path, gpu: int | None = None, job: int | None = None, ranges: int | None = None
) -> ProfileFiles:
    """The files of the one ncu run of a run directory, or (`gpu` given) of the ncu run on GPU `gpu`
    of several: `profile.gpu1.ncu-rep` beside `profile.gpu0.ncu-rep`, never one over the other; or
    (`job` given) of job `job` of a cluster run, wherever it ran: `profile.job3.ncu-rep`; or (`ranges` n) of
    a program run's n-th pass after its first, over named ranges (collect/range_passes.py):
    `profile.ranges.ncu-rep`, `profile.ranges2.ncu-rep`."""
    if ranges is not None:
        tag = ".ranges" if ranges == 1 else f".ranges{ranges}"
    else:
        tag = f".job{job}" if job is not None else "" if gpu is None else f".gpu{gpu}"
    return ProfileFiles(
        report_stem=run_dir / f"{REPORT_STEM}{tag}",
        log=run_dir / NCU_LOG.replace(".log", f"{tag}.log"),
        command=run_dir / NCU_COMMAND.replace(".txt", f"{tag}.txt"),
        events=run_dir / EVENTS.replace(".jsonl", f"{tag}.jsonl"),
    )


def resolve_run(path: Path) -> Path:
    """`path`, or the run its `latest` link points at where `path` is a folder of runs (what
    `profile --out DIR` writes: DIR/<time>-<pid>/ and DIR/latest) that holds no results of its own."""
    if not path.is_dir() or (path / RESULTS).is_file():
        return path
    latest = path / LATEST
    if latest.is_dir() and (latest / RESULTS).is_file():
        return latest
    return path


def run_directory(path: str | Path) -> Path:
    """The run directory of a RUN argument: the directory itself (resolve_run: a folder of runs' latest), or
    the folder of a file (a results.json, or a profiler report saved in its run directory)."""
    path = resolve_run(Path(path))
    return path if path.is_dir() else path.parent


def runs_in(folder: Path) -> list[Path]:
    """The run directories (each with a results.json) directly in `folder`, oldest name first."""
    try:
        return sorted(p for p in folder.iterdir() if p.name != LATEST and p.is_dir() and (p / RESULTS).is_file())
    except OSError:
        return []


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where, when and by what a run was made: shared by RunInfo (profile) and BenchInfo (bench)."""

    gpu_name: str | None = None
    host: str | None = None  # the machine's host name
    driver_version: str | None = None  # as nvidia-smi prints it, e.g. 580.159.04
    memlens_command: str | None = None  # the memlens command line that made the run (before schema 3: `command`)
    started_at: str | None = None  # ISO 8601
    wall_seconds: float | None = None
    suite: str | None = None
    suite_commit: str | None = None  # git commit of the suite, " (modified)" where it has changes
    memlens_version: str | None = None


INPUT_SUFFIXES = (".csv", ".toml", ".py", ".cu", *RAW_REPORT_SUFFIXES)
INPUT_NAMES = (RESULTS, BENCH, CHECK)  # a run directory's own records


def input_files(path: str | Path | None) -> list[Path]:
    """What a command argument reads: the file itself, or a directory's data (results.json,
    bench.json, check.json, profiler reports, CSV, rules, suite sources), so an output never lands on
    one of them; other files there (a saved baseline, a report) may be written again. What a command
    reads beyond these (a check.json, the sources a report quotes) io.files.note_input records."""
    if path is None:
        return []
    path = Path(path)
    try:
        if path.is_dir():
            return [p for p in path.iterdir() if p.name in INPUT_NAMES or p.name.endswith(INPUT_SUFFIXES)]
    except OSError:
        pass
    return [path]


# A run's own files, each ncu run's with its tag (profile.gpu1.ncu-rep, ncu.own-ranges.log, bench.job3.log).
def _split(name: str) -> tuple[str, str, str]:
    return name.partition(".")


_TAGGED = (NCU_REPORT, NCU_LOG, NCU_COMMAND, EVENTS, BENCH, "bench.log")
_RECORD = re.compile(
    "|".join(
        [
            *(rf"{re.escape(stem)}(?:\.[^.]+)?\.{re.escape(suffix)}" for stem, _, suffix in map(_split, _TAGGED)),
            *(re.escape(name) for name in (RESULTS, CHECK, STDERR_FILE, RANGE_COUNTS_FILE)),
            r"job\d+\.failed\.txt",  # a --cluster job's history, where it failed
        ]
    )
)


def is_run_folder(folder: Path) -> bool:
    """Whether `folder` holds a run: its results.json, a raw report of ncu's or the ncu command that made one."""
    try:
        return (
            (folder / RESULTS).is_file()
            or any(folder.glob(f"{REPORT_STEM}*.ncu-rep*"))
            or any(folder.glob(f"{NCU_COMMAND.removesuffix('.txt')}*.txt"))
        )
    except OSError:
        return False


def run_record(path: Path) -> str | None:
    """Why `path` (where an output's bytes would go, links followed) is no output's: a run's own file, present
    or a name memlens reads or writes there, in a folder that holds a run. None where it may be written."""
    if not _RECORD.fullmatch(path.name) or not is_run_folder(path.parent):
        return None
    if os.path.lexists(path):
        return f"is a file of the run folder {path.parent}"
    return f"is a name memlens reads or writes in a run folder ({path.parent})"


files.refuse_also(run_record)  # every output memlens writes goes through write_output, which asks it
