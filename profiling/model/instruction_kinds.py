"""What each SASS instruction does to memory, in the words of what a user wrote: its kind (shared loads,
ldmatrix, stmatrix, cp.async, shared atomics, tensor-core operand reads, local loads and stores, TMA
transfers), its side (load, store, tensor-core read), its access width, and how the hardware serves
such an access where that decides what conflicts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

_PREDICATE = re.compile(r"^\s*@!?U?P[T0-9]+\s+")
# `@!PT`: a predicate that is never true (ptxas puts `@!PT LDS RZ, [RZ]` beside a cp.async): the
# instruction issues but touches nothing, so it is no access of any kind
NEVER = re.compile(r"^\s*@!U?PT\s+")


class Space(str, Enum):
    """Where an instruction's accesses go. A str: it compares, serialises and reads back as its value."""

    SHARED = "shared"
    LOCAL = "local"
    GLOBAL = "global"
    REMOTE_SHARED = "remote_shared"  # a cluster partner's shared memory (distributed shared memory)
    TMA = "tma"  # the copy engine, whose shared-memory accesses ncu's wavefront metrics do not cover
    NONE = "none"

    def __str__(self) -> str:  # in f-strings and keys, its value (Python 3.11 would print "Space.SHARED")
        return str(self.value)


class Side(str, Enum):
    """How an instruction accesses its space."""

    LD = "ld"
    ST = "st"
    ATOM = "atom"
    MMA = "mma"  # tensor-core operand reads from shared memory
    OTHER = "other"
    NEVER = "never"  # predicated on `!PT`: it issues and touches nothing

    def __str__(self) -> str:
        return str(self.value)


class SharedKind(str, Enum):
    """The kinds of shared-memory access that each have their own n-way (wavefronts over their own ideal): the
    side is what ncu records (load, store, atomic, tensor-core read); the opcode only names the kind within it
    (ldmatrix, stmatrix, cp.async), in the words of what a user wrote."""

    LOADS = "shared_loads"
    LDMATRIX = "ldmatrix"
    STORES = "shared_stores"
    STMATRIX = "stmatrix"
    CP_ASYNC = "cp_async"
    ATOMICS = "shared_atomics"
    TENSOR_CORE = "tensor_core_reads"

    def __str__(self) -> str:
        return str(self.value)


SHARED_KIND_WORDS = {
    SharedKind.LOADS: "shared loads",
    SharedKind.LDMATRIX: "ldmatrix loads",
    SharedKind.STORES: "shared stores",
    SharedKind.STMATRIX: "stmatrix stores",
    SharedKind.CP_ASYNC: "cp.async stores",
    SharedKind.ATOMICS: "shared atomics",
    SharedKind.TENSOR_CORE: "tensor-core operand reads",
}


@dataclass(frozen=True)
class Kind:
    """What a SASS opcode does to memory, in the words of what a user wrote."""

    name: str  # "ldmatrix loads", "cp.async stores", "tensor-core operand reads", "TMA transfers", ...
    space: Space
    side: Side

    def __post_init__(self) -> None:  # accept the values, as code of earlier versions and JSON give them
        object.__setattr__(self, "space", Space(self.space))
        object.__setattr__(self, "side", Side(self.side))


# Base opcode (before the first dot) -> kind. Shared loads and stores are what `shared_ld_executions` and
# `shared_st_executions` count: a cp.async (LDGSTS) writes shared memory, so it is a store.
KINDS = {
    "LDS": Kind("shared loads", Space.SHARED, Side.LD),
    "LDSM": Kind("ldmatrix loads", Space.SHARED, Side.LD),
    "STS": Kind("shared stores", Space.SHARED, Side.ST),
    "STSM": Kind("stmatrix stores", Space.SHARED, Side.ST),
    "LDGSTS": Kind("cp.async stores", Space.SHARED, Side.ST),
    "ATOMS": Kind("shared atomics", Space.SHARED, Side.ATOM),
    "HGMMA": Kind("tensor-core operand reads", Space.SHARED, Side.MMA),
    "QGMMA": Kind("tensor-core operand reads", Space.SHARED, Side.MMA),
    "IGMMA": Kind("tensor-core operand reads", Space.SHARED, Side.MMA),
    "BGMMA": Kind("tensor-core operand reads", Space.SHARED, Side.MMA),
    "LDL": Kind("local loads", Space.LOCAL, Side.LD),
    "STL": Kind("local stores", Space.LOCAL, Side.ST),
    **{
        op: Kind("TMA transfers", Space.TMA, Side.OTHER)
        for op in ("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UBLKCP", "UBLKRED", "UBLKPF")
    },
}
# Generic loads and stores reach shared memory through a generic address: known only where ncu
# counts shared wavefronts for them.
GENERIC = {
    "LD": Kind("shared loads (generic LD)", Space.SHARED, Side.LD),
    "ST": Kind("shared stores (generic ST)", Space.SHARED, Side.ST),
    "ATOM": Kind("shared atomics (generic ATOM)", Space.SHARED, Side.ATOM),
}
OTHER_SHARED = Kind("other shared-memory accesses", Space.SHARED, Side.OTHER)
MATRIX_OPCODES = ("LDSM", "STSM")  # one 8x8 matrix of 16-byte rows a phase


SHARED_KIND_SIDES = {
    SharedKind.LOADS: Side.LD,
    SharedKind.LDMATRIX: Side.LD,
    SharedKind.STORES: Side.ST,
    SharedKind.STMATRIX: Side.ST,
    SharedKind.CP_ASYNC: Side.ST,
    SharedKind.ATOMICS: Side.ATOM,
    SharedKind.TENSOR_CORE: Side.MMA,
}
_NAMED_SHARED = {
    "LDSM": (SharedKind.LDMATRIX, Side.LD),
    "STSM": (SharedKind.STMATRIX, Side.ST),
    "LDGSTS": (SharedKind.CP_ASYNC, Side.ST),
}
_SIDE_SHARED = {
    Side.LD: SharedKind.LOADS,
    Side.ST: SharedKind.STORES,
    Side.ATOM: SharedKind.ATOMICS,
    Side.MMA: SharedKind.TENSOR_CORE,
}


def shared_kind(opcode: str, side: Side) -> SharedKind | None:
    """The kind of a shared-memory access on `side` (what ncu recorded): ldmatrix, stmatrix or cp.async where
    the opcode names one on that side, else the side's plain kind; None for a side of no n-way."""
    named = _NAMED_SHARED.get(opcode.partition(".")[0])
    if named is not None and named[1] == side:
        return named[0]
    return _SIDE_SHARED.get(side)


class Classified(NamedTuple):
    """What a SASS instruction's text says by its opcode alone (where ncu records nothing more)."""

    opcode: str  # with its modifiers
    space: Space | None  # None: neither a shared, local nor TMA access by its opcode
    side: Side  # NEVER for one that never executes (predicated on `!PT`)
    width_bits: int


def classify(sass: str) -> Classified:
    """The opcode, space, side and width in bits of a SASS instruction's text."""
    opcode = _PREDICATE.sub("", sass).split(" ", 1)[0].strip()
    base, _, modifiers = opcode.partition(".")
    if NEVER.match(sass):
        return Classified(opcode, None, Side.NEVER, 32)
    kind = KINDS.get(base)
    width = 128 if base in MATRIX_OPCODES else _width(modifiers.split(".") if modifiers else [])
    if kind is None:
        return Classified(opcode, None, Side.OTHER, width)
    return Classified(opcode, kind.space, kind.side, width)


def kind_of(opcode: str, space: Space | None) -> Kind:
    """The kind of an instruction: by its opcode, or, for one that ncu found touching shared memory
    without a shared opcode (a generic LD or ST), by the generic form."""
    base = opcode.partition(".")[0]
    kind = KINDS.get(base)
    if kind is not None and kind.space == space:
        return kind
    if space is Space.SHARED:
        return GENERIC.get(base, OTHER_SHARED)
    return kind or Kind("other", space or Space.NONE, Side.OTHER)


def phase_rule(opcode: str, width_bits: int) -> str | None:
    """How the hardware serves such an access, where that decides what conflicts (8- and 16-byte
    accesses, ldmatrix, stmatrix), with the rule a conflict-free layout must meet."""
    base = opcode.partition(".")[0]
    if base in MATRIX_OPCODES:
        name = "ldmatrix" if base == "LDSM" else "stmatrix"
        return (
            f"{name} is served one 8x8 matrix at a time: the 8 row addresses of each matrix (lanes 0-7, 8-15, "
            "16-23, 24-31) must fall in 8 different 16-byte bank groups ((address / 16) mod 8)"
        )
    if width_bits == 128:
        return (
            "16-byte accesses are served a quarter-warp (8 lanes, 128 bytes) at a time: each 8 consecutive lanes "
            "must fall in 8 different 16-byte bank groups ((address / 16) mod 8)"
        )
    if width_bits == 64:
        return (
            "8-byte accesses are served a half-warp (16 lanes, 128 bytes) at a time: each 16 consecutive lanes "
            "must fall in 16 different 8-byte bank pairs ((address / 8) mod 16)"
        )
    return None


def _width(modifiers: Sequence[str]) -> int:
    for modifier in modifiers:
        digits = re.fullmatch(r"[USF]?(8|16|32|64|128)", modifier)
        if digits:
            return int(digits.group(1))
    return 32
