"""Shares the GPUs even out as they run (collect/claims.py): the folder the programs of one run share, the
profiled program taking units from it, and what memlens makes of a program's events and of units no
program took. CPU only: the CPU suite, no ncu."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from memlens.collect.claims import UNITS, claimed_units, release, taken_by, write_units
from memlens.collect.profile_run import Events, ProfileOptions
from memlens.collect.scheduler import plan_jobs
from memlens.collect.several_gpus import units
from memlens.suite import select_variants
from tests.support.fake import CPU_SUITE

UNITS_OF_CPU_SUITE = [["transpose/conflict", "transpose/padded", "transpose/swizzled"],
                      ["running_mean/register", "running_mean/local"]]  # fmt: skip


def test_each_unit_goes_to_one_claimant_whoever_asks_first(tmp_path):
    units_list = [[f"f/v{i}"] for i in range(200)]
    owners = ["a", "b", "c", "a"] * 50  # a's share twice the others'
    costs = [float(i % 7) for i in range(200)]
    write_units(tmp_path, units_list, owners, costs)
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
        own = [n for n in numbers if owners[n] == tag]
        assert own == sorted(own)  # its own first, in the list's order
        stolen = sorted(set(numbers) - set(own), key=lambda n: (costs[n], -n))
        assert numbers == own + stolen  # then the others', smallest first
        assert taken_by(tmp_path, tag) == [label for n in sorted(numbers) for label in units_list[n]]


def test_a_released_job_gives_back_its_units_and_no_others(tmp_path):
    write_units(tmp_path, UNITS_OF_CPU_SUITE, ["job0", "job1"], [3.0, 2.0])
    first = claimed_units(tmp_path, "job0")
    assert next(first) == (0, UNITS_OF_CPU_SUITE[0])
    assert [n for n, _ in claimed_units(tmp_path, "job1")] == [1]
    assert release(tmp_path, "job0") == 1  # its worker died: unit 0 for anyone again
    assert taken_by(tmp_path, "job0") == [] and taken_by(tmp_path, "job1") == UNITS_OF_CPU_SUITE[1]
    assert list(claimed_units(tmp_path, "job0-retry")) == [(0, UNITS_OF_CPU_SUITE[0])]


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
    write_units(claims, UNITS_OF_CPU_SUITE, ["job1", "job0"], [3.0, 2.0])
    (claims / "0.claim").write_text("job1")  # the other GPU's program took its share
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


def test_the_units_file_lists_each_unit_with_its_share_and_cost(tmp_path):
    write_units(tmp_path, [["a/y", "a/z"], ["b/x"]], ["job1", "job0"], [2.0, 1.0])
    assert json.loads((tmp_path / UNITS).read_text()) == [
        {"owner": "job1", "cases": ["a/y", "a/z"], "cost": 2.0},
        {"owner": "job0", "cases": ["b/x"], "cost": 1.0},
    ]
    assert list(claimed_units(tmp_path, "job2")) == [(1, ["b/x"]), (0, ["a/y", "a/z"])]  # none its own


def test_a_program_takes_its_share_then_what_the_others_have_not_started_smallest_first(tmp_path):
    costs = [5.0, 9.0, 1.0, 2.0, 4.0, 2.0]
    write_units(tmp_path, [[f"f/v{n}"] for n in range(6)], ["a", "b", "a", "b", "a", "b"], costs)
    b = claimed_units(tmp_path, "b")
    assert next(b) == (1, ["f/v1"])  # b runs the first unit of its share meanwhile
    assert [n for n, _ in claimed_units(tmp_path, "a")] == [0, 2, 4, 5, 3]  # its own, then b's (ties: later first)
    assert list(b) == []


def test_the_jobs_shares_are_the_split_of_a_run_without_a_shared_folder(tmp_path):
    options = ProfileOptions(suite=str(CPU_SUITE), sweeps=("transpose.m=8,16,32",), out_dir=tmp_path / "runs")
    selection = select_variants(CPU_SUITE, None, (), options.sweeps, False)
    static = plan_jobs(options, selection, 2)
    jobs = plan_jobs(options, selection, 2, tmp_path)
    assert [job.tag for job in jobs] == [job.tag for job in static] == ["job0", "job1"]
    listed = json.loads((tmp_path / UNITS).read_text())
    listed_shares = {job.tag: sorted(c for unit in listed if unit["owner"] == job.tag for c in unit["cases"])
                     for job in jobs}  # fmt: skip
    assert listed_shares == {job.tag: sorted(job.cases) for job in static}  # the shares the split gives
    assert [unit["cases"] for unit in listed] == [[c.label for c in unit.cases()] for unit in units(selection)]
    assert [unit["cost"] for unit in listed] == [3.0, 3.0, 3.0, 2.0]  # one a case: no run before, no min_bytes
    assert all(job.cases == tuple(c.label for c in selection.cases()) for job in jobs)  # any unit may be its
