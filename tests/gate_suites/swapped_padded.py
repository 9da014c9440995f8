"""The built-in suite with one sabotage, for showing that the gate catches a regression:
transpose/padded launches the conflicting kernel (tile[32][32]) instead of the padded one.

    memlens profile tests/gate_suites/swapped_padded.py            # on a GPU: then
    memlens gate runs/latest --rules kernels/gates.toml            # exit 1: "padded ... conflict-free" fails
    memlens check tests/gate_suites/swapped_padded.py --json swapped.json   # no GPU needed: then
    memlens gate swapped.json --rules kernels/gates-static.toml    # exit 1: shared 4,096 B, expected 4,224 B

Every other family is the built-in one, re-exported, so every other rule still passes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from memlens.suite import Expect, Family, Inputs, Launch, Size

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"memlens_swapped_{name}", KERNELS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_transpose = _load("transpose")  # a module: load_suite collects only the Family objects below
matmul = _load("matmul").matmul
running_mean = _load("running_mean").running_mean


def _family(base: Family) -> Family:
    return Family(
        "transpose",
        base.description + " (padded swapped for conflict)",
        base.make_inputs,
        base.reference,
        dict(base.default_size),
        dict(base.small_size),
    )


transpose = _family(_transpose.transpose)  # only Family objects at module level are collected


@transpose.variant(
    "conflict",
    demonstrates="tile[32][32]: 32-way conflicts",
    baseline=True,
    expect=Expect(bank_conflicts=True, local_memory=False),
    kernels=(_transpose.CONFLICT,),
)
def conflict(inputs: Inputs, size: Size) -> Launch:
    return _transpose._launch(_transpose.CONFLICT, inputs)


@transpose.variant(
    "padded",
    demonstrates="SABOTAGED: the conflicting kernel under the padded label",
    expect=Expect(bank_conflicts=True, local_memory=False),
    kernels=(_transpose.CONFLICT,),
)
def padded(inputs: Inputs, size: Size) -> Launch:
    return _transpose._launch(_transpose.CONFLICT, inputs)


@transpose.variant(
    "swizzled",
    demonstrates="tile[y][x ^ y]: no bank conflicts",
    expect=Expect(bank_conflicts=False, local_memory=False),
    kernels=(_transpose.SWIZZLED,),
)
def swizzled(inputs: Inputs, size: Size) -> Launch:
    return _transpose._launch(_transpose.SWIZZLED, inputs)
