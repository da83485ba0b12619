"""The runtime's Pykka actors: started through Pykka's public API, kept as objects.

The runtime reads a node actor's work in progress (``current``) to cancel and time out
attempts, and joins its thread when a formation stops, so it needs the actor object and
its thread, not only the ref that ``Actor.start()`` returns. Both come through public
API: Pykka documents that ``start()`` runs the actor's ``__init__`` in the calling thread
(where :class:`RuntimeActor` hands itself to :func:`start_actor`) and ``on_start`` in the
actor's own thread (where it notes and names that thread). The thread itself is Pykka's:
``ThreadingActor._start_actor_loop`` is not overridden.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

import pykka

__all__ = ["RuntimeActor", "start_actor"]

A = TypeVar("A", bound="RuntimeActor")

_births = threading.local()  # .actors: the RuntimeActors made by the start_actor in progress
_THREAD_WAIT_S = 30.0  # on_start runs first on a thread start() has started: this is never reached


class RuntimeActor(pykka.ThreadingActor):
    """A Pykka ``ThreadingActor`` whose object and thread the runtime keeps.

    Subclasses that override ``on_start`` call ``super().on_start()`` first.

    Attributes:
        thread_name: the name given to the actor's thread when it starts (Pykka names
            it after the class; ours are named after the node, for debugging).
    """

    # Daemon threads: an attempt abandoned in stuck user code must not keep the
    # interpreter alive (Pykka documents this attribute for actor implementors).
    use_daemon_thread = True

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        super().__init__()
        self.thread_name = ""
        self._thread: threading.Thread | None = None
        # Held until on_start notes the thread (a lock, not an Event: a tenth of the cost to
        # make, and released from the actor's thread as threading.Lock allows).
        self._thread_unknown = threading.Lock()
        self._thread_unknown.acquire()
        born = getattr(_births, "actors", None)
        if born is not None:
            born.append(self)

    def on_start(self) -> None:
        """Note (and name) the actor's thread: the first thing Pykka runs on it."""
        thread = threading.current_thread()
        if self.thread_name:
            thread.name = self.thread_name
        self._thread = thread
        self._thread_unknown.release()

    @property
    def thread(self) -> threading.Thread:
        """The thread the actor runs on (waits the moment it takes that thread to begin)."""
        thread = self._thread
        if thread is None:  # on_start has not run yet: wait for it
            if not self._thread_unknown.acquire(timeout=_THREAD_WAIT_S):  # pragma: no cover
                raise RuntimeError(f"{self} did not start its thread within {_THREAD_WAIT_S:g}s")
            self._thread_unknown.release()  # for any other thread waiting here
            thread = self._thread
            assert thread is not None
        return thread


def start_actor(cls: type[A], *args: Any, **kwargs: Any) -> A:
    """Start an actor with ``cls.start(*args, **kwargs)`` and return the actor object
    (its ref is ``.actor_ref``)."""
    if not (isinstance(cls, type) and issubclass(cls, RuntimeActor)):
        raise TypeError(f"start_actor starts RuntimeActor subclasses, got {cls!r}")
    outer = getattr(_births, "actors", None)
    born: list[RuntimeActor] = []
    _births.actors = born
    try:
        ref = cls.start(*args, **kwargs)
    finally:
        _births.actors = outer
    for actor in born:  # the actor's own __init__ may have started others
        if actor.actor_ref is ref:
            return actor  # type: ignore[return-value]  # the one cls.start() made
    raise RuntimeError(f"{cls.__name__}.__init__ did not call RuntimeActor.__init__")  # pragma: no cover
