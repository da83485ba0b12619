"""Backends: where the node actors of a running formation live.

``Formation.start(backend="threads")`` (the default) runs every node replica as a Pykka
actor on its own thread in this process; ``backend="ray"`` runs every replica as a Ray actor
in its own process (the optional extra ``wingman-actors[ray]``; Ray is imported only then).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_exports
from ..errors import FormationSetupError
from ._base import Backend, NodeGroup, NodeRecipe
from ._threads import ThreadsBackend

if TYPE_CHECKING:
    from ._ray import RayBackend

__all__ = ["BACKENDS", "Backend", "NodeGroup", "NodeRecipe", "RayBackend", "ThreadsBackend", "new_backend"]

BACKENDS: tuple[str, ...] = ("threads", "ray")
"""The backends of this version, by name."""

# The Ray backend's seven modules (and multiprocessing's) load when it is chosen, not with
# every formation: `from wingman_actors.backends import RayBackend` still works.
__getattr__ = lazy_exports(__name__, {"RayBackend": "._ray"}, globals())


def new_backend(name: str, *, formation: str = "", options: Mapping[str, Any] | None = None) -> Backend:
    """The backend called ``name`` for a formation, with its ``options``
    (``backend_options``; only the Ray backend takes any).

    Raises:
        FormationSetupError: no backend has that name (the message lists the available
            ones), the options do not fit it, or Ray is needed and not installed.
    """
    cls: type[Any] | None = None
    if name == "threads":
        cls = ThreadsBackend
    elif name == "ray":
        from ._ray import RayBackend

        cls = RayBackend
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
