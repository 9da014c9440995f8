"""The code as it ran: a run keeps the text of every source file its kernels' lines name.

A run read later (after an edit, on another machine, once CuPy's temporary copy is gone) then
shows the lines that ran, not what the file holds now. memlens keeps the files itself, in
results.json's "sources", rather than asking ncu to (`--import-source yes`): ncu imports every file
of every profiled module's line table, library headers and PyTorch's or Triton's sources included
(17 MB for the PyTorch + Triton fixture program), where memlens keeps only the files its per-line
figures name (the suite: its .cu and .py files; a CUDA program: its own files). A file is kept up to
MAX_FILE_BYTES; a CuPy kernel's temporary source is taken from CuPy's cache, where the profiled
program saved it (memlens profile sets CUPY_CACHE_SAVE_CUDA_SOURCE=1 for it).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memlens.model.results import RunResults
from memlens.model.source_lines import SourceMap

MAX_FILE_BYTES = 1_000_000  # a source larger than this (a generated file) is not kept


def keep_sources(results: RunResults, root: Path | None = None) -> RunResults:
    """`results` with the text of every file its kernels' instructions name (those the report embeds
    already, the others read now from disk, CuPy's temporary ones from its cache) in
    `embedded_sources`, which results.json writes as "sources"."""
    root = (root or Path.cwd()).resolve()
    declared: dict[tuple[str | None, str | None], tuple[str, ...]]  # a kernel's family may be None
    declared = {(o.family, o.variant): o.sources for o in results.outcomes}
    kept = dict(results.embedded_sources)
    missing: set[str] = set()
    for kernel in results.kernels:
        files = {record.file for record in kernel.instructions if record.file}
        for recorded in sorted(files - set(kept) - missing):
            sources = SourceMap(root, None, declared.get((kernel.family, kernel.variant), ()))
            _, path, _ = sources.resolve(recorded, kernel.kernel)
            text = _read(path) if path is not None else None
            if text is None:
                missing.add(recorded)
            else:
                kept[recorded] = text
    return replace(results, embedded_sources=kept)


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
