"""Hooks: a typed event bus of what agents do (sessions, model calls, tool calls, sub-agents).

Give an agent a bus (``Agent(..., events=bus)``) and subscribe functions to the kinds of
event you want; every session of that agent emits them as it runs::

    session_start   a run begins (``message``)
    model_start     before each model call (``step``, ``request``; ``journalled``: replayed, not made;
                    ``compaction``: the context budget's compactor summarising, not the agent's turn)
    model_end       after it (``response``, ``usage``, ``duration_s``, ``journalled``, ``compaction``)
    tool_start      before a tool call (``call``: the tool_use block)
    tool_end        after it (``call``, ``result``: the tool_result block, ``duration_s``)
    session_stop    the run ended (``status``: succeeded, failed or suspended; ``result`` or ``error``)
    subagent_start  a delegated agent starts (``agent``, ``session_id``, ``depth``,
                    ``parent_session_id``, ``message``: the task), live, while the parent waits
    subagent_stop   it finished (``result`` or ``error``)

Delivery never slows the agent: each subscriber has its own queue and worker thread, and
gets its events in order. A subscriber that overruns its ``timeout`` on an event is left
to finish on its own; the next events go on without it, and one warning is logged for
that event. A subscriber that raises is logged and keeps its subscription.

Workers exit when idle; :meth:`EventBus.close` (or leaving ``with EventBus() as bus:``)
delivers what is queued and stops them.

Example:
    >>> from wingman_actors import Agent, Session
    >>> from wingman_actors.events import EventBus
    >>> from wingman_actors.testing import ScriptedProvider
    >>> seen = []
    >>> with EventBus() as bus:
    ...     _ = bus.subscribe(["session_start", "session_stop"], lambda e: seen.append(e.kind))
    ...     _ = Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
    >>> seen
    ['session_start', 'session_stop']
"""

from __future__ import annotations

import collections
import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .core import ContentBlock, InferenceRequest, InferenceResponse, Usage

__all__ = ["EVENT_KINDS", "Event", "EventBus", "EventKind", "Subscription"]

log = logging.getLogger(__name__)

EventKind = Literal[
    "session_start", "session_stop", "model_start", "model_end", "tool_start", "tool_end",
    "subagent_start", "subagent_stop",
]
EVENT_KINDS: frozenset[str] = frozenset(get_args(EventKind))
"""Every kind of event a bus carries."""

_IDLE_S = 0.25  # a worker with nothing to deliver for this long exits (a new event starts another)


@dataclass(frozen=True, slots=True)
class Event:
    """One thing an agent did. Fields that do not apply to a kind are None.

    Attributes:
        kind: what happened (see :data:`EVENT_KINDS`).
        agent: the agent's name (for sub-agent events, the delegated agent's).
        session_id: the session's id (for sub-agent events, the delegated session's).
        time: when it happened (``time.time()``).
        step: the model call number of the run, from 1 (model and tool events).
        depth: the delegation depth of the session the event is about (1 for a task handed
            out by a root agent, 2 for one that task handed on...; 0 for a session no
            ``delegate`` call started): sub-agent events give the child's, the events of a
            delegated session its own.
        parent_session_id: the delegating session's id, on sub-agent events and on the
            events of a delegated session; None at the root.
        message: ``session_start``: the user message's text; ``subagent_start``: the task.
        request: ``model_start``: the request about to be sent.
        response: ``model_end``: the model's answer.
        call: ``tool_start`` / ``tool_end``: the tool_use block.
        result: ``tool_end``: the tool_result block; ``session_stop`` / ``subagent_stop``:
            the run's :class:`~wingman_actors.agents.Result` when it ended with one.
        status: ``session_stop`` / ``subagent_stop``: ``succeeded``, ``failed`` or ``suspended``.
        error: why a run or a sub-agent failed.
        usage: ``model_end``: that call's usage; stop events: the run's usage (a failed or
            suspended run's: what its model calls had spent before it failed or suspended).
        duration_s: how long the model call, tool call or run took.
        journalled: ``model_start`` / ``model_end``: True when the response is replayed from
            the journal of a resumed run (a session or agent node that waited at an
            ``interrupt()``): no call is made, so a monitor counting calls or tokens skips it.
        compaction: ``model_start`` / ``model_end``: True for the call of the agent's
            ``compactor`` that summarises the turns its ``context_budget`` leaves out (made
            before step ``step``'s call, to its provider, with a request of its own): paid
            for like any other, but not a turn of the agent's conversation.
    """

    kind: EventKind
    agent: str
    session_id: str
    time: float = field(default_factory=time.time)
    step: int | None = None
    depth: int = 0
    parent_session_id: str | None = None
    message: str | None = None
    request: InferenceRequest | None = None
    response: InferenceResponse | None = None
    call: ContentBlock | None = None
    result: Any = None
    status: str | None = None
    error: str | None = None
    usage: Usage | None = None
    duration_s: float | None = None
    journalled: bool = False
    compaction: bool = False


class _Runner:
    """A thread that makes a subscriber's calls, one at a time. Abandoned when a call
    overruns (it finishes that call, then exits)."""

    __slots__ = ("_cond", "_job", "abandoned", "thread")

    def __init__(self, name: str) -> None:
        self._cond = threading.Condition()
        self._job: tuple[Callable[[Event], Any], Event, threading.Event] | None = None
        self.abandoned = False
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def call(self, fn: Callable[[Event], Any], event: Event) -> threading.Event:
        done = threading.Event()
        with self._cond:
            self._job = (fn, event, done)
            self._cond.notify()
        return done

    def stop(self) -> None:
        with self._cond:
            self.abandoned = True
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._job is None and not self.abandoned:
                    self._cond.wait()
                job, self._job = self._job, None
            if job is None:
                return
            fn, event, done = job
            _deliver(fn, event)
            done.set()
            if self.abandoned:
                return


def _deliver(fn: Callable[[Event], Any], event: Event) -> None:
    try:
        fn(event)
    except Exception:  # a subscriber's bug must not reach the agent, nor stop its worker
        log.exception("event subscriber %r failed on a %s event", fn, event.kind)


class Subscription:
    """One subscriber of an :class:`EventBus`: its kinds, its queue and its worker.

    Attributes:
        kinds: the kinds of event it receives.
        fn: the function called with each :class:`Event`.
        timeout: seconds it may take per event before it is skipped for that event
            (None: no limit, events are delivered in its worker thread directly).
    """

    def __init__(self, bus: EventBus, kinds: frozenset[str], fn: Callable[[Event], Any], timeout: float | None) -> None:
        self.kinds = kinds
        self.fn = fn
        self.timeout = timeout
        self._bus = bus
        self._queue: collections.deque[Event] = collections.deque()
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self._runner: _Runner | None = None
        self._busy = False
        self._closing = False
        self.skipped = 0
        """How many events this subscriber overran (and was skipped for)."""

    def cancel(self) -> None:
        """Unsubscribe: no further events are queued; those queued are still delivered."""
        self._bus._remove(self)

    def _put(self, event: Event) -> None:
        with self._cond:
            if self._closing:
                return
            self._queue.append(event)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="wingman-events", daemon=True)
                self._worker.start()
            else:
                self._cond.notify()

    def _work(self) -> None:
        while (event := self._next()) is not None:
            if self.timeout is None:
                _deliver(self.fn, event)
            else:
                self._call(event, self.timeout)
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _next(self) -> Event | None:
        """The next event to deliver; None once idle or closing (the worker then exits)."""
        with self._cond:
            while not self._queue:
                if self._closing or (not self._cond.wait(_IDLE_S) and not self._queue):
                    self._worker = None
                    runner, self._runner = self._runner, None
                    self._cond.notify_all()
                    break
            else:
                self._busy = True
                return self._queue.popleft()
        if runner is not None:  # idle, so not in a call: it exits at once
            runner.stop()
            runner.thread.join()
        return None

    def _call(self, event: Event, timeout: float) -> None:
        runner = self._runner
        if runner is None:
            runner = self._runner = _Runner("wingman-events-call")
        if not runner.call(self.fn, event).wait(timeout):
            runner.stop()  # it exits once the overrunning call returns; the next event gets a new one
            self._runner = None
            self.skipped += 1
            log.warning(
                "event subscriber %r overran its timeout of %ss on a %s event of agent %r; "
                "skipped it for that event (pass a larger timeout= to subscribe to wait longer)",
                self.fn, timeout, event.kind, event.agent,
            )

    def _drain(self, deadline: float | None) -> bool:
        """Wait until everything queued was delivered; then let the worker exit."""
        with self._cond:
            while self._queue or self._busy:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def _close(self, deadline: float | None) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            # a subscriber without a timeout that is stuck keeps its worker: give up at the deadline
            worker.join(None if deadline is None else max(0.0, deadline - time.monotonic()))


class EventBus:
    """Subscribers of agent events, each with its own ordered queue.

    Give it to agents (``Agent(..., events=bus)``); a bus may serve many agents and
    sessions at once. Close it when done (or use it as a context manager): queued events
    are delivered, then the workers stop.

    Example:
        >>> bus = EventBus()
        >>> sub = bus.subscribe("tool_end", lambda event: print(event.call.name))
        >>> bus.close()
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: tuple[Subscription, ...] = ()
        self._closed = False
        self.kinds: frozenset[str] = frozenset()
        """The kinds some subscriber wants: agents build no event of another kind."""

    @property
    def subscriptions(self) -> tuple[Subscription, ...]:
        """The current subscriptions, oldest first."""
        return self._subs

    def subscribe(
        self, kinds: str | Iterable[str], fn: Callable[[Event], Any], *, timeout: float | None = 1.0
    ) -> Subscription:
        """Call ``fn(event)`` for every event of ``kinds``, in order, off the agent's thread.

        Args:
            kinds: one kind or several (see :data:`EVENT_KINDS`), or ``"*"`` (alone or in the list) for all.
            fn: called with each :class:`Event`; what it returns is ignored.
            timeout: seconds ``fn`` may take per event; past it, that event is skipped
                for this subscriber (with one warning) and the next ones go on. None: no limit.

        Raises:
            ValueError: an unknown kind, or a timeout that is not positive.
            TypeError: ``fn`` is not callable or is ``async def``; kinds are not names; the
                timeout is not a number.
            RuntimeError: the bus is closed.
        """
        names = [kinds] if isinstance(kinds, str) else list(kinds) if isinstance(kinds, Iterable) else None
        if names is None or not all(isinstance(k, str) for k in names):
            raise TypeError(
                f"subscribe: kinds must be a kind name or a list of them (some of {sorted(EVENT_KINDS)}), "
                f"or '*' for all; got {kinds!r}"
            )
        wanted = frozenset(EVENT_KINDS if "*" in names else names)  # "*", alone or in a list: all
        unknown = sorted(wanted - EVENT_KINDS)
        if unknown or not wanted:
            raise ValueError(
                f"unknown event kind(s) {unknown or '(none given)'}: subscribe to some of {sorted(EVENT_KINDS)}, "
                "or '*' for all"
            )
        if not callable(fn):
            raise TypeError(f"subscribe needs a callable taking one Event, got {type(fn).__name__}")
        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__):
            # Called on a worker thread, it would only make a coroutine that nothing awaits.
            name = getattr(fn, "__name__", type(fn).__name__)
            raise TypeError(
                f"subscribe: {name} is an async def function; subscribers are called on a worker thread, so give "
                "a plain function (to hand events to your event loop: "
                "lambda e: asyncio.run_coroutine_threadsafe(handler(e), loop))"
            )
        if timeout is not None and not isinstance(timeout, (int, float)):
            raise TypeError(f"subscribe: timeout must be a number of seconds > 0 or None, got {timeout!r}")
        if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
            raise ValueError(f"subscribe: timeout must be a number of seconds > 0 or None, got {timeout!r}")
        sub = Subscription(self, wanted, fn, timeout)
        with self._lock:
            if self._closed:
                raise RuntimeError("this EventBus is closed; make a new one to subscribe")
            self._subs = (*self._subs, sub)
            self.kinds = self.kinds | wanted
        return sub

    def emit(self, event: Event) -> None:
        """Queue ``event`` for every subscriber of its kind; returns at once. Agents call
        it; a closed bus drops events."""
        for sub in self._subs:
            if event.kind in sub.kinds:
                sub._put(event)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event emitted so far was delivered (or skipped); False when
        ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return all(sub._drain(deadline) for sub in self._subs)

    def close(self, timeout: float | None = 5.0) -> None:
        """Deliver what is queued (waiting at most ``timeout`` seconds in all), then stop
        the workers. Later events are dropped. Safe to call twice."""
        with self._lock:
            self._closed = True
            subs, self._subs = self._subs, ()
            self.kinds = frozenset()
        deadline = None if timeout is None else time.monotonic() + timeout
        for sub in subs:
            sub._drain(deadline)
            sub._close(deadline)

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            self._subs = tuple(s for s in self._subs if s is not sub)
            self.kinds = frozenset().union(*(s.kinds for s in self._subs))

    def __enter__(self) -> EventBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<EventBus subscriptions={len(self._subs)}{' closed' if self._closed else ''}>"
