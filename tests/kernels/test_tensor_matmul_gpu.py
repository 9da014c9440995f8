"""GPU tier: the tensor_matmul family profiled at its small size (m = 192, k = 256, n = 128: 6 blocks,
4 steps of k each) under real ncu; each variant's exact excess wavefronts equal the paper figure it
declares, all of them on the load side (ldmatrix) and none on the store side (the tile fill's STS.128),
and its wavefronts and their ideal are the phases counted in tests/kernels/test_tensor_matmul.py.
Needs compute capability 8.0. Run on a GPU machine: python -m pytest -m gpu tests/kernels/test_tensor_matmul_gpu.py"""

from __future__ import annotations

import pytest

from memlens.suite import gpu_compute_capability, load_suite
from tests.conftest import REPO
from tests.support.family_runs import profile_family_small

pytestmark = pytest.mark.gpu
FAMILY = load_suite(REPO / "kernels").family("tensor_matmul")
SIZE = FAMILY.size(small=True)
STEPS = (SIZE["m"] // 64) * (SIZE["n"] // 64) * (SIZE["k"] // 64)  # a block's 64-wide steps of k, all blocks
# Ideal wavefronts a block's step: 4 warps x (8 STS.128 x 4 quarter-warps + 16 ldmatrix.x4 x 4 matrices)
IDEAL_PER_STEP = 4 * (8 * 4 + 16 * 4)
LAYOUTS = ("conflict", "padded", "swizzled")


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    capability = gpu_compute_capability()
    if capability is not None and capability < (8, 0):
        pytest.skip(f"tensor_matmul needs compute capability 8.0 (mma.sync.m16n8k16); this GPU is {capability}")
    return profile_family_small(tmp_path_factory.mktemp("runs"), "tensor_matmul")


def _paper(layout: str) -> int:
    variant = next(v for v in FAMILY.variants if v.name == layout)
    figure = variant.expect.at_size(SIZE).excess_wavefronts
    assert isinstance(figure, int)
    return figure


def test_the_paper_figures_at_the_small_size() -> None:
    assert STEPS == 24 and {layout: _paper(layout) for layout in LAYOUTS} == {
        "conflict": 43_008,
        "padded": 0,
        "swizzled": 0,
    }


@pytest.mark.parametrize("layout", LAYOUTS)
def test_exact_excess_is_the_paper_figure(kernels, layout: str) -> None:
    kernel = kernels[f"tensor_matmul/{layout}"]
    assert kernel.metric("exact_excess_wavefronts").value == _paper(layout)
    assert kernel.metric("exact_excess_wavefronts_ld").value == _paper(layout)  # ldmatrix: loads
    assert kernel.metric("exact_excess_wavefronts_st").value == 0  # the tile fill: whole 128-byte rows


@pytest.mark.parametrize("layout", LAYOUTS)
def test_wavefronts_and_ideal_are_the_phases_counted(kernels, layout: str) -> None:
    kernel = kernels[f"tensor_matmul/{layout}"]
    assert kernel.metric("shared_wavefronts_ideal").value == STEPS * IDEAL_PER_STEP
    assert kernel.metric("shared_wavefronts").value == STEPS * IDEAL_PER_STEP + _paper(layout)
