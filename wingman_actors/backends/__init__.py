"""Backends: where the node actors of a running formation live.

``Formation.start(backend="threads")`` (the default) runs every node replica as a Pykka
actor on its own thread in this process; ``backend="ray"`` runs every replica as a Ray actor
in its own process (the optional extra ``wingman-actors[ray]``; Ray is imported only then).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import FormationSetupError
from ._base import Backend, NodeGroup, NodeRecipe
from ._ray import RayBackend
from ._threads import ThreadsBackend

__all__ = ["BACKENDS", "Backend", "NodeGroup", "NodeRecipe", "RayBackend", "ThreadsBackend", "new_backend"]

BACKENDS: dict[str, type[Any]] = {"threads": ThreadsBackend, "ray": RayBackend}
"""The backends of this version, by name."""


def new_backend(name: str, *, formation: str = "", options: Mapping[str, Any] | None = None) -> Backend:
    """The backend called ``name`` for a formation, with its ``options``
    (``backend_options``; only the Ray backend takes any).

    Raises:
        FormationSetupError: no backend has that name (the message lists the available
            ones), the options do not fit it, or Ray is needed and not installed.
    """
    cls = BACKENDS.get(name) if isinstance(name, str) else None
    if cls is None:
        available = ", ".join(repr(n) for n in sorted(BACKENDS))
        raise FormationSetupError(formation, [
            f"unknown backend {name!r}: available backends: {available} "
            "(e.g. start(backend='threads'))"
        ])
    backend: Backend
    if cls is ThreadsBackend:
        if options:
            raise FormationSetupError(formation, [
                f"backend 'threads' takes no backend_options, got {sorted(options)}; "
                "backend_options are for backend='ray' (e.g. {'address': 'auto'})"
            ])
        backend = cls(formation)
    else:
        backend = cls(formation, options)
    return backend
