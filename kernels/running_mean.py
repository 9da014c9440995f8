"""Running mean over a window of 32 floats, the window held in a per-thread array: in
registers, or in local memory when the array is indexed with a value known only at run time
(after the CUDA local-memory article), or spilled there when a register cap leaves too few
registers for it. CUDA C++ in running_mean.cu, compiled by CuPy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from memlens.suite import CudaKernel, Expect, Family, Inputs, Launch, Size

_spec = importlib.util.spec_from_file_location(f"{__name__}_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]  # _common.py sits beside this file
_spec.loader.exec_module(common)  # type: ignore[union-attr]

SOURCE = Path(__file__).with_name("running_mean.cu")
WINDOW = 32  # W in running_mean.cu
BLOCK = 256  # also SPILL_BLOCK, running_mean_spill's __launch_bounds__
OUTPUTS_PER_THREAD = 8  # R in running_mean.cu, of running_mean_spill


def make_inputs(rng: np.random.Generator, size: Size) -> Inputs:
    # Values in [1, 2): positive, so the fp32 sum's relative error is at most 31 * 2**-24.
    return {"x": rng.random(size["n"] + WINDOW - 1, dtype=np.float32) + np.float32(1)}


def reference(inputs: Inputs, size: Size) -> np.ndarray:
    # Window sums as differences of float64 prefix sums (10x faster than adding 32 shifted slices).
    # The rounding of the prefix up to i cancels in prefix[i + 32] - prefix[i]: a window keeps only
    # its own 32 additions' rounding, each at most half an ulp of 2**25 (n = 2**24): ~1e-7 of ~48.
    prefix = np.concatenate(([0.0], np.cumsum(inputs["x"], dtype=np.float64)))
    return (prefix[WINDOW:] - prefix[:-WINDOW]) / WINDOW


running_mean = Family(
    "running_mean",
    "out[i] = mean(x[i : i + 32]) in fp32, one thread per output keeping its window in an array",
    make_inputs,
    reference,
    default_size={"n": 2**24},
    small_size={"n": 1000},  # not a multiple of the block: a partial last block
    rtol=2e-6,  # fp32 sum of 32 values in [1, 2) against float64: relative error <= 1.85e-6
    min_bytes=lambda size: 4 * (size["n"] + WINDOW - 1) + 4 * size["n"],  # read x once, write out
)


def _launch(kernel: CudaKernel, inputs: Inputs, outputs_per_thread: int = 1) -> Launch:
    cupy = common.import_cupy()
    n = inputs["x"].size - WINDOW + 1
    common.check_int32("running_mean", inputs["x"].size)
    function = common.cupy_function(kernel)
    x = common.on_device(inputs["x"])
    out = cupy.empty(n, dtype=cupy.float32)  # poisoned by reset(), a memset
    blocks = common.cdiv(common.cdiv(n, outputs_per_thread), BLOCK)
    return common.cupy_launch(function, (blocks,), (BLOCK,), (x, out, np.uint32(n)), out)


REGISTER = CudaKernel(SOURCE, "running_mean_register")
LOCAL = CudaKernel(SOURCE, "running_mean_local")
SPILL = CudaKernel(SOURCE, "running_mean_spill")


@running_mean.variant(
    "register",
    demonstrates="window[j] with j fixed at compile time (unrolled loops): the array lives in registers",
    expect=Expect(bank_conflicts=False, excess_wavefronts=0, local_memory=False,
                  note="no local memory: window in registers"),
    baseline=True,
    kernels=(REGISTER,),
)
def register(inputs: Inputs, size: Size) -> Launch:
    return _launch(REGISTER, inputs)


@running_mean.variant(
    "local",
    demonstrates="window[(j + n) % 32] with n known only at run time: the array goes to local memory",
    expect=Expect(bank_conflicts=False, excess_wavefronts=0, local_memory=True,
                  note="local memory: a 128-byte window per thread"),
    kernels=(LOCAL,),
)
def local(inputs: Inputs, size: Size) -> Launch:
    return _launch(LOCAL, inputs)


@running_mean.variant(
    "spill",
    demonstrates="window indexed at compile time as in register, 8 outputs a thread, capped at 32 registers"
    " by __launch_bounds__(256, 8): ptxas spills registers to local memory",
    expect=Expect(bank_conflicts=False, excess_wavefronts=0, local_memory=True,
                  note="local memory: register spill (ptxas spill stores and loads), no .local array"),
    kernels=(SPILL,),
)
def spill(inputs: Inputs, size: Size) -> Launch:
    return _launch(SPILL, inputs, OUTPUTS_PER_THREAD)
