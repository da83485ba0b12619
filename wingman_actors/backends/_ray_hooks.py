"""Agent hooks on the Ray backend: an :class:`~wingman_actors.events.EventBus` stays in the
driver, where its subscribers are; the node's Ray actor gets a stand-in that sends the
events back.

An ``EventBus`` holds locks and threads, so it cannot be pickled. The backend registers a
serializer for it with Ray's documented seam (``ray.util.register_serializer``): a bus is
shipped as a token, and unpickled in the actor's process as a :class:`RemoteBus` of that
token. The driver-side proxy of a replica sends, with each input, the kinds the driver's
buses want (:attr:`~._ray_wire.Call.hooks`); while the actor processes it, a ``RemoteBus``
wants those kinds, and each event an agent emits on it goes back in the call's stream as a
:class:`~._ray_wire.HookEvent`, which the proxy emits on the driver's bus. So subscribers
get a Ray node's events as they get a threads node's: live, in order, in the driver. The
event's fields travel by pickle (a result's ``output`` too).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..events import Event, EventBus
from ._ray_wire import HookEvent

__all__ = ["RemoteBus", "collecting", "install", "open_call", "remote_bus"]

log = logging.getLogger("wingman_actors.backends")

# -- the driver -------------------------------------------------------------------------------

_tokens: weakref.WeakKeyDictionary[EventBus, str] = weakref.WeakKeyDictionary()
_tokens_lock = threading.Lock()
_collect = threading.local()  # .found: the buses met while a node's recipe is pickled (collecting())


def _token(bus: EventBus) -> str:
    """What a bus is shipped as (the same token every time), noted for :func:`collecting`."""
    with _tokens_lock:
        token = _tokens.get(bus)
        if token is None:
            token = _tokens[bus] = uuid.uuid4().hex
    found: dict[str, EventBus] | None = getattr(_collect, "found", None)
    if found is not None:
        found[token] = bus
    return token


def install(ray: Any) -> bool:
    """Register the bus serializer with Ray (after ``ray.init``; again after a new one, which
    costs a dict entry); False when Ray refuses it (a bus then cannot be pickled, and the node
    is a setup error naming it)."""
    try:
        ray.util.register_serializer(EventBus, serializer=_token, deserializer=remote_bus)
    except Exception:
        log.debug("Ray refused the EventBus serializer; agents with events= cannot run on Ray", exc_info=True)
        return False
    return True


@contextlib.contextmanager
def collecting() -> Iterator[dict[str, EventBus]]:
    """Within: the buses pickled on this thread, by token (the driver's buses of a node)."""
    found: dict[str, EventBus] = {}
    _collect.found = found
    try:
        yield found
    finally:
        _collect.found = None


# -- the actor's process ----------------------------------------------------------------------

_wanted: dict[str, frozenset[str]] = {}  # token -> the kinds the driver's bus wants, during a call
_sink: Callable[[Any], None] | None = None  # where the call's messages go (its stream)


def remote_bus(token: str) -> RemoteBus:
    """The deserializer: a bus shipped as ``token``, in the process that unpickles it."""
    return RemoteBus(token)


class RemoteBus(EventBus):
    """The stand-in of a driver's bus in a Ray actor: it wants what the driver's bus wants
    during the call in progress (nothing between calls), and sends each event back."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    @property  # type: ignore[override]
    def kinds(self) -> frozenset[str]:
        """The kinds the driver's bus wants for the call in progress."""
        return _wanted.get(self.token, frozenset())

    @kinds.setter
    def kinds(self, value: frozenset[str]) -> None:
        """Ignored: the driver's subscriptions decide (EventBus assigns it in __init__ and close)."""

    def emit(self, event: Event) -> None:
        sink = _sink
        if sink is not None:
            sink(HookEvent(self.token, event))

    def subscribe(self, kinds: Any, fn: Any, *, timeout: float | None = 1.0) -> Any:
        raise RuntimeError(
            "this EventBus stands in a Ray actor for one of the driver's: subscribe to the bus in the driver"
        )


@contextlib.contextmanager
def open_call(hooks: Mapping[str, frozenset[str]] | None, sink: Callable[[Any], None]) -> Iterator[None]:
    """While a call is processed: the remote buses want ``hooks`` (token -> kinds) and send
    their events to ``sink``."""
    global _sink
    if not hooks:
        yield
        return
    _wanted.update(hooks)
    _sink = sink
    try:
        yield
    finally:
        _sink = None
        _wanted.clear()
