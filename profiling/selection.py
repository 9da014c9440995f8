"""Selecting what a command runs: the variants a `-k` pattern picks from a suite, the `--size`
overrides and the `--sweep`s, every one checked before a GPU or a compiler is touched; the cases a
selection runs (a variant at one size)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memlens.errors import ConfigError
from memlens.model.nvtx_names import NAME_PATTERN, swept_name
from memlens.suite import Suite, Variant, load_suite


def parse_sizes(items: Iterable[str]) -> dict[str, int]:
    """`--size` items, NAME=N or FAMILY.NAME=N, as {name: N}; ConfigError for a malformed one."""
    sizes = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value.isdigit() or int(value) <= 0:
            raise ConfigError(f"bad --size {item!r}: expected NAME=POSITIVE_INTEGER, e.g. m=1024")
        sizes[key] = int(value)
    return sizes


@dataclass(frozen=True)
class Sweep:
    """`--sweep FAMILY.NAME=V1,V2,...`: one size of one family, run at each value in turn."""

    item: str  # as the user gave it, for messages
    family: str
    name: str
    values: tuple[int, ...]


def parse_sweeps(items: Iterable[str]) -> tuple[Sweep, ...]:
    """`--sweep` items as Sweeps; ConfigError for a malformed one or a second sweep of one family."""
    sweeps: list[Sweep] = []
    for item in items:
        key, sep, text = item.partition("=")
        family, dot, name = key.partition(".")
        usage = f"bad --sweep {item!r}: expected FAMILY.NAME=V1,V2,... of positive integers, e.g. transpose.rows=64,128"
        if not (sep and dot and NAME_PATTERN.match(family) and NAME_PATTERN.match(name)):
            raise ConfigError(usage)
        texts = text.split(",")
        bad = next((t for t in texts if not (t.isdigit() and int(t) > 0)), None)
        if bad is not None:
            raise ConfigError(f"{usage} (not a positive integer: {bad!r})")
        values = tuple(int(t) for t in texts)
        if len(set(values)) != len(values):
            raise ConfigError(f"bad --sweep {item!r}: a value is given twice")
        if any(s.family == family for s in sweeps):
            raise ConfigError(f"--sweep {item}: one --sweep per family ({family} is swept already)")
        sweeps.append(Sweep(item, family, name, values))
    return tuple(sweeps)


@dataclass(frozen=True)
class Case:
    """One variant at one size: what a run launches, times and labels. A variant outside any sweep
    is one case named as the variant; a swept one is a case per value, named "variant@NAME=VALUE"."""

    variant: Variant
    swept: tuple[str, int] | None = None  # (size name, value) in a sweep

    @property
    def name(self) -> str:
        return self.variant.name if self.swept is None else swept_name(self.variant.name, *self.swept)

    @property
    def label(self) -> str:
        return f"{self.variant.family.name}/{self.name}"

    @property
    def range_name(self) -> str:
        return f"{self.variant.family.name}.{self.name}"

    def size(self, overrides: Mapping[str, int] | None = None, small: bool = False) -> dict[str, int]:
        size = self.variant.family.size(overrides, small)
        if self.swept is not None:
            size[self.swept[0]] = self.swept[1]
        return size


@dataclass(frozen=True)
class Selection:
    """The variants a command works on, the size overrides and the sweeps, every one checked."""

    suite: Suite
    variants: list[Variant]
    sizes: dict[str, int]
    sweeps: tuple[Sweep, ...] = ()

    def cases(self) -> list[Case]:
        """The variants as run: a family outside any sweep as it is; a swept family value by value,
        each value's variants together (they share one set of inputs)."""
        cases: list[Case] = []
        sweeps = {s.family: s for s in self.sweeps}
        for family in dict.fromkeys(v.family.name for v in self.variants):
            variants = [v for v in self.variants if v.family.name == family]
            sweep = sweeps.get(family)
            if sweep is None:
                cases.extend(Case(v) for v in variants)
            else:
                cases.extend(Case(v, (sweep.name, value)) for value in sweep.values for v in variants)
        return cases


def check_sweeps(sweeps: tuple[Sweep, ...], variants: list[Variant], sizes: Mapping[str, int], small: bool) -> None:
    """Every sweep must name a selected family and one of its sizes, at values the family accepts."""
    families = {v.family.name: v.family for v in variants}
    for sweep in sweeps:
        family = families.get(sweep.family)
        if family is None:
            raise ConfigError(
                f"--sweep {sweep.item}: no selected family {sweep.family!r} (families: {', '.join(families)})"
            )
        if sweep.name not in family.default_size:
            raise ConfigError(
                f"--sweep {sweep.item}: family {family.name} has no size {sweep.name!r} "
                f"(sizes: {', '.join(family.default_size)})"
            )
        if family.check_size is None:
            continue
        for value in sweep.values:
            size = {**family.size(sizes, small), sweep.name: value}
            try:
                family.check_size(size)
            except ConfigError as exc:
                raise ConfigError(f"--sweep {sweep.item}: {family.name} refuses {sweep.name}={value}: {exc}") from None


def select_variants(
    path: str | Path | None,
    pattern: str | None,
    sizes: Iterable[str] = (),
    sweeps: Iterable[str] = (),
    small: bool = False,
) -> Selection:
    """The one way every command (profile, the profiled program, bench, check, list) selects variants:
    the suite, the variants `pattern` selects, the parsed `--size` and `--sweep` items. ConfigError where an
    item is malformed, the pattern is not a regex or selects nothing, a size override names no size
    of the selected families, or a sweep no selected family's size or a value it refuses; nothing here
    touches a GPU or a compiler."""
    parsed = parse_sizes(sizes)
    swept = parse_sweeps(sweeps)
    suite = load_suite(path)
    variants = suite.selected(pattern)
    suite.check_sizes(parsed, variants)
    check_sweeps(swept, variants, parsed, small)
    return Selection(suite, variants, parsed, swept)
