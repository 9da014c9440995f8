"""Recorded reports kept xz-compressed in the repository (those that carry library modules: 10 to 17 MB a
report), unpacked once per test session into a temporary folder."""

from __future__ import annotations

import hashlib
import lzma
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
        partial = target.with_suffix(".partial")
        with lzma.open(packed) as source, partial.open("wb") as out:
            shutil.copyfileobj(source, out)
        partial.replace(target)
    return target
