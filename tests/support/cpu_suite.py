"""A suite that runs on the CPU with NumPy, named like the built-in suite, for pipeline tests.

MEMLENS_TEST_WRONG=family/variant makes that variant return a wrong result;
MEMLENS_TEST_RAISE=family/variant makes it raise at launch; MEMLENS_TEST_SLEEP=seconds makes
every launch sleep (for timeout tests); MEMLENS_TEST_HOLD=FILE makes every launch wait until FILE exists
(tests/support/hold.py: a test that must see programs in the middle of a case lets them go on as soon as
it has, rather than guess a sleep long enough); MEMLENS_TEST_SPAWN=family/variant makes it start a
process that outlives the suite (a minute's sleep), as a careless suite might.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

from memlens.suite import Expect, Family, Launch


def _launcher(label: str, compute):
    def prepare(inputs, size):
        out = {"value": None}

        def run():
            if os.environ.get("MEMLENS_TEST_RAISE") == label:
                raise RuntimeError(f"launch of {label} failed (test)")
            time.sleep(float(os.environ.get("MEMLENS_TEST_SLEEP", "0")))
            if os.environ.get("MEMLENS_TEST_HOLD"):  # set by a test that put the checkout on PYTHONPATH
                from tests.support.hold import wait_for

                wait_for(os.environ["MEMLENS_TEST_HOLD"])
            if os.environ.get("MEMLENS_TEST_SPAWN") == label:
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            result = compute(inputs).copy()
            if os.environ.get("MEMLENS_TEST_WRONG") == label:
                result.flat[3] += 1
            out["value"] = result

        def reset():
            out["value"] = None

        return Launch(run=run, output=lambda: out["value"], reset=reset)

    return prepare


def _family(name, make, reference, variants, **kwargs):
    family = Family(name, f"CPU stand-in for {name}", make, reference, **kwargs)
    for index, (variant, expect) in enumerate(variants):
        family.variant(variant, demonstrates=f"{variant} (CPU)", expect=expect, baseline=index == 0)(
            _launcher(f"{name}/{variant}", lambda inputs, ref=reference, size=None: ref(inputs, size))
        )
    return family


transpose = _family(
    "transpose",
    lambda rng, s: {"a": rng.random((s["m"], s["n"]), dtype=np.float32)},
    lambda inputs, s: np.ascontiguousarray(inputs["a"].T),
    [
        ("conflict", Expect(bank_conflicts=True, local_memory=False, note="shared loads: 32-way conflict")),
        ("padded", Expect(bank_conflicts=False, local_memory=False)),
        ("swizzled", Expect(bank_conflicts=False, local_memory=False)),
    ],
    default_size={"m": 64, "n": 48},
)

running_mean = _family(
    "running_mean",
    lambda rng, s: {"x": rng.random(s["n"], dtype=np.float32)},
    lambda inputs, s: np.convolve(inputs["x"], np.ones(4, np.float32) / 4, mode="same"),
    [("register", Expect(local_memory=False)), ("local", Expect(local_memory=True))],
    default_size={"n": 256},
    rtol=1e-6,
)
