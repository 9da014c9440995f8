"""How suite variants are named: the NVTX domain and range names; the -k filter on labels and kernels.

Kept free of heavy imports: readers and `memlens metrics` need it without NumPy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from memlens.errors import ConfigError

NVTX_DOMAIN = "memlens"
# Names become NVTX ranges "family.variant" that ncu filters with a regex; keep them plain.
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def compile_filter(pattern: str | None) -> re.Pattern[str] | None:
    """The -k regex, searched in "family/variant" labels (or kernel names)."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"bad -k pattern {pattern!r}: {exc}") from None


class _Named(Protocol):  # read-only members: frozen records match
    @property
    def label(self) -> str: ...  # "family/variant", or the name a plain report gives
    @property
    def kernel(self) -> str: ...  # the function's name


Kernel = TypeVar("Kernel", bound=_Named)


def kernels_matching(kernels: Iterable[Kernel], pattern: str | None) -> list[Kernel]:
    """The -k filter over measured kernels: those whose label or function name the regex `pattern`
    matches (a search; every kernel where None). ConfigError for a pattern that is not a regex."""
    regex = compile_filter(pattern)
    return [k for k in kernels if regex is None or regex.search(k.label) or regex.search(k.kernel)]


def labels_pattern(labels: Sequence[str]) -> str:
    """A -k regex that selects exactly these family/variant labels (one GPU's share of a suite)."""
    return "^(?:" + "|".join(re.escape(label) for label in labels) + ")$"


# A variant run at one size of a sweep (--sweep FAMILY.NAME=V1,V2): "conflict@rows=1024". The name
# stands for the variant in its NVTX range ("transpose.conflict@rows=1024"), label and results.
SWEPT_PATTERN = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)@([A-Za-z][A-Za-z0-9_]*)=([0-9]+)$")


def swept_name(variant: str, size: str, value: int) -> str:
    """The name of `variant` run with size `size` = `value` in a sweep."""
    return f"{variant}@{size}={value}"


def parse_swept(name: str | None) -> tuple[str, str, int] | None:
    """(variant, size name, value) of a swept variant's name, None for any other name."""
    match = SWEPT_PATTERN.match(name or "")
    return (match.group(1), match.group(2), int(match.group(3))) if match else None


# NVTX domains that libraries open ranges in, around their own launches: CCCL (CUB and Thrust, which CuPy's
# reductions and sorts use: "CCCL@cub::DeviceSegmentedReduce::Sum", seen on the H100) and NCCL (its
# collectives, nccl_domain "NCCL" in its source). cuBLAS, cuDNN and Triton open none by default (a PyTorch
# loop's GEMMs carried no range of theirs); PyTorch's emit_nvtx puts its per-operator ranges in NVTX's
# default domain, where they count as the program's own (it is something a user turns on).
LIBRARY_DOMAINS = ("CCCL", "NCCL")
RANGE_JOINER = " > "  # a launch's NVTX label: its open ranges, outermost first (readers/metric_values.py)


def exact_range_filter(name: str, domain: str | None = None, push_pop: bool = True) -> str:
    """The `--nvtx-include` (or `--nvtx-exclude`) filter that selects push/pop ranges (start/end ranges
    where not `push_pop`) of NVTX's default domain (or of `domain`) named `name`, and no other name but one
    that differs only in punctuation: `regex:^copy.misaligned$/` for `copy/misaligned`. Every character but
    a letter, digit, `_`, `-` or space becomes `.`: a `/`, `@`, `,` or `+` is ncu's own filter syntax (a `/`
    in a plain filter means a nested range, so `copy/misaligned/` selects a range `misaligned` inside a
    range `copy`), and a regex's special characters differ between dialects."""
    where = f"{_exactly(domain)}@" if domain else ""
    return f"regex:{where}{_exactly(name)}" + ("/" if push_pop else "")


def _exactly(name: str) -> str:
    return "^" + re.sub(r"[^A-Za-z0-9_ -]", ".", name) + "$"


def innermost_range(path: str, library: tuple[str, ...] = LIBRARY_DOMAINS) -> tuple[str | None, str] | None:
    """(domain, name) of the innermost range of a launch's NVTX label (`step > forward`, `app@step`),
    a library's range left out (it only adds to the label); None where the label holds no other."""
    for part in reversed(path.split(RANGE_JOINER)):
        domain, at, name = part.partition("@")
        if not at:
            return None, part
        if not is_library_domain(domain, library):
            return domain, name
    return None


def is_library_domain(name: str, library: tuple[str, ...] = LIBRARY_DOMAINS) -> bool:
    return name.strip() in library


def domains_other_than(names: Iterable[str]) -> str:
    """A regular expression that matches any domain name but `names`, whole: `^(...)$` with alternation,
    character classes and `.*` only (no look-ahead), so it means the same under a full match and a search
    and in any regex dialect ncu may use. It has no `@`, `,`, `/` or `+` (ncu's own NVTX syntax)."""
    words = sorted({name for name in names if name})
    for word in words:
        if not re.fullmatch(r"[A-Za-z0-9_]+", word):  # nothing ncu's filter syntax or a regex would read
            raise ConfigError(f"library domain {word!r}: letters, digits and '_' only")
    alternatives = _other_than(words, "")
    return "^(" + "|".join(alternatives) + ")$"


def _other_than(words: list[str], prefix: str) -> list[str]:
    """The alternatives that match what starts with `prefix` and is none of `words` (which all start with it)."""
    escaped = prefix  # letters, digits and '_': nothing to escape
    ending = [w for w in words if len(w) > len(prefix)]
    found = [escaped] if prefix and prefix not in words else []
    if not ending:  # prefix is one of the words, nothing longer is: any longer name
        return [*found, escaped + "..*"]
    following = sorted({w[len(prefix)] for w in ending})
    found.append(escaped + "[^" + "".join(following) + "].*")
    for char in following:
        found.extend(_other_than([w for w in ending if w[len(prefix)] == char], prefix + char))
    return found
