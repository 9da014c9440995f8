"""The source line of each instruction of a module's binary, by function and offset: what `memlens banks`
writes beside each recorded instruction (its "file" and "line"). The Sanitizer library keeps each module's
cubin beside the trace; nvdisasm -g -gi (the CUDA toolkit's, or the nvidia-cuda-nvdisasm wheel's) prints,
above each instruction, its location and the chain of inlined functions it lies in:

    .text._Z13atomics_4_wayPj:
        //## File ".../device_atomic_functions.hpp", line 112 inlined at "/src/probe.cu", line 65
        //## File "/src/probe.cu", line 65
            /*0290*/                   ATOMS.POPC.INC.32 RZ, [R6+UR4] ;

The last location named before an instruction is the outermost, the user's line (an atomicAdd's line, not
the header's). Without nvdisasm, or for a binary it cannot read, no lines: not an error.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from memlens.io.processes import CommandFailed, run_command

FUNCTION = re.compile(r"^\.text\.(?P<name>\S+):\s*$")
LOCATION = re.compile(r'"(?P<file>[^"]+)", line (?P<line>\d+)')
INSTRUCTION = re.compile(r"^\s*/\*(?P<offset>[0-9a-f]{4,})\*/\s+[^.\s]")
INSTALL_NVDISASM = "pip install nvidia-cuda-nvdisasm (or the CUDA toolkit)"

Lines = dict[tuple[str, int], tuple[str, int]]  # (function, offset) -> (file, line)


def find_nvdisasm(env: Mapping[str, str] | None = None, homes: tuple[str, ...] = ("/usr/local/cuda",)) -> str | None:
    env = os.environ if env is None else env
    found = shutil.which("nvdisasm", path=env.get("PATH"))
    if found:
        return found
    for home in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), *homes):
        if home and (Path(home) / "bin" / "nvdisasm").is_file():
            return str(Path(home) / "bin" / "nvdisasm")
    from importlib.util import find_spec

    wheels = find_spec("nvidia")
    for base in (wheels.submodule_search_locations or []) if wheels else []:
        for tool in sorted(Path(base).glob("*/bin/nvdisasm")):
            return str(tool)
    return None


def parse_lines(text: str) -> Lines:
    """nvdisasm -g -gi's listing as (function, offset) -> (file, line) of the outermost location."""
    lines: Lines = {}
    function: str | None = None
    where: tuple[str, int] | None = None
    for row in text.splitlines():
        named = FUNCTION.match(row)
        if named:
            function, where = named["name"], None
            continue
        if "//##" in row:
            places = list(LOCATION.finditer(row))
            if places:
                where = (places[-1]["file"], int(places[-1]["line"]))
            continue
        if row.lstrip().startswith(".section"):
            function = None
            continue
        instruction = INSTRUCTION.match(row)
        if instruction and function is not None and where is not None:
            lines[(function, int(instruction["offset"], 16))] = where
    return lines


def cubin_lines(cubin: Path, nvdisasm: str) -> Lines:
    """Each instruction's line in `cubin`; empty where nvdisasm cannot read it (a binary without line info,
    another format)."""
    try:
        done = run_command([nvdisasm, "-g", "-gi", str(cubin)], timeout=120)
    except CommandFailed:
        return {}
    return parse_lines(done.stdout) if done.returncode == 0 else {}
