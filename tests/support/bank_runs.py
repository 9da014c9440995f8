"""A run directory as `memlens profile --banks` leaves it, made from the recorded bank_probe fixtures of one GPU:
profile.ncu-rep (ncu's run of tests/fixtures/programs/bank_probe.cu), results.json read from it by this memlens,
and banks.json (the same program's run under the trace)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from memlens.model.run_layout import BANKS_FILE, RESULTS
from memlens.readers import read_with_instructions
from tests.conftest import FIXTURES

BANK_GPUS = ("nvidia_h100_80gb_hbm3", "nvidia_h200")


def bank_probe_run(gpu: str, into: Path, banks: bool = True) -> Path:
    """`into`/run: the probe's run on `gpu` (a folder of tests/fixtures), with banks.json unless `banks` is False."""
    folder = FIXTURES / gpu / "banks"
    run = into / "run"
    run.mkdir(parents=True)
    shutil.copy(folder / "bank_probe.ncu-rep", run / "profile.ncu-rep")
    results = read_with_instructions(run / "profile.ncu-rep")
    (run / RESULTS).write_text(json.dumps(results.to_json()), encoding="utf-8")
    if banks:
        shutil.copy(folder / "bank_probe.banks.json", run / BANKS_FILE)
    return run
