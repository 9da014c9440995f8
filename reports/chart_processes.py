"""A page's charts drawn side by side: in processes forked from memlens's own on a machine of 4 or more cores
(each chart function of reports/charts.py bound to its data, drawn for a screen and for a phone)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from memlens.reports.charts import NARROW, WIDE

Draw = Callable[..., "str | None"]  # a chart function with its data bound: draw(salt=..., width=...)
PARALLEL_CHARTS = 6  # from this many charts, a machine of 4 or more cores draws them in forked processes
_PENDING: list[tuple[str, Draw]] = []  # the charts forked processes draw, by index


def draw_charts(charts: Sequence[tuple[str, Draw]], workers: int | None = None) -> list[tuple[str, str] | None]:
    """Each (salt, draw) drawn twice, for a screen and for a phone: (wide, narrow) SVG, or None where there is
    nothing to draw. `workers` processes draw them (default: the machine's cores, 1 below 4 cores or for
    fewer than PARALLEL_CHARTS charts), forked from this one, and only while it runs one thread (a fork
    copies no other thread, nor what they hold): the output is the same either way (ids come from salts)."""
    if workers is None:
        cores = os.cpu_count() or 1
        workers = min(cores, len(charts)) if cores >= 4 and len(charts) >= PARALLEL_CHARTS else 1
    forkable = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if workers <= 1 or not forkable:
        return [_both(salt, draw) for salt, draw in charts]
    _PENDING[:] = charts  # the forked processes find them here, unpickled
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(_pending, range(len(charts))))
    except (OSError, BrokenProcessPool):  # no processes to be had here (no /dev/shm, a limit): one process draws
        return [_both(salt, draw) for salt, draw in charts]
    finally:
        _PENDING.clear()


def _pending(index: int) -> tuple[str, str] | None:
    return _both(*_PENDING[index])


def _both(salt: str, draw: Draw) -> tuple[str, str] | None:
    wide = draw(salt=f"{salt}-wide", width=WIDE)
    return (wide, draw(salt=f"{salt}-narrow", width=NARROW) or "") if wide else None
