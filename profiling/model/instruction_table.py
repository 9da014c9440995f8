"""The per-instruction table and its one aggregation: every figure memlens prints about shared, local,
remote-shared and global memory (per kernel, per line, per kind) is a sum over these records, and a ratio of
sums, never a sum or mean of ratios.

A record is one SASS instruction of one launch with what ncu records for it (SourceCounters' per-instruction
values): its warp-level executions, the memory spaces it touched and how (`memory_type`,
`memory_access_type`: bit sets), its width, its shared wavefronts and their conflict-free ideal, its L2
sectors and their ideal. An instruction is placed by those, not by its opcode: the opcode only names a kind
in the words a user wrote (ldmatrix, stmatrix, cp.async, tensor-core operand reads, TMA). A report without
them (memlens before 0.2, a plain report without SourceCounters) is placed by opcode, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from memlens.model.catalogue import GLOBAL_KEYS, KIND_KEYS, LOCAL_EXECUTIONS, REMOTE_SHARED_EXECUTIONS, SHARED_KEYS
from memlens.model.instruction_kinds import Kind, SharedKind, Side, Space, kind_of, phase_rule, shared_kind

# ncu's memory_type bits and memory_access_type bits, as its per-instruction values record them
# (tests/fixtures/*/kinds: LDG 4, LDL/STL 8, LDS 16, LDGSTS 20 = global read into shared, a generic
# load of a cluster partner's shared memory 20 with no wavefronts; load 2, store 4, atomic 8, LDGSTS 6).
GLOBAL, LOCAL, SHARED = 4, 8, 16
LOAD, STORE, ATOMIC = 2, 4, 8

# ncu's memory_access_size_type -> bits a thread accesses. ncu's documentation says "in bits", and so it is
# for 32-, 64- and 128-bit accesses; an 8- or 16-bit one is recorded as another value. Seen in every recording
# under tests/fixtures (H100 and H200, ncu 2025.3.1), against the width in the SASS opcode:
#   value   2: LDS.U8, STS.U8 (memory_kinds' shared_1byte_16way)         -> 8 bits
#   value   8: LDG.E.U16 (fp16_sourcecounters' memlens_count_wrong)     -> 16 bits, not 8
#   value  32: LDS, STS, LDG.E, LDL, STL, ATOMS.POPC.INC.32, ATOMG, REDG -> 32 bits
#   value  64: LDS.64, STS.64, STG.E.64, LDL.64, STL.64, LDL.LU.64      -> 64 bits
#   value 128: LDS.128, STS.128, LDSM, STSM, LDGSTS.128, LDG/STG.E.128, STL.128 -> 128 bits
#   value   0: instructions that never ran (memory_type 0 too)
# A value not seen here (4, 16: perhaps the signed S8 and S16) is not guessed: the opcode's width stands.
ACCESS_SIZE_BITS = {2: 8, 8: 16, 32: 32, 64: 64, 128: 128}


def access_width_bits(size: int | None, opcode_width: int) -> int:
    """The bits a thread accesses: ncu's memory_access_size_type decoded (ACCESS_SIZE_BITS), else, where ncu
    recorded none or a value not seen, the width of the opcode (`.U16`, `.64`, `.128`, ...)."""
    return ACCESS_SIZE_BITS.get(size, opcode_width) if size is not None else opcode_width


SIDES = (Side.LD, Side.ST, Side.ATOM, Side.MMA)  # shared loads, stores, atomics, tensor-core operand reads
_BY_WIDTH = ("shared loads", "shared stores")  # kinds told apart by width: 8- and 16-byte accesses conflict apart
SIDE_WORDS = {Side.LD: "load", Side.ST: "store", Side.ATOM: "atomic", Side.MMA: "tensor-core operand read"}
GLOBAL_SIDES = (Side.LD, Side.ST, Side.ATOM)  # global loads, stores, atomics and reductions
REMOTE = Kind("distributed shared memory accesses", Space.REMOTE_SHARED, Side.OTHER)
NO_REMOTE_BANKS = "ncu records no bank figures for remote shared memory"


class Placement(str, Enum):
    """How an instruction ncu locates in inlined library code is put on a line of the user's code: by the
    binary's inline chain (the caller's line, exact), or on the nearest line of the kernel's own code in
    address order, for want of that chain (the reason is the rest of the value)."""

    CALLER = "inline chain"
    NO_NVDISASM = "nearest line: no nvdisasm"
    NO_BINARY = "nearest line: no binary"
    NO_CHAIN = "nearest line: no inline chain"


@dataclass(frozen=True)
class InstructionRecord:
    """One row of the table: a SASS instruction of one launch that touches memory, with what ncu records."""

    pc: int  # the instruction's address, as the report correlates it
    sass: str  # the instruction as disassembled, e.g. "LDS.128 R12, [R2]"
    opcode: str  # with its modifiers, e.g. "LDS.128", "STL"
    space: Space
    side: Side
    width_bits: int  # bits a thread accesses (ncu's access size, else the opcode's .64, .128, .U8 ...)
    file: str | None = None  # as the report names it; None without line info
    line: int | None = None
    executions: float | None = None  # warp-level executions (inst_executed), None where not collected
    wavefronts: float | None = None  # shared memory only
    ideal: float | None = None
    memory_type: int | None = None  # ncu's memory_type bits (GLOBAL, LOCAL, SHARED); None: not recorded
    access_type: int | None = None  # ncu's memory_access_type bits (LOAD, STORE, ATOMIC)
    global_sectors: float | None = None  # L2 theoretical sectors of its global accesses
    global_sectors_ideal: float | None = None
    # the location ncu records where it lies in an inlined library function (a CUDA header, Triton's
    # language library): `file:line` of that function, while `file` and `line` name the user's code
    inlined_from: str | None = None
    # how `file` and `line` were found for an inlined instruction; None where not inlined, or in a
    # results.json written before the binary's inline chains were read (each on the nearest line then)
    placed_by: Placement | None = None
    # its offset in bytes from its function's first instruction (the PC less ncu's `launch__function_pcs`), as
    # banks.json names instructions; None in a results.json written before memlens read it
    pc_offset: int | None = None

    def __post_init__(self) -> None:  # results.json and older code give the values
        object.__setattr__(self, "space", Space(self.space))
        object.__setattr__(self, "side", Side(self.side))
        if self.placed_by is not None:
            object.__setattr__(self, "placed_by", Placement(self.placed_by))

    @property
    def kind(self) -> Kind:
        kind = record_kind(self.opcode, self.space, self.side)
        if kind.name in _BY_WIDTH and self.width_bits != 32:  # a width is served in phases of its own
            return Kind(f"{self.width_bits // 8}-byte {kind.name}", kind.space, kind.side)
        return kind

    @property
    def global_side(self) -> Side | None:
        """The side of its global accesses, where it made any (a cp.async's global read is a load)."""
        return None if self.global_sectors is None else access_side(self.access_type, self.opcode)

    @property
    def excess(self) -> float | None:
        if self.wavefronts is None or self.ideal is None:
            return None
        return max(self.wavefronts - self.ideal, 0.0)

    @property
    def ways(self) -> float | None:
        """Wavefronts over the conflict-free ideal of this very access (its width included): 1.0 is
        conflict-free, 32.0 a 32-way conflict; a 16-byte load at 4 wavefronts a warp reads 1.0."""
        if self.wavefronts is None or not self.ideal:
            return None
        return self.wavefronts / self.ideal


def shared_side(opcode: str, memory_type: int | None, access_type: int | None, fallback: Side) -> Side:
    """The side of a shared-memory access: an atomic (ncu's access bit), a tensor-core operand read (a
    *GMMA opcode reads its operands from shared memory), a store (the access writes shared memory: a
    store, or a copy into it such as cp.async), else a load; `fallback` where ncu recorded no access."""
    if opcode.partition(".")[0].endswith("GMMA"):
        return Side.MMA
    if access_type is None or memory_type is None:
        return fallback
    if access_type & ATOMIC:
        return Side.ATOM
    if access_type & STORE:
        return Side.ST
    return Side.LD


def access_side(access_type: int | None, opcode: str) -> Side | None:
    """ld, st or atom (atomics and reductions) of a global or local access, by ncu's access bits (a load
    first, for a cp.async's global read); a reduction (RED) is recorded with no access bit: it is named by
    its opcode family as an atomic."""
    if access_type is None or access_type == 0:
        return Side.ATOM if opcode.partition(".")[0].startswith("RED") else None
    if access_type & ATOMIC:
        return Side.ATOM
    if access_type & LOAD:
        return Side.LD
    if access_type & STORE:
        return Side.ST
    return None


@dataclass(frozen=True)
class SideFigures:
    """Sums over the records of one side: executions (None where not collected), wavefronts and ideal
    (shared), or sectors and their ideal (global)."""

    executions: float | None = None
    wavefronts: float = 0.0
    ideal: float = 0.0

    @property
    def excess(self) -> float:
        return max(self.wavefronts - self.ideal, 0.0)

    @property
    def ways(self) -> float | None:
        return self.wavefronts / self.ideal if self.ideal else None


def _add(totals: SideFigures, executions: float | None, amount: float, ideal: float) -> SideFigures:
    return SideFigures(
        (totals.executions or 0.0) + (executions or 0.0), totals.wavefronts + amount, totals.ideal + ideal
    )


def kernel_totals(records: Iterable[InstructionRecord], with_executions: bool) -> dict[str, float | None]:
    """A launch's per-instruction figures, every key of catalogue.PER_INSTRUCTION_METRICS: per shared
    side (ld, st, atom, mma) the excess wavefronts, wavefronts, ideal and executions; per global side the
    sectors, their ideal and executions; per kind of shared access its wavefronts and ideal
    (shared_kind_totals); remote shared-memory executions; local executions."""
    records = tuple(records)
    shared = dict.fromkeys(SIDES, SideFigures(0.0))
    global_ = dict.fromkeys(GLOBAL_SIDES, SideFigures(0.0))
    remote = 0.0
    local = {Side.LD: 0.0, Side.ST: 0.0}
    has_global = False
    for record in records:
        space = record.space
        executions = record.executions
        if space is Space.SHARED and record.side in shared:
            side = record.side
            shared[side] = _add(shared[side], executions, record.wavefronts or 0.0, record.ideal or 0.0)
        elif space is Space.REMOTE_SHARED:
            remote += executions or 0.0
        elif space is Space.LOCAL and record.side in local:
            local[record.side] += executions or 0.0
        if record.global_sectors is not None:
            on_side = record.global_side
            if on_side is not None:
                has_global = True
                global_[on_side] = _add(
                    global_[on_side], executions, record.global_sectors, record.global_sectors_ideal or 0.0
                )
    out: dict[str, float | None] = {}
    for side, total in shared.items():
        keys = SHARED_KEYS[side]
        out[keys.excess], out[keys.wavefronts], out[keys.ideal] = total.excess, total.wavefronts, total.ideal
        out[keys.executions] = total.executions if with_executions else None
    for side, total in global_.items():
        found = GLOBAL_KEYS[side]
        out[found.sectors] = total.wavefronts if has_global else None
        out[found.ideal] = total.ideal if has_global else None
        out[found.executions] = total.executions if has_global and with_executions else None
    out.update(shared_kind_totals(records))
    out[REMOTE_SHARED_EXECUTIONS] = remote if with_executions else None
    for side, key in LOCAL_EXECUTIONS.items():
        out[key] = local[side] if with_executions else None
    return out


def shared_kind_totals(records: Iterable[InstructionRecord]) -> dict[str, float]:
    """Per kind of shared access (SharedKind: shared loads, ldmatrix, shared stores, stmatrix, cp.async,
    shared atomics, tensor-core operand reads) its wavefronts and their ideal, summed over the records (0 for
    a kind the records have none of): each kind's n-way is the ratio of its own sums."""
    sums = {kind: [0.0, 0.0] for kind in SharedKind}
    for record in records:
        kind = shared_kind(record.opcode, record.side) if record.space is Space.SHARED else None
        if kind is not None:
            sums[kind][0] += record.wavefronts or 0.0
            sums[kind][1] += record.ideal or 0.0
    out: dict[str, float] = {}
    for kind, (wavefronts, ideal) in sums.items():
        out[KIND_KEYS[kind].wavefronts], out[KIND_KEYS[kind].ideal] = wavefronts, ideal
    return out


# --- kinds --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KindTotals:
    """One kind of instruction ("shared atomics", "ldmatrix loads", "global loads", ...) summed over the
    records given (a line's, or a kernel's)."""

    kind: Kind
    opcodes: tuple[str, ...]
    executions: float | None  # None where one record's executions are not known
    wavefronts: float | None  # shared kinds only
    ideal: float | None
    sectors: float | None  # global kinds only (L2 theoretical sectors)
    sectors_ideal: float | None
    phase: str | None = None  # how such an access is served, where that decides what conflicts (phase_rule)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.name,
            "space": self.kind.space,
            "side": self.kind.side,
            "opcodes": list(self.opcodes),
            "executions": self.executions,
            "wavefronts": self.wavefronts,
            "ideal": self.ideal,
            "excess_wavefronts": self.excess if self.wavefronts is not None else None,
            "n_way": self.ways,
            "excess_per_access": self.excess_per_access,
            "phase": self.phase,
            "global_sectors": self.sectors,
            "global_sectors_ideal": self.sectors_ideal,
            "sectors_per_access": self.sectors_per_access,
            "ideal_sectors_per_access": self.ideal_sectors_per_access,
        }

    @property
    def excess(self) -> float:
        return max((self.wavefronts or 0.0) - (self.ideal or 0.0), 0.0)

    @property
    def ways(self) -> float | None:
        return self.wavefronts / self.ideal if self.wavefronts is not None and self.ideal else None

    @property
    def excess_per_access(self) -> float | None:
        return self.excess / self.executions if self.executions and self.wavefronts is not None else None

    @property
    def sectors_per_access(self) -> float | None:
        return self.sectors / self.executions if self.sectors is not None and self.executions else None

    @property
    def ideal_sectors_per_access(self) -> float | None:
        return self.sectors_ideal / self.executions if self.sectors_ideal is not None and self.executions else None

    @property
    def sectors_over_ideal(self) -> float | None:
        return self.sectors / self.sectors_ideal if self.sectors is not None and self.sectors_ideal else None


def with_kind_totals(raw: dict[str, float | None], records: tuple[InstructionRecord, ...]) -> dict[str, float | None]:
    """`raw` with each kind of shared access's wavefronts and ideal (KIND_KEYS), summed from the kernel's
    instructions where a results.json written before memlens kept them has the instructions and the exact
    pass's figures but not these."""
    if raw.get(SHARED_KEYS[Side.LD].wavefronts) is None or not records:
        return raw
    if any(raw.get(keys.wavefronts) is not None for keys in KIND_KEYS.values()):
        return raw
    return {**raw, **shared_kind_totals(records)}


def kind_totals(records: Sequence[InstructionRecord]) -> tuple[KindTotals, ...]:
    """The records by kind, in address order of each kind's first instruction; instructions that never
    ran and touched nothing (ptxas's `@!PT LDS RZ, [RZ]` beside a cp.async) are left out. A cp.async is
    two kinds at once: a shared store (its wavefronts) and a global load (its sectors)."""
    groups: dict[str, list[InstructionRecord]] = {}
    for record in sorted(records, key=lambda r: r.pc):
        if not record.executions and not record.wavefronts and record.space != Space.TMA:
            continue
        groups.setdefault(record.kind.name, []).append(record)
        if record.space == Space.SHARED and record.global_sectors is not None:
            groups.setdefault(f"{_family(record.kind.name)} global reads", []).append(record)
    return tuple(_kind(name, chosen) for name, chosen in groups.items())


def _family(name: str) -> str:
    """ "cp.async stores" -> "cp.async": the instruction family of a kind that copies global into shared memory."""
    return name.rsplit(" ", 1)[0] if " " in name else name


def _kind(name: str, records: list[InstructionRecord]) -> KindTotals:
    first = records[0]
    kind = first.kind
    global_part = name.endswith(" global reads")
    if global_part:
        kind = Kind(name, Space.GLOBAL, Side.LD)
    shared = kind.space == Space.SHARED
    with_sectors = [r for r in records if r.global_sectors is not None]
    on_global = kind.space == Space.GLOBAL or global_part
    executions = [r.executions for r in records]
    return KindTotals(
        kind=kind,
        opcodes=tuple(dict.fromkeys(r.opcode for r in records)),
        executions=None if None in executions else float(sum(e for e in executions if e is not None)),
        wavefronts=float(sum(r.wavefronts or 0.0 for r in records)) if shared else None,
        ideal=float(sum(r.ideal or 0.0 for r in records)) if shared else None,
        sectors=float(sum(r.global_sectors or 0.0 for r in with_sectors)) if on_global and with_sectors else None,
        sectors_ideal=(
            float(sum(r.global_sectors_ideal or 0.0 for r in with_sectors)) if on_global and with_sectors else None
        ),
        phase=next((rule for r in records if (rule := phase_rule(r.opcode, r.width_bits))), None) if shared else None,
    )


# --- coalescing -----------------------------------------------------------------------------------

# Sectors this many times their ideal (for the same accesses) or more: uncoalesced (a stride of two 4-byte
# values reaches it); PARTLY_UNCOALESCED or more: partly (misaligned or partly scattered rows; one sector more
# a 4-sector warp access, an unaligned row, stays below it).
UNCOALESCED = 2.0
PARTLY_UNCOALESCED = 1.3


def coalescing_words(ratio: float | None) -> str | None:
    """ "uncoalesced", "partly uncoalesced", or None (coalesced, or not measured) for sectors over their ideal."""
    if ratio is None or ratio < PARTLY_UNCOALESCED:
        return None
    return "uncoalesced" if ratio >= UNCOALESCED else "partly uncoalesced"


# --- local memory: spill or array ---------------------------------------------------------------

SPILL = "register spill"
RUNTIME_ARRAY = "array indexed at run time"
# A local access at a fixed offset from the stack pointer (R1) is a spill slot or a fixed array element;
# one through another register is an address computed at run time: an array indexed with run-time values.
_STACK_ADDRESS = re.compile(r"\[\s*R1(\s*\+\s*(0x[0-9a-fA-F]+|\d+))?\s*\]")


def local_memory_causes(records: Iterable[InstructionRecord]) -> tuple[str, ...]:
    """What put the launch's local accesses in local memory, from its SASS: a register spill (reloads
    `LDL.LU` or loads and stores at fixed stack offsets) and/or an array indexed at run time (local
    addresses computed in a register). Empty where there are no executed local accesses."""
    fixed = computed = False
    for record in records:
        if record.space != Space.LOCAL or not record.executions:
            continue
        if _STACK_ADDRESS.search(record.sass):
            fixed = True
        elif "[" in record.sass:
            computed = True
    causes = []
    if fixed and (not computed or _has_reloads(records)):
        causes.append(SPILL)
    if computed:
        causes.append(RUNTIME_ARRAY)
    return tuple(causes)


def _has_reloads(records: Iterable[InstructionRecord]) -> bool:
    """Spill reloads: `LDL.LU` (load, last use) at a fixed stack offset."""
    return any(
        r.space == Space.LOCAL and r.opcode.startswith("LDL.LU") and r.executions and _STACK_ADDRESS.search(r.sass)
        for r in records
    )


def record_kind(opcode: str, space: Space | None, side: Side) -> Kind:
    """The kind of a record: its opcode's words where the opcode is known for that space, else a name by
    what ncu recorded (so that an opcode of a new GPU still lands in the right figures)."""
    if space == Space.REMOTE_SHARED:
        return REMOTE
    if space == Space.GLOBAL:
        base = opcode.partition(".")[0]
        name = {Side.LD: "global loads", Side.ST: "global stores", Side.ATOM: "global atomics and reductions"}.get(side)
        return Kind(name or f"global accesses ({base})", Space.GLOBAL, side)
    kind = kind_of(opcode, space)
    if space == Space.SHARED and side == Side.ATOM and kind.side != Side.ATOM:
        return Kind("shared atomics", Space.SHARED, Side.ATOM)
    if space == Space.SHARED and kind.side != side and kind.space == Space.SHARED:
        words = {Side.LD: "shared loads", Side.ST: "shared stores", Side.ATOM: "shared atomics"}.get(side, kind.name)
        return Kind(f"{words} ({opcode.partition('.')[0]})", Space.SHARED, side)
    return kind


# --- your line, not the header's ----------------------------------------------------------------

# Where inlined library code lives: the CUDA toolkit's headers (crt/, cooperative_groups, cuda/std, the
# *_functions.hpp and sm_*_rt.hpp of atomics and intrinsics), CUTLASS, CuTe, CUB, Thrust, Triton's language
# library, and any installed Python package.
_LIBRARY = re.compile(
    r"(^|/)(crt|cooperative_groups|cuda/std|cuda/__|cutlass|cute|cub|thrust|nv/target)/"
    r"|(^|/)[a-z_0-9]*_(functions|intrinsics)\.(h|hpp)$|(^|/)sm_[0-9]+_rt\.hpp$|(^|/)cuda_[a-z_0-9]*\.(h|hpp)$"
    r"|(^|/)triton/language/|(site|dist)-packages/|(^|/)targets/[^/]+/include/|/cuda[-0-9.]*/include/"
)


def is_library_source(path: str) -> bool:
    """Whether a recorded source location lies in a library's inlined code rather than the user's."""
    return bool(_LIBRARY.search(path.replace("\\", "/")))
