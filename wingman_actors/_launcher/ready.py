"""The ready formations: the repository's top-level ``formations/`` folder, installed as
``wingman_actors.formations``.

The launcher names them three ways, from any directory: ``budget``,
``formations.budget`` and ``formations/budget.py`` (the last two are real paths and
modules in a checkout, and fall back to the installed package elsewhere).

Example:
    >>> "budget" in ready_names()
    True
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["PACKAGE", "import_ready", "ready_name", "ready_names"]

PACKAGE = "wingman_actors.formations"
"""Where the ready formations are installed."""

_CHECKOUT = Path(__file__).resolve().parents[2] / "formations"


def _package() -> ModuleType | None:
    try:
        return importlib.import_module(PACKAGE)
    except ModuleNotFoundError as exc:
        if exc.name not in (PACKAGE, None):
            raise
    # Run from a checkout that is not installed (python -m wingman_actors): the folder
    # beside the package, imported by its own name as a file path would be.
    if (_CHECKOUT / "__init__.py").is_file():
        root = str(_CHECKOUT.parent)
        if root not in sys.path:
            sys.path.insert(0, root)
        return importlib.import_module("formations")
    return None


def ready_names() -> list[str]:
    """The names of the ready formations, sorted (empty when none are installed)."""
    package = _package()
    if package is None:
        return []
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_"))


def ready_name(target: str) -> str | None:
    """The ready formation ``target`` names (``budget``, ``formations.budget`` or
    ``formations/budget.py``), or None when it names none."""
    name = target
    if name.endswith(".py"):
        parts = Path(name).parts
        if len(parts) > 2 or (len(parts) == 2 and parts[0] != "formations"):
            return None
        name = Path(name).stem
    elif name.startswith("formations."):
        name = name.removeprefix("formations.")
    if not name.isidentifier():
        return None
    return name if name in ready_names() else None


def import_ready(name: str) -> ModuleType:
    """Import the ready formation ``name`` (one of :func:`ready_names`)."""
    package = _package()
    if package is None:  # ready_name() found it, so the package exists
        raise ModuleNotFoundError(f"no module named {PACKAGE!r}", name=PACKAGE)
    return importlib.import_module(f"{package.__name__}.{name}")
