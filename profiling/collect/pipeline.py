"""The steps every run takes, a suite's or a program's: while ncu runs, the report's disassembler
started; then its RunInfo (provenance included), its results read from the raw report, and saving
them (results.json, then `latest`).

The typed results and the readers are imported where used: `memlens profile -- COMMAND` starts ncu
before it pays for them (tests/benchmarks/start_time.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlens.collect.run_dir import Machine, point_latest, take_provenance
from memlens.errors import MemlensError
from memlens.io.files import write_json_output
from memlens.model.ncu_settings import NcuSettings
from memlens.model.run_layout import RESULTS

if TYPE_CHECKING:
    from memlens.model.results import KernelResult, RunInfo, RunResults, VariantOutcome


def run_info(
    settings: NcuSettings,
    ncu_version: str | None,
    machine: Machine,
    suite: Path | None,
    memlens_command: str,
    started: dt.datetime,
    **program: Any,
) -> RunInfo:
    """The RunInfo of a run that started at `started` and ends now (suite None: a program run, whose
    launch sampling comes in `program`)."""
    from memlens.model.results import RunInfo

    return RunInfo(
        **take_provenance(machine, suite, memlens_command, started),
        ncu_version=ncu_version,
        ncu_settings=settings,
        **program,
    )


def start_disassembler(report: Path) -> None:
    """Start, on the first kernel ncu has written to `report`, the disassembler that reading the
    report after ncu needs (readers/early_disassembly.py): cheap to call on every poll of a running ncu."""
    from memlens.readers import early_disassembly

    early_disassembly.start(report)


def read_results(
    report: Path,
    info: RunInfo,
    outcomes: tuple[VariantOutcome, ...] = (),
    complete: bool = True,
    keep: Callable[[KernelResult], bool] | None = None,
) -> tuple[RunResults, MemlensError | None]:
    """The run's results from its raw report: the kernels `keep` accepts (every one where None), with
    each line's instructions, the GPU, its roofline ceilings and the sources the lines name; and the
    reader's error, where the report cannot be read (the results then hold no kernel). A run that
    wrote no report has no kernel and no error."""
    from memlens.collect.source_copies import keep_sources
    from memlens.model.results import RunResults
    from memlens.model.roofline import run_ceilings, tensor_ceilings
    from memlens.readers import read_report

    if not report.exists():
        return RunResults(info, (), outcomes, complete), None
    try:
        measured = read_report(report, instructions=True)
    except MemlensError as exc:  # unreadable, or no ncu-report package: results.json is still written
        return RunResults(info, (), outcomes, complete), exc
    kernels = tuple(k for k in measured.kernels if keep is None or keep(k))
    info = replace(
        info,
        gpu_name=measured.info.gpu_name,
        compute_capability=measured.info.compute_capability,
        source=report.name,
        peak_tensor_flops=tensor_ceilings(kernels),
        **run_ceilings(kernels),  # type: ignore[arg-type]
    )
    results = RunResults(info, kernels, outcomes, complete, embedded_sources=measured.embedded_sources)
    return keep_sources(results), None


def save_run(out_dir: Path, run_dir: Path, results: RunResults, error: BaseException | None) -> None:
    """Write results.json, point `<out_dir>/latest` at the run (a failed run is the latest too), then
    raise the run's error, or else the link's, if any."""
    write_json_output(run_dir / RESULTS, results.to_json(), record=True)  # OutputError (exit 2) on an OS error
    link_error = point_latest(out_dir, run_dir)
    error = error or link_error
    if error is not None:
        raise error
