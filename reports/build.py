"""From typed run results to the report's content (`build_report`): families of variants with speedups,
verdicts and expectation checks, the kernels without family, the run's header, and the comparison of
several runs; a run's bench.json joins it in bench_join.py."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

from memlens.bench.results import copy_ceiling
from memlens.collect.launch_sampling import sampling_lines
from memlens.model.catalogue import HW_COUNTS
from memlens.model.line_compare import NO_LINE_DATA, compare_runs, has_line_data
from memlens.model.over_launches import aggregate
from memlens.model.results import KernelResult, RunInfo, RunResults, VariantOutcome
from memlens.readers.metric_values import CSV_NO_INSTRUCTIONS
from memlens.reports.bench_join import bench_header, bench_notes, bench_summary, family_copy, with_bench
from memlens.reports.columns import BENCH_COLUMNS, COLUMNS, SPEEDUP, kernel_cells
from memlens.reports.compare import compare
from memlens.reports.findings import ranked, row_findings
from memlens.reports.formatting import STATUS_WORDS, format_value, short_kernel
from memlens.reports.global_memory_verdicts import pmpp_findings
from memlens.reports.hot_lines import RunSources, every_line, hottest, line_findings, tma_findings
from memlens.reports.model import (
    Cell,
    Comparison,
    FamilySection,
    HeaderItem,
    Report,
    Row,
    RunLineChanges,
    RunSection,
    VerdictSentence,
)
from memlens.reports.roofline import add_roofline, others_roofline
from memlens.reports.source_view import source_views
from memlens.reports.sweeps import same_size_baseline
from memlens.reports.verdicts import HW_LABEL, check, describe, judge
from memlens.theory.paper_figures import check as paper_check
from memlens.version import __version__

if TYPE_CHECKING:
    from memlens.bench.results import BenchResults
    from memlens.static.check import StaticResults


def build_report(
    runs: Sequence[tuple[str, RunResults]],
    benches: Sequence[tuple[str, BenchResults] | None] | None = None,
    statics: Sequence[StaticResults | None] | None = None,
) -> Report:
    """The report's content for runs given as (label, results), the first the reference; `benches`
    gives each run's bench results as (the bench.json read, results), or None where it has none;
    `statics` each run's `memlens check` figures (its check.json), or None."""
    names = labels(label for label, _ in runs)
    benches = list(benches) if benches is not None else [None] * len(runs)
    if len(benches) != len(runs):
        raise ValueError(f"{len(benches)} bench results for {len(runs)} runs")
    sections = []
    statics = list(statics) if statics is not None else [None] * len(runs)
    for name, (_, results), bench, static in zip(names, runs, benches, statics, strict=True):
        source, timed = bench if bench is not None else ("", None)
        sections.append(build_run(results, name, timed, source, static))
    runs_built = tuple(sections)
    comparisons = with_lines(compare(runs_built), [results for _, results in runs], names)
    line_notes = tuple(
        f"{name}: {NO_LINE_DATA}"
        for name, (_, results) in zip(names, runs, strict=True)
        if comparisons and not has_line_data(results)
    )
    return Report(__version__, COLUMNS, runs_built, comparisons, BENCH_COLUMNS, line_notes)


def with_lines(
    comparisons: tuple[Comparison, ...], results: Sequence[RunResults], names: Sequence[str]
) -> tuple[Comparison, ...]:
    """Each comparison with its kernel's source lines in every later run against the first run's, where
    both runs hold per-line data (else none: `NO_LINE_DATA`, once, not every line "gone")."""
    if not comparisons or not has_line_data(results[0]):
        return comparisons
    labels = [c.label for c in comparisons]
    later = [
        (name, {c.label: c for c in compare_runs(results[0], other, labels)})
        for name, other in zip(names[1:], results[1:], strict=True)
        if has_line_data(other)
    ]
    return tuple(
        replace(c, lines=tuple(RunLineChanges(name, by_label[c.label]) for name, by_label in later))
        for c in comparisons
    )


def build_run(
    results: RunResults,
    label: str,
    bench: BenchResults | None = None,
    bench_source: str = "",
    static: StaticResults | None = None,
) -> RunSection:
    """The report of one run; with `bench` (its bench.json, read from `bench_source`) the family
    tables gain the bench columns, each family the copy its percentages are of (where that is not
    the bench's one copy), and the header the measured copy bandwidth. With `static` (its
    check.json) verdicts name the cause of local-memory traffic."""
    families, others = _group(results, static, bench)
    exact = any(k.metric("exact_excess_wavefronts").available for k in results.kernels)
    notes = [
        f"{STATUS_WORDS.get(o.status, o.status)}: {o.message}" for o in results.outcomes if not (o.family and o.variant)
    ]
    if not results.complete:
        notes.append("incomplete run: it stopped before every variant ran")
    if results.kernels and not exact:
        notes.append(
            "exact excess wavefronts are not in this run (a --fast run or a plain ncu report):"
            f" bank conflicts are shown from the {HW_LABEL}: {HW_COUNTS}"
        )
    items = header(results.info) + gpus_header(results)
    summary = None
    if bench is not None:
        summary = bench_summary(bench, bench_source)
        families = [
            replace(f, rows=tuple(with_bench(r, f.name, bench) for r in f.rows), bench_copy=family_copy(f.name, bench))
            for f in families
        ]
        items += bench_header(bench, summary)
        notes.extend(bench_notes(bench, summary, results.info))
    families = add_roofline(families, results, bench)
    others, roof = others_roofline(others, results, bench)
    heading, about = others_words(results)
    notes.extend(cannot_show(results))
    return RunSection(
        label=label,
        info=asdict(results.info),
        header=items,
        complete=results.complete,
        exact_available=exact,
        families=tuple(families),
        others=tuple(others),
        notes=tuple(notes),
        bench=summary,
        others_heading=heading,
        others_about=about,
        others_roofline=roof,
        made=tuple(sampling_lines(results.info, results.kernels)),
        findings=ranked(f for row in (*(r for f in families for r in f.rows), *others) for f in row.findings),
    )


def others_words(results: RunResults) -> tuple[str, str]:
    """The heading of the kernels outside families, and a line on what they are: a program's that
    memlens profiled, a plain ncu report's, or a suite run's strays."""
    in_ranges = any(k.nvtx for k in results.kernels if not (k.family and k.variant))
    by = "by the NVTX ranges open at each launch (outermost first), the kernel's name beside; " if in_ranges else ""
    if results.outcomes:
        return "other kernels", "kernels outside any variant's NVTX range"
    if results.info.memlens_version:
        return ("kernels of the program", f"{by}kernels in no range shaped family/variant, each with all it measured")
    return (
        "kernels of the ncu report",
        f"{by or 'by kernel name (no NVTX ranges recorded: ncu --nvtx names them); '}"
        "read from a plain ncu report, not verified by memlens",
    )


def cannot_show(results: RunResults) -> list[str]:
    """What the run's file cannot carry, said once: a CSV holds one value a metric, not one an instruction."""
    if results.kernels and all(
        k.missing.get("exact_excess_wavefronts_ld") == CSV_NO_INSTRUCTIONS for k in results.kernels
    ):
        return [
            "an ncu CSV holds one value a metric, not one a SASS instruction: no hot lines, no source view and no"
            " split of bank conflicts into loads and stores here; give the .ncu-rep it was exported from"
        ]
    return []


def gpus_header(results: RunResults) -> tuple[HeaderItem, ...]:
    """Which GPU ran how many variants, for a run made with --gpus or --cluster (each GPU, by host
    where the run spans several)."""
    counts: dict[tuple[str, int], int] = {}
    names: dict[tuple[str, int], str] = {}
    for outcome in results.outcomes:
        if outcome.gpu_index is not None:
            key = (outcome.host or "", outcome.gpu_index)
            counts[key] = counts.get(key, 0) + 1
            if outcome.gpu_name:
                names[key] = outcome.gpu_name
    if not counts:
        return ()
    by_index = {k.gpu_index: k.gpu_name for k in results.kernels if k.gpu_index is not None and k.gpu_name}
    hosts = len({host for host, _ in counts}) > 1
    parts = []
    for (host, index), n in sorted(counts.items()):
        name = names.get((host, index)) or by_index.get(index)
        where = f"{host} " if hosts and host else ""
        parts.append(f"{where}GPU {index}{f' ({name})' if name else ''}: {n} variant{'s' if n != 1 else ''}")
    host = "" if hosts or not results.info.host else f" on {results.info.host}"
    return (HeaderItem("GPUs", "; ".join(parts) + host),)


def header(info: RunInfo) -> tuple[HeaderItem, ...]:
    def text(value: object) -> str:
        return "n/a" if value in (None, "") else str(value)

    settings = info.ncu_settings
    items = [
        ("GPU", info.gpu_name),
        ("compute capability", info.compute_capability),
        ("driver", info.driver_version),
        ("Nsight Compute", info.ncu_version),
        ("clock control", settings and settings.clock_control),
        ("cache control", settings and settings.cache_control),
        ("date", info.started_at),
        ("command", info.memlens_command),
        ("memlens", info.memlens_version),
    ]
    if settings and settings.fast:
        items.append(("mode", "--fast (no instrumented pass: no exact bank-conflict count)"))
    if info.suite:
        items.append(("suite", info.suite + (f" @ {info.suite_commit}" if info.suite_commit else "")))
    if info.wall_seconds is not None:
        items.append(("wall time", f"{info.wall_seconds:.1f} s"))
    if info.source:
        items.append(("read from", info.source))
    return tuple(HeaderItem(label, text(value)) for label, value in items)


# --- grouping -----------------------------------------------------------------------------------


def _group(
    results: RunResults, static: StaticResults | None = None, bench: BenchResults | None = None
) -> tuple[list[FamilySection], list[Row]]:
    ceiling = copy_ceiling(bench, results)  # the time at stake's DRAM ceiling: a bench of the profile's GPU
    sources = RunSources(results.embedded_sources, results.written_at, results.info.compute_capability, ceiling)
    outcomes = {(o.family, o.variant): o for o in results.outcomes if o.family and o.variant}
    launches: dict[tuple[str, str], list[KernelResult]] = {}
    plain: dict[tuple[str, str], list[KernelResult]] = {}  # (label, kernel): a range's kernels apart
    for kernel in results.kernels:
        if kernel.family and kernel.variant:
            launches.setdefault((kernel.family, kernel.variant), []).append(kernel)
        else:
            # one label for a Numba kernel from CSV or .ncu-rep
            plain.setdefault((kernel.label, kernel.kernel), []).append(kernel)
    order = list(dict.fromkeys([*outcomes, *launches]))
    families: dict[str, list[tuple[str, str]]] = {}
    for key in order:
        families.setdefault(key[0], []).append(key)
    sections = [_family(name, keys, outcomes, launches, static, sources) for name, keys in families.items()]
    # a kernel in a program's NVTX range shows its range as the label and its own name beside it
    others = [
        _row(label, label if group[0].nvtx is None else short_kernel(name), group, None, static=static, sources=sources)
        for (label, name), group in plain.items()
    ]
    if len(others) > OTHERS_SHOWN:  # a program of many kernels: the longest first, the rest folded
        others.sort(key=_total_duration, reverse=True)
        others[OTHERS_SHOWN:] = [replace(row, source_views=()) for row in others[OTHERS_SHOWN:]]  # folded: no code
    return sections, others


# A report shows this many kernels outside families, the longest first when there are more; the rest
# are folded under them (report.html.j2), and charts draw at most this many rows.
OTHERS_SHOWN = 25


def _total_duration(row: Row) -> float:
    cell = row.cells.get("duration")
    return cell.value if cell is not None and cell.value is not None else -1.0


def _family(
    name: str,
    keys: list[tuple[str, str]],
    outcomes: dict[tuple[str, str], VariantOutcome],
    launches: dict[tuple[str, str], list[KernelResult]],
    static: StaticResults | None = None,
    sources: RunSources | None = None,
) -> FamilySection:
    # a suite's variants (its outcomes, or its --sweep's sizes) have a baseline; a program's ranges are not variants
    declared = any(k in outcomes or any(kernel.sweep_size for kernel in launches.get(k, ())) for k in keys)
    marked = [k for k in keys if k in outcomes and outcomes[k].baseline]
    baseline_key = (marked[0] if marked else keys[0]) if declared else None
    rows = [
        _row(f"{f}/{v}", v, launches.get((f, v), []), outcomes.get((f, v)), (f, v) == baseline_key, static, sources)
        for f, v in keys
    ]
    if baseline_key is None:  # no speedups between a program's ranges: they need not do the same work
        unranked = Cell(SPEEDUP, None, "x", "n/a", missing_reason=NOT_VARIANTS)
        return FamilySection(name, None, tuple(replace(r, cells={**r.cells, SPEEDUP: unranked}) for r in rows))
    baseline = next(r for r in rows if r.baseline)
    rows = [_with_speedup(r, same_size_baseline(r, rows, baseline)) for r in rows]
    return FamilySection(name, baseline_key[1], tuple(rows))


NOT_VARIANTS = "a program's ranges are not variants of one kernel: no speedup between them"


def _row(
    label: str,
    name: str,
    kernels: list[KernelResult],
    outcome: VariantOutcome | None,
    baseline: bool = False,
    static: StaticResults | None = None,
    sources: RunSources | None = None,
) -> Row:
    status = outcome.status if outcome else "unverified"
    if status == "ok" and not kernels:
        status = "no_kernel"
    row = Row(
        label=label,
        name=name,
        kernels=tuple(dict.fromkeys(k.kernel for k in kernels)),
        launches=len(kernels),
        status=status,
        valid=status in ("ok", "unverified"),
        message=outcome.message if outcome else "",
        demonstrates=outcome.demonstrates if outcome else "",
        declared=describe(outcome.expect) if outcome else "",
        baseline=baseline,
    )
    if not row.valid:
        return replace(row, verdict=(_invalid_finding(status, row.message),))
    kernel = aggregate(kernels)
    measured = judge(kernel, static.for_kernel(label, kernel.kernel) if static is not None else ())
    figure = outcome.expect.excess_wavefronts if outcome and outcome.expect else None
    on_paper = paper_check(label, figure, kernels) if isinstance(figure, int) else None
    expectation = check(outcome.expect if outcome else None, measured, on_paper)
    sources = sources or RunSources()
    every = every_line(kernels, outcome, embedded=sources.embedded, written_at=sources.written_at)
    lines = hottest(every)
    findings = measured.findings + pmpp_findings(kernel) + line_findings(lines, kernels) + tma_findings(kernels)
    owners = {k.library for k in kernels}  # one library's kernels: whose they are, what the user controls
    owner = owners.pop() if len(owners) == 1 else None
    if owner is not None:
        findings += (VerdictSentence("library", "ok", owner.advice),)
    views = source_views(kernels, outcome, sources)
    # a line's finding links to the kernel's hot lines where it has some, else to its row
    lines_anchor = f"{row.anchor}-lines" if lines else row.anchor
    found = row_findings(
        label, row.anchor, lines_anchor, kernel, every, owner, sources.compute_capability, sources.dram_ceiling
    )
    return replace(
        row,
        findings=found,
        cells=kernel_cells(kernel),
        verdict=findings,
        expectation=expectation,
        hot_lines=lines,
        source_views=views,
        library=owner.name if owner else None,
    )


def _invalid_finding(status: str, message: str) -> VerdictSentence:
    words = STATUS_WORDS.get(status, status)
    text = f"not a valid measurement: {words}" + (f" ({message})" if message else "")
    return VerdictSentence("status", "invalid", text)


# --- figures ---


def _with_speedup(row: Row, baseline: Row) -> Row:
    if not row.valid:
        return row
    column = next(c for c in COLUMNS if c.key == SPEEDUP)
    ratio, reason = _speedup(row, baseline)
    cell = Cell(SPEEDUP, ratio, "x", format_value(ratio, column.kind), missing_reason=reason)
    return replace(row, cells={**row.cells, SPEEDUP: cell})


def _speedup(row: Row, baseline: Row) -> tuple[float | None, str | None]:
    if not baseline.valid:
        return None, f"the baseline {baseline.name} is not a valid measurement"
    ours, theirs = row.cells["duration"].value, baseline.cells["duration"].value
    if ours is None or theirs is None or ours <= 0:
        return None, "a duration is missing"
    return theirs / ours, None


def labels(paths: Iterable[str]) -> list[str]:
    """Run labels for the report: the paths as given, made unique."""
    seen: dict[str, int] = {}
    out = []
    for path in paths:
        seen[path] = seen.get(path, 0) + 1
        out.append(path if seen[path] == 1 else f"{path} ({seen[path]})")
    return out
