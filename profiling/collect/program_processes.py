"""Which process launched each profiled kernel of a program run (`memlens profile -- COMMAND`).

memlens asks ncu to follow the program's child processes (`--target-processes all`): a `multiprocessing`
worker, a `torchrun` rank, a shell script's programs. ncu's log names each process it connected to
(`==PROF== Connected to process 615 (/usr/bin/python3.12)`), in the order it did: that order numbers
them (1 the first: the program itself or the first child that used CUDA), which stays the same from
run to run where pids do not. The .ncu-rep's Python interface gives no process per launch; ncu's own
CSV export of the report does ("ID", "Process ID"). Only where the log names more than one process does
memlens ask ncu for that export (one metric, every launch: a second or two), and then labels each
launch with its process number (KernelResult.process, "(process 2)" after its label).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from memlens.collect.ncu import Ncu
from memlens.io.processes import CommandFailed, run_command

if TYPE_CHECKING:
    from memlens.model.results import RunResults

_CONNECTED = re.compile(r"^==PROF== Connected to process (\d+) \((.*)\)\s*$", re.MULTILINE)
EXPORT_TIMEOUT = 600.0


def connected_processes(log_text: str) -> dict[str, int] | None:
    """ "PID (NAME)" -> its number (1, 2, ... in the order ncu connected to them); None where the log
    names none."""
    found: dict[str, int] = {}
    for match in _CONNECTED.finditer(log_text):
        found.setdefault(f"{match.group(1)} ({match.group(2)})", len(found) + 1)
    return found or None


def with_processes(results: RunResults, ncu: Ncu, report: Path) -> RunResults:
    """Each kernel with the number of the process that launched it, where ncu connected to more than
    one; the results as they are otherwise, or where ncu cannot export the report."""
    processes = results.info.processes
    if not processes or len(processes) < 2 or not results.kernels or not report.exists():
        return results
    number = {name.split(" ", 1)[0]: n for name, n in processes.items()}
    by_launch = launch_pids(ncu, report)
    kernels = tuple(replace(k, process=number.get(by_launch.get(k.launch_id, ""))) for k in results.kernels)
    return replace(results, kernels=kernels)


def launch_pids(ncu: Ncu, report: Path) -> dict[int, str]:
    """ncu's launch ID -> the pid that launched it, from ncu's CSV export of the report ({} where ncu
    cannot export it: the labels then go without their process)."""
    argv = [str(ncu.path), "--import", str(report), "--csv", "--page", "raw", "--metrics", "launch__grid_size"]
    try:
        done = run_command(argv, timeout=EXPORT_TIMEOUT)
    except CommandFailed:
        return {}
    if done.returncode != 0:
        return {}
    return parse_launch_pids(done.stdout)


def parse_launch_pids(text: str) -> dict[int, str]:
    """The "ID" and "Process ID" columns of ncu's raw CSV page (a units row after the header)."""
    found: dict[int, str] = {}
    for row in csv.DictReader(io.StringIO(text)):
        launch, pid = (row.get("ID") or "").strip(), (row.get("Process ID") or "").strip()
        if launch.isdigit() and pid.isdigit():
            found[int(launch)] = pid
    return found
