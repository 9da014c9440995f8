"""What each SASS instruction does to memory, in the words of what a user wrote: its kind (shared loads,
ldmatrix, stmatrix, cp.async, shared atomics, tensor-core operand reads, local loads and stores, TMA
transfers), its side (load, store, tensor-core read), its access width, and how the hardware serves
such an access where that decides what conflicts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_PREDICATE = re.compile(r"^\s*@!?U?P[T0-9]+\s+")
# `@!PT`: a predicate that is never true (ptxas puts `@!PT LDS RZ, [RZ]` beside a cp.async): the
# instruction issues but touches nothing, so it is no access of any kind
NEVER = re.compile(r"^\s*@!U?PT\s+")
@dataclass(frozen=True)
class Kind:
    """What a SASS opcode does to memory, in the words of what a user wrote."""

    name: str  # "ldmatrix loads", "cp.async stores", "tensor-core operand reads", "TMA transfers", ...
    space: str  # "shared", "local" or "tma" (the copy engine, which ncu's wavefront metrics do not cover)
    side: str  # "ld", "st", "atom", "mma" (tensor-core operand reads) or "other"


# Base opcode (before the first dot) -> kind. Shared loads and stores are what `shared_ld_executions` and
# `shared_st_executions` count: a cp.async (LDGSTS) writes shared memory, so it is a store.
KINDS = {
    "LDS": Kind("shared loads", "shared", "ld"),
    "LDSM": Kind("ldmatrix loads", "shared", "ld"),
    "STS": Kind("shared stores", "shared", "st"),
    "STSM": Kind("stmatrix stores", "shared", "st"),
    "LDGSTS": Kind("cp.async stores", "shared", "st"),
    "ATOMS": Kind("shared atomics", "shared", "atom"),
    "HGMMA": Kind("tensor-core operand reads", "shared", "mma"),
    "QGMMA": Kind("tensor-core operand reads", "shared", "mma"),
    "IGMMA": Kind("tensor-core operand reads", "shared", "mma"),
    "BGMMA": Kind("tensor-core operand reads", "shared", "mma"),
    "LDL": Kind("local loads", "local", "ld"),
    "STL": Kind("local stores", "local", "st"),
    **{op: Kind("TMA transfers", "tma", "other")
       for op in ("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UBLKCP", "UBLKRED", "UBLKPF")},
}  # fmt: skip
# Generic loads and stores reach shared memory through a generic address: known only where ncu
# counts shared wavefronts for them.
GENERIC = {
    "LD": Kind("shared loads (generic LD)", "shared", "ld"),
    "ST": Kind("shared stores (generic ST)", "shared", "st"),
    "ATOM": Kind("shared atomics (generic ATOM)", "shared", "atom"),
}
OTHER_SHARED = Kind("other shared-memory accesses", "shared", "other")
MATRIX_OPCODES = ("LDSM", "STSM")  # one 8x8 matrix of 16-byte rows a phase


def classify(sass: str) -> tuple[str, str | None, str, int]:
    """(opcode, space, side, width in bits) of a SASS instruction's text; space None for an
    instruction that is neither a shared, local nor TMA access by its opcode, side "never" for one
    that never executes (predicated on `!PT`)."""
    opcode = _PREDICATE.sub("", sass).split(" ", 1)[0].strip()
    base, _, modifiers = opcode.partition(".")
    if NEVER.match(sass):
        return opcode, None, "never", 32
    kind = KINDS.get(base)
    width = 128 if base in MATRIX_OPCODES else _width(modifiers.split(".") if modifiers else [])
    if kind is None:
        return opcode, None, "other", width
    return opcode, kind.space, kind.side, width


def kind_of(opcode: str, space: str | None) -> Kind:
    """The kind of an instruction: by its opcode, or, for one that ncu found touching shared memory
    without a shared opcode (a generic LD or ST), by the generic form."""
    base = opcode.partition(".")[0]
    kind = KINDS.get(base)
    if kind is not None and kind.space == space:
        return kind
    if space == "shared":
        return GENERIC.get(base, OTHER_SHARED)
    return kind or Kind("other", space or "none", "other")


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
