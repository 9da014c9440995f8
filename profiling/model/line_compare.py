"""Source lines across two builds: each line of a kernel in BASE matched with its line in HEAD, and
how its figures changed (`memlens compare`, the report of several runs, line gates).

A line is matched by its file and its code text, so a line that moved (a line inserted above it) is
the same line: where the reports embed the whole files (ncu --import-source yes) the two files are
diffed; else the texts of the lines with figures are. An edited line standing between two matched
ones is the same line where its text is mostly the same (an index fixed, a stride changed). Where no
text is known for a side, or both texts come from one file on disk (neither report embeds it, so
the base's lines would be read from the head's file), lines are matched by number, and a note says
so. Each line is `new` (no line in BASE: it did not exist, or had no shared or local figures),
`gone`, `worse` (a figure grew), `better` (one fell and none grew) or `same`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memlens.model.catalogue import Metric
from memlens.model.instruction_table import SideFigures
from memlens.model.results import KernelResult, RunResults
from memlens.model.source_lines import TEMPORARY_SOURCE, LineRecord, SourceMap, roll_up

Change = Literal["new", "gone", "better", "worse", "same"]
MatchedBy = Literal["text", "line"]
CHANGES: tuple[Change, ...] = ("worse", "new", "better", "gone", "same")  # the terminal's order: changes first
# A run none of whose kernels has per-instruction values has no lines to compare: never every line "gone"
NO_LINE_DATA = (
    "no per-line data (no per-instruction values: a CSV, a --fast run, or ncu without the SourceCounters "
    "metrics): source lines not compared"
)


def has_line_data(results: RunResults) -> bool:
    """Whether a run holds per-instruction values, so its lines can be compared with another's."""
    return any(kernel.instructions for kernel in results.kernels)


FIGURES = (
    "excess_wavefronts_ld",
    "excess_wavefronts_st",
    "excess_wavefronts_atom",
    "excess_wavefronts_mma",
    "local_ld",
    "local_st",
)
SIMILAR = 0.6  # an edited line is the same line where difflib's ratio of the two texts is at least this

# Figures a gate rule checks on every source line of the kernels it selects (rules.py, gate.py).
LINE_METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric(
            "line_excess_wavefronts",
            "wavefront",
            "exact excess shared-memory wavefronts of one source line (its loads, stores, atomics and tensor-core"
            " operand reads)",
            better="lower",
            instrumented=True,
            deterministic=True,
            problem_above_zero=True,
        ),
        Metric(
            "line_local_accesses",
            "inst",
            "warp-level local-memory loads and stores executed by one source line",
            better="lower",
            deterministic=True,
            problem_above_zero=True,
        ),
    )
}


@dataclass(frozen=True)
class LineFigures:
    """A line's figures on one side; None where the line has no such access."""

    excess_wavefronts_ld: float | None = None
    excess_wavefronts_st: float | None = None
    local_ld: float | None = None
    local_st: float | None = None
    excess_wavefronts_atom: float | None = None
    excess_wavefronts_mma: float | None = None

    @classmethod
    def of(cls, record: LineRecord) -> LineFigures:
        def shared(side: SideFigures) -> float | None:  # None: the line has no access of this side
            return side.excess if side.wavefronts or side.ideal else None

        return cls(
            shared(record.shared_ld),
            shared(record.shared_st),
            record.local_ld_executions,
            record.local_st_executions,
            shared(record.shared_atom),
            shared(record.shared_mma),
        )

    @property
    def excess(self) -> float:
        """The line's excess wavefronts, as LineRecord.excess counts them: every shared side."""
        sides = (
            self.excess_wavefronts_ld,
            self.excess_wavefronts_st,
            self.excess_wavefronts_atom,
            self.excess_wavefronts_mma,
        )
        return sum(value or 0.0 for value in sides)

    @property
    def local(self) -> float:
        return (self.local_ld or 0.0) + (self.local_st or 0.0)

    def value(self, metric: str) -> float:
        """A line metric's value (LINE_METRICS)."""
        return self.excess if metric == "line_excess_wavefronts" else self.local

    def to_json(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in FIGURES}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LineFigures:
        values = {name: data.get(name) for name in FIGURES}
        for name, value in values.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"{name} must be a number or null, not {value!r}")
        return cls(**{k: None if v is None else float(v) for k, v in values.items()})  # type: ignore[arg-type]


@dataclass(frozen=True)
class SourceLine:
    """One line of one kernel on one side: where, its code, its figures. Without line info, one
    SASS instruction stands for its line (file and line None, `source` its SASS text)."""

    file: str | None
    line: int | None
    source: str | None
    figures: LineFigures

    @classmethod
    def of(cls, record: LineRecord) -> SourceLine:
        text = record.source if record.file else record.sass
        return cls(record.file, record.line, text, LineFigures.of(record))

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.file else (self.source or "?")

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "source": self.source, **self.figures.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> SourceLine:
        file, line, source = data.get("file"), data.get("line"), data.get("source")
        if file is not None and not isinstance(file, str):
            raise ValueError(f"file must be a string or null, not {file!r}")
        if line is not None and (isinstance(line, bool) or not isinstance(line, int)):
            raise ValueError(f"line must be a whole number or null, not {line!r}")
        if source is not None and not isinstance(source, str):
            raise ValueError(f"source must be a string or null, not {source!r}")
        return cls(file, line, source, LineFigures.from_json(data))


@dataclass(frozen=True)
class LineChange:
    """One source line across the two builds."""

    file: str | None
    base_line: int | None
    head_line: int | None
    source: str | None  # the code in HEAD (in BASE for a gone line)
    change: Change
    base: LineFigures | None
    head: LineFigures | None
    matched_by: MatchedBy | None = None  # None: the line is on one side only
    base_source: str | None = None  # the code in BASE, where it differs (an edited line)

    @property
    def location(self) -> str:
        if self.file is None:
            return self.source or "?"
        if self.base_line is None or self.head_line is None or self.base_line == self.head_line:
            return f"{self.file}:{self.head_line or self.base_line}"
        return f"{self.file}:{self.base_line} -> {self.head_line}"

    def to_json(self, label: str) -> dict[str, object]:
        return {
            "label": label,
            "file": self.file,
            "base_line": self.base_line,
            "head_line": self.head_line,
            "source": self.source,
            "base_source": self.base_source,
            "change": self.change,
            "matched_by": self.matched_by,
            "base": None if self.base is None else self.base.to_json(),
            "head": None if self.head is None else self.head.to_json(),
        }


@dataclass(frozen=True)
class KernelLineChanges:
    """One kernel label's lines across BASE and HEAD, in file and line order."""

    label: str
    lines: tuple[LineChange, ...]
    notes: tuple[str, ...] = ()
    in_base: bool = True
    in_head: bool = True

    @property
    def changed(self) -> tuple[LineChange, ...]:
        """The lines that changed, worse first, then new, better, gone."""
        return tuple(sorted((c for c in self.lines if c.change != "same"), key=lambda c: CHANGES.index(c.change)))

    def count(self, change: Change) -> int:
        return sum(1 for c in self.lines if c.change == change)


@dataclass(frozen=True)
class LineSet:
    """The lines of one kernel label on one side, with the whole files where the report embeds them."""

    lines: tuple[SourceLine, ...]
    files: Mapping[str, str] = field(default_factory=dict)  # shown file -> whole text embedded in the report
    texts_own: bool = False  # the texts are this build's own (a baseline's, saved with it), not read from disk now

    def owns_text(self, file: str | None) -> bool:
        """Whether this side's code texts of `file` are its own build's: embedded, or saved with it."""
        return self.texts_own or file in self.files


# --- reading one side ----------------------------------------------------------------------------


def lines_by_label(
    results: RunResults, kernels: Iterable[KernelResult] | None = None, root: Path | None = None
) -> dict[str, LineSet]:
    """Each label's lines (all its launches summed, as the report sums them), file names shown
    relative to `root` (default: the working directory)."""
    root = (root or Path.cwd()).resolve()
    declared: dict[tuple[str | None, str | None], tuple[str, ...]]  # a kernel's family may be None
    declared = {(o.family, o.variant): o.sources for o in results.outcomes}
    grouped: dict[str, list[KernelResult]] = {}
    for kernel in results.kernels if kernels is None else kernels:
        grouped.setdefault(kernel.label, []).append(kernel)
    found = {}
    for label, launches in grouped.items():
        first = launches[0]
        sources = SourceMap(root, results.embedded_sources, declared.get((first.family, first.variant), ()))
        records = roll_up([r for k in launches for r in k.instructions], sources, first.kernel)
        found[label] = line_set(records, sources, first.kernel)
    return found


def kernel_line_set(results: RunResults, kernel: KernelResult, root: Path | None = None) -> LineSet:
    """The lines of one kernel launch (a gate's subject)."""
    declared: dict[tuple[str | None, str | None], tuple[str, ...]]  # a kernel's family may be None
    declared = {(o.family, o.variant): o.sources for o in results.outcomes}
    sources = SourceMap(
        (root or Path.cwd()).resolve(), results.embedded_sources, declared.get((kernel.family, kernel.variant), ())
    )
    return line_set(roll_up(kernel.instructions, sources, kernel.kernel), sources, kernel.kernel)


def line_set(records: Sequence[LineRecord], sources: SourceMap, kernel: str = "") -> LineSet:
    """A kernel's lines and the whole files its report embeds, by shown name."""
    files = {sources.resolve(recorded, kernel)[0]: text for recorded, text in (sources.embedded or {}).items()}
    return LineSet(tuple(SourceLine.of(r) for r in records), files)


# --- matching --------------------------------------------------------------------------------------


def compare_lines(label: str, base: LineSet | None, head: LineSet | None) -> KernelLineChanges:
    """Every line of `label` in BASE and HEAD, matched and judged."""
    base_lines = base.lines if base else ()
    head_lines = head.lines if head else ()
    by_file: dict[str | None, tuple[list[SourceLine], list[SourceLine]]] = {}
    for line in base_lines:
        by_file.setdefault(_file_key(line.file), ([], []))[0].append(line)
    for line in head_lines:
        by_file.setdefault(_file_key(line.file), ([], []))[1].append(line)
    changes: list[LineChange] = []
    notes: list[str] = []
    for old, new in by_file.values():
        file = (new or old)[0].file
        old.sort(key=lambda s: s.line or 0)
        new.sort(key=lambda s: s.line or 0)
        pairs, how = _match_file(file, old, new, base, head)
        if how == "line" and old and new and file is not None:
            notes.append(_line_number_note(file, base, head))
        changes += [_judge(a, b, how) for a, b in pairs]
    changes.sort(key=lambda c: (c.file or "", c.head_line or c.base_line or 0, c.base_line or 0, c.source or ""))
    return KernelLineChanges(label, tuple(changes), tuple(dict.fromkeys(notes)), base is not None, head is not None)


def compare_runs(
    base: RunResults, head: RunResults, labels: Sequence[str] | None = None, root: Path | None = None
) -> list[KernelLineChanges]:
    """The lines of every kernel label of either run (or of `labels`), BASE's order first."""
    old, new = lines_by_label(base, root=root), lines_by_label(head, root=root)
    wanted = labels if labels is not None else list(dict.fromkeys([*old, *new]))
    return [compare_lines(label, old.get(label), new.get(label)) for label in wanted]


def _file_key(file: str | None) -> str | None:
    """A file as matched across runs: a compiler's temporary copy (CuPy's, named by a hash of the
    source, in a new folder each run) by its name alone."""
    return Path(file).name if file and TEMPORARY_SOURCE.search(file) else file


Pair = tuple["SourceLine | None", "SourceLine | None"]


def _match_file(
    file: str | None, old: list[SourceLine], new: list[SourceLine], base: LineSet | None, head: LineSet | None
) -> tuple[list[Pair], MatchedBy]:
    if file is not None and base and head and file in base.files and file in head.files:
        mapping = dict(_align(base.files[file].splitlines(), head.files[file].splitlines()))
        new_by_line = {s.line: s for s in new}
        pairs: list[Pair] = [
            (s, new_by_line.pop(mapping[s.line - 1] + 1, None)) if s.line and s.line - 1 in mapping else (s, None)
            for s in old
        ]
        return _with_rest(pairs, list(new_by_line.values())), "text"
    texts_known = all(s.source is not None for s in (*old, *new))
    from_disk = file is not None and not any(side.owns_text(file) for side in (base, head) if side)
    if texts_known and not from_disk:
        pairs = []
        matched_new: set[int] = set()
        for i, j in _align([s.source or "" for s in old], [s.source or "" for s in new]):
            pairs.append((old[i], new[j]))
            matched_new.add(j)
        matched_old = {id(a) for a, _ in pairs}
        pairs += [(s, None) for s in old if id(s) not in matched_old]
        return _with_rest(pairs, [s for j, s in enumerate(new) if j not in matched_new]), "text"
    new_by_line = {s.line: s for s in new}
    pairs = [(s, new_by_line.pop(s.line, None)) for s in old]
    return _with_rest(pairs, list(new_by_line.values())), "line"


def _with_rest(pairs: list[Pair], unmatched_new: list[SourceLine]) -> list[Pair]:
    return pairs + [(None, s) for s in unmatched_new]


def _align(old: Sequence[str], new: Sequence[str]) -> list[tuple[int, int]]:
    """(i, j) of the lines of `old` and `new` that are the same line: equal texts in the order of a
    diff, and edited lines paired where a diff replaces lines in place with mostly the same text."""
    matcher = difflib.SequenceMatcher(None, [t.strip() for t in old], [t.strip() for t in new], autojunk=False)
    pairs = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(i1 + k, j1 + k) for k in range(i2 - i1)]
        elif tag == "replace":
            for k in range(min(i2 - i1, j2 - j1)):
                a, b = old[i1 + k].strip(), new[j1 + k].strip()
                if difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= SIMILAR:
                    pairs.append((i1 + k, j1 + k))
    return pairs


def _line_number_note(file: str, base: LineSet | None, head: LineSet | None) -> str:
    sides = [side for side in (base, head) if side]
    if not any(side.owns_text(file) for side in sides) and all(
        s.source is not None for side in sides for s in side.lines if s.file == file
    ):
        why = "its code was read from the file on disk for both runs, not from the reports"
    else:
        missing = [
            name
            for name, side in (("BASE", base), ("HEAD", head))
            if side and any(s.source is None for s in side.lines if s.file == file)
        ]
        why = f"no code text in {' and '.join(missing) or 'either run'}"
    return (
        f"{file}: lines matched by number ({why}); a line that moved reads as gone and new"
        " (record with ncu --import-source yes to follow moved lines)"
    )


def _judge(old: SourceLine | None, new: SourceLine | None, how: MatchedBy) -> LineChange:
    # a line on one side with no figure (0 excess wavefronts, no local access) has none on either: no change
    if old is None:
        assert new is not None
        change: Change = "new" if change_of(LineFigures(), new.figures) == "worse" else "same"
        return LineChange(new.file, None, new.line, new.source, change, None, new.figures)
    if new is None:
        change = "gone" if change_of(old.figures, LineFigures()) == "better" else "same"
        return LineChange(old.file, old.line, None, old.source, change, old.figures, None)
    base_source = old.source if old.source != new.source else None
    return LineChange(
        new.file,
        old.line,
        new.line,
        new.source,
        change_of(old.figures, new.figures),
        old.figures,
        new.figures,
        how,
        base_source,
    )


def change_of(base: LineFigures, head: LineFigures) -> Change:
    """`worse` where any figure grew, `better` where one fell and none grew, else `same`."""
    old = [getattr(base, name) or 0.0 for name in FIGURES]
    new = [getattr(head, name) or 0.0 for name in FIGURES]
    if any(b > a for a, b in zip(old, new, strict=True)):
        return "worse"
    if any(b < a for a, b in zip(old, new, strict=True)):
        return "better"
    return "same"
