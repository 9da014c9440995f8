"""Kernel names: one form per kernel whichever reader found it, and short forms to show.

ncu's CSV writes `void tr<0>(float *, const float *, int)` where the report file's demangled name
(through `ncu_report`) is `void tr<(int)0>(float *, const float *, int)`: the demangler's cast of an
`int` template argument is dropped. Both readers pass names through `kernel_name` so one recording
gives one name. Names stay text: `<`, `>`, `&` and `*` are kept as they are.

A Numba kernel has a mangled name that differs by where it was read: `matmul[v1,cw51...]` in a
CSV, `__main__::matmul[abi:v1,cw51...](Array<...>)` in a .ncu-rep. `kernel_label` gives both the
label `matmul`; the full name stays in results and JSON (and on hover in HTML). `elide_middle`
shortens a long C++ name for a table or chart: template arguments first, then the middle, never
the start that names the kernel. (`io.safe_text.neutral` makes bidirectional control characters visible.)
"""

from __future__ import annotations

import re

# "(int)0", "(int)-1" as a template argument -> "0", "-1" (ncu's CLI form; seen with ncu 2025.3.1)
_INT_CAST = re.compile(r"\(int\)(-?\d+)")
# module::[qualifiers::]function[abi:vN,cw<hash>](arguments), the "abi:" and arguments optional
_NUMBA = re.compile(r"^(?:[^\s\[\]():]+::)*(?P<function>[A-Za-z_]\w*)\[(?:abi:)?v\d+(?:,cw\w+)?\](?:\(.*\))?$", re.S)
_SUITE_MODULE = re.compile(r"\bmemlens_suite_[0-9a-f]+_\w+::")  # how memlens imports a suite file
_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")
_SPLIT_ABI_TAGS = re.compile(r"\]\[abi:")  # a Numba kernel's two tags as c++filt writes them: f[abi:v3][abi:cw51…]
_RETURN_TYPE = re.compile(r"^(?:void|static|__global__)\s+")
ELLIPSIS = "…"
ANONYMOUS_NAMESPACE = "(anonymous namespace)"  # as c++filt writes one (ncu also writes "<unnamed>")
NAME_WIDTH = 100  # characters of a kernel name in a table, heading or log line; the whole name in JSON


def kernel_name(name: str) -> str:
    """`name` (demangled by ncu or by ncu_report) in the form ncu's CSV prints."""
    return _INT_CAST.sub(r"\1", name.strip())


def numba_function(name: str) -> str | None:
    """The Python function of a Numba kernel's mangled name (`matmul`), None for any other name."""
    match = _NUMBA.match(name.strip())
    return match.group("function") if match else None


def comparable_name(name: str) -> str:
    """`name` as it reads from another run and another demangler: memlens's import prefix of a suite file
    dropped (its hash differs between runs), a Numba kernel's ABI tags joined as ncu joins them
    (`m::f[abi:v3][abi:cw51…](…)`, the bank trace's demangler, is `m::f[abi:v3,cw51…](…)`)."""
    return _SPLIT_ABI_TAGS.sub(",", _SUITE_MODULE.sub("", name))


def kernel_label(name: str) -> str:
    """The label of a kernel outside any memlens family: a Numba kernel's function name (one label
    from a CSV and a .ncu-rep alike), any other name as it is."""
    return numba_function(name) or name


def short_kernel(name: str) -> str:
    """A kernel's name without its arguments, return type, ABI tags or module prefix:
    "void transpose<float, 32, 32, 0>(T1 *, const T1 *)" -> "transpose<float, 32, 32, 0>",
    "memlens_suite_9945_matmul::matmul_naive[abi:v1,cw51](Array<float, 2, C>)" -> "matmul_naive"."""
    function = numba_function(name)
    if function:
        return function
    text = _ABI_TAG.sub("", _SUITE_MODULE.sub("", name))
    depth = 0
    for index, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and index > 0 and not text.startswith(ANONYMOUS_NAMESPACE, index):
            text = text[:index]
            break
    return _RETURN_TYPE.sub("", text.strip()) or name


def elide_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters: innermost template and argument lists collapsed to
    `(…)` / `<…>` first, then the middle replaced by "…"; the start (the kernel's name) and the end
    are kept: `void transpose<float, 32, 32, 0>(T1 *, const T1 *)` at 36 -> `void transpose<float, 32, 32, 0>(…)`."""
    text = " ".join(text.split())
    while len(text) > width:
        shorter = _collapse_one(text)
        if shorter == text:
            break
        text = shorter
    if len(text) <= width:
        return text
    named = min((i for i in (text.find("<"), text.find("(")) if i > 0), default=len(text))  # the kernel's name
    head = min(max(1, (width - 1) * 2 // 3, named), max(1, width - 6))
    tail = max(0, width - 1 - head)
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def elide_lines(text: str, width: int) -> str:
    """Each line of `text` in at most `width` characters, a longer one shortened by `elide_middle`, its
    indent kept: a cell of a label and, indented below it, its kernel's name."""
    lines = []
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        lines.append(line if len(line) <= width else line[:indent] + elide_middle(line[indent:], width - indent))
    return "\n".join(lines)


_INNERMOST = re.compile(r"<([^<>()]*[^<>()…][^<>()]*)>|\(([^<>()]*[^<>()…][^<>()]*)\)")


def _collapse_one(text: str) -> str:
    """`text` with its longest innermost `(...)` list, else `<...>` list, replaced by `(…)` or `<…>`."""
    matches = list(_INNERMOST.finditer(text))
    if not matches:
        return text
    # argument lists first: template arguments often tell one instantiation from another (tr<0>, tr<1>)
    longest = max(matches, key=lambda m: (m.group(0)[0] == "(", len(m.group(0))))
    if len(longest.group(0)) <= 3:
        return text
    opening, closing = longest.group(0)[0], longest.group(0)[-1]
    return text[: longest.start()] + opening + ELLIPSIS + closing + text[longest.end() :]
