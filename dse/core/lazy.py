"""Names a package exports but loads on first use (PEP 562), so that importing the package (and
starting the `dse` command) stays cheap: `__getattr__, __dir__ = lazy_names(__name__, table)`
in the package's `__init__`, with `table` mapping each public name to the module defining it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, table: Mapping[str, str]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module-level `__getattr__` and `__dir__`: an unknown name raises
    AttributeError; a loaded one is cached in the package so the hook runs once per name."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
