"""Shares that the GPUs even out as they run: the programs of one run's jobs share a folder (on one host:
`--gpus`, `--cluster local`), where memlens writes the run's units in suite order (`units.json`: each
unit its case labels, the job whose share it is in, and its expected cost). A program takes its own
share's units first, in suite order; then, its share done, the units of the other shares that nobody
has started, smallest expected cost first. Taking a unit is making `<n>.claim` with O_EXCL: one program
wins. So each GPU runs its share as a static split would, and a GPU whose share ran faster than
expected takes over what another has not reached yet.

Suite order within a share, not largest first: on two H200s, the same shares of the 40-case sweep took
2 to 4 s longer run largest unit first (the cases after the largest ones ran slower) than in suite
order, also with CuPy's cached blocks handed back between units.

A claim file holds its job's tag: a job retried elsewhere (its worker died) first gives its claims back
(`release`), since its results died with that worker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from memlens.io.files import write_output

UNITS = "units.json"


def write_units(folder: Path, units: Sequence[Sequence[str]], owners: Sequence[str], costs: Sequence[float]) -> None:
    """The run's units in suite order: each its case labels, the tag of the job whose share it is in,
    and its expected cost."""
    listed = [{"owner": owner, "cases": list(unit), "cost": cost}
              for unit, owner, cost in zip(units, owners, costs, strict=True)]  # fmt: skip
    write_output(folder / UNITS, json.dumps(listed))


def _units(folder: Path) -> list[dict]:
    return json.loads((folder / UNITS).read_text(encoding="utf-8"))


def claimed_units(folder: Path, tag: str) -> Iterator[tuple[int, list[str]]]:
    """Each unit this program takes (its number, its case labels) until none is left: its own share's in
    the list's order, then the others', smallest expected cost first (ties: the later in the list)."""
    units = _units(folder)
    own = [n for n, unit in enumerate(units) if unit["owner"] == tag]
    others = sorted((n for n, unit in enumerate(units) if unit["owner"] != tag),
                    key=lambda n: (float(units[n]["cost"]), -n))  # fmt: skip
    for number in own + others:
        try:
            handle = os.open(folder / f"{number}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        try:
            os.write(handle, tag.encode())
        finally:
            os.close(handle)
        yield number, [str(label) for label in units[number]["cases"]]


def taken_by(folder: Path, tag: str) -> list[str]:
    """The case labels of every unit the job `tag` took, in the order they were listed."""
    taken = []
    for number, unit in enumerate(_units(folder)):
        try:
            if (folder / f"{number}.claim").read_text(encoding="utf-8") == tag:
                taken += [str(label) for label in unit["cases"]]
        except OSError:
            continue
    return taken


def release(folder: Path, tag: str) -> int:
    """Give back every unit the job `tag` took; how many."""
    released = 0
    for claim in folder.glob("*.claim"):
        try:
            if claim.read_text(encoding="utf-8") == tag:
                claim.unlink()
                released += 1
        except OSError:
            continue
    return released
