"""The suite's Numba kernels under Numba's CUDA simulator (no GPU), through the same
prepare/run/output/reset steps as the profiled run, at sizes that leave partial tiles.

The simulator must be chosen before numba.cuda is first imported, so it runs in a child
process and other tests keep the real numba.cuda (compile_ptx) in this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# One worker runs the simulator once: under pytest-xdist each worker would run the module's fixture again.
pytestmark = pytest.mark.xdist_group("numba_simulator")

REPO = Path(__file__).resolve().parents[2]

SIZES = [{"m": 20, "k": 19, "n": 18}, {"m": 5, "k": 33, "n": 3}]  # no edge a multiple of 16

CHILD = """
import json, sys
# The simulator runs each CUDA thread of a block as a Python thread, which wait on one another at every
# syncthreads: handing the GIL on every 0.5 ms rather than Python's 5 ms takes 4.3 s here instead of 6.8 s,
# the threads and what they compute the same.
sys.setswitchinterval(0.0005)
import numpy as np
from numba import config
from memlens.errors import VerificationError
from memlens.suite import NumbaKernel, load_suite

assert config.ENABLE_CUDASIM, "the simulator is not on"
family = load_suite(sys.argv[1]).family("matmul")
results = {}
for index, size in enumerate(json.loads(sys.argv[2])):
    inputs = family.make_inputs(np.random.default_rng(index), size)
    expected = family.reference(inputs, size)
    for variant in family.variants:
        if not all(isinstance(k, NumbaKernel) for k in variant.kernels):
            continue
        key = f"{variant.name} {size['m']}x{size['k']}x{size['n']}"
        try:
            launch = variant.prepare(inputs, size)
            launch.run()
            family.verify(variant, launch.output(), expected)
            launch.reset()
            poisoned = bool(np.isnan(launch.output()).all())
            launch.run()
            family.verify(variant, launch.output(), expected)
            results[key] = "ok" if poisoned else "reset did not poison the output"
        except VerificationError as exc:
            results[key] = str(exc)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def simulated() -> dict[str, str]:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO / "kernels"), json.dumps(SIZES)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_numba_variant_ran_at_every_size(simulated: dict[str, str]) -> None:
    variants = {"naive", "tiled_article", "tiled"}
    assert {key.split()[0] for key in simulated} == variants
    assert len(simulated) == len(variants) * len(SIZES)


@pytest.mark.parametrize("variant", ["naive", "tiled_article", "tiled"])
def test_numba_variant_matches_numpy(simulated: dict[str, str], variant: str) -> None:
    for size in SIZES:
        key = f"{variant} {size['m']}x{size['k']}x{size['n']}"
        assert simulated[key] == "ok", simulated[key]
