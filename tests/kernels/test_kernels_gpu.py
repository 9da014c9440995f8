"""Every variant of the built-in suite on a GPU, through the runner's steps (prepare, warm-up
run, verify, reset, run, verify), at its default size and at sizes that are no multiple of
its tiles. Run on a GPU machine: python -m pytest -m gpu tests/kernels/test_kernels_gpu.py"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from memlens.errors import VerificationError
from memlens.suite import Family, Variant, load_suite

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
SUITE = load_suite(KERNELS)
VARIANTS = list(SUITE.variants())

ODD_SIZES = {  # larger than the small sizes, still no multiple of 32, 256 or 16
    "transpose": {"rows": 4099, "cols": 2053},
    "running_mean": {"n": 1_000_003},
    "matmul": {"m": 513, "k": 257, "n": 1031},
    "fp16_transpose": {"n": 1056},  # whole 32x32 tiles only (check_size): 33 of them, no multiple of 64
    "tensor_matmul": {"m": 1088, "k": 576, "n": 320},  # whole 64x64 tiles only: 17 x 5 blocks, 9 steps of k
}

pytestmark = pytest.mark.gpu


@functools.cache
def _case(family_name: str, size_key: tuple[tuple[str, int], ...]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Inputs and reference, computed once per family and size (the matmul reference is slow)."""
    family, size = SUITE.family(family_name), dict(size_key)
    inputs = family.make_inputs(np.random.default_rng(7), size)
    return inputs, family.reference(inputs, size)


def _check(variant: Variant, size: dict[str, int]) -> None:
    family = variant.family
    inputs, expected = _case(family.name, tuple(sorted(size.items())))
    launch = variant.prepare(inputs, size)
    launch.run()
    family.verify(variant, launch.output(), expected)
    assert launch.reset is not None
    launch.reset()
    assert np.isnan(launch.output()).all(), "reset() must poison the whole output"
    with pytest.raises(VerificationError, match=r"wrong result at index .*: got np.float(16|32)\(nan\)"):
        family.verify(variant, launch.checked_output(), expected)  # checked where it lies
    launch.run()
    family.verify(variant, launch.output(), expected)
    family.verify(variant, launch.checked_output(), expected)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
def test_default_size(variant: Variant) -> None:
    _check(variant, variant.family.size())


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
@pytest.mark.parametrize("which", ["small", "odd"])
def test_sizes_that_leave_partial_tiles(variant: Variant, which: str) -> None:
    family = variant.family
    size = family.size(small=True) if which == "small" else family.size(ODD_SIZES[family.name])
    _check(variant, size)


def test_local_and_register_windows_agree_bitwise() -> None:
    family = SUITE.family("running_mean")
    size = family.size(small=True)
    inputs, _ = _case(family.name, tuple(sorted(size.items())))
    outputs = []
    for variant in family.variants:
        launch = variant.prepare(inputs, size)
        launch.run()
        outputs.append(launch.output())
    assert all(np.array_equal(outputs[0], other) for other in outputs[1:])


def test_verify_on_the_gpu_finds_what_numpy_finds() -> None:
    """The one-kernel count on the GPU against NumPy's verdict, with the same message: exact and
    tolerant families, a NaN, an element just outside the tolerance, infinities, a Numba device
    array, a float32 output against a float64 reference."""
    import cupy
    from numba import cuda

    def family(name: str, **tolerance: float) -> Family:
        made = Family(name, "x", lambda rng, size: {}, lambda inputs, size: None, default_size={}, **tolerance)
        made.variant("v", demonstrates="d")(lambda inputs, size: None)
        return made

    exact, tolerant = family("exact"), family("tolerant", rtol=1e-5, atol=1e-6)
    expected = np.random.default_rng(3).random((300, 257))

    def verdict(of: Family, got: np.ndarray, want: np.ndarray = expected) -> str:
        messages = []
        for where in (got, cupy.asarray(got), cuda.to_device(got)):
            try:
                of.verify(of.variants[0], where, want)
                messages.append("ok")
            except VerificationError as exc:
                messages.append(str(exc))
        assert messages[0] == messages[1] == messages[2], messages
        return messages[0]

    assert verdict(exact, expected.copy()) == verdict(tolerant, expected * (1 + 5e-6)) == "ok"
    column = expected.copy()
    column[:, 3] += 1
    assert verdict(exact, column).startswith("exact/v: wrong result at index (0, 3): got np.float64(")
    assert verdict(exact, column).endswith("(300 of 77100 elements wrong)")
    nan = expected.copy()
    nan[7, 9] = np.nan
    assert verdict(tolerant, nan).startswith("tolerant/v: wrong result at index (7, 9): got np.float64(nan)")
    off = expected.copy()
    off[299, 256] += 1e-6 + 1e-5 * off[299, 256] + 1e-9
    assert verdict(tolerant, off).endswith("(1 of 77100 elements wrong)") and "(299, 256)" in verdict(tolerant, off)
    infinite = expected.copy()
    infinite[0, 0] = np.inf
    assert verdict(tolerant, infinite, infinite) == verdict(exact, infinite, infinite) == "ok"
    assert "at index (0, 0)" in verdict(tolerant, expected, infinite)
    single = expected.astype(np.float32)
    assert verdict(exact, single).endswith("elements wrong)")  # float32 rounding: not exact
    assert verdict(tolerant, single) == "ok"
