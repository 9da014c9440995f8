"""`memlens check`: compile every suite kernel for one architecture, no GPU or driver needed, and
read what the compiler decided: registers, stack frame, spills, static shared memory, and whether
the PTX declares local memory.

CUDA C++ kernels go through `profiling.toolchain.compile_cuda` (nvcc where a toolkit has one,
else NVRTC from the pip wheel, as CuPy compiles them at run time); Numba kernels through
`numba.cuda.compile_ptx(fn, sig, cc=...)` and then `ptxas -v` on that PTX. Both give ptxas's
per-entry report, matched to variants by entry symbol (NVRTC's lowered name for a template
instance, c++filt for nvcc's mangled names).

The figures are a second kind of results, gated with the same rules files as a profile run;
their keys (`static.*`) are in STATIC_METRICS below, beside the catalogue rather than in it.
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from memlens.errors import ConfigError, InputError, ProfilerError
from memlens.io.files import read_json
from memlens.io.processes import CommandFailed, CommandTimeout, run_command
from memlens.model.catalogue import Metric
from memlens.model.json_kinds import wrong_kind
from memlens.model.results import MetricValue
from memlens.model.run_layout import CHECK

SCHEMA_VERSION = 1
KIND = "memlens-static-check"
PTXAS_TIMEOUT_S = 180.0
CHECK_FILE = CHECK  # `memlens check --into RUN` writes it into a run directory, beside bench.json
# The most a thread's registers hold: 255 registers of 4 bytes. A stack frame larger than this is
# an array that no register allocation could have kept.
REGISTER_FILE_BYTES = 255 * 4

STATIC_METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric(
            "static.registers",
            "register",
            "registers per thread, as ptxas allocated them",
            better="lower",
            deterministic=True,
        ),
        Metric(
            "static.stack_frame_bytes",
            "byte",
            "per-thread stack frame (local arrays and spills live there)",
            better="lower",
            deterministic=True,
        ),
        Metric(
            "static.spill_store_bytes",
            "byte",
            "bytes of register spill stores to local memory, per thread",
            better="lower",
            deterministic=True,
        ),
        Metric(
            "static.spill_load_bytes",
            "byte",
            "bytes of register spill loads from local memory, per thread",
            better="lower",
            deterministic=True,
        ),
        Metric(
            "static.spill_bytes",
            "byte",
            "spill stores plus spill loads, per thread",
            better="lower",
            deterministic=True,
            formula="static.spill_store_bytes + static.spill_load_bytes",
        ),
        Metric("static.shared_bytes", "byte", "static shared memory per block", deterministic=True),
        Metric(
            "static.ptx_local",
            "flag",
            "1 when the kernel's PTX declares .local memory, else 0",
            better="lower",
            deterministic=True,
        ),
        Metric(
            "static.ptx_local_bytes",
            "byte",
            "bytes of .local memory the kernel's PTX declares, per thread",
            better="lower",
            deterministic=True,
        ),
    )
}

_ARCH = re.compile(r"^sm_(\d+)(\d)([af]?)$")


@dataclass(frozen=True)
class StaticKernel:
    """One kernel of a variant as compiled for one architecture."""

    family: str
    variant: str
    kernel: str  # as the suite names it: "transpose_padded", "k<16>", or the Python function's name
    symbol: str  # ptxas's entry name (mangled for C++ templates and Numba)
    language: str  # "cuda" or "numba"
    registers: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    shared_bytes: int
    ptx_local_bytes: int
    ptx_local: bool

    @property
    def label(self) -> str:
        return f"{self.family}/{self.variant}"

    def values(self) -> dict[str, float]:
        return {
            "static.registers": self.registers,
            "static.stack_frame_bytes": self.stack_frame_bytes,
            "static.spill_store_bytes": self.spill_store_bytes,
            "static.spill_load_bytes": self.spill_load_bytes,
            "static.spill_bytes": self.spill_store_bytes + self.spill_load_bytes,
            "static.shared_bytes": self.shared_bytes,
            "static.ptx_local": int(self.ptx_local),
            "static.ptx_local_bytes": self.ptx_local_bytes,
        }

    def metric(self, key: str) -> MetricValue:
        metric = STATIC_METRICS.get(key)
        if metric is None:
            return MetricValue(key, None, "", f"{key} is not a static-check figure")
        return MetricValue(key, float(self.values()[key]), metric.unit)


@dataclass(frozen=True)
class CompileFailure:
    label: str  # family/variant
    kernel: str
    message: str


@dataclass(frozen=True)
class StaticResults:
    arch: str
    compiler: str  # e.g. "nvrtc 12.9; ptxas 12.9.86"
    source: str  # the suite, or the JSON file the results were read from
    kernels: tuple[StaticKernel, ...]
    failures: tuple[CompileFailure, ...] = ()

    def for_kernel(self, label: str, kernel: str) -> tuple[StaticKernel, ...]:
        """The static figures of a profiled kernel: the variant's declared kernels where `label` is a
        suite variant's family/variant, else the kernels named `kernel` (a plain ncu report)."""
        found = tuple(k for k in self.kernels if k.label == label)
        return found or tuple(k for k in self.kernels if kernel in (k.kernel, k.symbol))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "arch": self.arch,
            "compiler": self.compiler,
            "suite": self.source,
            "complete": not self.failures,
            "kernels": [{**asdict(k), "values": k.values()} for k in self.kernels],
            "failures": [asdict(f) for f in self.failures],
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> StaticResults:
        wrong = wrong_kind(source, data, ("kind", KIND), "a `memlens check --json` file")
        if wrong is not None:
            raise wrong
        if data.get("schema_version") != SCHEMA_VERSION:
            raise InputError(f"{source}: unsupported schema_version {data.get('schema_version')!r}")
        fields = set(StaticKernel.__dataclass_fields__)
        try:
            kernels = tuple(StaticKernel(**{k: v for k, v in item.items() if k in fields}) for item in data["kernels"])
            failures = tuple(CompileFailure(**item) for item in data.get("failures", []))
            return cls(str(data["arch"]), str(data.get("compiler", "")), source, kernels, failures)
        except (KeyError, TypeError) as exc:
            raise InputError(f"{source}: malformed static-check results ({exc})") from None


def is_static_json(path: Path) -> bool:
    """True when `path` is a JSON file written by `memlens check --json` (read cheaply)."""
    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    try:
        with path.open("r", encoding="utf-8") as stream:
            head = stream.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(rf'"kind"\s*:\s*"{KIND}"', head) is not None


def load_static(path: Path) -> StaticResults:
    return StaticResults.from_json(read_json(path), str(path))


def find_static(run_dir: str | Path) -> StaticResults | None:
    """The static figures of a run directory (its check.json), None if it has none (InputError if
    the file is damaged)."""
    path = Path(run_dir) / CHECK_FILE
    return load_static(path) if path.is_file() else None


LocalCause = Literal["spill", "large_array", "indexed_array", "none"]


def local_memory_cause(kernels: Iterable[StaticKernel]) -> LocalCause:
    """Why kernels use local memory, by ptxas's figures: register spill (spill stores or loads),
    an array too large for registers (a stack frame above REGISTER_FILE_BYTES, no spills), an array
    indexed at run time (a smaller stack frame or PTX `.local`, no spills), or none of these."""
    kernels = list(kernels)
    if any(k.spill_store_bytes or k.spill_load_bytes for k in kernels):
        return "spill"
    frame = max((max(k.stack_frame_bytes, k.ptx_local_bytes) for k in kernels), default=0)
    if frame > REGISTER_FILE_BYTES:
        return "large_array"
    if frame > 0 or any(k.ptx_local for k in kernels):
        return "indexed_array"
    return "none"


def numba_cc(arch: str) -> tuple[int, int]:
    """ "sm_90" -> (9, 0), "sm_100a" -> (10, 0); ConfigError for anything else."""
    match = _ARCH.match(arch)
    if not match:
        raise ConfigError(f"bad --arch {arch!r}: expected sm_<major><minor>, e.g. sm_90 or sm_90a")
    return int(match.group(1)), int(match.group(2))


# --- PTX --------------------------------------------------------------------------------------------

_FUNCTION_START = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\b")
_LOCAL_DECL = re.compile(r"^\s*\.local\b[^;\[]*?\.[busf](\d+)\s+[^\s\[;]+(?:\[(\d+)\])?")


def entry_body(ptx: str, symbol: str) -> str:
    """The PTX of entry `symbol`, from its `.entry` line to the next function (empty if absent)."""
    lines = ptx.splitlines()
    start = re.compile(rf"^\s*(?:\.(?:visible|weak|extern)\s+)*\.entry\s+{re.escape(symbol)}\s*\(")
    for index, line in enumerate(lines):
        if start.match(line):
            end = next((j for j in range(index + 1, len(lines)) if _FUNCTION_START.match(lines[j])), len(lines))
            return "\n".join(lines[index:end])
    return ""


def ptx_local_bytes(body: str) -> tuple[bool, int]:
    """Whether a function's PTX declares `.local` state space, and how many bytes it declares."""
    declared, total = False, 0
    for line in body.splitlines():
        match = _LOCAL_DECL.match(line)
        if match:
            declared = True
            total += int(match.group(1)) // 8 * int(match.group(2) or 1)
        elif re.match(r"^\s*\.local\b", line):
            declared = True
    return declared, total


# --- compiling ----------------------------------------------------------------------------------------

Progress = Callable[[str], None]


def check_suite(
    suite: Any, pattern: str | None = None, arch: str = "sm_90", prefer: str = "nvcc", progress: Progress | None = None
) -> StaticResults:
    """Compile the kernels of every variant of `suite` whose label matches `pattern`.
    A kernel that does not compile becomes a CompileFailure; a missing compiler raises."""
    from memlens.static import toolchain

    numba_cc(arch)
    variants = suite.selected(pattern)
    names: dict[tuple[Path, tuple[str, ...]], set[str]] = {}
    for kernel in (k for v in variants for k in v.kernels if hasattr(k, "source")):
        names.setdefault(_build_key(kernel), set()).add(kernel.name)
    builds: dict[tuple[Path, tuple[str, ...]], Any] = {}
    kernels: list[StaticKernel] = []
    failures: list[CompileFailure] = []
    compilers: set[str] = set()
    for variant in variants:
        for kernel in variant.kernels:
            if progress:
                progress(f"{variant.label}: {_kernel_name(kernel)}")
            try:
                if hasattr(kernel, "source"):
                    key = _build_key(kernel)
                    if key not in builds:
                        builds[key] = _compile_cuda(key[0], arch, key[1], sorted(names[key]), prefer, toolchain)
                    item, compiler = _cuda_kernel(variant, kernel, builds[key])
                else:
                    item, compiler = _numba_kernel(variant, kernel, arch, toolchain)
            except ProfilerError as exc:
                failures.append(CompileFailure(variant.label, _kernel_name(kernel), str(exc)))
                continue
            kernels.append(item)
            compilers.add(compiler)
    return StaticResults(arch, "; ".join(sorted(compilers)), str(suite.path), tuple(kernels), tuple(failures))


# How each compiler rejects an architecture it does not know: nvcc ("Unsupported gpu architecture
# 'sm_1000'"), ptxas ("Value 'sm_1000' is not defined for option 'gpu-name'"), NVRTC ("invalid value
# for --gpu-architecture (-arch)"), NVVM through Numba ("-arch=compute_1000").
_ARCH_REJECTED = re.compile(
    r"unsupported gpu architecture|for option 'gpu-name'|--gpu-architecture|-arch=compute", re.IGNORECASE
)
_COMPILER = re.compile(r"nvcc|nvrtc|nvvm|ptxas|numba-cuda|cuda compiler", re.IGNORECASE)
_MISSING = re.compile(r"not found|cannot be found|not installed|not available|could not be loaded", re.IGNORECASE)


def arch_rejection(failures: Iterable[CompileFailure]) -> str | None:
    """The compiler's own words where it rejected the architecture (the first such failure), else None."""
    return next((f.message for f in failures if _ARCH_REJECTED.search(f.message)), None)


def compiler_missing(failures: Iterable[CompileFailure]) -> bool:
    """Whether a failure says a compiler (nvcc, NVRTC, NVVM, ptxas, numba-cuda) is missing, not that it failed."""
    return any(_COMPILER.search(f.message) and _MISSING.search(f.message) for f in failures)


def without_kernels(suite: Any, pattern: str | None) -> list[str]:
    """Labels of matching variants that declare no kernels (nothing to compile statically)."""
    return [v.label for v in suite.variants(pattern) if not v.kernels]


def _build_key(kernel: Any) -> tuple[Path, tuple[str, ...]]:
    return Path(kernel.source), tuple(kernel.options)


def _kernel_name(kernel: Any) -> str:
    if hasattr(kernel, "source"):
        return str(kernel.name)
    function = getattr(kernel.function, "py_func", kernel.function)
    return str(getattr(function, "__name__", repr(function)))


def _static_kernel(variant: Any, kernel: Any, symbol: str, language: str, resources: Any, ptx: str) -> StaticKernel:
    declared, local_bytes = ptx_local_bytes(entry_body(ptx, symbol))
    return StaticKernel(
        variant.family.name,
        variant.name,
        _kernel_name(kernel),
        symbol,
        language,
        resources.registers,
        resources.stack_bytes,
        resources.spill_store_bytes,
        resources.spill_load_bytes,
        resources.shared_bytes,
        local_bytes,
        declared,
    )


def _cuda_kernel(variant: Any, kernel: Any, build: Any) -> tuple[StaticKernel, str]:
    resources = build.kernel(kernel.name)  # ProfilerError naming the entries when absent
    return _static_kernel(variant, kernel, resources.symbol, "cuda", resources, build.ptx), build.compiler


def _numba_kernel(variant: Any, kernel: Any, arch: str, toolchain: Any) -> tuple[StaticKernel, str]:
    ptx, compiler = _numba_ptx(kernel, arch)
    entries = re.findall(r"^\s*(?:\.(?:visible|weak)\s+)*\.entry\s+([\w$.]+)\s*\(", ptx, re.MULTILINE)
    if len(entries) != 1:
        raise ProfilerError(f"expected one .entry in Numba's PTX, found {len(entries)}")
    resources = toolchain.parse_ptxas_log(run_ptxas(ptx, arch, toolchain))
    if entries[0] not in resources:
        raise ProfilerError(f"ptxas reported no figures for {entries[0]}")
    compiler += f" + ptxas {ptxas_version(toolchain) or '?'}"
    return _static_kernel(variant, kernel, entries[0], "numba", resources[entries[0]], ptx), compiler


def _compile_cuda(
    source: Path, arch: str, options: tuple[str, ...], names: list[str], prefer: str, toolchain: Any
) -> Any:
    if not source.is_file():
        raise ProfilerError(f"CUDA source {source} not found")
    if prefer == "nvrtc" or toolchain.find_nvcc() is None:
        if toolchain.nvrtc_version() is None:
            raise ProfilerError(
                "no CUDA compiler: neither nvcc nor NVRTC found"
                " (pip install nvidia-cuda-nvrtc-cu12, or install a CUDA toolkit)"
            )
        return toolchain.compile_nvrtc(source, arch, options, names)
    return toolchain.compile_nvcc(source, arch, options, names)


def _numba_ptx(kernel: Any, arch: str) -> tuple[str, str]:
    try:
        import numba_cuda
        from numba import cuda
    except ImportError as exc:
        raise ProfilerError(f"numba-cuda is not installed ({exc})") from None
    function = getattr(kernel.function, "py_func", kernel.function)
    try:
        ptx, _ = cuda.compile_ptx(function, kernel.signature, cc=numba_cc(arch))
    except Exception as exc:  # noqa: BLE001 - numba raises many kinds; all are a failed compile
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ProfilerError(f"numba.cuda.compile_ptx failed: {type(exc).__name__}: {first}") from exc
    return ptx, f"numba-cuda {getattr(numba_cuda, '__version__', '?')}"


def run_ptxas(ptx: str, arch: str, toolchain: Any) -> str:
    """`ptxas -v -arch=<arch>` on `ptx`; its report (ptxas writes it on stderr or stdout)."""
    ptxas = toolchain.find_ptxas()
    if ptxas is None:
        raise ProfilerError("ptxas not found: pip install nvidia-cuda-nvcc-cu12, or install a CUDA toolkit")
    with tempfile.TemporaryDirectory(prefix="memlens-ptxas-") as tmp:
        source = Path(tmp) / "kernel.ptx"
        source.write_text(ptx, encoding="utf-8")
        argv = [str(ptxas), "-v", f"-arch={arch}", str(source), "-o", str(Path(tmp) / "kernel.cubin")]
        try:
            done = run_command(argv, timeout=PTXAS_TIMEOUT_S)
        except CommandTimeout:
            raise ProfilerError(f"ptxas timed out after {PTXAS_TIMEOUT_S:.0f} s") from None
    output = done.output
    if done.returncode != 0:
        first = next((line for line in output.splitlines() if "error" in line or "fatal" in line), output.strip())
        raise ProfilerError(f"ptxas ({ptxas}) failed (exit {done.returncode}): {first}")
    return output


def ptxas_version(toolchain: Any) -> str | None:
    ptxas = toolchain.find_ptxas()
    return None if ptxas is None else _tool_version(str(ptxas))


@functools.cache
def _tool_version(tool: str) -> str | None:
    try:
        done = run_command([tool, "--version"], timeout=30)
    except CommandFailed:
        return None
    found = re.search(r"V(\d+\.\d+\.\d+)", done.stdout)
    return found.group(1) if found else None


def rows(results: StaticResults) -> Iterable[tuple[str, ...]]:
    """Per kernel: label, kernel, registers, stack, spill st/ld, shared, PTX .local; for tables."""
    for k in results.kernels:
        local = f"yes ({k.ptx_local_bytes} B)" if k.ptx_local else "no"
        yield (
            k.label,
            k.kernel,
            str(k.registers),
            str(k.stack_frame_bytes),
            str(k.spill_store_bytes),
            str(k.spill_load_bytes),
            str(k.shared_bytes),
            local,
        )
