"""Four hand-written pieces against the well-kept libraries that could replace them (issue 35, item 7):
the figures quoted in their docstrings. CPU only; needs msgspec, pydantic, tomlkit and psutil where it
runs (not memlens's dependencies), e.g. `pip install --target LIBS msgspec pydantic tomlkit psutil`.

    PYTHONPATH=LIBS python tests/benchmarks/handwritten_vs_libraries.py

    results.json  model/results._checked against msgspec.convert and pydantic's TypeAdapter on the H200
                  suite recording's kernels, and whether each refuses a NaN and an unknown field
    rules         gate/rules.parse_rules against tomllib and tomlkit on kernels/gates.toml
    processes     io/processes.group_members against psutil.process_iter + os.getpgid
    pool          threads multiprocessing.Pool starts; ProcessPoolExecutor(max_tasks_per_child) with fork
A benchmark: exit code 0 whatever the figures (each the mean of 20 to 50 calls after one untimed).
"""

from __future__ import annotations

import concurrent.futures
import copy
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import msgspec  # noqa: E402
import psutil  # noqa: E402
import pydantic  # noqa: E402
import tomlkit  # noqa: E402

from memlens.gate.rules import parse_rules  # noqa: E402
from memlens.io.processes import group_members  # noqa: E402
from memlens.model.results import KernelResult, _kernel_from_json  # noqa: E402
from tests.support.results_json import VALID_RESULTS  # noqa: E402


def ms(call, n: int = 20) -> float:
    call()
    started = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - started) / n * 1e3


def refuses(call) -> bool:
    try:
        call()
    except Exception:  # noqa: BLE001 - any refusal counts
        return True
    return False


def results_json() -> None:
    kernels = VALID_RESULTS["kernels"]
    adapter = pydantic.TypeAdapter(list[KernelResult])
    checkers = {
        "memlens": lambda data: [_kernel_from_json(k) for k in data],
        "msgspec": lambda data: msgspec.convert(data, list[KernelResult], strict=True),
        "pydantic": adapter.validate_python,
    }
    nan, unknown = copy.deepcopy(kernels), copy.deepcopy(kernels)
    nan[3]["raw"]["duration"] = float("nan")
    unknown[3]["colour"] = 1
    for name, check in checkers.items():
        took = ms(lambda c=check: c(kernels))
        refused = refuses(lambda c=check: c(nan)), refuses(lambda c=check: c(unknown))
        print(
            f"results.json {name:9} {took:6.2f} ms for {len(kernels)} kernels; "
            f"refuses NaN: {refused[0]}, an unknown field: {refused[1]}"
        )


def rules() -> None:
    text = (REPO / "kernels" / "gates.toml").read_text()
    print(
        f"rules        memlens {ms(lambda: parse_rules(text, 'gates.toml'), 50):.3f} ms, tomllib "
        f"{ms(lambda: tomllib.loads(text), 50):.3f} ms, tomlkit {ms(lambda: tomlkit.parse(text), 50):.3f} ms"
    )
    item = tomlkit.parse(text)["rule"][0]
    print(
        f"rules        tomlkit item attributes naming a line or position: "
        f"{[a for a in dir(item) if 'line' in a.lower() or 'pos' in a.lower()]}"
    )


def processes() -> None:
    group = os.getpgid(0)

    def with_psutil() -> list[int]:
        found = []
        for process in psutil.process_iter(["status"]):
            try:
                if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == group:
                    found.append(process.pid)
            except (ProcessLookupError, psutil.Error):
                pass
        return found

    same = sorted(group_members(group)) == sorted(with_psutil())
    print(
        f"processes    memlens {ms(lambda: group_members(group), 50):.2f} ms, psutil {ms(with_psutil, 50):.2f} ms "
        f"over {len(psutil.pids())} processes (same members: {same})"
    )
    for module in ("psutil", "msgspec", "pydantic", "tomlkit"):
        code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        best = min(
            float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout) for _ in range(5)
        )
        print(f"import       {module}: {best * 1e3:.1f} ms")


def pool() -> None:
    before = threading.active_count()
    workers = multiprocessing.get_context("fork").Pool(2, maxtasksperchild=1)
    print(f"pool         threads before multiprocessing.Pool {before}, after {threading.active_count()}")
    workers.terminate()
    workers.join()
    try:
        concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"), max_tasks_per_child=1)
        print("pool         ProcessPoolExecutor takes max_tasks_per_child with fork")
    except ValueError as exc:
        print(f"pool         ProcessPoolExecutor: {exc}")


if __name__ == "__main__":
    print(
        f"Python {sys.version.split()[0]}, msgspec {msgspec.__version__}, pydantic {pydantic.VERSION}, "
        f"tomlkit {tomlkit.__version__}, psutil {psutil.__version__}"
    )
    results_json()
    rules()
    processes()
    pool()
