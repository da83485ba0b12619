"""What runs inside a Ray actor process: one node replica, built there from its recipe.

A :class:`NodeHost` is the body of the Ray actor (the backend wraps it with
``ray.remote``). It builds the node actor object from the recipe's plain declaration —
an agent's provider is rebuilt from its configuration here, so no live HTTP client or
lock crosses a process boundary — and calls its ``process`` for each input. The
runtime's routing and supervision stay in the driver; this module imports nothing of Ray.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..actors.envelope import Envelope, EnvelopeType, Work
from ..core import StreamEvent, Usage

__all__ = ["NodeHost", "ProviderRecipe", "portable"]


@dataclasses.dataclass(frozen=True)
class ProviderRecipe:
    """A provider as its class and configuration, rebuilt where it is used."""

    cls: type[Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def build(self) -> Any:
        return self.cls(*self.args, **self.kwargs)


def _provider_recipe(provider: Any) -> Any:
    """A recipe for ``provider`` when we know how to rebuild it, else the provider."""
    from ..providers.base import BaseProvider
    from ..providers.scripted import ScriptedProvider

    if isinstance(provider, BaseProvider):
        return ProviderRecipe(type(provider), (provider.options,))
    if isinstance(provider, ScriptedProvider):
        # each replica process gets its own copy of the script (calls are not shared)
        return ProviderRecipe(ScriptedProvider, (list(provider._replies),), {
            "latency_s": provider.latency_s, "model": provider.model, "cycle": provider.cycle,
            "stream_chunk": provider.stream_chunk, "record": provider.record,
        })
    return provider


def portable(value: Any) -> Any:
    """``value`` made fit to ship to another process: an agent's provider becomes a
    :class:`ProviderRecipe` (see :func:`built`)."""
    from ..agent import Agent

    if isinstance(value, Agent) and value.provider is not None:
        return dataclasses.replace(value, provider=_provider_recipe(value.provider))
    return value


def built(value: Any) -> Any:
    """The inverse of :func:`portable`, in the process that runs the node."""
    from ..agent import Agent

    if isinstance(value, Agent) and isinstance(value.provider, ProviderRecipe):
        return dataclasses.replace(value, provider=value.provider.build())
    return value


class _LocalObserver:
    """The node's observer inside the Ray actor: the attempt's timeout, and its events."""

    def __init__(self) -> None:
        self.timeout: float | None = None
        self.events: queue.SimpleQueue[Any] | None = None

    def wants_events(self, work: Work) -> bool:
        return self.events is not None

    def agent_event(self, work: Work, event: StreamEvent) -> None:
        if self.events is not None:
            self.events.put(("event", event))

    def attempt_timeout(self, work: Work) -> float | None:
        return self.timeout


class NodeHost:
    """One node replica inside a Ray actor process.

    Args:
        cls: the node actor class.
        args: its positional arguments (after :func:`portable`).
        kwargs: its keyword arguments.
    """

    def __init__(self, cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.observer = _LocalObserver()
        self.node = cls(*(built(a) for a in args), observer=self.observer, **kwargs)
        self.node.on_start()  # a fleet's pool; nothing for the others

    def _work(self, payload: Any, sender: str) -> Work:
        return Work(Envelope(0, "", sender, EnvelopeType.WORK, payload, time.time(), self.node.name))

    def process(self, payload: Any, sender: str, timeout: float | None) -> tuple[Any, Usage | None]:
        """Process one input; returns ``(output, usage)`` or raises what the node raised."""
        self.observer.timeout = timeout
        self.observer.events = None
        result: tuple[Any, Usage | None] = self.node.process(self._work(payload, sender))
        return result

    def stream(self, payload: Any, sender: str, timeout: float | None) -> Iterator[tuple[Any, ...]]:
        """As :meth:`process`, yielding ``("event", StreamEvent)`` while the agent works and
        ``("done", output, usage)`` last (a Ray streaming generator: events reach the driver
        in order)."""
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.observer.timeout = timeout
        self.observer.events = events
        work = self._work(payload, sender)

        def body() -> None:
            try:
                events.put(("done", *self.node.process(work)))
            except BaseException as exc:  # handed to the generator, which raises it
                events.put(("error", exc))

        thread = threading.Thread(target=body, name=f"wingman-ray-{self.node.name}", daemon=True)
        thread.start()
        while True:
            item = events.get()
            if item[0] == "error":
                raise item[1]
            yield item
            if item[0] == "done":
                self.observer.events = None
                return

    def interrupt(self, reason: str) -> None:
        """Stop the agent or fleet work in progress at its next boundary."""
        self.node.interrupt(reason)

    def ping(self) -> int:
        """The process id (tests kill it to see the node restarted)."""
        import os

        return os.getpid()
