"""Recorded reports kept xz-compressed in the repository (those that carry library modules: 10 to 17 MB a
report), unpacked once per test session into a temporary folder (one per pytest-xdist worker too)."""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import tempfile
from pathlib import Path

_UNPACKED = Path(tempfile.mkdtemp(prefix="memlens-fixtures-"))


def unpacked(packed: Path) -> Path:
    """The report `packed` (`NAME.ncu-rep.xz`) unpacked as `NAME.ncu-rep`, the same bytes as recorded."""
    folder = hashlib.sha1(str(packed.resolve().parent).encode()).hexdigest()[:12]  # one folder per recorded folder
    target = _UNPACKED / folder / packed.name.removesuffix(".xz")
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        # into a file of its own, then renamed whole: a reader (a thread, a child process) sees no half report
        descriptor, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
        try:
            with lzma.open(packed) as source, os.fdopen(descriptor, "wb") as out:
                shutil.copyfileobj(source, out)
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return target
