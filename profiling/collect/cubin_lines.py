"""The source line of each instruction of a module's binary, by function and offset: what `memlens banks`
writes beside each recorded instruction (its "file" and "line"). The Sanitizer library keeps each module's
cubin beside the trace; nvdisasm -g -gi (the CUDA toolkit's, or the nvidia-cuda-nvdisasm wheel's) prints,
above each instruction, its location and the chain of inlined functions it lies in:

    .text._Z13atomics_4_wayPj:
        //## File ".../device_atomic_functions.hpp", line 112 inlined at "/src/probe.cu", line 65
        //## File "/src/probe.cu", line 65
            /*0290*/                   ATOMS.POPC.INC.32 RZ, [R6+UR4] ;

The last location named before an instruction is the outermost, the user's line (an atomicAdd's line, not
the header's). Without nvdisasm, or for a binary it cannot read, no lines: not an error. A large cubin (a
PyTorch module's, tens of MB) is disassembled only in the functions asked for, one nvdisasm -fun each:
disassembling and parsing the whole of a 5-step training loop's cubins took 122 s on the H200.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from memlens.io.cuda_tools import NVDISASM_PACKAGE
from memlens.io.processes import CommandFailed, run_command
from memlens.readers.inline_chains import WHOLE_CUBIN_BYTES, parse_nvdisasm
from memlens.readers.report_binaries import parse_cubin

INSTALL_NVDISASM = f"pip install {NVDISASM_PACKAGE} (or the CUDA toolkit)"

Lines = dict[tuple[str, int], tuple[str, int]]  # (function, offset) -> (file, line)


def parse_lines(text: str) -> Lines:
    """nvdisasm -g -gi's listing as (function, offset) -> (file, line) of the outermost location: the last
    frame of the chain readers/inline_chains.parse_nvdisasm reads (the one parser of nvdisasm's listing)."""
    return {
        (function, offset): instruction.frames[-1]
        for function, instructions in parse_nvdisasm(text).items()
        for offset, instruction in instructions.items()
        if instruction.frames
    }


def disassemblies(cubin: Path, functions: Collection[str] | None = None) -> list[int | None]:
    """What to disassemble of `cubin` to place `functions` (None: all): the whole (None) where it is small or
    not a CUDA ELF image nvdisasm's -fun can name symbols of; else the symbol index of each of `functions`
    the cubin has (none: nothing to disassemble)."""
    if functions is None or cubin.stat().st_size <= WHOLE_CUBIN_BYTES:
        return [None]
    parsed = parse_cubin(cubin.read_bytes())
    if parsed is None:
        return [None]
    return [*sorted({parsed.functions[name] for name in functions if name in parsed.functions})]


def cubin_lines(cubin: Path, nvdisasm: str | Path, symbol: int | None = None) -> Lines:
    """Each instruction's line in `cubin` (in the function of symbol index `symbol` only, where given);
    empty where nvdisasm cannot read it (a binary without line info, another format)."""
    only = [] if symbol is None else ["-fun", str(symbol)]
    try:
        done = run_command([str(nvdisasm), "-g", "-gi", *only, str(cubin)], timeout=120)
    except CommandFailed:
        return {}
    return parse_lines(done.stdout) if done.returncode == 0 else {}
