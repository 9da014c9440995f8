"""The recorded H200 suite's results.json as a document, and copies of it with one field changed."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.conftest import FIXTURES

SUITE_RESULTS = FIXTURES / "nvidia_h200" / "suite.results.json"
VALID_RESULTS: dict[str, Any] = json.loads(SUITE_RESULTS.read_text(encoding="utf-8"))
TRANSPOSE_TEMPORARY = "756e0d64cdfd15dbe72b16407afa3795d807cab6.cubin.cu"  # CuPy's copy of kernels/transpose.cu


def assert_one_line(exc: Exception) -> None:
    assert str(exc) and "\n" not in str(exc), repr(str(exc))


def with_field(data: Any, path: tuple, value: Any, delete: bool) -> Any:
    """A copy of `data` with the field at `path` (keys and indices) set to `value`, or deleted."""
    if not path:
        return value
    data = copy.deepcopy(data)
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return data
