"""NumPy twin of gpu_failures.py: the same family, variants and behaviour, on the CPU, so the fake
ncu can replay what the GPU runs recorded. See README.md."""

from __future__ import annotations

import os
import time

import numpy as np

from memlens.suite import Expect, Family, Inputs, Launch, Size

N = 1 << 20
# Seconds `hangs` sleeps: an hour, like the GPU suite; tests may shorten it.
HANG_S = float(os.environ.get("MEMLENS_TEST_HANG_S", "3600"))


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


def _launch(inputs: Inputs, wrong_at: int | None = None, after_launch=None) -> Launch:
    result: dict[str, np.ndarray | None] = {"out": None}

    def run() -> None:
        out = 2 * inputs["x"]
        if wrong_at is not None:
            out[wrong_at] += 1
        result["out"] = out
        if after_launch is not None:
            after_launch()

    def reset() -> None:
        result["out"] = None

    return Launch(run=run, output=lambda: result["out"], reset=reset)


def _raise() -> None:
    raise RuntimeError("injected failure")


def _hang() -> None:
    time.sleep(HANG_S)


@failures.variant("first", demonstrates="a correct kernel", expect=Expect(False, False), baseline=True)
def first(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs)


@failures.variant("second", demonstrates="a correct kernel", expect=Expect(False, False))
def second(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs)


@failures.variant("wrong", demonstrates="one element off: a wrong result", expect=Expect(False, False))
def wrong(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs, wrong_at=3)


@failures.variant("raises", demonstrates="raises at launch", expect=Expect(False, False))
def raises(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs, after_launch=_raise)


@failures.variant("hangs", demonstrates="sleeps an hour after its launch", expect=Expect(False, False))
def hangs(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs, after_launch=_hang)


@failures.variant("after", demonstrates="a correct kernel after the others", expect=Expect(False, False))
def after(inputs: Inputs, size: Size) -> Launch:
    return _launch(inputs)
