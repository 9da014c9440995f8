"""Every variant of the built-in suite on a GPU, through the runner's steps (prepare, warm-up
run, verify, reset, run, verify), at its default size and at sizes that are no multiple of
its tiles. Run on a GPU machine: python -m pytest -m gpu tests/test_kernels_gpu.py"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from profiling.suite import Variant, load_suite

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
SUITE = load_suite(KERNELS)
VARIANTS = list(SUITE.variants())

ODD_SIZES = {  # larger than the small sizes, still no multiple of 32, 256 or 16
    "transpose": {"rows": 4099, "cols": 2053},
    "running_mean": {"n": 1_000_003},
    "matmul": {"m": 513, "k": 257, "n": 1031},
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
    launch.run()
    family.verify(variant, launch.output(), expected)


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
