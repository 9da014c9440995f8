"""The suite contract: families of kernel variants, and loading a suite from a path.

A suite is a directory (or one .py file) whose modules define `Family` objects at module
level, the way pytest collects tests: memlens imports them by path; they are not installed.
A suite file is code: loading it runs it with the user's rights.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from memlens.errors import ConfigError, SetupError, VerificationError
from memlens.model.nvtx_names import NAME_PATTERN, compile_filter
from memlens.model.nvtx_names import NVTX_DOMAIN as NVTX_DOMAIN  # re-exported: suites name ranges with it
from memlens.model.results import Expect as Expect  # re-exported: what a variant declares
from memlens.suite_path import suite_root

Inputs = dict[str, np.ndarray]
Size = Mapping[str, int]


@dataclass(frozen=True)
class CudaKernel:
    """A CUDA C++ kernel in a .cu file, for static checks (`memlens check`) without a GPU.
    `name` is the kernel as the source names it: an extern "C" name, or a template instance
    such as "transpose<1>" that the file instantiates explicitly."""

    source: Path
    name: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class NumbaKernel:
    """A Numba kernel, for static checks: the plain Python function and one signature."""

    function: Callable[..., Any]
    signature: str


@dataclass
class Launch:
    """A prepared variant: `run` launches the kernel once (asynchronously), `output` copies
    the result to the host (synchronising), `reset` poisons the output before a launch.
    `device_output`, where given, returns the result where it lies on the GPU (a CuPy or Numba
    array, no copy): memlens then checks it there (`checked_output`)."""

    run: Callable[[], None]
    output: Callable[[], np.ndarray]
    reset: Callable[[], None] | None = None
    device_output: Callable[[], Any] | None = None

    def checked_output(self) -> Any:
        """What memlens verifies: the result on the GPU where the launch offers it, else on the host."""
        return self.device_output() if self.device_output else self.output()


@dataclass
class Variant:
    family: Family
    name: str
    demonstrates: str
    expect: Expect
    prepare: Callable[[Inputs, Size], Launch]
    baseline: bool = False
    kernels: tuple[CudaKernel | NumbaKernel, ...] = ()  # what the variant launches, for static checks

    @property
    def range_name(self) -> str:
        return f"{self.family.name}.{self.name}"

    @property
    def label(self) -> str:
        return f"{self.family.name}/{self.name}"


@dataclass
class Family:
    """Variants of one computation, one of them the baseline the others are compared with.

    `make_inputs(rng, size)` returns fresh random host arrays; `reference(inputs, size)` the
    expected output; `rtol`/`atol` of 0 mean exact comparison."""

    name: str
    description: str
    make_inputs: Callable[[np.random.Generator, Size], Inputs]
    reference: Callable[[Inputs, Size], np.ndarray]
    default_size: dict[str, int]
    small_size: dict[str, int] = field(default_factory=dict)
    rtol: float = 0.0
    atol: float = 0.0
    # fewest bytes a kernel must move through device memory (each input read once, each output written
    # once): `memlens bench`'s bandwidth; with min_flops, a case's expected cost in a run over several GPUs
    min_bytes: Callable[[Size], int] | None = None
    variants: list[Variant] = field(default_factory=list)
    # raises ConfigError for a size its kernels cannot run (checked for each size of a --sweep)
    check_size: Callable[[Size], None] | None = None
    # the oldest GPU its kernels run on, (major, minor), and why ("stmatrix"): older ones skip it, in one line
    min_compute_capability: tuple[int, int] | None = None
    needs: str = ""
    min_flops: Callable[[Size], int] | None = None  # fewest FLOPs it needs (2 m n k for c = a b): see min_bytes

    def __post_init__(self) -> None:
        _check_name(self.name, "family")
        need = self.min_compute_capability
        if need is not None and not (isinstance(need, tuple) and len(need) == 2 and all(type(v) is int for v in need)):
            raise ConfigError(f"family {self.name!r}: min_compute_capability {need!r} is not (major, minor)")

    def requirement(self) -> str:
        """What GPU the family needs, in words ("" where any will do)."""
        if (need := self.min_compute_capability) is None:
            return ""
        return f"needs compute capability {need[0]}.{need[1]} or newer" + (f" ({self.needs})" if self.needs else "")

    def unsupported_on(self, capability: tuple[int, int] | None) -> str | None:
        """Why the family cannot run on a GPU of `capability`, in one line; None where it can or the
        capability is unknown (the launch then says what went wrong)."""
        need = self.min_compute_capability
        if need is None or capability is None or tuple(capability) >= need:
            return None
        return f"{self.requirement()}; this GPU is {capability[0]}.{capability[1]}"

    def variant(
        self,
        name: str,
        *,
        demonstrates: str,
        expect: Expect | None = None,
        baseline: bool = False,
        kernels: tuple[CudaKernel | NumbaKernel, ...] = (),
    ) -> Callable[[Callable[[Inputs, Size], Launch]], Callable[[Inputs, Size], Launch]]:
        """Decorator registering `prepare(inputs, size) -> Launch` as a variant."""
        _check_name(name, "variant")

        def register(prepare: Callable[[Inputs, Size], Launch]) -> Callable[[Inputs, Size], Launch]:
            if any(v.name == name for v in self.variants):
                raise ConfigError(f"family {self.name!r} defines variant {name!r} twice")
            self.variants.append(Variant(self, name, demonstrates, expect or Expect(), prepare, baseline, kernels))
            return prepare

        return register

    @property
    def baseline(self) -> Variant:
        marked = [v for v in self.variants if v.baseline]
        return marked[0] if marked else self.variants[0]

    def size(self, overrides: Mapping[str, int] | None = None, small: bool = False) -> dict[str, int]:
        """Default (or small) sizes with overrides applied: "n" sets n in every family that has
        one, "matmul.n" only in matmul."""
        size = dict(self.default_size)
        if small:
            size.update(self.small_size)
        generic = {k: v for k, v in (overrides or {}).items() if "." not in k}
        specific = {k.partition(".")[2]: v for k, v in (overrides or {}).items() if k.startswith(f"{self.name}.")}
        size.update({k: v for k, v in {**generic, **specific}.items() if k in size})
        return size

    def verify(self, variant: Variant, got: Any, expected: Any) -> None:
        """Raise VerificationError naming the variant and the first wrong index. Where either array
        lies on the GPU (CuPy, Numba), the comparison runs there: one kernel counts the wrong
        elements, and only where some are wrong does more run and the first come to the host."""
        xp, got, expected = _common_module(got, expected)
        if got.shape != expected.shape:
            raise VerificationError(f"{variant.label}: output shape {got.shape}, expected {expected.shape}")
        if xp is not np and _count_wrong_on_device(xp, got, expected, self.rtol, self.atol) == 0:
            return
        if self.rtol == 0 and self.atol == 0:
            bad = got != expected
        else:
            bad = ~xp.isclose(got, expected, rtol=self.rtol, atol=self.atol)
        wrong = int(bad.sum())
        if wrong:
            index = tuple(int(i) for i in np.unravel_index(int(xp.argmax(bad.ravel())), bad.shape))
            where = index[0] if len(index) == 1 else index
            got_value, expected_value = (_to_host(a[index])[()] for a in (got, expected))
            raise VerificationError(
                f"{variant.label}: wrong result at index {where}: got {got_value!r},"
                f" expected {expected_value!r} ({wrong} of {bad.size} elements wrong)"
            )


def _common_module(got: Any, expected: Any) -> tuple[Any, Any, Any]:
    """(array module, got, expected) with both arrays in it: CuPy where either lies on the GPU,
    CuPy is installed and both hold real numbers (a Numba device array is wrapped, not copied),
    else NumPy (device arrays copied to the host)."""
    if on_gpu(got) or on_gpu(expected):
        try:
            import cupy
        except ImportError:
            return np, _to_host(got), _to_host(expected)
        got = cupy.asarray(got)
        expected = device_copy(cupy, expected) if isinstance(expected, np.ndarray) else cupy.asarray(expected)
        if got.dtype.kind in "biuf" and expected.dtype.kind in "biuf":
            return cupy, got, expected
        return np, got.get(), expected.get()
    return np, np.asarray(got), np.asarray(expected)


def _count_wrong_on_device(cupy: Any, got: Any, expected: Any, rtol: float, atol: float) -> int:
    """Elements not close (numpy.isclose's test, equal_nan=False; exact where rtol = atol = 0),
    counted in one kernel launch: profiled processes pay for every launch, however small."""
    return int(_wrong_counter(cupy)(got, expected, float(rtol), float(atol)))


@functools.cache
def _wrong_counter(cupy: Any) -> Any:
    # numpy.isclose: |got - want| <= atol + rtol |want| where want is finite, else got == want
    close = (
        "((double)got == (double)want"
        " || (isfinite((double)want) && fabs((double)got - (double)want) <= atol + rtol * fabs((double)want)))"
    )
    return cupy.ReductionKernel(
        "T got, U want, float64 rtol, float64 atol",
        "int64 wrong",
        f"!{close}",
        "a + b",
        "wrong = a",
        "0",
        "memlens_count_wrong",
    )


def gpu_compute_capability() -> tuple[int, int] | None:
    """Compute capability (major, minor) of the GPU CuPy launches on (device 0 of the process);
    None where CuPy is missing or sees no GPU (then nothing is skipped for it)."""
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no GPU: the capability is unknown
        return None
    return int(props["major"]), int(props["minor"])


SKIPPED = "skipped"  # the status of a variant its family's GPU requirement left out (Family.unsupported_on)


def on_gpu(array: Any) -> bool:
    """Whether `array` lies on the GPU: a CuPy or Numba device array (CUDA array interface)."""
    return hasattr(array, "__cuda_array_interface__")


def device_copy(cupy: Any, array: np.ndarray) -> Any:
    """`array` on the GPU (a CuPy array). A strided view of all of a contiguous array, as a transpose's
    reference `a.T` is, goes up as that array and is viewed alike there: NumPy would first copy it on
    the host, element by element (a third of a second for a 268 MB transpose)."""
    base = array.base
    if array.flags.c_contiguous or not isinstance(base, np.ndarray):
        return cupy.asarray(array)
    whole_view = (
        base.flags.c_contiguous
        and base.itemsize == array.itemsize
        and base.nbytes == array.nbytes
        and all(stride >= 0 for stride in array.strides)
    )
    if not whole_view:
        return cupy.asarray(array)
    offset = array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    on_device = cupy.asarray(base.view(array.dtype))  # a view of another dtype's bits (an fp16 draw) as its own
    return cupy.ndarray(array.shape, array.dtype, on_device.data + offset, array.strides)


class DeviceReferences:
    """References copied to the GPU once each, by key (an input set), for the outputs checked there, until
    `clear` lets them go: a family's variants share its references, not each a copy of its own."""

    def __init__(self) -> None:
        self._copies: dict[int, Any] = {}

    def like(self, key: int, expected: np.ndarray | None, got: Any) -> Any:
        """`expected` where `got` lies: its GPU copy (CuPy) for an output on the GPU, else itself."""
        if expected is None or not on_gpu(got):
            return expected
        if key not in self._copies:
            try:
                import cupy
            except ImportError:
                return expected  # verify copies `got` to the host instead
            self._copies[key] = device_copy(cupy, expected)
        return self._copies[key]

    def clear(self) -> None:
        self._copies.clear()


def _to_host(array: Any) -> np.ndarray:
    if not on_gpu(array):
        return np.asarray(array)
    to_host = getattr(array, "copy_to_host", None) or array.get  # Numba, CuPy
    return np.asarray(to_host())


def _check_name(name: str, what: str) -> None:
    if not NAME_PATTERN.match(name):
        raise ConfigError(f"{what} name {name!r} must be letters, digits and _ starting with a letter")


@dataclass
class Suite:
    path: Path
    families: list[Family]

    def variants(self, pattern: str | None = None) -> Iterator[Variant]:
        """Variants whose label family/variant matches the regex `pattern` (search)."""
        regex = compile_filter(pattern)
        for family in self.families:
            for variant in family.variants:
                if regex is None or regex.search(variant.label):
                    yield variant

    def selected(self, pattern: str | None = None) -> list[Variant]:
        """`variants(pattern)`, ConfigError where the pattern selects none."""
        variants = list(self.variants(pattern))
        if not variants:
            raise ConfigError(f"no variant of suite {self.path} matches -k {pattern!r}")
        return variants

    def check_sizes(self, overrides: Mapping[str, int], variants: list[Variant]) -> None:
        """Every override must name a size of some selected family."""
        families = {v.family.name: v.family for v in variants}
        for key in overrides:
            family, dot, name = key.rpartition(".")
            candidates = [families[family]] if dot and family in families else [] if dot else families.values()
            if not any(name in f.default_size for f in candidates):
                known = sorted({f"{f.name}.{k}" for f in families.values() for k in f.default_size})
                raise ConfigError(f"--size {key}: no selected family has that size (sizes: {', '.join(known)})")

    def family(self, name: str) -> Family:
        for family in self.families:
            if family.name == name:
                return family
        raise ConfigError(f"suite {self.path} has no family {name!r}")


def load_suite(path: str | Path | None = None) -> Suite:
    """Import every module of a suite directory (files not starting with `_`) or one file."""
    root = suite_root(path)
    files = sorted(p for p in root.glob("*.py") if not p.name.startswith("_")) if root.is_dir() else [root]
    families: list[Family] = []
    for file in files:
        module = _import_file(file)
        families.extend(v for v in vars(module).values() if isinstance(v, Family))
    seen: set[str] = set()
    for family in families:
        if family.name in seen:
            raise ConfigError(f"suite {root} defines family {family.name!r} twice")
        if not family.variants:
            raise ConfigError(f"family {family.name!r} in {root} has no variants")
        seen.add(family.name)
    if not families:
        raise ConfigError(f"suite {root} defines no Family")
    return Suite(root, families)


CUPY_INSTALL = "pip install 'memlens[cuda13]' (or 'memlens[cuda12]': the CUDA major nvidia-smi prints)"


def _import_file(file: Path) -> ModuleType:
    name = f"memlens_suite_{abs(hash(str(file.resolve()))):x}_{file.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import suite file {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        del sys.modules[name]
        if (exc.name or "").partition(".")[0] == "cupy":  # an environment to fix, not a suite error
            raise SetupError(f"suite file {file} needs CuPy ({exc}): {CUPY_INSTALL}") from None
        raise ConfigError(f"suite file {file} failed to import: {type(exc).__name__}: {exc}") from exc
    except SystemExit as exc:  # sys.exit() in a suite file would end memlens silently with its code
        del sys.modules[name]
        raise ConfigError(f"suite file {file} called sys.exit({exc.code!r}) while being imported") from None
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"suite file {file} failed to import: {type(exc).__name__}: {exc}") from exc
    return module
