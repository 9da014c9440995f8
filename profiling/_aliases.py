"""In a source checkout: `memlens` is `profiling`, `memlens.reports` is `reports`, `memlens.kernels`
is the suite folder kernels/, as they are once installed (pyproject's package-dir). Each alias is
the same module object, never a second copy, so classes and exceptions stay one."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

PUBLIC = "memlens"
# public prefix -> the checkout's name for it, longest first
_MAP = (("memlens.reports", "reports"), ("memlens", "profiling"))


def checkout_name(name: str) -> str | None:
    """The checkout's module name for a public `memlens...` name, or None."""
    for public, real in _MAP:
        if name == public or name.startswith(public + "."):
            return real + name[len(public) :]
    return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        real = checkout_name(name)
        if real is None or importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return importlib.import_module(checkout_name(spec.name))  # type: ignore[arg-type]

    def exec_module(self, module: ModuleType) -> None:
        pass  # the module ran already, under its checkout name


def install() -> None:
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
