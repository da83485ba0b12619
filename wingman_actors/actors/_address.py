"""Starting a Pykka actor and keeping the actor object (not only its ref).

The runtime reads a node actor's work in progress (``current``) to cancel and time out
attempts, so it needs the object. Pykka's ``start()`` returns a ref, whose weak reference
to the actor is private: the test ``tests/actors/test_pykka_hooks.py`` fails if that
changes, and pyproject.toml pins the Pykka versions it was tested with.
"""

from __future__ import annotations

from typing import Any

import pykka

__all__ = ["start_actor"]


def start_actor(cls: type[pykka.ThreadingActor], *args: Any, **kwargs: Any) -> Any:
    """Start an actor and return the actor object (its ref is ``.actor_ref``)."""
    ref = cls.start(*args, **kwargs)
    actor = ref._actor_weakref()
    if actor is None:  # pragma: no cover - the ref was just made from a live actor
        raise RuntimeError(f"actor {cls.__name__} vanished while starting")
    return actor
