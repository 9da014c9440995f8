"""Units handed out as GPUs free up: the programs of one run's jobs share a folder (on one host: `--gpus`,
`--cluster local`), where memlens writes the run's units, largest expected cost first (`units.json`: each
unit its case labels). Each program takes the next unit nobody has taken, by making `<n>.claim` (O_EXCL:
one program wins), and runs it; it stops when none is left. A GPU that finishes early takes more, so the
cost model only orders the list: it no longer decides where each unit runs.

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


def write_units(folder: Path, units: Sequence[Sequence[str]]) -> None:
    """The run's units in the order they are to be taken, each its case labels."""
    write_output(folder / UNITS, json.dumps([list(unit) for unit in units]))


def claimed_units(folder: Path, tag: str) -> Iterator[tuple[int, list[str]]]:
    """Each unit this program takes (its number, its case labels), in the folder's order, until none is left."""
    units = json.loads((folder / UNITS).read_text(encoding="utf-8"))
    for number, labels in enumerate(units):
        try:
            handle = os.open(folder / f"{number}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        try:
            os.write(handle, tag.encode())
        finally:
            os.close(handle)
        yield number, [str(label) for label in labels]


def taken_by(folder: Path, tag: str) -> list[str]:
    """The case labels of every unit the job `tag` took, in the order they were listed."""
    units = json.loads((folder / UNITS).read_text(encoding="utf-8"))
    taken = []
    for number, labels in enumerate(units):
        try:
            if (folder / f"{number}.claim").read_text(encoding="utf-8") == tag:
                taken += [str(label) for label in labels]
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
