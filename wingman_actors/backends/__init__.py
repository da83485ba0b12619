"""Backends: where the node actors of a running formation live.

``Formation.start(backend="threads")`` (the default) runs every node replica as a Pykka
actor on its own thread in this process. A Ray backend is planned beside it.
"""

from __future__ import annotations

from typing import Any

from ..errors import FormationSetupError
from .base import Backend, NodeGroup, NodeRecipe
from .threads import ThreadsBackend

__all__ = ["BACKENDS", "Backend", "NodeGroup", "NodeRecipe", "ThreadsBackend", "new_backend"]

BACKENDS: dict[str, type[Any]] = {"threads": ThreadsBackend}
"""The backends of this version, by name."""

_PLANNED = {"ray": "the Ray backend is not available yet in this version of wingman-actors"}


def new_backend(name: str, *, formation: str = "") -> Backend:
    """The backend called ``name`` for a formation.

    Raises:
        FormationSetupError: no backend has that name (the message lists the available ones).
    """
    cls = BACKENDS.get(name) if isinstance(name, str) else None
    if cls is None:
        available = ", ".join(repr(n) for n in sorted(BACKENDS))
        planned = _PLANNED.get(name) if isinstance(name, str) else None
        why = f"{planned}; " if planned else ""
        raise FormationSetupError(formation, [
            f"unknown backend {name!r}: {why}available backends: {available} "
            "(e.g. start(backend='threads'))"
        ])
    backend: Backend = cls(formation)
    return backend
