"""The report's content as typed records: what every format renders, and what `--format json` is.

Records hold numbers in the catalogue's units and the text a person reads, side by side, so the
HTML and Markdown templates only lay out and the JSON carries the same content for machines.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from memlens.io.tables import Column
from memlens.model.line_compare import KernelLineChanges
from memlens.model.noise import Band
from memlens.model.source_lines import LineRecord

REPORT_FORMAT = "memlens-report"
REPORT_VERSION = 1

Severity = Literal["ok", "bad", "unknown", "invalid"]
CheckState = Literal["match", "mismatch", "unchecked", "undeclared"]
Direction = Literal["better", "worse", "same", "n/a"]


@dataclass(frozen=True)
class Cell:
    key: str
    value: float | None
    unit: str
    text: str  # "n/a" when value is None
    exact: str = ""  # the full-precision figure, when `text` rounds it
    missing_reason: str | None = None
    flag: Severity | None = None  # "bad" marks a figure that shows a problem


@dataclass(frozen=True)
class VerdictSentence:
    """One finding of a verdict, about one topic: `text` a clause the verdict cell shows, `details` what
    explains it (a phase rule, a book's advice), each shown once under the table however many findings
    share it, and `more` its further figures (the L2 story), a tooltip."""

    topic: Literal["shared", "local", "clean", "status", "roofline", "global", "memory", "line", "library"]
    severity: Severity
    text: str
    details: tuple[str, ...] = ()  # rules and advice that explain it, shown once under the table
    more: str = ""  # the finding's further figures, a tooltip on its clause


@dataclass(frozen=True)
class AspectCheck:
    """A declared expectation against what was measured, for one aspect."""

    aspect: Literal["bank_conflicts", "local_memory", "excess_wavefronts"]
    expected: bool | int | None  # excess_wavefronts: the figure on paper
    measured: bool | float | None  # excess_wavefronts: the exact figure measured
    state: CheckState


@dataclass(frozen=True)
class ExpectationCheck:
    declared: str  # the expectation in words, or "no expectation declared"
    measured: str  # what was measured, in the same words
    checks: tuple[AspectCheck, ...]
    state: CheckState  # the whole: "mismatch" if any aspect mismatches


@dataclass(frozen=True)
class BenchTiming:
    """A variant as `memlens bench` timed it (CUDA events, outside ncu): launch times in ms, and
    the family's min_bytes over the median as GB/s and as a percentage of the GB/s of the copy it
    was compared with (a copy of the same bytes, timed the same way; bench.json schema 1: the one
    copy of the bench)."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    launches: int
    min_bytes: int | None
    gb_per_s: float | None
    pct_of_copy: float | None
    copy_bytes: int | None = None  # bytes the copy moved (read plus written); None without min_bytes
    copy_median_ms: float | None = None
    copy_gb_per_s: float | None = None


@dataclass(frozen=True)
class BenchSummary:
    """The bench.json of a run: where it was read from, the GPU, and its copy over a buffer far
    larger than L2 (the GPU's copy bandwidth, in the header). Each variant's percentage is of its
    own copy (`BenchTiming`): `copy_text` says which, for the % of copy charts."""

    source: str  # the bench.json read
    gpu_name: str | None
    started_at: str | None
    repeats: int
    copy_buffer_bytes: int  # the copy moves twice this (read plus written)
    copy_median_ms: float
    copy_gb_per_s: float
    copy_text: str  # the copy the percentages are of: its GB/s if they share one, else "of the same bytes ..."
    failures: tuple[str, ...] = ()  # "family/variant: status (message)" of the variants it could not time


@dataclass(frozen=True)
class SourceInstruction:
    """One SASS instruction of a line, all launches together."""

    sass: str
    executions: float | None  # warp-level
    wavefronts: float | None  # shared memory only
    ideal: float | None
    figures: str  # in words: "32-way, 31 excess wavefronts / execution" or "local store"


@dataclass(frozen=True)
class SourceViewLine:
    number: int
    code: str
    figures: str  # the margin: "ld 32-way +65.0 M" etc.; "" for a line without memory instructions
    heat: int  # 0: no excess nor local access; 1..HEAT_LEVELS: its share of the view's hottest line
    instructions: tuple[SourceInstruction, ...] = ()


@dataclass(frozen=True)
class SourceView:
    """One file of one kernel: windows of consecutive lines around the lines with figures."""

    file: str  # as shown (relative to the working directory where under it)
    origin: str  # "kept" (the code as it ran), "disk", "changed" (no code shown), "missing" (no code found)
    note: str  # the origin in words, for a person
    windows: tuple[tuple[SourceViewLine, ...], ...] = ()
    left_out: int = 0  # lines with figures beyond MAX_LINES, not shown

    @property
    def hot_count(self) -> int:
        return sum(1 for window in self.windows for line in window if line.figures)


@dataclass(frozen=True)
class LaneMark:
    """One cell of a bank map: the lanes whose word a bank delivers in one wavefront, where it is drawn."""

    x: float
    y: float
    bank: int
    lanes: tuple[int, ...]  # several where the lanes share one word (a broadcast, or sub-word lanes)
    conflict: bool  # the bank delivers another word of the same phase in another wavefront

    @property
    def label(self) -> str:
        return str(self.lanes[0]) + ("+" if len(self.lanes) > 1 else "")

    @property
    def title(self) -> str:
        lanes = ", ".join(str(lane) for lane in self.lanes)
        return f"bank {self.bank}: lane{'s' * (len(self.lanes) > 1)} {lanes}"


@dataclass(frozen=True)
class BankMapRow:
    label: str  # the wavefront's number in its phase, from 1
    y: float
    marks: tuple[LaneMark, ...]


@dataclass(frozen=True)
class BankMapPanel:
    """One phase: the lanes served together, a row a wavefront."""

    title: str  # "lanes 0-15: 16 wavefronts (ideal 1)"; "" where the warp is one phase of 4-byte lanes
    title_y: float
    rows: tuple[BankMapRow, ...]


@dataclass(frozen=True)
class BankMapFigure:
    """The recorded warp of a conflicting instruction, bank by bank, laid out for an SVG (reports/bank_maps.py):
    32 bank columns, a row a wavefront, a panel a phase; the fix proved on the recorded addresses below it."""

    location: str  # the hot line's, as LineRecord.location names it
    heading: str  # "load at pc +0x6c0, 4 bytes a lane"
    summary: str  # the n-way from the recorded addresses, and ncu's
    fix: str  # in one sentence; "" where none is needed
    width: float
    height: float
    cell: float
    columns: tuple[float, ...]  # x of each bank's column
    panels: tuple[BankMapPanel, ...]

    @property
    def marks(self) -> int:
        return sum(len(row.marks) for panel in self.panels for row in panel.rows)


@dataclass(frozen=True)
class RooflinePoint:
    """One variant under the roofline: its achieved FLOP/s and its intensity at each memory level."""

    name: str
    baseline: bool
    achieved: float  # FLOP/s
    intensities: tuple[tuple[str, float | None], ...]  # (level, FLOP/byte) for DRAM, L2, L1
    memory_bound: bool | None = None  # None: no ceilings to judge by
    pct_of_limit: float | None = None


@dataclass(frozen=True)
class FamilyRoofline:
    """A family's roofline: the run's ceilings, a point per variant with FLOPs, and the words."""

    # (roof, FLOP/s) for the CUDA-core precisions ("fp32") and tensor roofs ("bf16 tensor (dense)") the variants use
    peak_flops: tuple[tuple[str, float], ...]
    dram_bandwidth: float | None  # bytes/s, ncu's peak
    copy_bandwidth: float | None  # bytes/s, memlens bench's device-to-device copy (the practical roof)
    points: tuple[RooflinePoint, ...]
    notes: tuple[str, ...] = ()  # e.g. the global-load cut against the baseline
    compute_bound: bool = False  # every judged variant is compute-bound
    # A family that does no floating-point work (every variant measured at 0 FLOPs): no points, and
    # each variant's achieved DRAM bandwidth (variant, byte/s) drawn against the DRAM peak instead
    no_flops: bool = False
    dram_achieved: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Finding:
    """One finding of the run's first screen: a kernel's line (or the kernel itself), what happens there,
    the time it puts at stake and the fix, each in one sentence (reports/findings.py ranks them)."""

    kernel: str  # the row's label: family/variant, a program's range, or the kernel's name
    anchor: str  # the id of the row's details in the page
    where: str  # "file:line", or "kernel" for the kernel's own headroom
    kind: str  # findings.FindingKind's value: what decides the fix
    what: str  # what happens, one sentence
    fraction: float  # the share of the kernel's duration at stake, at most
    seconds: float  # fraction x the kernel's duration (the ranking key)
    stake: str  # "≤ 15% of 80.0 µs"
    bound: str  # what bounds the estimate (time_at_stake.Stake.by), for the tooltip
    fix: str  # one sentence


@dataclass(frozen=True)
class Row:
    """A variant of a family, or a kernel without family (all its launches together)."""

    label: str  # family/variant, or the kernel name
    name: str  # the variant, or the kernel name
    kernels: tuple[str, ...]  # demangled names of the kernels launched
    launches: int
    status: str  # "ok", "wrong", "failed", "not_run", "no_kernel", or "unverified"
    valid: bool  # False: the figures are not a valid measurement and are not shown
    message: str = ""
    demonstrates: str = ""
    declared: str = ""  # the declared expectation in words
    baseline: bool = False
    cells: dict[str, Cell] = field(default_factory=dict)
    verdict: tuple[VerdictSentence, ...] = ()
    expectation: ExpectationCheck | None = None
    bench: BenchTiming | None = None  # the variant's `memlens bench` timing, when the run has one
    hot_lines: tuple[LineRecord, ...] = ()  # lines with excess wavefronts or local accesses (hot_lines.py)
    source_views: tuple[SourceView, ...] = ()  # its code with per-line figures, a view a file (source_view.py)
    library: str | None = None  # the library whose kernel it is (cuBLAS, ...: model/libraries.py); None: the user's
    bank_maps: tuple[BankMapFigure, ...] = ()  # its hot lines' recorded warps, where the run holds banks.json
    findings: tuple[Finding, ...] = ()  # its lines' and its own, with the time each puts at stake (findings.py)

    @property
    def anchor(self) -> str:
        """The id of its details in the page: its label with every character but letters and digits a dash."""
        slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in self.label)[:48]
        return f"k-{slug}-{hashlib.sha1(self.label.encode()).hexdigest()[:6]}"  # two labels of one slug apart

    @property
    def cell_verdict(self) -> tuple[VerdictSentence, ...]:
        """The findings its verdict cell shows: every one but those at a line (the findings table and the
        hot lines show those)."""
        return tuple(f for f in self.verdict if f.topic != "line")

    @property
    def verdict_text(self) -> str:
        """The verdict cell as one sentence: its findings' clauses joined by semicolons."""
        return "; ".join(f.text for f in self.cell_verdict)

    @property
    def severity(self) -> Severity:
        order: tuple[Severity, ...] = ("invalid", "bad", "unknown", "ok")
        found = {f.severity for f in self.verdict}
        return next((s for s in order if s in found), "ok")


def verdict_details(rows: tuple[Row, ...] | list[Row]) -> tuple[str, ...]:
    """What explains the verdicts of `rows` (phase rules, advice, the L2 story), each once, in order."""
    return tuple(dict.fromkeys(d for row in rows for f in row.cell_verdict for d in f.details))


@dataclass(frozen=True)
class FamilySection:
    name: str
    baseline: str | None  # the baseline variant's name
    rows: tuple[Row, ...]
    bench_copy: str = ""  # the copy its bench percentages are of, where it is not the run's one copy
    roofline: FamilyRoofline | None = None  # None: no variant with floating-point work (reports/roofline.py)

    @property
    def declared(self) -> bool:
        """Whether any variant says what it demonstrates or expects (results from a memlens run)."""
        return any(r.demonstrates or (r.expectation and r.expectation.state != "undeclared") for r in self.rows)


@dataclass(frozen=True)
class HeaderItem:
    label: str
    text: str


@dataclass(frozen=True)
class RunSection:
    label: str  # how the user named the run (a path)
    info: dict[str, Any]  # RunInfo as a dict
    header: tuple[HeaderItem, ...]
    complete: bool
    exact_available: bool  # False when no kernel has exact excess wavefronts (a --fast run)
    families: tuple[FamilySection, ...]
    others: tuple[Row, ...]
    notes: tuple[str, ...] = ()  # what a reader must know to trust its figures (an incomplete run, ...)
    bench: BenchSummary | None = None  # None: the run has no bench.json; its tables have no bench columns
    # the kernels outside families: what they are, in words (a heading and a line under it), and the
    # roofline of those with floating-point work, all on one chart (None: none has FLOPs measured)
    others_heading: str = "other kernels"
    others_about: str = ""
    others_roofline: FamilyRoofline | None = None
    # how this run was made: a program run's ranges and launches selected (plain information, not a warning)
    made: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()  # every row's, most time at stake first: the first screen

    @property
    def variants(self) -> tuple[Row, ...]:
        return tuple(row for family in self.families for row in family.rows)

    @property
    def mismatches(self) -> tuple[Row, ...]:
        return tuple(r for r in self.variants if r.expectation and r.expectation.state == "mismatch")

    @property
    def invalid(self) -> tuple[Row, ...]:
        return tuple(r for r in self.variants if not r.valid)

    @property
    def unchecked(self) -> tuple[Row, ...]:
        return tuple(r for r in self.variants if r.expectation and r.expectation.state == "unchecked")

    @property
    def all_as_declared(self) -> bool:
        rows = self.variants
        return bool(rows) and all(r.valid and r.expectation and r.expectation.state == "match" for r in rows)


@dataclass(frozen=True)
class CompareCell:
    run: str
    value: float | None
    text: str
    change: float | None = None  # relative to the first run: 0.12 is +12%
    change_text: str = ""
    direction: Direction = "n/a"
    noise: Band | None = None  # the band a change must pass to be better or worse; None: compared exactly


@dataclass(frozen=True)
class CompareMetric:
    key: str
    header: str
    better: str | None
    cells: tuple[CompareCell, ...]


@dataclass(frozen=True)
class RunLineChanges:
    """One kernel's source lines in a later run against the first run."""

    run: str  # the later run's label
    changes: KernelLineChanges


@dataclass(frozen=True)
class Comparison:
    """One kernel (family/variant or kernel name) across the runs of the report."""

    label: str
    statuses: tuple[str, ...]  # per run: the row's status, or "absent"
    metrics: tuple[CompareMetric, ...]
    # per later run: its lines against the first run's (line_compare.py); the report shows the changed ones
    lines: tuple[RunLineChanges, ...] = ()

    @property
    def directions(self) -> set[str]:
        return {c.direction for m in self.metrics for c in m.cells}


SPEEDUP = "speedup"  # columns.SPEEDUP: the key of a variant's speedup over its family's baseline
NONE = "—"  # a cell of a figure the kernel has none of (no such access), as `memlens metrics` shows "-"


def _has(row: Row, key: str) -> bool:
    cell = row.cells.get(key)
    return cell is not None and cell.text != NONE


@dataclass(frozen=True)
class Report:
    memlens_version: str
    columns: tuple[Column, ...]
    runs: tuple[RunSection, ...]
    comparisons: tuple[Comparison, ...] = ()
    bench_columns: tuple[Column, ...] = ()  # in the family tables of the runs with bench results only
    line_notes: tuple[str, ...] = ()  # "RUN: no per-line data ...": runs whose lines were not compared

    def run_columns(self, run: RunSection) -> tuple[Column, ...]:
        """The columns of `run`'s tables: an n-way column (one a kind of shared access) only where a kernel of
        the run has that kind (a cell other than NONE)."""
        rows = (*run.variants, *run.others)
        return tuple(
            column
            for column in self.columns
            if (column.kind != "ways" or not rows or any(_has(row, column.key) for row in rows))
            and (column.key != SPEEDUP or not run.families or any(f.baseline for f in run.families))
        )

    @property
    def legend_columns(self) -> tuple[Column, ...]:
        """The columns some run's tables show, for the legend."""
        shown = {column.key for run in self.runs for column in self.run_columns(run)}
        return tuple(column for column in self.columns if column.key in shown or not self.runs)

    def family_columns(self, run: RunSection) -> tuple[Column, ...]:
        """The columns of `run`'s family tables: the bench columns after the time group when the
        run has bench results, else the columns alone (no empty bench columns)."""
        columns = self.run_columns(run)
        if run.bench is None or not self.bench_columns:
            return columns
        cut = max((i + 1 for i, c in enumerate(columns) if c.group == "time"), default=len(columns))
        return (*columns[:cut], *self.bench_columns, *columns[cut:])

    def to_json(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "version": REPORT_VERSION,
            "memlens_version": self.memlens_version,
            "columns": [_column_json(c) for c in self.columns],
            "bench_columns": [_column_json(c) for c in self.bench_columns],
            "runs": [_run_json(r) for r in self.runs],
            "comparisons": [asdict(c) for c in self.comparisons],
            "line_notes": list(self.line_notes),
        }


def _column_json(column: Column) -> dict[str, str]:
    """What the report's JSON says of a column (io/tables.Column also holds how a terminal lays it out)."""
    return {
        "key": column.key,
        "header": column.header,
        "group": column.group,
        "kind": column.kind,
        "title": column.title,
    }


def _run_json(run: RunSection) -> dict[str, Any]:
    data = asdict(run)
    data["families"] = [
        {
            "name": f.name,
            "baseline": f.baseline,
            "variants": [_row_json(r) for r in f.rows],
            "bench_copy": f.bench_copy,
            "roofline": asdict(f.roofline) if f.roofline else None,
        }
        for f in run.families
    ]
    data["others"] = [_row_json(r) for r in run.others]
    data["others_roofline"] = asdict(run.others_roofline) if run.others_roofline else None
    return data


def _row_json(row: Row) -> dict[str, Any]:
    data = asdict(row)
    del data["bank_maps"]  # a drawing: `memlens lines --json` gives each line's bank map
    for line in data["hot_lines"]:
        del line["pcs"]
    data["verdict_text"] = row.verdict_text
    data["cells"] = {k: _cell_json(c) for k, c in row.cells.items()}
    return data


def _cell_json(cell: Cell) -> dict[str, Any]:
    data = asdict(cell)
    del data["key"]
    return data
