"""The hypothesis budget of each fuzzer: `@fuzz(N)` in place of `@settings(max_examples=N, deadline=None)`.

N is the fuzzer's thorough budget, run with MEMLENS_FUZZ=thorough (new random examples each run, as
before). By default (the "ci" profile, tests/conftest.py) a fuzzer runs a fifth of it, at least 20, from a
seed derived from the test's name: the same examples every run, so CI takes the same time and a failure
there fails again on rerun."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

FUZZ_ENV = "MEMLENS_FUZZ"
PROFILES = ("ci", "thorough")
CI_SHARE = 5  # the ci profile runs 1/CI_SHARE of a fuzzer's thorough budget
CI_LEAST = 20


def profile() -> str:
    """The profile MEMLENS_FUZZ names ("ci" when unset); anything else is a usage error of the test run."""
    name = os.environ.get(FUZZ_ENV, "") or "ci"
    if name not in PROFILES:
        raise SystemExit(f"{FUZZ_ENV}={name!r}: expected one of {', '.join(PROFILES)}")
    return name


def examples(thorough: int) -> int:
    """How many examples a fuzzer whose thorough budget is `thorough` runs under the current profile."""
    if profile() == "thorough":
        return thorough
    return min(thorough, max(CI_LEAST, thorough // CI_SHARE))


def register_profiles() -> None:
    """The two profiles, the one MEMLENS_FUZZ names loaded (tests/conftest.py, before any test module)."""
    # ci: derandomized, so no example database either (a fresh clone has none to replay)
    settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True)
    settings.register_profile("thorough", deadline=None, print_blob=True)
    settings.load_profile(profile())


def fuzz(thorough: int, **options: Any) -> settings:
    """The settings of a fuzzer whose thorough budget is `thorough` examples (other `settings` options
    passed through)."""
    return settings(max_examples=examples(thorough), deadline=None, **options)
