"""Writing a JSON document atomically, for tests, fixtures scripts and benchmarks (memlens writes through io.files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memlens.io.files import write_text_atomic


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)  # memlens makes no folders; a test's scratch may want them
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")
