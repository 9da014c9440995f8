"""`memlens banks -- COMMAND`: run a program under memlens's CUDA Sanitizer API library (banktrace/) and
write banks.json (model/banks_file.py) into a new run directory.

The library and the device patch are built at first use (bank_trace_build.py). The program runs with the
library in LD_PRELOAD (a static initializer subscribes before its first CUDA call, as NVIDIA's samples load
their tools; CUDA_INJECTION64_PATH would do as well, and the library subscribes once). It writes one JSON line
a launch into the run directory's banktrace/ folder, flushed, so a program that crashes keeps what was
recorded; those lines become banks.json here (`banks_from_traces`).

A missing compiler, Sanitizer, cuda.h or patch is one line naming what to install (SetupError, exit 3).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memlens.collect.bank_trace_build import build_host_library, device_patch, find_sanitizer
from memlens.errors import ProfilerError
from memlens.model.banks_file import WIDTHS, BankAccess, BanksFile, ExecutionTotals, RecordedInstruction
from memlens.model.nvtx_names import compile_filter
from memlens.model.run_layout import BANK_LAUNCHES, BANK_TRACE, BANKS_FILE

NOT_LANE_ACCESSES = (
    "TMA (cp.async.bulk) and wgmma operand reads move whole tiles, not one address a lane: they have no lane "
    "map and are not recorded"
)
# Every record of a full block with one active lane: the patch was not called by the warp's lanes together, so
# a record holds one lane, not a warp (the device patch assumes the Sanitizer calls it converged).
SINGLE_LANE_RECORDS = 8
SINGLE_LANE_WARNING = (
    "every recorded execution had one active lane: the Sanitizer called the patch lane by lane, not by warp, "
    "and these records are not warp-level accesses"
)
WARP_LANES = 32
# the bank model over every warp-level execution (banktrace_model.h), summed over launches
TOTALS = ("executions", "wavefronts", "ideal")
# the record kinds of banktrace.h and the Sanitizer's access flags
SHARED, MATRIX, MEMCPY_ASYNC = 1, 2, 3
READ, WRITE = 1, 2


# --- the program's trace lines -> banks.json ------------------------------------------------------------


def access_of(record: Mapping[str, Any]) -> BankAccess | None:
    kind, flags = record.get("kind"), int(record.get("flags", 0))
    if kind == SHARED:
        if flags & READ and flags & WRITE:
            return BankAccess.ATOMIC
        return BankAccess.STORE if flags & WRITE else BankAccess.LOAD
    if kind == MATRIX:
        return BankAccess.STMATRIX if flags & WRITE else BankAccess.LDMATRIX
    if kind == MEMCPY_ASYNC:
        return BankAccess.CP_ASYNC
    return None


def read_trace_lines(folder: Path) -> list[dict[str, Any]]:
    """Every event the library wrote, process by process; a line cut short by a crash is left out."""
    events = []
    for path in sorted(folder.glob("trace.*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
    return events


SourceLines = Mapping[tuple[str, str, int], tuple[str, int]]  # (cubin file, function, offset) -> (file, line)


def banks_from_traces(
    events: Iterable[Mapping[str, Any]],
    warps: int,
    gpu: str | None = None,
    pattern: str | None = None,
    names: Mapping[str, str] | None = None,
    lines: SourceLines | None = None,
) -> BanksFile:
    """banks.json from the library's events: the first `warps` recorded executions of each instruction
    (kernel, function-relative PC), launch by launch; `names` demangles the kernels' names and `lines` gives
    each instruction's source line (cubin_lines)."""
    regex = compile_filter(pattern)
    names, lines = names or {}, lines or {}
    grouped: dict[tuple[str, int, str, int, int], dict[str, Any]] = {}
    unsupported: dict[str, int] = {}
    patching: dict[str, set[str]] = {}
    errors: list[str] = []
    totals: dict[tuple[str, int], dict[str, int]] = {}
    lanes = [0, 0]  # records of full blocks with several active lanes, with one
    for event in events:
        if event.get("event") == "module":
            for kind, result in dict(event.get("patched", {})).items():
                patching.setdefault(kind, set()).add(str(result))
        elif event.get("event") == "error":
            errors.append(f"{event.get('what')}: {event.get('result')}")
        elif event.get("event") == "launch":
            mangled = str(event.get("kernel", ""))
            kernel = names.get(mangled, mangled)
            if regex is not None and not (regex.search(kernel) or regex.search(mangled)):
                continue
            threads = math.prod(int(n) for n in event.get("block", [1]))
            for record in event.get("records", []):
                _add(grouped, unsupported, kernel, mangled, record, warps, str(event.get("cubin") or ""))
                if threads >= WARP_LANES:  # a warp of whole lanes: one lane alone is rare, every time never
                    lanes[bin(int(record.get("active", 0)) & 0xFFFFFFFF).count("1") == 1] += 1
            for total in event.get("totals", []):
                summed = totals.setdefault((kernel, int(total.get("pc_offset", 0))), dict.fromkeys(TOTALS, 0))
                for name in TOTALS:
                    summed[name] += int(total.get(name, 0))
    instructions = tuple(_instruction(key, entry, lines, totals.get(key[:2])) for key, entry in grouped.items())
    extra: dict[str, Any] = {"not_recorded": NOT_LANE_ACCESSES}
    if unsupported:
        extra["unsupported"] = unsupported
    if patching:
        extra["patching"] = {kind: sorted(results) for kind, results in patching.items()}
    if errors:
        extra["errors"] = errors
    if lanes[1] >= SINGLE_LANE_RECORDS and not lanes[0]:
        extra["warning"] = SINGLE_LANE_WARNING
    return BanksFile(gpu, instructions, extra)


def _instruction(
    key: tuple[str, int, str, int, int], entry: Mapping[str, Any], lines: SourceLines, every: Mapping[str, int] | None
) -> RecordedInstruction:
    kernel, pc, access, width, matrices = key
    extra = {k: entry[k] for k in ("function", "blocks", "warp_ids")}
    file, line = lines.get((entry["cubin"], entry["function"], pc), (None, None))
    return RecordedInstruction(
        kernel,
        pc,
        width,
        BankAccess(access),
        tuple(entry["warps"]),
        file,
        line,
        matrices=matrices or None,
        sources=tuple(entry["sources"]) if access == "cp.async" else None,
        every=ExecutionTotals(**every) if every else None,
        extra=extra,
    )


def _add(
    grouped: dict[tuple[str, int, str, int, int], dict[str, Any]],
    unsupported: dict[str, int],
    kernel: str,
    mangled: str,
    record: Mapping[str, Any],
    warps: int,
    cubin: str = "",
) -> None:
    access = access_of(record)
    size = int(record.get("size", 0))
    if access is None or size not in WIDTHS[access]:
        what = f"kind {record.get('kind')} flags {record.get('flags')} of {size} bytes"
        unsupported[what] = unsupported.get(what, 0) + 1
        return
    offsets = [o if isinstance(o, int) and o % size == 0 else None for o in record.get("offsets", [])]
    if len(offsets) != 32 or all(o is None for o in offsets):
        return
    matrices = int(record.get("matrices", 0)) if access.matrix else 0
    key = (kernel, int(record.get("pc_offset", 0)), str(access), size, matrices)
    entry = grouped.setdefault(
        key, {"function": mangled, "cubin": cubin, "warps": [], "sources": [], "blocks": [], "warp_ids": []}
    )
    if len(entry["warps"]) >= warps:
        return
    entry["warps"].append(tuple(offsets))
    sources = record.get("sources") or [None] * 32
    entry["sources"].append(tuple(s if o is not None else None for s, o in zip(sources, offsets, strict=False)))
    entry["blocks"].append(list(record.get("block", [])))
    entry["warp_ids"].append(record.get("warp"))


def demangle(names: Sequence[str]) -> dict[str, str]:
    """Mangled name -> demangled, by c++filt where there is one (else the names as they are)."""
    from memlens.io.processes import CommandFailed, run_command

    tool = shutil.which("c++filt")
    if not tool or not names:
        return {}
    try:
        done = run_command([tool], timeout=30, input="\n".join(names) + "\n")
    except CommandFailed:
        return {}
    out = done.stdout.splitlines()
    return dict(zip(names, out, strict=True)) if done.returncode == 0 and len(out) == len(names) else {}


def source_lines(folder: Path, events: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, int], tuple[str, int]]:
    """The launched kernels' instructions' source lines, by nvdisasm on the cubins the library kept (a large
    one in those kernels only), the cubins side by side on the machine's cores; none (said on stderr) without
    nvdisasm."""
    from concurrent.futures import ThreadPoolExecutor

    from memlens.collect.cubin_lines import INSTALL_NVDISASM, cubin_lines, disassemblies
    from memlens.io.cuda_tools import find_nvdisasm

    launched: dict[str, set[str]] = {}
    for event in events:
        if event.get("event") == "launch" and event.get("cubin"):
            launched.setdefault(str(event["cubin"]), set()).add(str(event.get("kernel", "")))
    if not launched:
        return {}
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        print(f"memlens: no nvdisasm: banks.json names no source lines ({INSTALL_NVDISASM})", file=sys.stderr)
        return {}
    jobs = [(cubin, symbol) for cubin in sorted(launched) for symbol in disassemblies(folder / cubin, launched[cubin])]
    found: dict[tuple[str, str, int], tuple[str, int]] = {}
    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1) or 1) as pool:
        done = pool.map(lambda job: cubin_lines(folder / job[0], nvdisasm, job[1]), jobs)
        for (cubin, _), lines in zip(jobs, done, strict=True):
            for (function, offset), where in lines.items():
                found[(cubin, function, offset)] = where
    return found


def gpu_of_program() -> tuple[str | None, str | None]:
    """(name, sm_XX) of the first GPU the program will see, from nvidia-smi."""
    from memlens.io.processes import CommandFailed, run_command

    argv = ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if visible.isdigit() or visible.startswith("GPU-"):
        argv += ["-i", visible]
    try:
        done = run_command(argv, timeout=30)
    except CommandFailed as exc:
        raise ProfilerError(f"memlens banks: nvidia-smi cannot name the GPU ({exc})") from None
    first = done.stdout.strip().splitlines()[:1] if done.returncode == 0 else []
    if not first or "," not in first[0]:
        raise ProfilerError("memlens banks: nvidia-smi lists no GPU")
    name, cap = (part.strip() for part in first[0].rsplit(",", 1))
    return name, "sm_" + cap.replace(".", "")


def trace_environment(
    library: Path,
    patch: Path,
    folder: Path,
    warps: int,
    base: Mapping[str, str] | None = None,
    sanitizer: Path | None = None,
    every: bool = True,
    launches: int = BANK_LAUNCHES,
) -> dict[str, str]:
    """The program's environment: the library preloaded before any of its own, the Sanitizer's folder first on
    LD_LIBRARY_PATH (its library loads others from there), and what the library reads (`launches`: each kernel's
    first launches traced, 0 every launch)."""
    env = dict(os.environ if base is None else base)
    for name, first in (("LD_PRELOAD", library), ("LD_LIBRARY_PATH", sanitizer)):
        if first is not None:
            env[name] = f"{first}:{env[name]}" if env.get(name) else str(first)
    env.update(
        {
            "MEMLENS_BANKS_PATCH": str(patch),
            "MEMLENS_BANKS_OUT": str(folder),
            "MEMLENS_BANKS_WARPS": str(warps),
            "MEMLENS_BANKS_EVERY": "1" if every else "0",
            "MEMLENS_BANKS_LAUNCHES": str(launches),
        }
    )
    return env


def _stderr_fd() -> int:
    """memlens's stderr as a file descriptor (the process's fd 2 where sys.stderr has none, as under a capture)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):
        return 2


def trace_program(
    program: Sequence[str],
    out: Path,
    warps: int,
    pattern: str | None = None,
    run_dir: Path | None = None,
    every: bool = True,
    launches: int = BANK_LAUNCHES,
) -> Path:
    """Run `program` under the trace; the path of the banks.json written into `run_dir` (`memlens profile
    --banks`: the profile's, after ncu, since ncu and the Sanitizer cannot share a process) or a new run
    directory in `out`. Each kernel's first `launches` launches are traced (0: all); its later ones run
    unpatched."""
    from memlens.collect.run_dir import new_run_dir
    from memlens.io.files import write_text_atomic
    from memlens.io.processes import run_watched

    compile_filter(pattern)  # a bad -k is a usage error before anything runs
    sanitizer = find_sanitizer()
    gpu, arch = gpu_of_program()
    library = build_host_library(sanitizer)
    patch = device_patch(sanitizer, arch or "sm_90")
    run_dir = new_run_dir(out) if run_dir is None else run_dir
    folder = run_dir / BANK_TRACE
    folder.mkdir()
    env = trace_environment(library, patch, folder, warps, sanitizer=sanitizer.root, every=every, launches=launches)
    # the program's own output on memlens's stderr: memlens's stdout is its analysis (`--json` stays JSON)
    code = run_watched(list(program), timeout=None, env=env, stdout=_stderr_fd())
    events = read_trace_lines(folder)
    mangled = sorted({str(e.get("kernel")) for e in events if e.get("event") == "launch"})
    banks = banks_from_traces(events, warps, gpu, pattern, demangle(mangled), source_lines(folder, events))
    path = run_dir / BANKS_FILE
    write_text_atomic(path, json.dumps(banks.to_json(), indent=1) + "\n")
    if not any(e.get("event") == "start" for e in events):
        raise ProfilerError(f"memlens banks: the trace library did not start in {program[0]} (see {folder})")
    if code != 0:
        print(f"memlens: {program[0]} exited with {code}; {path} holds what was recorded before", file=sys.stderr)
    if "warning" in banks.extra:
        print(f"memlens: warning: {banks.extra['warning']}", file=sys.stderr)
    for what, count in banks.extra.get("unsupported", {}).items():
        print(f"memlens: {count} recorded executions of an access memlens does not analyse ({what})", file=sys.stderr)
    for kind, results in banks.extra.get("patching", {}).items():
        if any(r != "SANITIZER_SUCCESS" for r in results):
            print(
                f"memlens: {kind} instructions were not patched ({', '.join(results)}): not recorded", file=sys.stderr
            )
    return path
