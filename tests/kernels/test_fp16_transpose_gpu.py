"""GPU tier: the fp16_transpose family profiled at its small size (n = 96, 9 tiles) under real ncu;
each variant's exact excess wavefronts equal the bank model's figure, all four instructions together
and split into loads (ldmatrix, LDS.128) and stores (cp.async, stmatrix). Needs compute capability 9.0.
Run on a GPU machine: python -m pytest -m gpu tests/kernels/test_fp16_transpose_gpu.py"""

from __future__ import annotations

import pytest

from memlens.suite import gpu_compute_capability
from memlens.theory import bank_model as bm
from tests.support.family_runs import profile_family_small

pytestmark = pytest.mark.gpu
N = 96
LAYOUTS = ("dense", "pitch128", "padded", "xor_row", "xor_128b")


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    capability = gpu_compute_capability()
    if capability is not None and capability < (9, 0):
        pytest.skip(f"fp16_transpose needs compute capability 9.0 (stmatrix); this GPU is {capability}")
    return profile_family_small(tmp_path_factory.mktemp("runs"), "fp16_transpose")


def _per_tile(layout: str, instructions: tuple[str, ...]) -> int:
    return sum(bm.fp16_transpose_figures(layout, warp)[i] for warp in range(4) for i in instructions)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_exact_excess_is_the_bank_models(kernels, layout: str) -> None:
    kernel = kernels[f"fp16_transpose/{layout}"]
    assert kernel.metric("exact_excess_wavefronts").value == bm.fp16_transpose_excess(layout, N)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_loads_and_stores_apart(kernels, layout: str) -> None:
    kernel = kernels[f"fp16_transpose/{layout}"]
    tiles = (N // 32) ** 2
    assert kernel.metric("exact_excess_wavefronts_ld").value == tiles * _per_tile(layout, ("ldmatrix", "lds128"))
    assert kernel.metric("exact_excess_wavefronts_st").value == tiles * _per_tile(layout, ("cp.async", "stmatrix"))
