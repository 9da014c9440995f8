"""Verdicts in words: what a kernel's figures say about bank conflicts and local memory, and
whether that is what its variant declared.

Bank conflicts are judged on the exact count (instrumented wavefronts minus the ideal); the
hardware counter (catalogue.HW_COUNTS: shared loads and stores only, cycles that are not address conflicts
included) is only quoted, clearly labelled, when the exact count is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memlens.errors import MemlensError
from memlens.io.units import format_count
from memlens.model import shared_figures
from memlens.model.catalogue import KIND_KEYS, LOCAL_EXECUTIONS, REMOTE_SHARED_EXECUTIONS, SHARED_KEYS
from memlens.model.instruction_kinds import SHARED_KIND_SIDES, SHARED_KIND_WORDS, SharedKind, Side, Space
from memlens.model.instruction_table import (
    NO_REMOTE_BANKS,
    RUNTIME_ARRAY,
    SPILL,
    KindTotals,
    kind_totals,
)
from memlens.model.instruction_table import local_memory_causes as causes_in_sass
from memlens.model.results import (
    Expect,  # the suite's, as results.json carries it
    KernelResult,
)
from memlens.model.run_layout import resolve_run, run_directory
from memlens.readers import read_with_instructions
from memlens.reports.formatting import compact_count, counted, format_value, per_instruction, ways
from memlens.reports.model import AspectCheck, CheckState, ExpectationCheck, Severity, VerdictSentence
from memlens.static.check import StaticKernel, find_static, local_memory_cause
from memlens.theory.paper_figures import PaperCheck

MAX_REGISTERS = 255  # per thread, on every architecture memlens supports
# A side (loads or stores) takes part in a conflict when its extra wavefronts per instruction
# reach this; the padded and swizzled transposes stay below 0.2 on the hardware counter.
SIDE_THRESHOLD = 0.5
HW_LABEL = "HW counter (shared ld + st)"


@dataclass(frozen=True)
class Judgement:
    bank_conflicts: bool | None  # None: cannot tell (no exact count)
    local_memory: bool | None
    findings: tuple[VerdictSentence, ...]


def _value(kernel: KernelResult, key: str) -> float | None:
    return kernel.value(key)


def judge(kernel: KernelResult, static: Sequence[StaticKernel] = ()) -> Judgement:
    """Findings about shared and local memory of one (possibly aggregated) kernel; `static`, the
    `memlens check` figures of its kernels where the run has them, names the cause of local memory."""
    conflicts, shared = _shared(kernel)
    local, local_finding = local_memory(kernel, static)
    tensor = (*_tensor_core_reads(kernel), *_remote_shared(kernel))
    if conflicts is False and local is False:
        return Judgement(False, False, (VerdictSentence("clean", "ok", f"{shared.text}, no local memory"), *tensor))
    return Judgement(conflicts, local, (shared, local_finding, *tensor))


def _remote_shared(kernel: KernelResult) -> tuple[VerdictSentence, ...]:
    """Loads and stores of a cluster partner's shared memory (distributed shared memory), with their
    executions: ncu records no bank figures for them."""
    executions = _value(kernel, REMOTE_SHARED_EXECUTIONS)
    if not executions:
        return ()
    accesses = counted(compact_count(executions), "warp-level access", "warp-level accesses")
    return (
        VerdictSentence(
            "shared",
            "ok",
            f"distributed shared memory: {accesses} of a cluster partner's shared memory ({NO_REMOTE_BANKS})",
        ),
    )


def _tensor_core_reads(kernel: KernelResult) -> tuple[VerdictSentence, ...]:
    """The tensor-core instructions' shared-memory operand reads (wgmma: HGMMA ...), with their own
    figures, as ncu counts them; none where the kernel has none (or the report no per-instruction data)."""
    executions = _value(kernel, SHARED_KEYS[Side.MMA].executions)
    ways_of = _value(kernel, SHARED_KEYS[Side.MMA].ways)
    if not executions or ways_of is None:
        return ()
    excess = _value(kernel, SHARED_KEYS[Side.MMA].excess) or 0.0
    state = f"{ways_of:.3g}-way bank conflicts, {compact_count(excess)} excess" if excess else "conflict-free (1-way)"
    over = counted(compact_count(executions), "execution")
    return (VerdictSentence("shared", "bad" if excess else "ok", f"tensor-core operand reads: {state}, over {over}"),)


# --- shared memory ------------------------------------------------------------------------------


def _shared(kernel: KernelResult) -> tuple[bool | None, VerdictSentence]:
    loads, stores, atomics, mma = (shared_figures.accesses(kernel, side) for side in ("ld", "st", "atom", "mma"))
    if loads.value is None and stores.value is None:
        reason = kernel.metric("shared_ld_instructions").missing_reason
        return None, VerdictSentence("shared", "unknown", f"shared memory: not measured ({reason})")
    accessed = (loads.value or 0) + (stores.value or 0) + (atomics.value or 0) + (mma.value or 0)
    if accessed == 0 and not _value(kernel, "shared_wavefronts"):
        return False, VerdictSentence("shared", "ok", "no shared-memory accesses")
    excess = _value(kernel, "exact_excess_wavefronts")
    if excess is None:
        return None, _estimate(kernel)
    if excess <= 0:
        return False, VerdictSentence("shared", "ok", "no bank conflicts")
    text = _conflict_text(kernel, excess, loads.value or 0, stores.value or 0)
    return True, VerdictSentence("shared", "bad", text, _phase_rules(kernel))


def _phase_rules(kernel: KernelResult) -> tuple[str, ...]:
    """How the conflicting kinds' accesses are served, where that decides what conflicts (each rule once)."""
    if not shared_figures.conflicting_sides(kernel):
        return ()
    kinds = kind_totals(kernel.instructions)
    return tuple(dict.fromkeys(k.phase for k in kinds if k.kind.space is Space.SHARED and k.excess and k.phase))


def _conflict_text(kernel: KernelResult, excess: float, loads: float, stores: float) -> str:
    split = shared_figures.conflicting_sides(kernel)
    if split:  # the per-instruction split: each side that conflicts, in the words of its instructions
        kinds = kind_totals(kernel.instructions)  # once for every side
        return "; ".join(_side_text(kernel, side, kinds) for side in split)
    sides = _conflicting_sides(kernel, loads, stores)
    if sides == ["loads"] or sides == ["stores"]:
        side = sides[0]
        count = loads if side == "loads" else stores
        per = f" ({per_instruction(excess / count)} per {side[:-1]})" if count else ""
        n_way = _n_way(kernel, excess / count if count else 0, loads + stores)
        return f"shared {side}: {n_way}, {counted(compact_count(excess), 'excess wavefront')}{per}"
    per = f" ({per_instruction(excess / (loads + stores))} per access)" if loads + stores else ""
    detail = _ways_detail(kernel)
    return f"shared loads and stores: bank conflicts{detail}, {counted(compact_count(excess), 'excess wavefront')}{per}"


def _side_text(kernel: KernelResult, side: Side, every_kind: tuple[KindTotals, ...]) -> str:
    """ "ldmatrix loads: 4-way bank conflicts, 393 K excess wavefronts (12 per ldmatrix load)":
    each conflicting kind of the side with its own figures (the per-instruction table), or the side's
    figures where the kernel carries no instructions."""
    kinds = [k for k in every_kind if k.kind.space is Space.SHARED and k.kind.side is side and k.excess]
    if kinds:
        return "; ".join(_kind_text(figures) for figures in kinds)
    summed = [_summed_kind_text(kernel, kind) for kind, on in SHARED_KIND_SIDES.items() if on is side]
    if any(summed):  # no instructions kept, each kind's sums: its own n-way
        return "; ".join(text for text in summed if text)
    excess = _value(kernel, SHARED_KEYS[side].excess) or 0.0
    ways_of = shared_figures.n_way(kernel, side).value
    text = f"{_SIDE_KINDS[side]}: " + (f"{ways_of:.3g}-way bank conflicts" if ways_of else "bank conflicts")
    text += f", {counted(compact_count(excess), 'excess wavefront')}"
    per = shared_figures.excess_per_access(kernel, side)
    if per.value is not None:
        hardware = "" if per.exact else ", of the hardware count"
        text += f" ({per_instruction(per.value)} per {shared_figures.SIDE_WORDS[side]}{hardware})"
    return text


def _summed_kind_text(kernel: KernelResult, kind: SharedKind) -> str:
    """ "ldmatrix loads: 4-way bank conflicts, 3.15 M excess wavefronts" from the kind's sums (KIND_KEYS), where
    it conflicts; "" where it does not, or the kernel has no such sums."""
    keys = KIND_KEYS[kind]
    wavefronts, ideal = _value(kernel, keys.wavefronts), _value(kernel, keys.ideal)
    if wavefronts is None or ideal is None or wavefronts <= ideal:
        return ""
    ways_of = _value(kernel, keys.ways)
    state = f"{ways_of:.3g}-way bank conflicts" if ways_of else "bank conflicts"
    return f"{SHARED_KIND_WORDS[kind]}: {state}, {counted(compact_count(wavefronts - ideal), 'excess wavefront')}"


def _kind_text(figures: KindTotals) -> str:
    name = figures.kind.name
    text = f"{name}: " + (f"{figures.ways:.3g}-way bank conflicts" if figures.ways else "bank conflicts")
    text += f", {counted(compact_count(figures.excess), 'excess wavefront')}"
    if figures.excess_per_access is not None:
        text += f" ({per_instruction(figures.excess_per_access)} per {_singular(name)})"
    return text


def _singular(name: str) -> str:
    """ "ldmatrix loads" -> "ldmatrix load", "shared atomics (ATOMS)" -> "shared atomic"."""
    words = name.split(" (")[0]
    return words[:-1] if words.endswith("s") else words


_SIDE_KINDS = {
    Side.LD: "shared loads",
    Side.ST: "shared stores",
    Side.ATOM: "shared atomics",
    Side.MMA: "tensor-core operand reads",
}


def _n_way(kernel: KernelResult, per: float, accesses: float) -> str:
    """ "32-way bank conflicts" when every access ideally takes one wavefront (32-bit accesses),
    where n = 1 + excess per instruction exactly; wider accesses ideally take several wavefronts,
    so then the figure is the ratio of wavefronts to the conflict-free ideal."""
    ideal = _value(kernel, "shared_wavefronts_ideal")
    actual = _value(kernel, "shared_wavefronts")
    if ideal and accesses and abs(ideal / accesses - 1) < 0.02:
        if per_instruction(per).isdigit():
            return f"{round(1 + per)}-way bank conflicts"
        return f"{1 + per:.1f}-way bank conflicts (average)"
    if ideal and actual:
        return f"bank conflicts (wavefronts {actual / ideal:.1f}× the conflict-free ideal)"
    return "bank conflicts"


def _conflicting_sides(kernel: KernelResult, loads: float, stores: float) -> list[str]:
    """Which side the exact excess belongs to, where the report has no per-instruction split (a CSV):
    each side is weighed by its hardware figures (conflicts, else wavefronts, per instruction)."""
    sides = []
    for side, count, hw_key, ways_key in (
        ("loads", loads, "hw_ld_bank_conflicts", "shared_ld_ways"),
        ("stores", stores, "hw_st_bank_conflicts", "shared_st_ways"),
    ):
        if count <= 0:
            continue
        hw = _value(kernel, hw_key)
        n_ways = _value(kernel, ways_key)
        extra = hw / count if hw is not None else (n_ways - 1 if n_ways is not None else None)
        if extra is not None and extra >= SIDE_THRESHOLD:
            sides.append(side)
    if not sides:  # no side stands out: name the sides that have accesses
        sides = [s for s, c in (("loads", loads), ("stores", stores)) if c > 0]
    return sides


def _ways_detail(kernel: KernelResult) -> str:
    """The hardware's wavefronts per instruction of each side (no exact split in this report)."""
    ld, st = _value(kernel, "shared_ld_ways"), _value(kernel, "shared_st_ways")
    if ld is None or st is None:
        return ""
    return f" ({ways(ld)} / {ways(st)} wavefronts per load / store)"


EXACT_METRICS = ("memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal")  # ncu's instrumented pass
LIKELY_CONFLICT, LIKELY_CLEAN = 1.5, 1.25  # wavefronts per load, of the hardware wavefront counter


def _estimate(kernel: KernelResult) -> VerdictSentence:
    """Without the exact count: what the wavefront counter supports (wavefronts per load), how to
    get the exact figure, and the hardware conflict counter, labelled."""
    ld_ways = _value(kernel, "shared_ld_ways")
    severity: Severity
    if ld_ways is None:
        severity, guess = "unknown", "shared memory: bank conflicts not measured exactly"
    elif ld_ways >= LIKELY_CONFLICT:
        n = round(ld_ways)
        wide = " (or conflict-free 8- or 16-byte loads, which take 2 or 4)" if n <= 4 else ""
        guess = f"shared loads: about {ways(ld_ways)} wavefronts per load: likely a {n}-way bank conflict{wide}"
        severity = "bad"
    else:
        severity = "ok" if ld_ways <= LIKELY_CLEAN else "unknown"
        guess = f"shared loads: about {ways(ld_ways)} wavefronts per load: likely no bank conflict"
    parts = [f"{guess} (an estimate, not measured exactly: {_how_to_measure(kernel)})"]
    hw_ld, hw_st = _value(kernel, "hw_ld_bank_conflicts"), _value(kernel, "hw_st_bank_conflicts")
    if hw_ld is not None and hw_st is not None:
        parts.append(f"{HW_LABEL}: {compact_count(hw_ld)} load and {compact_count(hw_st)} store conflicts")
    return VerdictSentence("shared", severity, "; ".join(parts))


def _how_to_measure(kernel: KernelResult) -> str:
    reason = kernel.metric("shared_wavefronts").missing_reason or ""
    if "--fast" in reason:
        return "a --fast run: no instrumented pass; run without --fast for the exact count"
    return f"for the exact count, profile with ncu --metrics {','.join(EXACT_METRICS)}"


# --- local memory -------------------------------------------------------------------------------


UNKNOWN_CAUSE = "cause unknown: run `memlens check` or compile with -Xptxas -v"


def local_memory(kernel: KernelResult, static: Sequence[StaticKernel] = ()) -> tuple[bool | None, VerdictSentence]:
    """Whether the kernel has local-memory traffic (None: not measured) and the finding in words."""
    ld, st = _value(kernel, "local_ld_bytes"), _value(kernel, "local_st_bytes")
    known = [v for v in (ld, st) if v is not None]
    executed = [_value(kernel, LOCAL_EXECUTIONS[side]) for side in (Side.LD, Side.ST)]
    if not known and None not in executed:  # no sector counters; the per-instruction table (SourceCounters)
        loads, stores = (v or 0.0 for v in executed)
        if not loads and not stores:
            return False, VerdictSentence("local", "ok", "no local memory")
        return True, VerdictSentence("local", "bad", _local_executions_text(loads, stores, static, kernel))
    if any(v > 0 for v in known):
        return True, VerdictSentence("local", "bad", _local_text(ld or 0, st or 0, static, kernel))
    if len(known) == 2:
        return False, VerdictSentence("local", "ok", "no local memory")
    key = "local_ld_bytes" if ld is None else "local_st_bytes"
    reason = kernel.metric(key).missing_reason
    return None, VerdictSentence("local", "unknown", f"local memory: not measured ({reason})")


def _local_text(ld: float, st: float, static: Sequence[StaticKernel], kernel: KernelResult | None = None) -> str:
    """The traffic and its cause: register spill, an array indexed at run time or one too large for
    registers, from the static check's figures of the kernels, else from the kernel's SASS (spill slots at
    fixed stack offsets, or addresses computed at run time); a library's kernel is said to be one."""
    amounts = [f"{format_value(v, 'bytes')} of local {what}" for v, what in ((ld, "loads"), (st, "stores")) if v > 0]
    text = "local memory: " + " and ".join(amounts)
    cause = local_memory_cause_text(static) if static or kernel is None else sass_cause_text(kernel)
    return f"{text} ({cause})" if cause.startswith("cause unknown") else f"{text}: {cause}"


def _local_executions_text(ld: float, st: float, static: Sequence[StaticKernel], kernel: KernelResult) -> str:
    """As _local_text, where the report counts local instructions executed but no local bytes."""
    amounts = [f"{format_count(v)} local {what}" for v, what in ((ld, "load"), (st, "store")) if v > 0]
    text = f"local memory: {' and '.join(amounts)} instructions executed"
    cause = local_memory_cause_text(static) if static else sass_cause_text(kernel)
    return f"{text} ({cause})" if cause.startswith("cause unknown") else f"{text}: {cause}"


def sass_cause_text(kernel: KernelResult) -> str:
    """The cause of a kernel's local memory as its SASS shows it, with advice that fits whose kernel it is."""
    causes = causes_in_sass(kernel.instructions)
    library = kernel.library.name if kernel.library and not kernel.library.generated else None  # Inductor's: yours
    if not causes:
        cause = UNKNOWN_CAUSE if not library else "cause unknown (no per-instruction local accesses in this report)"
    else:
        cause = " and ".join(causes) + " (from the SASS: " + _sass_evidence(causes) + ")"
    if library:
        return f"{cause}; inside {library}: not yours to change"
    return cause


def _sass_evidence(causes: tuple[str, ...]) -> str:
    parts = []
    if SPILL in causes:
        parts.append("loads and stores at fixed stack offsets; fewer live values or a looser __launch_bounds__ help")
    if RUNTIME_ARRAY in causes:
        parts.append(
            "local addresses computed at run time; index the array with compile-time constants "
            "(unrolled loops) or keep it in shared memory"
        )
    return "; ".join(parts)


def local_memory_causes(path: Path, kernels: list[KernelResult]) -> dict[int, str]:
    """The cause of local memory of each kernel with local traffic, from the static check's figures
    where the run directory of `path` has a check.json (see `memlens check --into`)."""
    path = resolve_run(path)
    static = find_static(run_directory(path))
    found = {}
    with_records: dict[int, KernelResult] | None = None
    for index, kernel in enumerate(kernels):
        figures = static.for_kernel(kernel.label, kernel.kernel) if static is not None else ()
        if not local_memory(kernel, figures)[0]:
            continue
        if figures:
            found[index] = local_memory_cause_text(figures)
            continue
        if with_records is None:  # no static check: the SASS of the report's instructions tells
            with_records = _with_instructions(path, kernels)
        found[index] = sass_cause_text(with_records.get(kernel.launch_id, kernel))
    return found


def _with_instructions(path: Path, kernels: list[KernelResult]) -> dict[int, KernelResult]:
    """The kernels with their per-instruction records, by launch id (those given, where they carry them)."""
    if any(k.instructions for k in kernels):
        return {k.launch_id: k for k in kernels}
    try:
        return {k.launch_id: k for k in read_with_instructions(path).kernels}
    except MemlensError:
        return {}


def local_memory_cause_text(static: Sequence[StaticKernel]) -> str:
    """Why kernels with these static figures (none: no static check) use local memory, in words."""
    if not static:
        return UNKNOWN_CAUSE
    cause = local_memory_cause(static)
    frame = max(max(k.stack_frame_bytes, k.ptx_local_bytes) for k in static)
    if cause == "spill":
        stores = sum(k.spill_store_bytes for k in static)
        loads = sum(k.spill_load_bytes for k in static)
        registers = max(k.registers for k in static)
        return (
            f"register spill (ptxas: {stores:,} B of spill stores and {loads:,} B of spill loads"
            f" per thread at {registers} registers)"
        )
    if cause == "large_array":
        return (
            f"an array too large for registers ({frame:,} B stack frame per thread, more than"
            f" {MAX_REGISTERS} registers hold; no spills)"
        )
    if cause == "indexed_array":
        return f"an array indexed at run time ({frame:,} B stack frame per thread, no spills)"
    return (
        f"cause unknown: `memlens check` found no spills, stack frame or .local in"
        f" {', '.join(k.kernel for k in static)}: the profiled binary was compiled differently"
    )


# --- expectation --------------------------------------------------------------------------------


def describe(declared: Expect | None) -> str:
    if declared is None:
        return "no expectation declared"
    figure = declared.excess_wavefronts
    on_paper = f"; on paper {figure:,} excess wavefronts" if isinstance(figure, int) else ""
    return declared.describe() + on_paper


def _words(conflicts: bool | None, local: bool | None, unknown: bool = False) -> str:
    parts = []
    if conflicts is not None:
        parts.append("bank conflicts" if conflicts else "no bank conflicts")
    elif unknown:
        parts.append("bank conflicts unknown (no exact count)")
    if local is not None:
        parts.append("local memory" if local else "no local memory")
    elif unknown:
        parts.append("local memory unknown")
    return ", ".join(parts)


def check(declared: Expect | None, measured: Judgement, on_paper: PaperCheck | None = None) -> ExpectationCheck:
    """Each declared aspect against the measurement; a mismatch in any aspect flags the whole.
    `on_paper`, where the variant declares its exact excess wavefronts, is one more aspect: "as on
    paper", or both figures where they differ."""
    checks: tuple[AspectCheck, ...] = (
        _check("bank_conflicts", declared.bank_conflicts if declared else None, measured.bank_conflicts),
        _check("local_memory", declared.local_memory if declared else None, measured.local_memory),
    )
    if on_paper is not None:
        agrees = on_paper.as_on_paper
        paper_state: CheckState = "unchecked" if agrees is None else "match" if agrees else "mismatch"
        checks += (AspectCheck("excess_wavefronts", on_paper.paper, on_paper.measured, paper_state),)
    states = {c.state for c in checks}
    state: CheckState
    if "mismatch" in states:
        state = "mismatch"
    elif "unchecked" in states:
        state = "unchecked"
    elif "match" in states:
        state = "match"
    else:
        state = "undeclared"
    words = _words(measured.bank_conflicts, measured.local_memory, unknown=True)
    if on_paper is not None:
        words += f"; exact excess wavefronts {on_paper.words()}"
    return ExpectationCheck(describe(declared), words, checks, state)


def _check(aspect: str, expected: bool | None, measured: bool | None) -> AspectCheck:
    state: CheckState
    if expected is None:
        state = "undeclared"
    elif measured is None:
        state = "unchecked"
    else:
        state = "match" if expected == measured else "mismatch"
    return AspectCheck(aspect, expected, measured, state)  # type: ignore[arg-type]
