"""The caller's line of inlined library code, from the kernel's binary.

ncu locates each instruction at its innermost source location: inside `atomicAdd`'s
device_atomic_functions.hpp, a cluster's `map_shared_rank` in crt/sm_90_rt.hpp. The line of the user's code
that called it is in the binary: the report holds each module's cubin (readers/report_binaries.py), and
`nvdisasm -g -gi` prints above each instruction its inline chain, innermost first:

    //## File ".../crt/sm_90_rt.hpp", line 128 inlined at ".../cooperative_groups/details/helpers.h", line 489
    //## File ".../cooperative_groups/details/helpers.h", line 489 inlined at ".../cooperative_groups.h", line 331
    //## File ".../cooperative_groups.h", line 331 inlined at "probe.cu", line 125
    //## File "probe.cu", line 125
            /*0040*/                   S2UR UR8, SR_SWINHI ;

An instruction's line is the first frame of the chain, going outward, in the user's files (not a library's:
instruction_table.is_library_source). Its offset in the kernel's function is its PC less the function's first
(ncu's `launch__function_pcs`); the opcode nvdisasm prints there must be the one ncu decoded, or the binary is
not the one that ran. Each binary is disassembled once (keyed by its SHA-256), in memory, whole where small.
Where nvdisasm is missing, the report holds no binary of the kernel, or the binary no chain for the
instruction (Triton 3.6 records none), the caller says why (Placement) and the reader falls back.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from memlens.io.cuda_tools import find_nvdisasm
from memlens.io.files import write_new_bytes
from memlens.io.processes import CommandFailed, run_command
from memlens.model.instruction_table import Placement, is_library_source
from memlens.readers.report_binaries import Cubin, report_cubins

log = logging.getLogger(__name__)

Action = Any
Frame = tuple[str, int]  # file, line
Binary = tuple[str, int, int, int]  # what tells a kernel's binaries apart: name, executed PCs, first and last
DISASSEMBLE_TIMEOUT_S = 120.0
FUNCTION_PCS = "launch__function_pcs"  # the first PC of the launched function
EXECUTED = "inst_executed"  # its executed PCs: the first of them where the report lacks FUNCTION_PCS

_FUNCTION = re.compile(r"^\.text\.(\S+):\s*$")
_LOCATION = re.compile(r'//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?')
_INSTRUCTION = re.compile(r"/\*([0-9a-fA-F]+)\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_.]*)")


class Instruction(NamedTuple):
    """One instruction as nvdisasm prints it: its opcode (with modifiers) and its inline chain, innermost
    frame first (one frame where it is not inlined; none where the binary has no line for it)."""

    opcode: str
    frames: tuple[Frame, ...]


Functions = dict[str, dict[int, Instruction]]  # function name -> offset -> instruction
Disassembler = Callable[[Cubin, "int | None"], str]  # (cubin, symbol index or None: all) -> nvdisasm -g -gi text
# nvdisasm's start dominates (0.35 s of a CPU for one function of a 137 KB cubin, 0.4 s for all twelve): a cubin up
# to this size is disassembled whole, once; a larger one function by function, those asked for only.
WHOLE_CUBIN_BYTES = 4 * 1024 * 1024


def parse_nvdisasm(text: str) -> Functions:
    """Each function's instructions by offset, from `nvdisasm -g -gi` text. The `//##` lines above an
    instruction are its line-table rows; they hold for the instructions after it until the next rows. Of
    several rows at one address the last is the instruction's location; the rows before it that lead to it
    ("A inlined at B" before B's row) extend its chain inward."""
    functions: Functions = {}
    current: dict[int, Instruction] | None = None
    rows: list[tuple[Frame, Frame | None]] = []
    frames: tuple[Frame, ...] = ()
    for line in text.splitlines():
        stripped = line.strip()
        function = _FUNCTION.match(stripped)
        if function:
            current = functions.setdefault(function[1], {})
            rows, frames = [], ()
            continue
        location = _LOCATION.search(stripped)
        if location:
            file, number, at_file, at_line = location.groups()
            rows.append(((file, int(number)), (at_file, int(at_line)) if at_file else None))
            continue
        instruction = _INSTRUCTION.match(stripped)
        if instruction and current is not None:
            if rows:
                frames, rows = _chain(rows), []
            current[int(instruction[1], 16)] = Instruction(instruction[2], frames)
    return functions


def _chain(rows: list[tuple[Frame, Frame | None]]) -> tuple[Frame, ...]:
    """The chain of the last row, innermost first, extended inward by the rows before it that lead to it."""
    frame, caller = rows[-1]
    chain = [frame] + ([caller] if caller else [])
    for earlier, leads_to in reversed(rows[:-1]):
        if leads_to != chain[0]:
            break
        chain.insert(0, earlier)
    return tuple(chain)


def user_frame(frames: tuple[Frame, ...]) -> Frame | None:
    """The first frame of the chain, going outward from the innermost, in the user's code (None where
    every frame is a library's)."""
    return next((frame for frame in frames if not is_library_source(frame[0])), None)


def nvdisasm_text(cubin: Cubin, symbol: int | None) -> str:
    """`nvdisasm -g -gi -c [-fun SYMBOL]` on the cubin: its code (the function's, where `symbol` is given)
    with its inline chains. CommandFailed where nvdisasm cannot run or fails."""
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise CommandFailed("nvdisasm not found", ())
    with tempfile.TemporaryDirectory(prefix="memlens-cubin-") as folder:
        path = Path(folder) / "module.cubin"
        write_new_bytes(path, cubin.image)
        only = ["-fun", str(symbol)] if symbol is not None else []
        argv = [str(nvdisasm), "-g", "-gi", "-c", *only, str(path)]
        done = run_command(argv, timeout=DISASSEMBLE_TIMEOUT_S)  # CommandTimeout is a CommandFailed
    if done.returncode != 0:
        raise CommandFailed(f"nvdisasm exited {done.returncode}: {done.stderr.strip()[-300:]}", tuple(argv))
    return done.stdout


# What was disassembled in this process, by (cubin digest, function name, or "" for the whole cubin): a report
# read twice, or two reports of one program, disassemble each once. None: nvdisasm failed on it.
_DISASSEMBLED: dict[tuple[str, str], Functions | None] = {}


class InlineCallers:
    """The caller's line of inlined instructions of one report's kernels (see the module's words)."""

    def __init__(
        self, report: Path | None, disassemble: Disassembler | None = None, cubins: tuple[Cubin, ...] | None = None
    ) -> None:
        """`report`'s cubins (or `cubins` where given), disassembled by nvdisasm (or `disassemble`)."""
        self.report = report
        self.disassemble = disassemble
        self._cubins = cubins
        self._nvdisasm: bool | None = None  # whether it can disassemble: not looked for yet
        self._bases: dict[tuple[str, int, int], int | None] = {}

    def caller(self, action: Action, binary: Binary, pc: int, opcode: str) -> tuple[Frame | None, Placement]:
        """(the user's frame of the instruction at `pc`, Placement.CALLER), or (None, why not)."""
        if self._nvdisasm is None:  # looked for once a report
            self._nvdisasm = self.disassemble is not None or find_nvdisasm() is not None
        if not self._nvdisasm:
            return None, Placement.NO_NVDISASM
        name = str(action.name(type(action).NameBase_MANGLED) or "")
        base = self.start(action, binary)
        candidates = [c for c in self._report_cubins() if name in c.functions and c.line_info]
        if base is None or not candidates:
            return None, Placement.NO_BINARY
        for cubin in candidates:
            found = self._function(cubin, name).get(pc - base)
            if found is not None and _same_opcode(found.opcode, opcode):
                frame = user_frame(found.frames) if len(found.frames) > 1 else None
                if frame is not None:
                    return frame, Placement.CALLER
        return None, Placement.NO_CHAIN

    def _report_cubins(self) -> tuple[Cubin, ...]:
        if self._cubins is None:
            self._cubins = report_cubins(self.report) if self.report is not None else ()
        return self._cubins

    def start(self, action: Action, binary: Binary) -> int | None:
        """The first PC of the launch's function, once per binary (its name and executed PC range)."""
        key = binary[:3]
        if key not in self._bases:
            self._bases[key] = _function_start(action)
        return self._bases[key]

    def _function(self, cubin: Cubin, name: str) -> dict[int, Instruction]:
        whole = len(cubin.image) <= WHOLE_CUBIN_BYTES
        key = (cubin.digest, "" if whole else name)
        if key not in _DISASSEMBLED:
            disassemble = self.disassemble or nvdisasm_text
            try:
                _DISASSEMBLED[key] = parse_nvdisasm(disassemble(cubin, None if whole else cubin.functions[name]))
            except CommandFailed as exc:
                log.info("no inline chains for %s: %s", name, exc)
                _DISASSEMBLED[key] = None
        return (_DISASSEMBLED[key] or {}).get(name, {})


def _function_start(action: Action) -> int | None:
    """The first PC of the launch's function: ncu's `launch__function_pcs`, else its lowest executed PC."""
    for name in (FUNCTION_PCS, EXECUTED):
        metric = action.metric_by_name(name)
        if metric is None or not metric.num_instances() or not metric.has_correlation_ids():
            continue
        if name == FUNCTION_PCS:
            return int(metric.as_uint64(0))
        ids = metric.correlation_ids()
        return min(int(ids.as_uint64(i)) for i in range(metric.num_instances()))
    return None


def _same_opcode(printed: str, decoded: str) -> bool:
    """Whether nvdisasm's opcode is the one ncu decoded at that PC (their families: two disassemblers
    may spell the modifiers apart)."""
    return printed.partition(".")[0] == decoded.partition(".")[0]
