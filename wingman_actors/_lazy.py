"""Lazy exports (PEP 562) for packages whose public names would import too much up front
(the CLI answers ``--help`` without loading the runtime)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps each public name to the
    relative module that defines it; a name is imported on first use and then kept in
    ``namespace`` (the package's ``globals()``), so later look-ups cost nothing."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
