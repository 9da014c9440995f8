"""Starting ncu_report's SASS disassembler while ncu still runs.

The first `sass_by_pc` of a process starts ncu_report's disassembler: about half a second (0.45 s on
the CPU machine, 0.55 s on an H100's host), most of what reading a suite's report with its
instructions costs. ncu writes its report as it goes, a kernel at a time, so memlens starts the
disassembler on a copy of the first kernel written while ncu profiles the rest: the reading that
follows ncu finds it started. Best effort: whatever fails here, the reader starts it as before.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from memlens.model.catalogue import CATALOGUE, PER_PC_EXECUTIONS

RETRY_S = 0.5  # between tries on a report that holds no complete kernel yet
CORRELATED = (PER_PC_EXECUTIONS, CATALOGUE["shared_wavefronts"].ncu or "")

_lock = threading.Lock()
_stop = threading.Event()
_thread: threading.Thread | None = None
_done = False  # the disassembler is started in this process


def start(report: Path) -> None:
    """Start the disassembler on `report`, which ncu is writing, unless it is started or starting
    already; cheap to call on every poll of a running ncu."""
    global _thread
    with _lock:
        if _done or (_thread is not None and _thread.is_alive()) or not report.exists():
            return
        _stop.clear()
        _thread = threading.Thread(target=_warm_up, args=(report,), name="memlens-disassembler", daemon=True)
        _thread.start()


def settle() -> None:
    """Stop trying, and wait for a try under way: the reader then has ncu_report to itself (and its
    process one thread, which forking a helper needs)."""
    _stop.set()
    thread = _thread
    if thread is not None:
        thread.join()


def is_done() -> bool:
    return _done


def _warm_up(report: Path) -> None:
    global _done
    while not _stop.is_set():
        try:
            outcome = _try(report)
        except Exception:  # a third-party binding on a file still being written: try again later
            outcome = None
        if outcome is not None:
            _done = _done or outcome
            return
        _stop.wait(RETRY_S)


def _try(report: Path) -> bool | None:
    """One try on a copy of what ncu has written so far: True where it started the disassembler,
    False where there is nothing to start it for, None where the report holds no kernel yet."""
    try:
        import ncu_report
    except ImportError:
        return False
    with tempfile.TemporaryDirectory(prefix="memlens-warm-up-") as folder:
        copy = Path(folder) / "partial.ncu-rep"
        shutil.copyfile(report, copy)
        context = ncu_report.load_report(str(copy))
        if not context.num_ranges() or not context.range_by_idx(0).num_actions():
            return None
        action = context.range_by_idx(0).action_by_idx(0)
        for name in CORRELATED:
            metric = action.metric_by_name(name)
            if metric is not None and metric.num_instances() and metric.has_correlation_ids():
                action.sass_by_pc(metric.correlation_ids().as_uint64(0))
                return True
        return False  # no per-instruction metric (ncu --fast): the reader disassembles nothing either
