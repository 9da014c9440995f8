"""Findings at a source line, for the formats that put them where reviewers look (SARIF for code
scanning, GitHub's workflow commands): what `lines`, `compare` and `gate` found, one `Finding` a
problem at a line, its file relative to the source root.

The subjects `lines` (`LinesFindings`) and `compare` (`CompareFindings`) are the typed records those
commands hand to output formats; `gate` hands its `GateResult`. `findings(subject, findings)` turns
any of the three into `Finding`s; each kind of finding is one `RULES` entry (a SARIF rule).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from memlens.io.units import counted, format_count
from memlens.model.instruction_table import (
    RUNTIME_ARRAY,
    coalescing_words,
)
from memlens.model.kernel_lines import KernelLines
from memlens.model.kernel_names import short_kernel
from memlens.model.libraries import Library
from memlens.model.line_compare import KernelLineChanges, LineChange
from memlens.model.source_lines import LineRecord, local_cause
from memlens.model.time_at_stake import Stake, stake_words
from memlens.theory.bank_matching import MatchedInstruction

if TYPE_CHECKING:
    from memlens.gate.evaluate import GateResult

Level = Literal["error", "warning", "note"]
WARNING_SHARE = 0.1  # a `lines` finding with this share of its kernel's figure or more is a warning, else a note


@dataclass(frozen=True)
class RuleDescriptor:
    id: str
    name: str  # PascalCase, as SARIF's reportingDescriptor.name
    short: str
    full: str


RULES: dict[str, RuleDescriptor] = {
    r.id: r
    for r in (
        RuleDescriptor(
            "ML001",
            "SharedMemoryBankConflict",
            "shared-memory bank conflict",
            "Threads of a warp access different addresses in one shared-memory bank, so the access is served in "
            "more wavefronts than its conflict-free ideal (excess wavefronts).",
        ),
        RuleDescriptor(
            "ML002",
            "LocalMemorySpill",
            "local memory from a register spill",
            "The compiler ran out of registers and keeps values in local memory (device memory behind L1): "
            "loads and stores at fixed stack offsets.",
        ),
        RuleDescriptor(
            "ML003",
            "LocalMemoryRuntimeArray",
            "local memory from an array indexed at run time",
            "A per-thread array indexed with values known only at run time lives in local memory.",
        ),
        RuleDescriptor(
            "ML004",
            "UncoalescedGlobalAccess",
            "uncoalesced global access",
            "A warp's global accesses touch more 32-byte sectors than the same accesses would, coalesced.",
        ),
        RuleDescriptor(
            "ML005",
            "LineGotWorse",
            "a line that got worse",
            "Between the two builds compared, this source line's excess wavefronts or local accesses grew.",
        ),
        RuleDescriptor(
            "ML006",
            "GateRuleFailed",
            "a failed gate rule",
            "A rule of the gate's rules file failed (or passed its warning level) on this kernel or line.",
        ),
    )
}
SPILL_RULE, ARRAY_RULE = "ML002", "ML003"


@dataclass(frozen=True)
class LinesFindings:
    """`memlens lines`: each kernel launch's lines (all of them, not the --top shown)."""

    kernels: tuple[KernelLines, ...]
    source_root: Path | None = None  # None: the git top level of the working directory
    source: str = ""  # the run as the user named it
    top: int = 0  # the lines of a kernel that text and JSON show (0: all); SARIF and GitHub's take all
    width: int | None = None  # the terminal's, that text fits (None: lines printed whole)
    # the instructions of the run's banks.json matched to its profile's (theory/bank_matching.py); () without one
    bank_maps: tuple[MatchedInstruction, ...] = ()


@dataclass(frozen=True)
class Compared:
    """One kernel label across BASE and HEAD: its figures' changes and its lines."""

    label: str
    statuses: tuple[str, ...]
    figures: tuple[dict[str, object], ...]  # key, header, base, head, change, direction, noise (model/noise.py)
    lines: KernelLineChanges


@dataclass(frozen=True)
class CompareFindings:
    """`memlens compare`: BASE and HEAD as named, each kernel compared, the runs without line data."""

    base: str
    head: str
    compared: tuple[Compared, ...]
    no_lines: tuple[str, ...] = ()
    source_root: Path | None = None
    show_all: bool = False  # text: also the lines and figures that did not change (--all)
    wide: bool = False  # text: one line each, not wrapped to the terminal (--wide)
    notes: tuple[str, ...] = ()  # what a reader must know of the two runs (two GPU models)


@dataclass(frozen=True)
class Finding:
    rule: str  # a RULES key
    level: Level
    message: str
    label: str  # the kernel as memlens names it
    kernel: str  # its function's name ("" where only the label is known)
    file: str | None  # as the command shows it (relative to the working directory, or absolute)
    line: int | None
    code: str | None  # the line's code, where known
    sass: tuple[str, ...] = ()  # the SASS opcodes on the line, or the one instruction standing for it
    properties: dict[str, object] = field(default_factory=dict)
    # where a finding without a source line is placed for viewers that need a file (GitHub code scanning
    # rejects a log with a result without one): the gate's rules file at the rule's line, else the run
    artifact: str | None = None
    artifact_line: int | None = None


# --- the findings of each subject ------------------------------------------------------------------


@dataclass(frozen=True)
class FindingsFormat:
    """An output format of findings at source lines (memlens.output): `gate`, `lines` and `compare` each
    hand what they found to one `write(subject, found, out)`."""

    name: str
    suffix: str
    write: Callable[[str, Any, TextIO], None]

    def gate(self, result: GateResult, out: TextIO) -> None:
        self.write("gate", result, out)

    def lines(self, found: LinesFindings, out: TextIO) -> None:
        self.write("lines", found, out)

    def compare(self, found: CompareFindings, out: TextIO) -> None:
        self.write("compare", found, out)


def findings(subject: str, found: object) -> list[Finding]:
    if subject == "lines":
        assert isinstance(found, LinesFindings)
        every = [f for entry in found.kernels for f in kernel_findings(entry)]
        every.sort(key=_stake_seconds)  # the most time at stake first; unknown stakes last, in their order
        return _placed(every, found.source)
    if subject == "compare":
        assert isinstance(found, CompareFindings)
        return _placed([f for kernel in found.compared for f in compare_findings(kernel.lines)], found.head)
    if subject == "gate":
        return gate_findings(found)
    raise ValueError(f"no line findings of {subject!r}")


def _stake_seconds(finding: Finding) -> float:
    seconds = finding.properties.get("seconds_at_stake")
    return -seconds if isinstance(seconds, float) else 1.0


def _placed(found: list[Finding], run: str) -> list[Finding]:
    return [f if f.file and f.line else replace(f, artifact=run or None) for f in found]


def _level(part: float, whole: float) -> Level:
    return "warning" if whole > 0 and part / whole >= WARNING_SHARE else "note"


def kernel_findings(entry: KernelLines) -> list[Finding]:
    """Every conflicting, local-memory and uncoalesced line of one kernel launch."""
    kernel = entry.kernel
    excess = sum(line.excess for line in entry.lines)
    local = sum(line.local_executions for line in entry.lines)
    sectors = sum(k.sectors or 0.0 for line in entry.lines for k in line.kinds if k.kind.space == "global")
    out = []
    for index, line in enumerate(entry.lines):
        make = _maker(kernel.label, kernel.kernel, line, kernel.library, entry.stake(index), entry.ceiling is not None)
        for figures in line.kinds:
            space, name = figures.kind.space, figures.kind.name
            if space == "shared" and figures.excess:
                out.append(
                    make(
                        "ML001",
                        _level(figures.excess, excess),
                        f"{name} {figures.ways:.3g}-way: {counted(format_count(figures.excess), 'excess wavefront')} "
                        f"({_share(figures.excess, excess)} of the kernel's)",
                        {
                            "kind": name,
                            "excess_wavefronts": figures.excess,
                            "wavefronts": figures.wavefronts,
                            "ideal_wavefronts": figures.ideal,
                            "n_way": figures.ways,
                            "executions": figures.executions,
                            "share_of_kernel": _ratio(figures.excess, excess),
                        },
                    )
                )
            elif space == "local" and figures.executions:
                cause = local_cause(kernel.instructions, line)
                rule = ARRAY_RULE if cause == RUNTIME_ARRAY else SPILL_RULE
                out.append(
                    make(
                        rule,
                        _level(figures.executions, local),
                        f"{name} ({cause}): {counted(format_count(figures.executions), 'execution')} "
                        f"({_share(figures.executions, local)} of the kernel's local accesses)",
                        {
                            "kind": name,
                            "cause": cause,
                            "executions": figures.executions,
                            "share_of_kernel": _ratio(figures.executions, local),
                        },
                    )
                )
            elif space == "global" and coalescing_words(figures.sectors_over_ideal):
                part = figures.sectors or 0.0
                out.append(
                    make(
                        "ML004",
                        _level(part, sectors),
                        f"{name} {coalescing_words(figures.sectors_over_ideal)}: "
                        f"{counted(f'{figures.sectors_per_access:.3g}', 'sector')} per access, "
                        f"{figures.sectors_over_ideal:.3g}x the ideal {figures.ideal_sectors_per_access:.3g}"
                        f" ({_share(part, sectors)} of the kernel's sectors)",
                        {
                            "kind": name,
                            "sectors": figures.sectors,
                            "ideal_sectors": figures.sectors_ideal,
                            "sectors_per_access": figures.sectors_per_access,
                            "ideal_sectors_per_access": figures.ideal_sectors_per_access,
                            "executions": figures.executions,
                            "share_of_kernel": _ratio(part, sectors),
                        },
                    )
                )
    return out


def _maker(
    label: str,
    kernel: str,
    line: LineRecord,
    library: Library | None = None,
    stake: Stake | None = None,
    measured: bool = False,
) -> Callable[[str, Level, str, dict[str, object]], Finding]:
    """A finding at `line` of the kernel, with the line's time at stake (`measured`: the run's bench.json gave
    the DRAM ceiling it took, and what bounded it is said); a library's kernel's says whose it is and what the
    user controls."""

    def make(rule: str, level: Level, words: str, properties: dict[str, object]) -> Finding:
        sass = (line.sass,) if line.sass else line.opcodes
        if stake_words(stake):
            words = f"{words}; {stake_words(stake)} (an upper bound)"
        if stake is not None:
            properties = {**properties, "time_at_stake": stake.fraction, "seconds_at_stake": stake.seconds}
            if measured:
                properties["stake_bounded_by"] = stake.by
        if library is not None:
            words, properties = f"{words}; {library.advice}", {**properties, "library": library.name}
        return Finding(
            rule,
            level,
            f"{label}: {words}",
            label,
            kernel,
            line.file if not line.temporary else None,
            line.line,
            line.source,
            sass,
            properties,
        )

    return make


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _share(part: float, whole: float) -> str:
    if not whole:
        return "all"
    return "<1%" if 0 < part / whole < 0.005 else f"{part / whole:.0%}"


def compare_findings(kernel: KernelLineChanges) -> list[Finding]:
    """The lines of one kernel label that got worse, or are new with conflicts or local accesses."""
    out = []
    for change in kernel.lines:
        if change.head is None or not _got_worse(change):
            continue
        before = change.base
        words = []
        for what, key in (("excess wavefronts", "excess"), ("local accesses", "local")):
            old, new = (getattr(before, key) if before else 0.0), getattr(change.head, key)
            if new > old:
                words.append(f"{what} {format_count(old)} -> {format_count(new)}")
        moved = f" (line {change.base_line} in BASE)" if change.base_line not in (None, change.head_line) else ""
        state = "new line" if before is None else "worse"
        out.append(
            Finding(
                "ML005",
                "warning",
                f"{kernel.label}: {state}{moved}: {', '.join(words)}",
                kernel.label,
                "",
                change.file,
                change.head_line,
                change.source,
                (),
                {
                    "change": change.change,
                    "base_line": change.base_line,
                    "head_line": change.head_line,
                    "base": None if before is None else before.to_json(),
                    "head": change.head.to_json(),
                },
            )
        )
    return out


def _got_worse(change: LineChange) -> bool:
    if change.change == "worse":
        return True
    return change.change == "new" and change.head is not None and bool(change.head.excess or change.head.local)


def gate_findings(result: object) -> list[Finding]:
    """A failed check: an error; one past its warning level: a warning (at its line, for a line rule)."""
    out = []
    for verdict in getattr(result, "verdicts", ()):
        if verdict.status not in ("fail", "warn"):
            continue
        label = verdict.subject.split("#")[0] if verdict.subject else ""
        out.append(
            Finding(
                "ML006",
                "error" if verdict.status == "fail" else "warning",
                f"{verdict.rule}: {verdict.subject + ': ' if verdict.subject else ''}{verdict.message}",
                label,
                "",
                verdict.source_file,
                verdict.source_line,
                verdict.source_code,
                (),
                {
                    "rule": verdict.rule,
                    "metric": verdict.metric,
                    "value": verdict.value,
                    "bound": verdict.bound or None,
                    "baseline": verdict.baseline,
                    "rules_file_line": verdict.line,
                },
                getattr(result, "rules", None) if verdict.line else getattr(result, "source", None),
                verdict.line,
            )
        )
    return out


# --- where: the source root ------------------------------------------------------------------------

_NOT_A_FILE = re.compile(r"^CuPy .* \(")  # a CuPy source named by its kernel (source_lines.cupy_name)


def git_top_level(cwd: Path | None = None) -> Path:
    """The git top level of the working directory, else the working directory itself."""
    from memlens.errors import MemlensError
    from memlens.io.processes import run_command

    here = (cwd or Path.cwd()).resolve()
    try:
        done = run_command(["git", "-C", str(here), "rev-parse", "--show-toplevel"], timeout=10)
    except MemlensError:
        return here
    top = done.stdout.strip() if done.returncode == 0 else ""
    return Path(top).resolve() if top else here


@dataclass(frozen=True)
class Place:
    """A finding's file as CI names it: relative to the source root (`inside`), else absolute."""

    path: str  # POSIX, relative to the root where inside
    inside: bool


def place(file: str | None, root: Path) -> Place | None:
    """Where `file` (as a command shows it: relative to the working directory, or absolute) lies with
    respect to `root`; None where it names no file (a line without line info, a CuPy source)."""
    if not file or _NOT_A_FILE.match(file):
        return None
    path = Path(os.path.normpath(Path.cwd() / file))
    resolved = path.resolve() if path.exists() else path
    for candidate in (resolved, path):
        try:
            return Place(candidate.relative_to(root).as_posix(), True)
        except ValueError:
            continue
    return Place(path.as_posix(), False)


def resolve_root(root: Path | None) -> Path:
    return Path(os.path.normpath(Path.cwd() / root)).resolve() if root is not None else git_top_level()


# --- fingerprints ----------------------------------------------------------------------------------


def fingerprints(found: list[Finding]) -> list[str]:
    """One a finding, the same while its line only moves: a hash of its rule, its kernel's label and
    its code with whitespace collapsed (never its line number); the n-th of identical code lines in
    one kernel is told apart by n. A line without code text is hashed with its file and number."""
    seen: dict[str, int] = {}
    keys: dict[int, str] = {}
    for i in sorted(range(len(found)), key=lambda i: (found[i].file or "", found[i].line or 0)):
        f = found[i]
        code = " ".join(f.code.split()) if f.code else f"{f.file}:{f.line}:{' '.join(f.sass)}"
        text = "\0".join((f.rule, f.label, code, str(f.properties.get("kind", ""))))
        seen[text] = seen.get(text, 0) + 1
        keys[i] = hashlib.sha256(f"{text}\0{seen[text]}".encode()).hexdigest()[:32]
    return [keys[i] for i in range(len(found))]


def short_name(kernel: str) -> str:
    return short_kernel(kernel) if kernel else ""
