"""Kernel names as ncu's command line prints them, whichever reader found them.

ncu's CSV writes `void tr<0>(float *, const float *, int)` where the report file's demangled name
(through `ncu_report`) is `void tr<(int)0>(float *, const float *, int)`: the demangler's cast of an
`int` template argument is dropped. Both readers pass names through `kernel_name` so one recording
gives one name. Names stay text: `<`, `>`, `&` and `*` are kept as they are.
"""

from __future__ import annotations

import re

# "(int)0", "(int)-1" as a template argument -> "0", "-1" (ncu's CLI form; seen with ncu 2025.3.1)
_INT_CAST = re.compile(r"\(int\)(-?\d+)")


def kernel_name(name: str) -> str:
    """`name` (demangled by ncu or by ncu_report) in the form ncu's CSV prints."""
    return _INT_CAST.sub(r"\1", name.strip())
