"""The catalogue's per-instruction figures: sums over the per-instruction table (model/instruction_table.py)
and the ratios derived from those sums, with the keys of each side in one place (SHARED_KEYS, GLOBAL_KEYS),
and the names of ncu's per-instruction metrics memlens asks for."""

from __future__ import annotations

from dataclasses import dataclass

from memlens.model.instruction_kinds import SHARED_KIND_WORDS, SharedKind, Side
from memlens.model.metric import Better, Metric, _ratio

# Figures summed over ncu's per-instruction values (the per-instruction table, profiling/model/
# instruction_table.py): the readers fill them in, one record per SASS instruction; a CSV cannot carry them.
# Each is a sum over launches; each ratio (n-way, excess per access, sectors per access) is derived from
# the sums, never summed itself.
_SHARED_SIDES = {
    Side.LD: "shared-memory loads (LDS, ldmatrix LDSM ...)",
    Side.ATOM: "shared-memory atomics (ATOMS)",
    Side.ST: "shared-memory stores (STS, stmatrix STSM, cp.async LDGSTS ...)",
    Side.MMA: "tensor-core operand reads from shared memory (wgmma: HGMMA ...)",
}
_GLOBAL_SIDES = {Side.LD: "global loads (LDG, cp.async's reads)", Side.ST: "global stores", Side.ATOM: "global atomics"}


@dataclass(frozen=True)
class SharedKeys:
    """The catalogue keys of one shared side's per-instruction figures (the only place they are spelt)."""

    excess: str
    wavefronts: str
    ideal: str
    executions: str
    ways: str
    per_access: str
    hw_instructions: str | None  # the hardware instruction counter of the side (loads and stores only)
    hw_ways: str | None


@dataclass(frozen=True)
class GlobalKeys:
    """The catalogue keys of one global side's per-instruction figures."""

    sectors: str
    ideal: str
    executions: str
    per_access: str
    ideal_per_access: str
    coalescing: str
    hw_per_request: str | None  # the hardware counters' sectors per request (loads and stores only)
    hw_requests: str | None


_HW_NAMES = {Side.LD: "load", Side.ST: "store"}
SHARED_KEYS = {
    side: SharedKeys(
        f"exact_excess_wavefronts_{side}",
        f"exact_shared_{side}_wavefronts",
        f"exact_shared_{side}_ideal",
        f"shared_{side}_executions",
        f"exact_shared_{side}_ways",
        f"excess_wavefronts_per_shared_{side}",
        f"shared_{side}_instructions" if side in _HW_NAMES else None,
        f"shared_{side}_ways" if side in _HW_NAMES else None,
    )
    for side in _SHARED_SIDES
}
GLOBAL_KEYS = {
    side: GlobalKeys(
        f"exact_global_{side}_sectors",
        f"exact_global_{side}_sectors_ideal",
        f"global_{side}_executions",
        f"exact_global_{side}_sectors_per_access",
        f"exact_global_{side}_ideal_sectors_per_access",
        f"exact_global_{side}_coalescing",
        f"global_{_HW_NAMES[side]}_sectors_per_request" if side in _HW_NAMES else None,
        f"global_{_HW_NAMES[side]}_requests" if side in _HW_NAMES else None,
    )
    for side in _GLOBAL_SIDES
}


@dataclass(frozen=True)
class KindKeys:
    """The catalogue keys of one kind of shared access's figures (instruction_kinds.SharedKind): its wavefronts,
    their conflict-free ideal and their ratio, its n-way."""

    wavefronts: str
    ideal: str
    ways: str


KIND_KEYS = {
    kind: KindKeys(f"exact_{kind}_wavefronts", f"exact_{kind}_ideal", f"exact_{kind}_ways") for kind in SharedKind
}

REMOTE_SHARED_EXECUTIONS = "remote_shared_executions"
LOCAL_EXECUTIONS = {Side.LD: "local_ld_executions", Side.ST: "local_st_executions"}


def _summed(key: str, unit: str, meaning: str, value: str, better: Better = None) -> Metric:
    """A sum over the per-instruction table of one of ncu's per-instruction values."""
    formula = f"sum over those instructions of {value}"
    return Metric(key, unit, meaning, better=better, instrumented=True, deterministic=True, formula=formula)


def _ratio_of(key: str, unit: str, meaning: str, over: tuple[str, str], better: Better = None) -> Metric:
    """A ratio of two sums, derived (never summed over launches itself): as exact as they are."""
    num, den = over
    return Metric(
        key,
        unit,
        meaning,
        better=better,
        instrumented=True,
        deterministic=True,
        formula=f"{num} / {den}",
        derive=lambda v: _ratio(v.get(num), v.get(den)),
    )


def _shared_side_metrics(side: Side, what: str) -> list[Metric]:
    keys = SHARED_KEYS[side]
    excess, waves, ideal, runs = keys.excess, keys.wavefronts, keys.ideal, keys.executions
    return [
        _summed(
            excess,
            "wavefront",
            f"exact excess shared-memory wavefronts of {what}",
            "shared_wavefronts - shared_wavefronts_ideal",
            "lower",
        ),
        _summed(waves, "wavefront", f"shared-memory wavefronts of {what}", "shared_wavefronts"),
        _summed(ideal, "wavefront", f"conflict-free ideal wavefronts of {what}", "shared_wavefronts_ideal"),
        _summed(runs, "inst", f"warp-level executions of {what}", "inst_executed"),
        _ratio_of(
            keys.ways,
            "wavefront/ideal",
            f"wavefronts of {what} over their conflict-free ideal (n-way; 1 = no conflict, whatever the width)",
            (waves, ideal),
            "lower",
        ),
        _ratio_of(
            keys.per_access,
            "wavefront/inst",
            f"exact excess wavefronts of {what} per warp-level execution",
            (excess, runs),
            "lower",
        ),
    ]


def _kind_metrics(kind: SharedKind) -> list[Metric]:
    keys, what = KIND_KEYS[kind], SHARED_KIND_WORDS[kind]
    return [
        _summed(keys.wavefronts, "wavefront", f"shared-memory wavefronts of {what}", "shared_wavefronts"),
        _summed(keys.ideal, "wavefront", f"conflict-free ideal wavefronts of {what}", "shared_wavefronts_ideal"),
        Metric(
            keys.ways,
            "wavefront/ideal",
            f"wavefronts of {what} over their own conflict-free ideal (n-way of that kind alone; 1 = no conflict)",
            better="lower",
            instrumented=True,
            deterministic=True,
            formula=f"{keys.wavefronts} / {keys.ideal}",
            derive=lambda v: _ratio(v.get(keys.wavefronts), v.get(keys.ideal)),
            na_reason=lambda v: f"no {what}" if v.get(keys.ideal) == 0 and not v.get(keys.wavefronts) else None,
        ),
    ]


def _global_side_metrics(side: Side, what: str) -> list[Metric]:
    keys = GLOBAL_KEYS[side]
    sectors, ideal, runs = keys.sectors, keys.ideal, keys.executions
    return [
        _summed(sectors, "sector", f"L2 sectors of {what}", "memory_l2_theoretical_sectors_global", "lower"),
        _summed(
            ideal,
            "sector",
            f"the sectors the same {what} would need, perfectly coalesced",
            "memory_l2_theoretical_sectors_global_ideal",
        ),
        _summed(runs, "inst", f"warp-level executions of {what}", "inst_executed"),
        _ratio_of(keys.per_access, "sector/inst", f"sectors per warp-level access of {what}", (sectors, runs), "lower"),
        _ratio_of(
            keys.ideal_per_access, "sector/inst", f"the ideal sectors per warp-level access of {what}", (ideal, runs)
        ),
        _ratio_of(
            keys.coalescing,
            "sector/ideal",
            f"sectors of {what} over their perfectly coalesced ideal (1 = coalesced)",
            (sectors, ideal),
            "lower",
        ),
    ]


_PER_INSTRUCTION = [
    *(m for side, what in _SHARED_SIDES.items() for m in _shared_side_metrics(side, what)),
    *(m for kind in SharedKind for m in _kind_metrics(kind)),
    *(m for side, what in _GLOBAL_SIDES.items() for m in _global_side_metrics(side, what)),
    _summed(
        REMOTE_SHARED_EXECUTIONS,
        "inst",
        "warp-level loads and stores of a cluster partner's shared memory"
        " (distributed shared memory; ncu records no bank figures for them)",
        "inst_executed",
    ),
    *(
        _summed(
            key,
            "inst",
            f"warp-level local-memory {_HW_NAMES[side]} executions, per instruction",
            "inst_executed",
            "lower",
        )
        for side, key in LOCAL_EXECUTIONS.items()
    ),
]
PER_PC_EXECUTIONS = "inst_executed"  # the source-level metric of per-instruction warp-level executions
# What ncu records of each memory instruction (SourceCounters): spaces and access kinds (bit sets), width, and
# global L2 sectors with their ideal; model/instruction_table.py places every instruction by these.
MEMORY_TYPE, MEMORY_ACCESS_TYPE, MEMORY_ACCESS_SIZE = "memory_type", "memory_access_type", "memory_access_size_type"
GLOBAL_SECTORS, GLOBAL_REQUESTS = "memory_l2_theoretical_sectors_global", "memory_l1_tag_requests_global"
GLOBAL_SECTORS_IDEAL = "memory_l2_theoretical_sectors_global_ideal"
PER_PC_METRICS = (
    PER_PC_EXECUTIONS,
    MEMORY_TYPE,
    MEMORY_ACCESS_TYPE,
    MEMORY_ACCESS_SIZE,
    GLOBAL_SECTORS,
    GLOBAL_SECTORS_IDEAL,
    GLOBAL_REQUESTS,
)
