"""Design sweep for the fast transposes: which tile shape, block shape, block order and cache hint
comes closest to a device-to-device copy of the same bytes (8192 x 8192 fp32 by default), timed
exactly as `memlens bench` times a variant (memlens.bench.timing.CudaDevice: CUDA events, median of
the launches, rotating over input sets that together exceed L2 four times), on one GPU, in one run.

    python tests/benchmarks/transpose_sweep.py OUT.json [--rows 8192] [--cols 8192] [--rounds 3] [-k RE]

Candidates are instantiations of transpose_sweep.cu plus the suite's own 64x64 kernels
(kernels/transpose.cu); a tiled copy (MODE 2) with the same global access pattern is the control.
Each round times every candidate and the copy once, in the same order; the figure kept is the
median over rounds. Every candidate's output is checked against the input's transpose (or the input,
for the control) before it is timed. Prints a table sorted by % of copy; writes it as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from memlens.bench.timing import L2_MULTIPLE, MIN_SETS, CudaDevice, _copy_launch  # noqa: E402

SWEEP_SOURCE = Path(__file__).with_name("transpose_sweep.cu")
SUITE_SOURCE = REPO / "kernels" / "transpose.cu"
SM_SHARED_BYTES = 227 * 1024  # a Hopper SM's shared memory for blocks
SM_THREADS = 2048
MODES = {0: "swizzled", 1: "padded", 2: "copy"}


@dataclass(frozen=True)
class Candidate:
    tr: int = 64
    tc: int = 64
    by: int = 8
    mode: int = 0
    order: int = 0
    hint: int = 0

    @property
    def threads(self) -> int:
        return 32 * self.by

    @property
    def tile_bytes(self) -> int:
        return 4 * self.tr * (self.tc + (self.mode == 1))

    @property
    def shared_bytes(self) -> int:
        return 0 if self.mode == 2 else self.tile_bytes

    @property
    def min_blocks(self) -> int:
        """Blocks an SM can hold (the control as many as the transposes of its shape: the same register cap)."""
        return max(1, min(SM_THREADS // self.threads, SM_SHARED_BYTES // (self.tile_bytes + 1024), 32))

    @property
    def expression(self) -> str:
        args = (self.tr, self.tc, self.by, self.mode, self.order, self.hint, self.min_blocks)
        return "sweep<{}>".format(", ".join(map(str, args)))

    @property
    def name(self) -> str:
        hint = ["", " ldcs/stcs", " L2::256B"][self.hint]
        order = " rows-first" if self.order else ""
        return f"{MODES[self.mode]} {self.tr}x{self.tc} block 32x{self.by}{order}{hint}"


def candidates() -> list[Candidate]:
    found: list[Candidate] = []

    def add(**fields: int) -> None:
        candidate = Candidate(**fields)
        if candidate not in found:
            found.append(candidate)

    for tr, tc, by in [(64, 64, 8), (128, 128, 8), (32, 32, 8)]:
        add(tr=tr, tc=tc, by=by, mode=2)
    for tr, tc in [(32, 32), (32, 64), (64, 32), (64, 64), (128, 64), (64, 128), (128, 128)]:
        for by in (4, 8, 16, 32):
            if tr % by == 0 and tc % by == 0 and 32 * by <= 1024 and tr * tc // (32 * by) <= 64:
                add(tr=tr, tc=tc, by=by)
    for base in [dict(tr=64, tc=64, by=8), dict(tr=64, tc=64, by=16), dict(tr=128, tc=128, by=16)]:
        add(**base, order=1)
        add(**base, hint=1)
        add(**base, hint=2)
        add(**base, mode=1)
    return found


SUITE_KERNELS = {  # kernels/transpose.cu's 64x64 kernels: block shape
    "transpose_tile64_padded": (32, 8),
    "transpose_tile64_swizzled": (32, 8),
    "transpose_vec4_padded": (256,),
    "transpose_vec4_swizzled": (256,),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("-k", dest="pattern", help="only candidates whose name matches this regex")
    args = parser.parse_args()
    import cupy

    device = CudaDevice()
    rows, cols = args.rows, args.cols
    sweep = [c for c in candidates() if not args.pattern or re.search(args.pattern, c.name)]
    for c in sweep:
        if rows % c.tr or cols % c.tc:
            raise SystemExit(f"{c.name}: {rows} x {cols} is not a whole number of tiles")
    module = cupy.RawModule(
        code=SWEEP_SOURCE.read_text(), options=("-std=c++17",), name_expressions=[c.expression for c in sweep]
    )
    suite_module = cupy.RawModule(code=SUITE_SOURCE.read_text(), options=("-std=c++17",))

    set_bytes = 2 * 4 * rows * cols
    sets = max(MIN_SETS, -(-L2_MULTIPLE * device.l2_bytes // set_bytes))
    inputs = [cupy.random.random((rows, cols), dtype=cupy.float32) for _ in range(sets)]
    outputs = [cupy.empty((cols, rows), dtype=cupy.float32) for _ in range(sets)]
    copy_outputs = [cupy.empty((rows, cols), dtype=cupy.float32) for _ in range(sets)]

    runs: dict[str, list] = {}
    for c in sweep:
        kernel = module.get_function(c.expression)
        if c.shared_bytes > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = c.shared_bytes
        grid = (cols // c.tc, rows // c.tr) if c.order == 0 else (rows // c.tr, cols // c.tc)
        targets = copy_outputs if c.mode == 2 else outputs
        runs[c.name] = [
            _launcher(kernel, grid, (32, c.by), (a, out, np.int32(rows), np.int32(cols)), c.shared_bytes)
            for a, out in zip(inputs, targets, strict=True)
        ]
        _check(c.name, runs[c.name], inputs, targets, transposed=c.mode != 2)
    for name, block in SUITE_KERNELS.items():
        kernel = suite_module.get_function(name)
        grid = (-(-cols // 64), -(-rows // 64))
        label = f"suite {name}"
        runs[label] = [
            _launcher(kernel, grid, block, (a, out, np.int32(rows), np.int32(cols)), 0)
            for a, out in zip(inputs, outputs, strict=True)
        ]
        _check(label, runs[label], inputs, outputs, transposed=True)
    copy_runs = [_copy_launch(a, out, 4 * rows * cols) for a, out in zip(inputs, copy_outputs, strict=True)]

    medians: dict[str, list[float]] = {name: [] for name in ["copy", *runs]}
    for round_index in range(args.rounds):
        medians["copy"].append(statistics.median(device.time_launches(copy_runs, args.repeats)))
        for name, launches in runs.items():
            medians[name].append(statistics.median(device.time_launches(launches, args.repeats)))
        print(f"round {round_index + 1}: copy {medians['copy'][-1]:.4f} ms", file=sys.stderr)

    copy_ms = statistics.median(medians["copy"])
    rows_out = []
    for name, times in medians.items():
        ms = statistics.median(times)
        rows_out.append(
            {
                "candidate": name,
                "median_ms": ms,
                "rounds_ms": times,
                "gb_per_s": set_bytes / ms / 1e6,
                "pct_of_copy": 100 * copy_ms / ms,
            }
        )
    rows_out.sort(key=lambda r: -r["pct_of_copy"])
    print(f"{'candidate':52} {'median ms':>10} {'GB/s':>8} {'% of copy':>9}  rounds")
    for r in rows_out:
        spread = " ".join(f"{t:.4f}" for t in r["rounds_ms"])
        print(f"{r['candidate']:52} {r['median_ms']:10.4f} {r['gb_per_s']:8.0f} {r['pct_of_copy']:8.1f}%  {spread}")
    meta = {
        "gpu": device.name,
        "rows": rows,
        "cols": cols,
        "sets": sets,
        "repeats": args.repeats,
        "rounds": args.rounds,
        "copy_bytes_moved": set_bytes,
        "command": " ".join(sys.argv),
    }
    args.out.write_text(json.dumps({"meta": meta, "results": rows_out}, indent=1) + "\n")
    return 0


def _launcher(kernel, grid, block, args, shared_bytes):  # noqa: ANN001, ANN202
    return lambda: kernel(grid, block, args, shared_mem=shared_bytes)


def _check(name: str, launches: list, inputs: list, outputs: list, transposed: bool) -> None:
    for launch, a, out in zip(launches, inputs, outputs, strict=True):
        out.fill(np.nan)
        launch()
        expected = a.T if transposed else a
        if not bool((out == expected).all()):
            raise SystemExit(f"{name}: wrong result")


if __name__ == "__main__":
    sys.exit(main())
