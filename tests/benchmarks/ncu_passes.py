"""How many replay passes ncu needs a kernel for memlens's metric list, and which metrics cost passes:
each pass replays the kernel (about 90 ms a kernel on an H200, whatever the kernel), so passes are most
of what profiling costs. GPU machine with ncu.

    python tests/benchmarks/ncu_passes.py [--fast] [--roofline] [--try NAME ...]

Profiles one launch of a small transpose (kernels/transpose.cu, in a memlens NVTX range) with the
catalogue's metrics, then with each metric left out, and prints the passes ncu reports for each list;
--try NAME[,NAME...] adds a list with those metrics added, to see whether another metric fits the passes
there are; --drop PREFIX a list without every metric whose name starts with PREFIX (e.g. the nine
FLOP counters, smsp__sass_thread_inst_executed_op_, which may cost a pass together but not one by one;
PREFIX,PREFIX,... drops several groups in one list); --only NAME,NAME,... a list of just those
metrics (what a pass holds); --no-singles skips the one-metric-less lists.
Always --clock-control none.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from memlens.collect.ncu import find_ncu  # noqa: E402
from memlens.model.catalogue import ncu_metric_names  # noqa: E402

APP = """
import cupy, nvtx, numpy as np
kernel = cupy.RawModule(code=open("kernels/transpose.cu").read()).get_function("transpose_padded")
a = cupy.random.random((256, 256), dtype=cupy.float32)
out = cupy.empty_like(a)
args = (a, out, np.int32(256), np.int32(256))
kernel((8, 8), (32, 8), args)
cupy.cuda.runtime.deviceSynchronize()
with nvtx.annotate("passes.transpose", domain="memlens"):
    kernel((8, 8), (32, 8), args)
cupy.cuda.runtime.deviceSynchronize()
"""


def passes(ncu: Path, metrics: list[str], work: Path) -> str:
    log = work / "ncu.log"
    argv = [
        str(ncu),
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--replay-mode",
        "kernel",
        "--nvtx",
        "--nvtx-include",
        "regex:memlens@.*/",
        "--metrics",
        ",".join(metrics),
        "--log-file",
        str(log),
        sys.executable,
        str(work / "app.py"),
    ]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    found = re.findall(r"(\d+) pass", log.read_text(errors="replace") if log.exists() else "")
    if done.returncode != 0 or not found:
        raise SystemExit(f"ncu exited with {done.returncode} and counted no passes: {done.stderr[-2000:]}")
    return found[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="the --fast list (no instrumented metrics)")
    parser.add_argument("--roofline", action="store_true", help="the --roofline list (FLOP and tensor counters too)")
    parser.add_argument(
        "--try", dest="extra", action="append", default=[], metavar="NAME[,NAME...]", help="metrics to add to the list"
    )
    parser.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="PREFIX[,PREFIX...]",
        help="also a list without every metric whose name starts with one of these prefixes",
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME[,NAME...]", help="also a list of just these metrics"
    )
    parser.add_argument("--no-singles", action="store_true", help="skip the lists with one metric left out")
    args = parser.parse_args()
    ncu = find_ncu().path
    names = ncu_metric_names(fast=args.fast, roofline=args.roofline)
    with tempfile.TemporaryDirectory(prefix="ncu-passes-") as tmp:
        work = Path(tmp)
        (work / "app.py").write_text(APP, encoding="utf-8")
        print(f"{len(names)} metrics: {passes(ncu, names, work)} passes", flush=True)
        for name in [] if args.no_singles else names:
            if not name.startswith(("launch__", "device__")):  # launch and device attributes take no pass
                print(f"  without {name}: {passes(ncu, [n for n in names if n != name], work)}", flush=True)
        for added in args.extra:
            print(f"  with {added} added: {passes(ncu, [*names, *added.split(',')], work)}", flush=True)
        for prefixes in args.drop:
            kept = [n for n in names if not n.startswith(tuple(prefixes.split(",")))]
            print(f"  without every {prefixes}* ({len(names) - len(kept)}): {passes(ncu, kept, work)}", flush=True)
        for only in args.only:
            print(f"  only {only}: {passes(ncu, only.split(','), work)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
