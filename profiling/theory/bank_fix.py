"""The fix of a conflicting shared-memory instruction, proved on its recorded addresses: the smallest
padding (P bytes after every R bytes), else an XOR swizzle of the chunk index with the row (the
article's general formula, theory/swizzle.py, over 2^k-byte chunks), else, for rows padded already (R
bytes, a power of two and P more), the padding dropped and the chunk swizzled with the row instead (or the
padding dropped alone), under which every recorded warp of the instruction takes only its ideal's
wavefronts. None found is said so.

The array's rows are R bytes, R taken from the strides the lanes show (the distance between
successive active lanes, and between lanes whose distinct words share a bank); they are taken to
start at `base`, the lowest offset recorded rounded down to R's largest power-of-two factor (the
shared window starts at a multiple of 1,024). The same index must serve every access of the array:
its stores as well as its loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memlens.model.banks_file import BankAccess, RecordedInstruction
from memlens.theory.bank_model import BANK_BYTES, BANKS
from memlens.theory.recorded_banks import Offsets, conflict_free, served_lanes
from memlens.theory.swizzle import MIN_SWIZZLE_BYTES, swizzled_offset

MAX_PAD_BYTES = 128  # one phase's bytes: a larger pad only repeats a smaller one's banks
MAX_ROW_BYTES = 64 * 1024
MAX_STRIDES = 8  # row lengths tried, most often seen first
MAX_SWIZZLE_BYTES = 1024
MAX_ALIGN = 1024


@dataclass(frozen=True)
class Fix:
    """A layout under which every recorded warp is conflict-free (`kind` "pad" or "swizzle"), or
    "none" with the reason in `words`."""

    kind: str
    words: str
    row_bytes: int | None = None
    base: int | None = None
    pad_bytes: int | None = None
    chunk_bytes: int | None = None
    swizzle_bytes: int | None = None
    n_way_after: float | None = None

    def offset(self, offset: int) -> int:
        """Where the byte at `offset` lies under this layout."""
        if self.row_bytes is None or self.base is None:
            return offset
        if self.kind == "unpad" and self.pad_bytes is not None:
            kept = self.row_bytes - self.pad_bytes
            unpadded = unpad_offset(offset, self.base, self.row_bytes, kept)
            if self.chunk_bytes is None or self.swizzle_bytes is None:
                return unpadded
            return swizzle_offset(unpadded, self.base, kept, self.chunk_bytes, self.swizzle_bytes)
        if self.kind == "pad" and self.pad_bytes is not None:
            return pad_offset(offset, self.base, self.row_bytes, self.pad_bytes)
        if self.kind == "swizzle" and self.chunk_bytes is not None and self.swizzle_bytes is not None:
            return swizzle_offset(offset, self.base, self.row_bytes, self.chunk_bytes, self.swizzle_bytes)
        return offset

    def warps(self, warps: Sequence[Offsets]) -> list[list[int | None]]:
        return [[None if o is None else self.offset(o) for o in warp] for warp in warps]

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"kind": self.kind}
        for name in ("row_bytes", "base", "pad_bytes", "chunk_bytes", "swizzle_bytes"):
            if getattr(self, name) is not None:
                entry[name] = getattr(self, name)
        return {**entry, "n_way_after": self.n_way_after, "words": self.words}


def pad_offset(offset: int, base: int, row_bytes: int, pad_bytes: int) -> int:
    """`pad_bytes` after every `row_bytes` from `base`: row y moves y * pad_bytes on."""
    row = (offset - base) // row_bytes
    return offset + row * pad_bytes


def unpad_offset(offset: int, base: int, row_bytes: int, kept_bytes: int) -> int:
    """Rows of `row_bytes` from `base` packed to their first `kept_bytes` (their padding dropped)."""
    if offset < base:
        return offset
    row, byte = divmod(offset - base, row_bytes)
    return base + row * kept_bytes + byte


def swizzle_offset(offset: int, base: int, row_bytes: int, chunk_bytes: int, swizzle_bytes: int) -> int:
    """The article's XOR swizzle (theory/swizzle.swizzled_offset) of the byte at `offset` in an array of
    `row_bytes`-byte rows from `base`: its chunk index XOR the row (rows of whole lines) or the line
    (lines of whole rows). Offsets below `base` are outside the array and stay."""
    if offset < base:
        return offset
    row, byte = divmod(offset - base, row_bytes)
    return base + swizzled_offset(row, byte, row_bytes, 1, chunk_bytes, swizzle_bytes)


def _powers(low: int, high: int) -> list[int]:
    values, value = [], 1
    while value <= high:
        if value >= low:
            values.append(value)
        value *= 2
    return values


def _alignment(row_bytes: int) -> int:
    return min(row_bytes & -row_bytes, MAX_ALIGN)


def strides(instruction: RecordedInstruction) -> list[int]:
    """Row lengths the lanes suggest, most often seen first (then shortest)."""
    seen: dict[int, int] = {}
    width = instruction.width
    for warp in instruction.warps:
        lanes = [o for o in served_lanes(instruction, warp) if o is not None]
        distances = [abs(b - a) for a, b in zip(lanes, lanes[1:], strict=False)]
        by_bank: dict[int, set[int]] = {}
        for o in lanes:
            by_bank.setdefault(o // BANK_BYTES % BANKS, set()).add(o // BANK_BYTES * BANK_BYTES)
        for words in by_bank.values():
            ordered = sorted(words)
            distances += [b - a for a, b in zip(ordered, ordered[1:], strict=False)]
        for d in distances:
            if width < d <= MAX_ROW_BYTES and d >= 2 * BANK_BYTES and d % min(width, BANK_BYTES) == 0:
                seen[d] = seen.get(d, 0) + 1
    return sorted(seen, key=lambda d: (-seen[d], d))[:MAX_STRIDES]


def _lowest(instruction: RecordedInstruction) -> int:
    return min(o for warp in instruction.warps for o in served_lanes(instruction, warp) if o is not None)


def _pad_step(instruction: RecordedInstruction) -> int:
    return 16 if instruction.access.matrix else instruction.width


def element_bytes(instruction: RecordedInstruction) -> int:
    """The element size the words speak of: a lane's width up to 8 bytes, a 16-bit value for a matrix
    instruction's, a float for other 16-byte vectors."""
    if instruction.access.matrix:
        return 2
    return instruction.width if instruction.width <= 8 else 4


def find_pad(instruction: RecordedInstruction, rows: Sequence[int]) -> Fix | None:
    step = _pad_step(instruction)
    lowest = _lowest(instruction)
    for pad in range(step, MAX_PAD_BYTES + 1, step):
        for row_bytes in rows:
            base = lowest // _alignment(row_bytes) * _alignment(row_bytes)
            fix = Fix("pad", "", row_bytes, base, pad_bytes=pad)
            if conflict_free(instruction, fix.warps(instruction.warps)):
                return Fix("pad", pad_words(instruction, row_bytes, pad), row_bytes, base, pad_bytes=pad, n_way_after=1)
    return None


def _smallest_chunk(instruction: RecordedInstruction) -> int:
    """The smallest chunk a swizzle may move: a matrix row's 16 bytes, else a lane's access (at least a word)."""
    return 16 if instruction.access.matrix else max(instruction.width, BANK_BYTES)


def find_swizzle(instruction: RecordedInstruction, rows: Sequence[int]) -> Fix | None:
    for chunk in _powers(_smallest_chunk(instruction), 16):
        for row_bytes in rows:
            if row_bytes % chunk:
                continue
            lines = [row_bytes] if row_bytes in _powers(1, MAX_SWIZZLE_BYTES) else []
            lines += [
                s
                for s in _powers(max(MIN_SWIZZLE_BYTES, 2 * chunk), MAX_SWIZZLE_BYTES)
                if s != row_bytes and (row_bytes % s == 0 or s % row_bytes == 0)
            ]
            for line in lines:
                if line < max(MIN_SWIZZLE_BYTES, 2 * chunk):
                    continue
                align = max(_alignment(row_bytes), min(line, MAX_ALIGN))
                base = _lowest(instruction) // align * align
                fix = Fix("swizzle", "", row_bytes, base, chunk_bytes=chunk, swizzle_bytes=line)
                if conflict_free(instruction, fix.warps(instruction.warps)):
                    words = swizzle_words(instruction, row_bytes, chunk, line)
                    return Fix("swizzle", words, row_bytes, base, chunk_bytes=chunk, swizzle_bytes=line, n_way_after=1)
    return None


def padded_strides(instruction: RecordedInstruction) -> list[int]:
    """Row lengths of padded rows the lanes suggest (a power of two of bytes and up to MAX_PAD_BYTES more,
    between any two lanes of a warp), most often seen first (then shortest)."""
    seen: dict[int, int] = {}
    step = _pad_step(instruction)
    for warp in instruction.warps:
        lanes = sorted({o for o in served_lanes(instruction, warp) if o is not None})
        for i, a in enumerate(lanes):
            for b in lanes[i + 1 :]:
                d = b - a
                pad = d - (1 << (d.bit_length() - 1))
                if d <= MAX_ROW_BYTES and 0 < pad <= MAX_PAD_BYTES and pad % step == 0 and d > 2 * pad:
                    seen[d] = seen.get(d, 0) + 1
    return sorted(seen, key=lambda d: (-seen[d], d))[:MAX_STRIDES]


def find_unpad(instruction: RecordedInstruction) -> Fix | None:
    """For rows padded already (a power of two of bytes and up to MAX_PAD_BYTES more): the padding dropped
    and the chunk index XORed with the row, else the padding dropped alone."""
    step = _pad_step(instruction)
    for row_bytes in padded_strides(instruction):
        kept = 1 << (row_bytes.bit_length() - 1)
        pad = row_bytes - kept
        if not 0 < pad <= MAX_PAD_BYTES or pad % step:
            continue
        base = _lowest(instruction) // _alignment(row_bytes) * _alignment(row_bytes)
        chunks = _powers(_smallest_chunk(instruction), 16)
        tries = [(chunk, kept) for chunk in chunks if kept >= max(MIN_SWIZZLE_BYTES, 2 * chunk)]
        for chunk, line in [*tries, (None, None)]:
            fix = Fix("unpad", "", row_bytes, base, pad_bytes=pad, chunk_bytes=chunk, swizzle_bytes=line)
            if conflict_free(instruction, fix.warps(instruction.warps)):
                words = unpad_words(instruction, row_bytes, pad, chunk)
                return Fix("unpad", words, row_bytes, base, pad, chunk, line, n_way_after=1)
    return None


def find_fix(instruction: RecordedInstruction) -> Fix:
    """The smallest padding, else a swizzle, else the padding of padded rows swapped for a swizzle (or
    dropped), proved on every recorded warp; else kind "none"."""
    rows = strides(instruction)
    fix = find_pad(instruction, rows) or find_swizzle(instruction, rows) or find_unpad(instruction)
    if fix is not None:
        return fix
    tried = ", ".join(str(r) for r in rows) or "none shown"
    why = (
        f"no padding of up to {MAX_PAD_BYTES} bytes nor XOR swizzle of rows of {tried} bytes (nor their padding "
        "dropped) makes every recorded warp conflict-free"
    )
    if instruction.access is BankAccess.CP_ASYNC and instruction.sources is not None:
        why += " (cp.async's wavefronts follow the global lines it reads, whatever the banks)"
    elif not rows:
        why += " (the lanes show no row stride to pad or swizzle)"
    return Fix("none", why)


def pad_words(instruction: RecordedInstruction, row_bytes: int, pad_bytes: int) -> str:
    elem = element_bytes(instruction)
    words = f"add {pad_bytes} bytes after every {row_bytes}-byte row"
    if row_bytes % elem == 0 and pad_bytes % elem == 0:
        cols = row_bytes // elem
        words += f": declare the tile [..][{cols + pad_bytes // elem}] instead of [..][{cols}] ({elem}-byte elements)"
    return words


def swizzle_words(instruction: RecordedInstruction, row_bytes: int, chunk: int, line: int) -> str:
    keys = line // chunk
    elem = element_bytes(instruction)
    if row_bytes % line == 0:
        words = f"XOR the {chunk}-byte chunk index with the row: chunk c of row r at chunk c ^ (r % {keys})"
        words += f" of its {line}-byte line" if line != row_bytes else f" of the {row_bytes}-byte row"
        if chunk == elem and line == row_bytes:
            words += f"; with {elem}-byte elements, index [row][col ^ (row % {keys})]"
    else:
        words = (
            f"XOR the {chunk}-byte chunk index with its {line}-byte line's index ({line // row_bytes} rows of "
            f"{row_bytes} bytes a line): chunk i at i / {keys} * {keys} + ((i % {keys}) ^ (i / {keys} % {keys})); "
            f"the tile must hold whole {line}-byte lines"
        )
    return words + "; index every access of the array so"


def unpad_words(instruction: RecordedInstruction, row_bytes: int, pad_bytes: int, chunk: int | None) -> str:
    kept = row_bytes - pad_bytes
    words = f"drop the {pad_bytes}-byte padding of the {row_bytes}-byte rows (rows of {kept} bytes)"
    elem = element_bytes(instruction)
    if kept % elem == 0 and pad_bytes % elem == 0:
        words += f": declare the tile [..][{kept // elem}] instead of [..][{row_bytes // elem}]"
    if chunk is None:
        return words + "; index every access of the array so"
    keys = kept // chunk
    return (
        f"{words}, and XOR the {chunk}-byte chunk index with the row instead: chunk c of row r at chunk "
        f"c ^ (r % {keys}); index every access of the array so"
    )
