"""What runs inside a Ray actor process: one node replica, built there from its recipe.

A :class:`NodeHost` is the body of the Ray actor (the backend wraps it with
``ray.remote``). It builds the node actor object from the recipe's plain declaration —
an agent's provider is rebuilt from its configuration here, so no live HTTP client or
lock crosses a process boundary — and calls its ``process`` for each input, which
arrives over the actor's direct channel (:mod:`._ray_channel`) or, without one, as a Ray
call. The runtime's routing and supervision stay in the driver; this module imports
nothing of Ray. When the run has a Blackboard, the visit sees a
:class:`~._ray_board.RemoteBoard` of the driver's board as its active board.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

from .._interrupts import RunSuspended, VisitScope
from ..actors._envelope import Work
from ..actors._function import AsyncFunctionActor
from ..actors._mapping import MapActor
from ..core import StreamEvent, Usage
from ..errors import AgentError, ErrorKind
from ..orchestration._blackboard import use_blackboard
from ._ray_board import RemoteBoard
from ._ray_channel import ChannelServer, Link
from ._ray_hooks import open_call
from ._ray_wire import AgentEvent, Call, Done, Failed, ItemDone, ModelReply, Process, Suspended, VisitTicket

__all__ = ["NodeHost", "ProviderRecipe", "portable"]

log = logging.getLogger("wingman_actors.backends")

_EARLY = 64  # interrupts kept for attempts that have not arrived (the oldest dropped first)


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
    from ..providers._base import BaseProvider
    from ..providers._scripted import ScriptedProvider

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
    from ..agents._agent import Agent

    if isinstance(value, Agent) and value.provider is not None:
        recipe = _provider_recipe(value.provider)
        if recipe is value.provider:
            return value
        # A copy holding the recipe where its provider was: a shipping form, not an agent to
        # validate (dataclasses.replace would run Agent's checks, which want a provider);
        # built() makes the agent again, checks included, where the node runs.
        shipped = copy.copy(value)
        object.__setattr__(shipped, "provider", recipe)
        return shipped
    return value


def built(value: Any) -> Any:
    """The inverse of :func:`portable`, in the process that runs the node."""
    from ..agents._agent import Agent

    if isinstance(value, Agent) and isinstance(value.provider, ProviderRecipe):
        return dataclasses.replace(value, provider=value.provider.build())
    return value


class _LocalObserver:
    """The node's observer inside the Ray actor: the attempt's timeout, and where its
    events and finished fleet items go (the call path's stream)."""

    def __init__(self) -> None:
        self.timeout: float | None = None
        self.events: queue.SimpleQueue[Any] | None = None
        self.out: queue.SimpleQueue[Any] | None = None
        self.ticket: VisitTicket | None = None

    def wants_events(self, work: Work) -> bool:
        return self.events is not None

    def agent_event(self, work: Work, event: StreamEvent, item: int | None = None) -> None:
        if self.events is not None:
            self.events.put(AgentEvent(event, item))

    def attempt_timeout(self, work: Work) -> float | None:
        return self.timeout

    def item_finished(self, work: Work, index: int, output: Any) -> None:
        if self.out is not None:
            self.out.put(ItemDone(index, output))

    def dropped(self, work: Work) -> bool:
        """Never called here: the run's join state lives in the driver, which drops what
        a cancelled branch delivers."""
        return False

    def item_scope(self, work: Work, index: int) -> VisitScope | None:
        """Fleet item ``index``'s scope in a journalled run: its answers and replies come
        from the ticket; the model responses it gets go to the driver if it suspends."""
        ticket, out = self.ticket, self.out
        if ticket is None or out is None:
            return None
        answers, replies = ticket.items.get(index, ([], []))

        def progress(response: Any) -> None:
            out.put(ModelReply(response, index))

        return VisitScope(ticket.run_id, ticket.node, ticket.visit, list(answers), progress, list(replies), index)


class NodeHost:
    """One node replica inside a Ray actor process.

    Args:
        cls: the node actor class.
        args: its positional arguments (after :func:`portable`).
        kwargs: its keyword arguments.
        channel_key: when given, listen for the driver's direct channel (see
            :mod:`._ray_channel`), authenticated with this key.
        channel_host: the address to listen on (None: this Ray node's).
    """

    def __init__(
        self, cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any],
        channel_key: bytes | None = None, channel_host: str | None = None,
    ) -> None:
        self.observer = _LocalObserver()
        self.node = cls(*(built(a) for a in args), observer=self.observer, **kwargs)
        self.node.on_start()  # a fleet's pool; nothing for the others
        # An interruptible node's attempts come with keys, and an interrupt names the
        # attempt it is for (see :meth:`interrupt`): one that arrives before its attempt
        # (the interrupt is a Ray call, the input travels over the channel) is kept here.
        self._lock = threading.Lock()
        self._live: set[int] = set()  # the keys of the attempts on the node
        self._early: dict[int, str] = {}  # key -> reason: interrupts that came before their attempt
        # An async function awaits one attempt at a time (its loop has one slot): a late
        # attempt of a replaced proxy waits for the one in progress (and is dropped when
        # its own interrupt came meanwhile) instead of taking that slot.
        self._one = threading.Lock() if isinstance(self.node, AsyncFunctionActor) else None
        self.channel: ChannelServer | None = None
        if channel_key is not None:
            try:
                self.channel = ChannelServer(self.serve, channel_key, channel_host)
            except Exception:  # e.g. no address to listen on: the driver uses Ray calls
                log.warning("node %r: no direct channel (inputs go as Ray calls)", self.node.name, exc_info=True)

    def endpoint(self) -> tuple[str, int] | None:
        """Where the direct channel listens (None: there is none)."""
        return None if self.channel is None else self.channel.address

    def serve(self, request: Process | Call, link: Link) -> Iterator[Any]:
        """The messages answering one request of the direct channel (see :mod:`._ray_wire`);
        ``link`` carries the node's Blackboard operations (:mod:`._ray_board`)."""
        if type(request) is Process:
            board = RemoteBoard(self.node.name, link.send, link.recv) if request.board else None
            output, usage = self._process(request.payload, request.sender, request.timeout, request.key, board)
            yield Done(output, usage)
        elif type(request) is Call:
            yield from self.call(request, link)
        else:
            raise TypeError(f"node {self.node.name!r}: unknown request {type(request).__name__} on its channel")

    def _work(self, payload: Any, sender: str) -> Work:
        return Work(0, "", sender, payload, time.time(), self.node.name)

    def _enter(self, key: int, work: Work) -> None:
        """Attempt ``key`` starts on the node, or raises the cancellation its interrupt,
        which came first, asked for."""
        one = self._one
        if one is not None:
            one.acquire()
        with self._lock:
            reason = self._early.pop(key, None)
            if reason is None:
                self._live.add(key)
                if one is not None:
                    self.node.current = work  # what the node's interrupt() cancels
                return
        if one is not None:
            one.release()
        raise AgentError(f"node {self.node.name!r} was cancelled before its attempt began: {reason}",
                         kind=ErrorKind.CANCELLED)

    def _leave(self, key: int) -> None:
        """Attempt ``key`` has ended on the node."""
        one = self._one
        with self._lock:
            self._live.discard(key)
            if one is not None:
                self.node.current = None
        if one is not None:
            one.release()

    def process(
        self, payload: Any, sender: str, timeout: float | None, key: int | None = None, board: bool = False,
    ) -> tuple[Any, Usage | None]:
        """Process one input; returns ``(output, usage)`` or raises what the node raised
        (the fast path: no store, no fleet, no listener), as a Ray call. ``key`` names the
        attempt (an interruptible node's: see :meth:`interrupt`); ``board``: the run has a
        Blackboard, which a Ray call cannot reach (the node gets an error saying so if it
        uses it)."""
        return self._process(payload, sender, timeout, key, RemoteBoard(self.node.name) if board else None)

    def _process(
        self, payload: Any, sender: str, timeout: float | None, key: int | None, board: RemoteBoard | None,
    ) -> tuple[Any, Usage | None]:
        self.observer.timeout = timeout
        self.observer.events = self.observer.out = None
        work = self._work(payload, sender)
        if board is not None:
            try:
                with use_blackboard(board):
                    return self._attempt(work, key)
            finally:
                board.close()
        return self._attempt(work, key)

    def _attempt(self, work: Work, key: int | None) -> tuple[Any, Usage | None]:
        result: tuple[Any, Usage | None]
        if key is None:
            result = self.node.process(work)
            return result
        self._enter(key, work)
        try:
            result = self.node.process(work)
        finally:
            self._leave(key)
        return result

    def call(self, call: Call, link: Link | None = None) -> Iterator[Any]:
        """Process one input on the call path (see :mod:`._ray_wire`): yields the
        attempt's events, finished fleet items and model responses as they happen, then
        :class:`Done` or :class:`Suspended`, or raises what the node raised (after the
        fleet items that finished, so a retry runs only the failed ones). A Ray streaming
        generator: the messages reach the driver in order. ``link``: the direct channel's,
        over which the node's Blackboard operations are answered (None: a Ray call)."""
        out: queue.SimpleQueue[Any] = queue.SimpleQueue()
        observer = self.observer
        observer.timeout = call.timeout
        observer.events = out if call.events else None
        observer.out = out
        observer.ticket = call.ticket
        work = self._work(call.payload, call.sender)
        sent: set[int] = set(call.memo or ())
        if call.memo is not None:
            work.memo = dict(call.memo)
        scope: VisitScope | None = None
        ticket = call.ticket
        if ticket is not None:
            scope = VisitScope(ticket.run_id, ticket.node, ticket.visit, list(ticket.answers),
                               lambda response: out.put(ModelReply(response)), list(ticket.replies))
            work.scope = scope
        node = self.node
        key = call.key
        board: RemoteBoard | None = None
        if call.board:  # its operations go out in order with the stream; their answers are read off the link
            if link is None:
                board = RemoteBoard(node.name)
            else:
                pickled = link.pickled
                board = RemoteBoard(node.name, lambda op: out.put(pickled(op)), link.recv)

        def attempt() -> tuple[Any, Usage | None]:
            result: tuple[Any, Usage | None]
            with use_blackboard(board) if board is not None else contextlib.nullcontext():
                result = node.process(work) if scope is None else scope.run(node.process, work)
            return result

        def body() -> None:
            try:
                if key is not None:
                    self._enter(key, work)
                try:
                    output, usage = attempt()
                finally:
                    if key is not None:
                        self._leave(key)
                    if board is not None:
                        board.close()
                out.put(Done(output, usage))
            except RunSuspended as signal:
                signal.journal_replies()  # the suspending attempt's model responses (its asking items'), to the driver
                out.put(Suspended(signal.payload, signal.scope.item, signal.spent))
            except BaseException as exc:  # handed to the generator, which raises it
                out.put(Failed(exc))

        thread = threading.Thread(target=body, name=f"wingman-ray-{node.name}", daemon=True)
        try:
            with open_call(call.hooks, out.put):  # the agents' hook events go back in the stream too
                thread.start()
                while True:
                    item = out.get()
                    if type(item) is Failed:
                        memo = work.memo or {}
                        for index in sorted(set(memo) - sent):
                            yield ItemDone(index, memo[index])
                        raise item.error
                    if type(item) is ItemDone:
                        sent.add(item.index)
                    yield item
                    if type(item) is Done or type(item) is Suspended:
                        return
        finally:
            observer.events = observer.out = None

    def scripted_calls(self) -> tuple[int, list[Any]] | None:
        """The calls (and recorded requests) of the node's ``ScriptedProvider`` in this
        process, or None when its agent has none (the driver adds them to its own copy)."""
        from ..providers._scripted import ScriptedProvider

        provider = getattr(getattr(self.node, "agent", None), "provider", None)
        if not isinstance(provider, ScriptedProvider):
            return None
        return provider.calls, list(provider.requests)

    def interrupt(self, reason: str, key: int | None = None) -> None:
        """Stop the agent or fleet work in progress at its next boundary, or cancel the
        async function's coroutine.

        Args:
            reason: why (the cancelled attempt's error names it).
            key: the attempt it is for (None: whatever is in progress). An attempt that
                has not arrived yet is cancelled as soon as it does (before the node
                sees it); one that has ended is not touched, nor is any other attempt.
        """
        if key is None:
            self.node.interrupt(reason)
            return
        with self._lock:  # held: the attempt cannot end and another begin meanwhile
            if key in self._live:
                self.node.interrupt(reason)
                return
            early = self._early
            early[key] = reason  # for an attempt that ended already: never matched (keys are not reused)
            if len(early) > _EARLY:
                del early[next(iter(early))]

    def stop(self) -> None:
        """Stop an async function's (or async map's) event loop before the driver ends this actor's process
        (the formation stops): its coroutine still running (cut by a timeout or a cancel
        that has just been asked for, or of a run in flight) is cancelled, and its
        ``finally`` runs, as it does on the threads backend (at most a second: a coroutine
        stuck in blocking code is left to the kill). Other nodes have nothing to wind down."""
        node = self.node
        if isinstance(node, AsyncFunctionActor) or (isinstance(node, MapActor) and node.is_async):
            node.on_stop()

    def spent_so_far(self) -> Usage | None:
        """What the agent attempt in progress has spent on model calls so far (the driver
        asks when it cuts the attempt: its timeout, its run's end)."""
        spent: Usage | None = self.node.spent_so_far()
        return spent

    def ping(self) -> int:
        """The process id (tests kill it to see the node restarted)."""
        import os

        return os.getpid()
