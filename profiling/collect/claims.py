"""Shares that the GPUs even out as they run: the programs of one run's jobs share a folder (on one host:
`--gpus`, `--cluster local`), where memlens writes the run's units in suite order (`units.json`: each
unit its case labels, the job whose share it is in, and its expected cost). A program takes its own
share's units first, in suite order; then, its share done, the units of the other shares that nobody
has started, smallest expected cost first; then, every unit started, the last cases of the units that
others are still running, from the back while their runners go on from the front. So each GPU runs its
share as a static split would, and a GPU whose share ran faster than expected takes over what another
has not reached yet, down to single cases: a wrong estimate costs about a case and its unit's inputs,
not a unit. Taking a case is making `<unit>.<case>.claim` with O_EXCL, just before it runs: one program
wins.

Suite order within a share, not largest first: on two H200s, the same shares of the 40-case sweep took
2 to 4 s longer run largest unit first (the cases after the largest ones ran slower) than in suite
order, also with CuPy's cached blocks handed back between units.

A claim file holds its job's tag: a job retried elsewhere (its worker died) first gives its claims back
(`release`), since its results died with that worker.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from memlens.io.files import write_output

UNITS = "units.json"
TAIL_LEFT = 2  # the fewest unclaimed cases of a running unit for another program to take its last one


def write_units(folder: Path, units: Sequence[Sequence[str]], owners: Sequence[str], costs: Sequence[float]) -> None:
    """The run's units in suite order: each its case labels, the tag of the job whose share it is in,
    and its expected cost."""
    listed = [
        {"owner": owner, "cases": list(unit), "cost": cost}
        for unit, owner, cost in zip(units, owners, costs, strict=True)
    ]
    write_output(folder / UNITS, json.dumps(listed))


def _units(folder: Path) -> list[dict]:
    return json.loads((folder / UNITS).read_text(encoding="utf-8"))


def claimed_cases(folder: Path, tag: str) -> Iterator[str]:
    """Each case this program takes, claimed just before it runs, until none is left: the units of its own
    share in the list's order, then the other shares' units that nobody has started, smallest expected
    cost first (ties: the later in the list), each from its first case on; then the tails of the units
    others are running (_tail)."""
    units = _units(folder)
    own = [n for n, unit in enumerate(units) if unit["owner"] == tag]
    others = sorted(
        (n for n, unit in enumerate(units) if unit["owner"] != tag), key=lambda n: (float(units[n]["cost"]), -n)
    )
    for number in own + others:
        if _claim(folder, number, 0, tag):
            yield from _front_to_back(folder, units, number, tag)
    while (found := _tail(folder, units)) is not None:
        number, case = found
        if _claim(folder, number, case, tag):
            yield from _front_to_back(folder, units, number, tag) if case == 0 else [units[number]["cases"][case]]


def _front_to_back(folder: Path, units: list[dict], number: int, tag: str) -> Iterator[str]:
    """A unit this program started (took its first case): its cases in order, but those taken meanwhile."""
    cases = units[number]["cases"]
    yield cases[0]
    yield from (cases[i] for i in range(1, len(cases)) if _claim(folder, number, i, tag))


def _claim(folder: Path, unit: int, case: int, tag: str) -> bool:
    """Whether this program took case `case` of unit `unit` (made its claim file first)."""
    try:
        handle = os.open(folder / f"{unit}.{case}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(handle, tag.encode())
    finally:
        os.close(handle)
    return True


def _claims(folder: Path) -> Iterator[tuple[tuple[int, int], Path]]:
    """Each claimed case, (unit, case), and its claim file."""
    for claim in folder.glob("*.claim"):
        unit, _, case = claim.stem.partition(".")
        if unit.isdigit() and case.isdigit():
            yield (int(unit), int(case)), claim


def _tail(folder: Path, units: list[dict]) -> tuple[int, int] | None:
    """The next case to take once every unit is started: a unit nobody runs any more (its claims given back)
    from its first case, else the last unclaimed case of the running unit with the most unclaimed expected
    cost, where at least TAIL_LEFT of its cases are unclaimed: its runner then has cases left to run while
    this program makes the unit's inputs. None where there is none."""
    claimed = {key for key, _ in _claims(folder)}  # the names say it: no claim read
    best: tuple[float, int, int] | None = None
    for number, unit in enumerate(units):
        left = [i for i in range(len(unit["cases"])) if (number, i) not in claimed]
        if left and left[0] == 0:
            return number, 0
        cost = float(unit["cost"]) / len(unit["cases"]) * len(left)
        if len(left) >= TAIL_LEFT and (best is None or cost > best[0]):
            best = (cost, number, left[-1])
    return None if best is None else best[1:]


def taken_by(folder: Path, tag: str) -> list[str]:
    """The case labels of every case the job `tag` took, in the order they were listed."""
    claimed = {}
    for key, claim in _claims(folder):
        with contextlib.suppress(OSError):
            claimed[key] = claim.read_text(encoding="utf-8")
    return [
        label
        for number, unit in enumerate(_units(folder))
        for i, label in enumerate(unit["cases"])
        if claimed.get((number, i)) == tag
    ]


def release(folder: Path, tag: str) -> int:
    """Give back every case the job `tag` took; how many."""
    released = 0
    for claim in folder.glob("*.claim"):
        try:
            if claim.read_text(encoding="utf-8") == tag:
                claim.unlink()
                released += 1
        except OSError:
            continue
    return released
