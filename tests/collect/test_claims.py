"""Shares the GPUs even out as they run (collect/claims.py): the folder the programs of one run share, the
profiled program taking units from it, and what memlens makes of a program's events and of units no
program took. CPU only: the CPU suite, no ncu."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from memlens.collect.claims import UNITS, claimed_cases, release, taken_by, write_units
from memlens.collect.profile_run import Events, ProfileOptions
from memlens.collect.scheduler import plan_jobs
from memlens.collect.several_gpus import units
from memlens.selection import select_variants
from tests.support.fake import CPU_SUITE

UNITS_OF_CPU_SUITE = [
    ["transpose/conflict", "transpose/padded", "transpose/swizzled"],
    ["running_mean/register", "running_mean/local"],
]


def test_each_case_goes_to_one_claimant_whoever_asks_first(tmp_path):
    units_list = [[f"f/v{i}.{j}" for j in range(1 + i % 3)] for i in range(200)]
    owners = ["a", "b", "c", "a"] * 50  # a's share twice the others'
    costs = [float(i % 7) for i in range(200)]
    write_units(tmp_path, units_list, owners, costs)
    taken: dict[str, list[str]] = {"a": [], "b": [], "c": []}

    def take(tag: str) -> None:
        taken[tag] = list(claimed_cases(tmp_path, tag))

    threads = [threading.Thread(target=take, args=(tag,)) for tag in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [label for unit in units_list for label in unit]
    assert sorted(label for labels in taken.values() for label in labels) == sorted(every)  # each once
    first = {unit[0]: n for n, unit in enumerate(units_list)}
    for tag, labels in taken.items():
        started = [first[label] for label in labels if label in first]  # the units it ran from the front
        own = [n for n in started if owners[n] == tag]
        assert own == sorted(own)  # its own first, in the list's order
        assert started == own + sorted(set(started) - set(own), key=lambda n: (costs[n], -n))  # then smallest first
        assert sorted(taken_by(tmp_path, tag)) == sorted(labels)


def test_a_released_job_gives_back_its_cases_and_no_others(tmp_path):
    write_units(tmp_path, UNITS_OF_CPU_SUITE, ["job0", "job1"], [3.0, 2.0])
    first = claimed_cases(tmp_path, "job0")
    assert [next(first), next(first)] == UNITS_OF_CPU_SUITE[0][:2]
    assert list(claimed_cases(tmp_path, "job1")) == UNITS_OF_CPU_SUITE[1]  # the last case: one left, not two
    assert release(tmp_path, "job0") == 2  # its worker died: its cases for anyone again
    assert taken_by(tmp_path, "job0") == [] and taken_by(tmp_path, "job1") == UNITS_OF_CPU_SUITE[1]
    assert list(claimed_cases(tmp_path, "job0-retry")) == UNITS_OF_CPU_SUITE[0]  # given back: run from the front


def test_a_program_done_with_every_unit_takes_the_last_cases_of_one_still_running(tmp_path):
    cases = [f"t/v{i}" for i in range(5)]
    write_units(tmp_path, [cases, ["r/x"], ["s/y", "s/z"]], ["b", "a", "b"], [10.0, 1.0, 4.0])
    b = claimed_cases(tmp_path, "b")
    assert next(b) == "t/v0"  # b runs its first unit's first case
    a = claimed_cases(tmp_path, "a")
    assert [next(a), next(a)] == ["r/x", "s/y"]  # its own unit, then b's unit that nobody started
    assert [next(a), next(a)] == ["s/z", "t/v4"]  # then the back of the unit b runs: 4 of its 5 cases left
    assert next(b) == "t/v1"
    assert next(a) == "t/v3"  # two left: b still has one to run while a runs this
    assert list(b) == ["t/v2"] and list(a) == []  # one left: b's
    assert taken_by(tmp_path, "a") == ["t/v3", "t/v4", "r/x", "s/y", "s/z"]


def run_program(tmp_path: Path, claims: Path, tag: str) -> Events:
    from memlens.collect.profiled_program import main as app_main

    events = tmp_path / f"events.{tag}.jsonl"
    argv = ["--suite", str(CPU_SUITE), "--events", str(events), "--claims", str(claims), "--tag", tag]
    assert app_main(argv) == 0
    record = Events(events)
    record.poll()
    return record


def test_a_program_runs_only_the_cases_it_takes(tmp_path):
    claims = tmp_path / "claims"
    claims.mkdir()
    write_units(claims, UNITS_OF_CPU_SUITE, ["job1", "job0"], [3.0, 2.0])
    for case in range(2):
        (claims / f"0.{case}.claim").write_text("job1")  # the other GPU's program runs its share's second case
    record = run_program(tmp_path, claims, "job0")
    assert record.claiming and record.plan == [label for unit in UNITS_OF_CPU_SUITE for label in unit]
    assert record.claimed == UNITS_OF_CPU_SUITE[1]  # its own unit; of the other, one case left: the runner's
    outcomes = record.outcomes(select_variants(CPU_SUITE, None).variants)
    # its outcomes are the cases it took, not every case of its plan as "not_run"
    assert [(f"{o.family}/{o.variant}", o.status) for o in outcomes] == [
        ("running_mean/register", "ok"),
        ("running_mean/local", "ok"),
    ]
    assert (claims / "1.0.claim").read_text() == (claims / "1.1.claim").read_text() == "job0"
    later = run_program(tmp_path, claims, "job2")  # nothing left but job1's last case: it runs nothing, and says so
    assert later.claimed == [] and later.outcomes(select_variants(CPU_SUITE, None).variants) == ()
    lines = [json.loads(line) for line in (tmp_path / "events.job2.jsonl").read_text().splitlines()]
    assert [e["event"] for e in lines] == ["plan"]


def test_the_units_file_lists_each_unit_with_its_share_and_cost(tmp_path):
    write_units(tmp_path, [["a/y", "a/z"], ["b/x"]], ["job1", "job0"], [2.0, 1.0])
    assert json.loads((tmp_path / UNITS).read_text()) == [
        {"owner": "job1", "cases": ["a/y", "a/z"], "cost": 2.0},
        {"owner": "job0", "cases": ["b/x"], "cost": 1.0},
    ]
    assert list(claimed_cases(tmp_path, "job2")) == ["b/x", "a/y", "a/z"]  # none its own


def test_a_program_takes_its_share_then_what_the_others_have_not_started_smallest_first(tmp_path):
    costs = [5.0, 9.0, 1.0, 2.0, 4.0, 2.0]
    write_units(tmp_path, [[f"f/v{n}"] for n in range(6)], ["a", "b", "a", "b", "a", "b"], costs)
    b = claimed_cases(tmp_path, "b")
    assert next(b) == "f/v1"  # b runs the first unit of its share meanwhile
    taken = list(claimed_cases(tmp_path, "a"))
    assert taken == ["f/v0", "f/v2", "f/v4", "f/v5", "f/v3"]  # its own, then b's (ties: the later first)
    assert list(b) == []


def test_the_jobs_shares_are_the_split_of_a_run_without_a_shared_folder(tmp_path):
    options = ProfileOptions(suite=str(CPU_SUITE), sweeps=("transpose.m=8,16,32",), out_dir=tmp_path / "runs")
    selection = select_variants(CPU_SUITE, None, (), options.sweeps, False)
    static = plan_jobs(options, selection, 2)
    jobs = plan_jobs(options, selection, 2, tmp_path)
    assert [job.tag for job in jobs] == [job.tag for job in static] == ["job0", "job1"]
    listed = json.loads((tmp_path / UNITS).read_text())
    listed_shares = {
        job.tag: sorted(c for unit in listed if unit["owner"] == job.tag for c in unit["cases"]) for job in jobs
    }
    assert listed_shares == {job.tag: sorted(job.cases) for job in static}  # the shares the split gives
    assert [unit["cases"] for unit in listed] == [[c.label for c in unit.cases()] for unit in units(selection)]
    assert [unit["cost"] for unit in listed] == [3.0, 3.0, 3.0, 2.0]  # one a case: no run before, no min_bytes
    assert all(job.cases == tuple(c.label for c in selection.cases()) for job in jobs)  # any unit may be its
