"""The program ncu profiles: runs each selected variant once inside its NVTX range.

    python -m memlens.collect.profiled_program --suite kernels --events run/events.jsonl [-k RE] [--size m=512]
        [--small] [--sweep transpose.rows=1024,4096]

Per family: make inputs and the NumPy reference once. Per variant: prepare (compile) and warm up
outside any range, poison the output, launch once inside the `memlens` NVTX range "family.variant",
verify that launch's output (profile_run keeps only verified variants' kernels). Before each range, CuPy's cached
page-locked upload buffers are freed: ncu saves such memory for every kernel it replays. A swept family
runs once per value, each variant in its own range "family.variant@NAME=VALUE" (selection.Case). Outputs on the GPU
are checked there, in one kernel launch, against one device copy of the reference per family: under
ncu every extra launch and host copy costs time. Progress and
outcomes go to the events file (JSON lines) that the parent memlens process reads.
A variant whose family needs a newer GPU (Family.min_compute_capability) is recorded as skipped, with the
reason, and never launched. A wrong result is recorded and the suite goes on; any other error stops it (the CUDA context
may be unusable), and the variants after it are recorded as not run. The plan event carries the
app's pid; a SIGINT from memlens (timeout, Ctrl-C) ends the app quietly with exit code 130.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from memlens.collect.claims import claimed_cases
from memlens.errors import MemlensError, VerificationError
from memlens.selection import Case, select_variants
from memlens.suite import NVTX_DOMAIN, SKIPPED, DeviceReferences, Family, Inputs, gpu_compute_capability

EVENTS_VERSION = 1


class EventLog:
    def __init__(self, path: Path) -> None:
        self._handle = path.open("a", encoding="utf-8")

    def emit(self, **event: Any) -> None:
        event["time"] = time.time()
        self._handle.write(json.dumps(event) + "\n")
        self._handle.flush()


class Problems:
    """Inputs and NumPy reference of one family at a time, shared by its variants: made once,
    not once per variant (large references such as a 2048^3 matmul cost seconds)."""

    def __init__(self, sizes: dict[str, int], small: bool, seed: int) -> None:
        self.sizes, self.small, self.seed = sizes, small, seed
        self._family: tuple[Family, dict[str, int] | None] | None = None
        self._problem: tuple[dict[str, int], Inputs, np.ndarray] | None = None
        self._references = DeviceReferences()

    def of(self, case: Case, index: int) -> tuple[dict[str, int], Inputs, np.ndarray]:
        family = case.variant.family
        size = case.size(self.sizes, self.small)
        current = self._family
        if current is None or current[0] is not family or current[1] != size or self._problem is None:
            self._problem = None  # free the previous family's arrays first
            self._references.clear()
            inputs = family.make_inputs(np.random.default_rng(self.seed + index), size)
            self._problem = (size, inputs, family.reference(inputs, size))
            self._family = (family, size)
        return self._problem

    def expected_like(self, got: Any) -> Any:
        """The current family's reference, on the GPU (copied once) where `got` lies there."""
        return self._references.like(0, self._problem[2] if self._problem else None, got)


def run_variant(case: Case, problems: Problems, family_index: int) -> dict[str, int]:
    import nvtx  # only where a profiled launch happens

    variant = case.variant
    family = variant.family
    size, inputs, _ = problems.of(case, family_index)
    launch = variant.prepare(inputs, size)
    launch.run()  # warm-up: JIT compilation and module load stay outside the range
    if launch.reset:
        launch.reset()
    release_pinned_host_memory()
    with nvtx.annotate(case.range_name, domain=NVTX_DOMAIN):
        launch.run()
    got = launch.checked_output()
    family.verify(variant, got, problems.expected_like(got))
    return size


def release_pinned_host_memory() -> None:
    """Free the page-locked host buffers CuPy keeps after staging uploads. For each kernel it replays,
    ncu saves and restores all page-locked host memory, since the kernel could reach it: about a second
    per GiB held on an H100, more than the passes themselves cost for the suite's transposes."""
    cupy = sys.modules.get("cupy")
    if cupy is None or not cupy.cuda.is_available():  # imported, but nothing ran on a GPU
        return
    cupy.cuda.runtime.deviceSynchronize()
    cupy.cuda.alloc_pinned_memory(0)  # lets go of staging buffers whose copies have finished
    cupy.get_default_pinned_memory_pool().free_all_blocks()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memlens.collect.profiled_program")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--events", required=True, type=Path)
    parser.add_argument("-k", dest="pattern")
    parser.add_argument("--size", action="append", default=[])
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--sweep", action="append", default=[])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--claims",
        type=Path,
        help="take units from this folder, shared with the run's other "
        "programs (collect/claims.py), instead of running every case",
    )
    parser.add_argument("--tag", default="", help="what this program's claims hold (its job)")
    args = parser.parse_args(argv)
    events = EventLog(args.events)
    try:
        try:
            selection = select_variants(args.suite, args.pattern, args.size, args.sweep, args.small)
        except MemlensError as exc:
            events.emit(event="error", message=str(exc))
            return 2
        cases = selection.cases()
        events.emit(
            event="plan",
            version=EVENTS_VERSION,
            variants=[c.label for c in cases],
            pid=os.getpid(),
            claims=args.claims is not None,
        )
        return run_all(cases, selection.sizes, args, events)
    except KeyboardInterrupt:  # memlens stops the whole process group with SIGINT: leave quietly
        events.emit(event="interrupted")
        return 130


def run_all(cases: list[Case], sizes: dict[str, int], args: argparse.Namespace, events: EventLog) -> int:
    failed = False
    problems = Problems(sizes, args.small, args.seed)
    families = list(dict.fromkeys(c.variant.family.name for c in cases))
    # Asked before the first case, needed or not: CuPy's import and CUDA's start under ncu (1 to 2 s) are
    # then not counted in that case's seconds, which the split of several GPUs balances a later run on.
    capability = gpu_compute_capability()
    for index, case in enumerate(_taken(cases, args, events), 1):
        events.emit(event="start", variant=case.label, index=index, total=len(cases))
        skipped = case.variant.family.unsupported_on(capability)
        if skipped:
            events.emit(event="done", variant=case.label, status=SKIPPED, message=skipped)
            continue
        try:
            size = run_variant(case, problems, families.index(case.variant.family.name))
        except VerificationError as exc:
            events.emit(event="done", variant=case.label, status="wrong", message=str(exc))
            failed = True
            continue
        except Exception as exc:  # noqa: BLE001 - any error in user code is reported, then the run stops
            message = (f"{type(exc).__name__}: {exc}".strip().splitlines() or [type(exc).__name__])[0]
            events.emit(
                event="done", variant=case.label, status="failed", message=message, traceback=traceback.format_exc()
            )
            return 1
        events.emit(event="done", variant=case.label, status="ok", size=size)
    return 1 if failed else 0


def _taken(cases: list[Case], args: argparse.Namespace, events: EventLog) -> Iterator[Case]:
    """The cases this program runs: all of them, or (--claims) each case it takes, as it takes it."""
    if args.claims is None:
        yield from cases
        return
    by_label = {case.label: case for case in cases}
    for label in claimed_cases(args.claims, args.tag):
        events.emit(event="claimed", variants=[label])
        if label in by_label:
            yield by_label[label]


if __name__ == "__main__":
    sys.exit(main())
