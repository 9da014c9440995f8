"""The built-in suite (kernels/) against the suite contract in profiling/suite.py, on the CPU."""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memlens.errors import VerificationError
from memlens.suite import NAME_PATTERN, CudaKernel, Family, Launch, NumbaKernel, Suite, load_suite
from tests.conftest import REPO

KERNELS = Path(__file__).resolve().parents[2] / "kernels"

EXPECTED = {
    "transpose": (
        ["conflict", "padded", "swizzled", "tile64_padded", "tile64_swizzled", "vec4_padded", "vec4_swizzled"],
        "conflict",
    ),
    "running_mean": (["register", "local", "spill"], "register"),
    "matmul": (["naive", "tiled_article", "tiled", "tiled_pmpp"], "naive"),
    "fp16_transpose": (["dense", "pitch128", "padded", "xor_row", "xor_128b"], "dense"),
    "tensor_matmul": (["conflict", "padded", "swizzled"], "conflict"),
}
TILES = {"transpose": 32, "running_mean": 256, "matmul": 16}  # block or tile edge of each family
WHOLE_TILES = {"fp16_transpose": 32, "tensor_matmul": 64}  # families whose sizes must be whole tiles (check_size)
DTYPES = {"fp16_transpose": np.float16, "tensor_matmul": np.float16}  # the input type where not float32

# docs/own-kernels.md's example of a user's own suite file: two variants of one family.
USER_SUITE = re.search(r"```python\n(# my_suite.py.*?)```", (REPO / "docs/own-kernels.md").read_text(), re.S).group(1)

WRONG_SUITE = """
import numpy as np
from memlens.suite import Expect, Family, Launch

def make_inputs(rng, size): return {"x": rng.random((size["rows"], size["cols"]), dtype=np.float32) + 1}
double = Family("double", "y = 2 x", make_inputs, lambda inputs, size: 2 * inputs["x"],
                default_size={"rows": 4, "cols": 5})

@double.variant("off_by_one", demonstrates="gets element [2][3] wrong", expect=Expect(bank_conflicts=False))
def off_by_one(inputs, size):
    out = 2 * inputs["x"]
    out[2, 3] += 1
    return Launch(run=lambda: None, output=lambda: out.copy())
"""


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(KERNELS)


def test_families_variants_and_baselines(suite: Suite) -> None:
    found = {f.name: ([v.name for v in f.variants], f.baseline.name) for f in suite.families}
    assert found == EXPECTED
    assert [v.label for v in suite.variants("^transpose/(padded|swizzled)")] == [
        "transpose/padded",
        "transpose/swizzled",
    ]


def test_every_variant_declares_what_it_shows(suite: Suite) -> None:
    assert len(list(suite.variants())) == sum(len(names) for names, _ in EXPECTED.values())  # every variant
    for variant in suite.variants():
        assert NAME_PATTERN.match(variant.name) and NAME_PATTERN.match(variant.family.name)
        assert variant.demonstrates.strip() and "\n" not in variant.demonstrates
        assert variant.expect.bank_conflicts is not None and variant.expect.local_memory is not None
        assert variant.expect.note, variant.label
        assert variant.kernels, variant.label


def test_kernels_name_what_their_sources_define(suite: Suite) -> None:
    assert len(list(suite.variants())) == sum(len(names) for names, _ in EXPECTED.values())  # every variant
    for variant in suite.variants():
        for kernel in variant.kernels:
            if isinstance(kernel, CudaKernel):
                source = Path(kernel.source).read_text()
                assert Path(kernel.source).parent == KERNELS
                base = kernel.name.split("<")[0]
                assert f" {base}(" in source, kernel.name
                if "<" in kernel.name:  # a template: explicitly instantiated, so nvcc emits it
                    assert f"template __global__ void {kernel.name}(" in source
                else:  # launch bounds, where given, stand between `void` and the name
                    bounds = r"(?:__launch_bounds__\([^)]*\)\s+)?"
                    assert re.search(rf'extern "C" __global__ void\s+{bounds}{kernel.name}\(', source), kernel.name
            else:
                assert isinstance(kernel, NumbaKernel)
                assert inspect.isfunction(kernel.function)  # the plain function, not a dispatcher
                assert kernel.signature.startswith("void(")


@pytest.mark.parametrize("family_name", sorted(EXPECTED))
def test_inputs_are_fresh_random_and_references_fit(suite: Suite, family_name: str) -> None:
    family: Family = suite.family(family_name)
    size = family.size(small=True)
    if family_name in WHOLE_TILES:
        assert all(v % WHOLE_TILES[family_name] == 0 and v > WHOLE_TILES[family_name] for v in size.values())
    else:
        assert all(v % TILES[family_name] for v in size.values()), "small sizes must not be multiples of the tile"
    first = family.make_inputs(np.random.default_rng(1), size)
    second = family.make_inputs(np.random.default_rng(2), size)
    for name, array in first.items():
        assert array.dtype == DTYPES.get(family_name, np.float32)
        assert np.all(array != 0) and np.all(np.isfinite(array))
        assert not np.array_equal(array, second[name])
    expected = family.reference(first, size)
    variant = family.variants[0]
    output_dtype = np.float16 if expected.dtype == np.float16 else np.float32  # the kernels' outputs: fp16 or fp32
    family.verify(variant, expected.astype(output_dtype), expected)  # within tolerance
    with pytest.raises(VerificationError, match=rf"{family_name}/{variant.name}: wrong result at index (0|\(0, 0\))"):
        family.verify(variant, np.full_like(expected, np.nan), expected)  # reset()'s poison never passes


def test_min_bytes_count_each_input_and_output_once(suite: Suite) -> None:
    assert len(suite.families) == len(EXPECTED)
    for family in suite.families:
        size = family.size(small=True)
        inputs = family.make_inputs(np.random.default_rng(0), size)
        output = family.reference(inputs, size)
        itemsize = 2 if output.dtype == np.float16 else 4  # outputs are fp32 (references may be fp64), or fp16
        moved = sum(a.nbytes for a in inputs.values()) + output.size * itemsize
        assert family.min_bytes is not None and family.min_bytes(size) == moved, family.name


def test_default_sizes(suite: Suite) -> None:
    assert suite.family("transpose").size() == {"rows": 8192, "cols": 8192}
    assert suite.family("running_mean").size() == {"n": 2**24}
    assert suite.family("matmul").size() == {"m": 2048, "k": 2048, "n": 2048}
    assert suite.family("transpose").size({"rows": 100}, small=True) == {"rows": 100, "cols": 45}


def test_matmul_tolerance_covers_fp32_sums_at_default_k(suite: Suite) -> None:
    family = suite.family("matmul")
    inputs = family.make_inputs(np.random.default_rng(3), {"m": 32, "k": 2048, "n": 256})
    a, b = inputs["a"], inputs["b"]
    acc = np.zeros((32, 256), dtype=np.float32)
    for p in range(a.shape[1]):  # the kernels' order: one fp32 multiply-add per k
        acc += a[:, p : p + 1] * b[p : p + 1, :]
    family.verify(family.variants[0], acc, family.reference(inputs, {}))


def test_running_mean_tolerance_covers_fp32_sums(suite: Suite) -> None:
    family = suite.family("running_mean")
    inputs = family.make_inputs(np.random.default_rng(4), {"n": 200_000})
    x = inputs["x"]
    n = x.size - 31
    acc = np.zeros(n, dtype=np.float32)
    for j in range(32):  # the kernels' order
        acc += x[j : j + n]
    family.verify(family.variants[0], acc * np.float32(1 / 32), family.reference(inputs, {}))


def test_a_wrong_variant_names_itself_and_the_first_wrong_index(tmp_path: Path) -> None:
    path = tmp_path / "wrong.py"
    path.write_text(WRONG_SUITE)
    (family,) = load_suite(path).families
    size = family.size()
    inputs = family.make_inputs(np.random.default_rng(0), size)
    launch = family.variants[0].prepare(inputs, size)
    launch.run()
    with pytest.raises(VerificationError, match=r"double/off_by_one: wrong result at index \(2, 3\).*1 of 20"):
        family.verify(family.variants[0], launch.output(), family.reference(inputs, size))


class FakeDeviceArray:
    """A device array as verify sees one: __cuda_array_interface__, and a copy to the host (Numba's)."""

    __cuda_array_interface__ = {"shape": (4, 5), "typestr": "<f4", "data": (0, False), "version": 3}

    def __init__(self, host: np.ndarray) -> None:
        self.host, self.copies = host, 0

    def copy_to_host(self) -> np.ndarray:
        self.copies += 1
        return self.host.copy()


def test_device_outputs_are_copied_to_the_host_without_cupy(tmp_path: Path, monkeypatch) -> None:
    """With no CuPy to compare on the GPU, verify copies a device output to the host: same verdict
    and message as for the host output, and a Launch's checked_output prefers the device one."""
    path = tmp_path / "wrong.py"
    path.write_text(WRONG_SUITE)
    (family,) = load_suite(path).families
    size = family.size()
    inputs = family.make_inputs(np.random.default_rng(0), size)
    expected = family.reference(inputs, size)
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    right = FakeDeviceArray(expected.copy())
    family.verify(family.variants[0], right, expected)
    assert right.copies == 1
    wrong = FakeDeviceArray(family.variants[0].prepare(inputs, size).output())
    launch = Launch(
        run=lambda: None, output=lambda: pytest.fail("the host output was used"), device_output=lambda: wrong
    )
    with pytest.raises(VerificationError, match=r"double/off_by_one: wrong result at index \(2, 3\): got np.float32"):
        family.verify(family.variants[0], launch.checked_output(), expected)


def test_the_readme_user_suite_loads(tmp_path: Path) -> None:
    pytest.importorskip("cupy", reason="docs/own-kernels.md's example imports CuPy: pip install 'memlens[cuda13]'")
    path = tmp_path / "my_suite.py"
    path.write_text(textwrap.dedent(USER_SUITE))
    (family,) = load_suite(path).families
    assert [v.name for v in family.variants] == ["multiply", "elementwise"]
    assert family.baseline.name == "multiply"


class _FakeCupy:
    """CuPy's asarray and ndarray over NumPy (a device pointer is a host buffer and an offset): what went up."""

    class _Pointer:
        def __init__(self, buffer: np.ndarray, offset: int = 0) -> None:
            self.buffer, self.offset = buffer, offset

        def __add__(self, offset: int) -> _FakeCupy._Pointer:
            return _FakeCupy._Pointer(self.buffer, self.offset + offset)

    def __init__(self) -> None:
        self.uploads: list[np.ndarray] = []

    def asarray(self, array: np.ndarray):
        self.uploads.append(array)
        copy = np.array(array)  # a contiguous copy, as an upload makes
        wrapped = type("Device", (), {})()
        wrapped.data, wrapped.values = self._Pointer(copy), copy
        return wrapped

    def ndarray(self, shape, dtype, memptr, strides) -> np.ndarray:
        return np.ndarray(shape, dtype, buffer=memptr.buffer, offset=memptr.offset, strides=strides)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_transposed_reference_goes_up_as_the_array_it_views(dtype) -> None:
    """device_copy: a transpose's reference `a.T` (here of an fp16 array viewed from uint16 bits, as
    fp16_transpose draws it) is uploaded as `a` itself, with no host copy, and reads as `a.T` there;
    a view of part of an array, or a contiguous one, goes up as it is."""
    from memlens.suite import device_copy

    bits = np.arange(48, dtype=np.uint16 if dtype == np.float16 else np.uint32).reshape(6, 8)
    a = bits.view(dtype)
    cupy = _FakeCupy()
    on_device = device_copy(cupy, a.T)
    assert np.array_equal(on_device, a.T, equal_nan=True) and on_device.strides == a.T.strides
    assert len(cupy.uploads) == 1 and np.shares_memory(cupy.uploads[0], a) and cupy.uploads[0].flags.c_contiguous
    part = a[:, :3].T
    assert np.array_equal(device_copy(cupy, part).values, part, equal_nan=True) and cupy.uploads[-1] is part
    assert device_copy(cupy, a).values is not a and cupy.uploads[-1] is a
