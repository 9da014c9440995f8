"""Failure suite on the GPU (CuPy): correct, wrong, raising and hanging variants of one kernel.
See README.md; cpu_failures.py is its NumPy twin with the same labels."""

from __future__ import annotations

import time

import numpy as np

from memlens.suite import Expect, Family, Inputs, Launch, Size

N = 1 << 20
BLOCK = 256
SOURCE = r"""
extern "C" __global__ void scale2(const float* x, float* out, unsigned n, unsigned wrong_at) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * x[i] + (i == wrong_at ? 1.0f : 0.0f);
}
"""
NOWHERE = np.uint32(0xFFFFFFFF)  # wrong_at for a correct launch


def _cupy():
    import cupy  # only where a variant is prepared: listing the suite needs no GPU

    return cupy


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    return {"x": rng.random(size["n"], dtype=np.float32)}


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    return 2 * inputs["x"]


failures = Family(
    "failures",
    "out = 2 x, with variants that fail on purpose",
    make_inputs,
    reference,
    default_size={"n": N},
    small_size={"n": 1000},
)


def _launch(inputs: Inputs, wrong_at: np.uint32 = NOWHERE, after_launch=None) -> Launch:
    cupy = _cupy()
    kernel = cupy.RawKernel(SOURCE, "scale2")
    n = inputs["x"].size
    x = cupy.asarray(inputs["x"])
    out = cupy.full(n, np.nan, dtype=cupy.float32)

    def run() -> None:
        kernel(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (x, out, np.uint32(n), wrong_at))
        if after_launch is not None:
            after_launch()

    def reset() -> None:
        out.fill(np.nan)

    return Launch(run=run, output=lambda: cupy.asnumpy(out), reset=reset)


def _raise() -> None:
    raise RuntimeError("injected failure")


def _hang() -> None:
    _cupy().cuda.runtime.deviceSynchronize()
    time.sleep(3600)


@failures.variant("first", demonstrates="a correct kernel", expect=Expect(False, False), baseline=True)
def first(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs)


@failures.variant("second", demonstrates="a correct kernel", expect=Expect(False, False))
def second(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs)


@failures.variant("wrong", demonstrates="one element off: a wrong result", expect=Expect(False, False))
def wrong(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs, wrong_at=np.uint32(3))


@failures.variant("raises", demonstrates="raises at launch", expect=Expect(False, False))
def raises(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs, after_launch=_raise)


@failures.variant("hangs", demonstrates="sleeps an hour after its launch", expect=Expect(False, False))
def hangs(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs, after_launch=_hang)


@failures.variant("after", demonstrates="a correct kernel after the others", expect=Expect(False, False))
def after(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs)
