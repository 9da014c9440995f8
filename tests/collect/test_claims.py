"""Units handed out as GPUs free up (collect/claims.py): the folder the programs of one run share, the
profiled program taking units from it, and what memlens makes of a program's events and of units no
program took. CPU only: the CPU suite, no ncu."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from memlens.collect.claims import UNITS, claimed_units, release, taken_by, write_units
from memlens.collect.profile_run import Events
from memlens.collect.several_gpus import claim_order, unit_costs, units
from memlens.suite import select_variants
from tests.support.fake import CPU_SUITE

UNITS_OF_CPU_SUITE = [["transpose/conflict", "transpose/padded", "transpose/swizzled"],
                      ["running_mean/register", "running_mean/local"]]  # fmt: skip


def test_each_unit_goes_to_one_claimant_whoever_asks_first(tmp_path):
    units_list = [[f"f/v{i}"] for i in range(200)]
    write_units(tmp_path, units_list)
    taken: dict[str, list[int]] = {"a": [], "b": [], "c": []}

    def take(tag: str) -> None:
        taken[tag] = [number for number, _ in claimed_units(tmp_path, tag)]

    threads = [threading.Thread(target=take, args=(tag,)) for tag in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(n for numbers in taken.values() for n in numbers) == list(range(200))  # each once
    for tag, numbers in taken.items():
        assert numbers == sorted(numbers)  # each in the list's order
        assert taken_by(tmp_path, tag) == [label for n in numbers for label in units_list[n]]


def test_a_released_job_gives_back_its_units_and_no_others(tmp_path):
    write_units(tmp_path, UNITS_OF_CPU_SUITE)
    first = claimed_units(tmp_path, "job0")
    assert next(first) == (0, UNITS_OF_CPU_SUITE[0])
    assert [n for n, _ in claimed_units(tmp_path, "job1")] == [1]
    assert release(tmp_path, "job0") == 1  # its worker died: unit 0 for anyone again
    assert taken_by(tmp_path, "job0") == [] and taken_by(tmp_path, "job1") == UNITS_OF_CPU_SUITE[1]
    assert list(claimed_units(tmp_path, "job0-retry")) == [(0, UNITS_OF_CPU_SUITE[0])]


def test_the_units_are_taken_largest_first():
    selection = select_variants(CPU_SUITE, None, (), ("transpose.m=8,16",), False)
    costs = {case.label: 1.0 for case in selection.cases()}
    costs["running_mean/local"] = 4.0
    found = units(selection, costs, 2)
    ordered = claim_order(found, costs)
    assert [u.label for u in ordered] == ["running_mean", "transpose@m=8", "transpose@m=16"]  # ties: suite order
    assert unit_costs(ordered, costs)["running_mean"] == 5.0


def run_program(tmp_path: Path, claims: Path, tag: str) -> Events:
    from memlens.collect.profiled_program import main as app_main

    events = tmp_path / f"events.{tag}.jsonl"
    argv = ["--suite", str(CPU_SUITE), "--events", str(events), "--claims", str(claims), "--tag", tag]
    assert app_main(argv) == 0
    record = Events(events)
    record.poll()
    return record


def test_a_program_runs_only_the_units_it_takes(tmp_path):
    claims = tmp_path / "claims"
    claims.mkdir()
    write_units(claims, UNITS_OF_CPU_SUITE)
    (claims / "0.claim").write_text("job1")  # another GPU's program took the transposes
    record = run_program(tmp_path, claims, "job0")
    assert record.claiming and record.plan == [label for unit in UNITS_OF_CPU_SUITE for label in unit]
    assert record.claimed == UNITS_OF_CPU_SUITE[1]
    outcomes = record.outcomes(select_variants(CPU_SUITE, None).variants)
    # its outcomes are the cases it took, not every case of its plan as "not_run"
    assert [(f"{o.family}/{o.variant}", o.status) for o in outcomes] == [
        ("running_mean/register", "ok"), ("running_mean/local", "ok")]  # fmt: skip
    assert (claims / "1.claim").read_text() == "job0"
    later = run_program(tmp_path, claims, "job2")  # nothing left: it runs nothing, and says so
    assert later.claimed == [] and later.outcomes(select_variants(CPU_SUITE, None).variants) == ()
    lines = [json.loads(line) for line in (tmp_path / "events.job2.jsonl").read_text().splitlines()]
    assert [e["event"] for e in lines] == ["plan"]


def test_the_units_file_is_the_order_they_are_taken_in(tmp_path):
    write_units(tmp_path, [["b/x"], ["a/y", "a/z"]])
    assert json.loads((tmp_path / UNITS).read_text()) == [["b/x"], ["a/y", "a/z"]]
    assert list(claimed_units(tmp_path, "t")) == [(0, ["b/x"]), (1, ["a/y", "a/z"])]
