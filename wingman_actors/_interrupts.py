"""``interrupt(payload)``: stop a journalled run to wait for an answer (human in the loop).

Inside a function node, a tool or middleware of a formation run that has a store,
``interrupt(payload)`` suspends the run: ``Formation.run()`` returns a result with
``status == "suspended"`` and ``interrupt == {"node": ..., "payload": ...}``, and the
store records it. ``Formation.resume(run_id, store=..., answer=value)`` runs the
interrupted visit again, and this time that call of ``interrupt`` returns ``value``
(the i-th ``interrupt`` call of a visit returns the i-th answer given to that visit).

Code before an ``interrupt`` call therefore runs again on resume: keep side effects after
it, or make them idempotent.

In a fleet node each item's session has a scope of its own (:meth:`VisitScope.enter`):
an item that interrupts stops, the other items go on and finish (and are journalled),
then the node suspends. Resuming runs that item only. When several items interrupt,
the one with the lowest index is recorded and answered first; the others run again on
resume and ask again, one interrupt at a time, from their journalled model responses
(journalled with the first suspension: the model is not asked again). An item that
failed meanwhile runs again on resume too.

The model responses of a session are journalled only when its visit (or item)
suspends: a resume replays exactly the responses of the attempt that interrupted, never
those of an attempt that failed, and a run that never interrupts journals none of them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import NoStoreError

if TYPE_CHECKING:
    from .core import Usage

__all__ = ["NoStoreError", "RunSuspended", "VisitScope", "current_scope", "first_asked", "interrupt"]

_T = TypeVar("_T")


class RunSuspended(BaseException):
    """Raised by :func:`interrupt` to unwind the visit that suspends its run.

    A ``BaseException`` so that ``except Exception`` in user code and in tool wrappers
    does not swallow it; the formation runtime catches it and suspends the run.

    Attributes:
        payload: what ``interrupt`` was called with.
        scope: the visit that interrupted.
        node: the node that asked: the scope's node, or for an ``interrupt()`` inside a
            nested formation the path to the inner node (``"outer_node/inner_node"``).
        others: the scopes of the visit's other items that asked at the same time (a fleet's
            or a map's): only the first question is recorded, but their model responses are
            journalled with it, so a resume replays them instead of asking the model again.
        spent: what the suspending attempt's model calls cost before it asked (an agent
            node's session), or None: the suspended result shows it (it was paid for),
            the journal does not (a resume replays those calls and counts them then).
    """

    def __init__(self, payload: Any, scope: VisitScope, node: str | None = None) -> None:
        self.node = scope.node if node is None else node
        super().__init__(f"run {scope.run_id} suspended by node {self.node!r}")
        self.payload = payload
        self.scope = scope
        self.others: tuple[VisitScope, ...] = ()
        self.spent: Usage | None = None

    def journal_replies(self) -> None:
        """Journal the model responses of the asking scope and of :attr:`others` (the run
        is suspending here)."""
        self.scope.journal_replies()
        for other in self.others:
            other.journal_replies()


def first_asked(errors: Mapping[int, BaseException], asking: Sequence[int]) -> RunSuspended:
    """Of a fleet's or a map's items that asked at once (``asking``, indexes into
    ``errors``), the question of the lowest index, carrying the others' scopes
    (:attr:`RunSuspended.others`) so that their model responses are journalled with it."""
    first = min(asking)
    signal = errors[first]
    assert isinstance(signal, RunSuspended)
    signal.others = tuple(s.scope for i in sorted(asking) if i != first and isinstance(s := errors[i], RunSuspended))
    return signal


class VisitScope:
    """The durable context of one node visit: where ``interrupt`` calls find their answers.

    Args:
        run_id: the run.
        node: the node.
        visit: the node's visit number.
        answers: the answers given to this visit's interrupts, in order.
        on_progress: journals a model response of the visit's agent session, or None.
        replies: the model responses the visit's agent session got before it was
            suspended: a resumed session takes them instead of calling the model again.
        item: the fleet item this scope is for, or None for a whole visit.
    """

    __slots__ = ("answers", "calls", "item", "kept", "node", "on_progress", "replayed", "replies", "run_id",
                 "session", "visit")

    def __init__(self, run_id: str, node: str, visit: int, answers: Sequence[Any],
                 on_progress: Callable[[Any], None] | None = None, replies: Sequence[Any] | None = None,
                 item: int | None = None) -> None:
        self.run_id = run_id
        self.node = node
        self.visit = visit
        self.answers = answers
        self.calls = 0
        self.on_progress = on_progress
        self.replies: Sequence[Any] = replies or ()
        self.replayed = 0
        self.session: str | None = None
        self.item = item
        # what the session got this attempt: a list once the first arrives (most visits
        # of a pipeline have no session, and a visit costs one object fewer per attempt)
        self.kept: list[Any] | tuple[()] = ()

    def owns(self, session_id: str) -> bool:
        """Whether the agent session ``session_id`` is the visit's own (the first session
        of the attempt; sessions a tool starts inside it are not journalled)."""
        if self.session is None:
            self.session = session_id
        return self.session == session_id

    def next_reply(self) -> Any:
        """The next journalled model response to replay, or None once they are used up."""
        i = self.replayed
        if i < len(self.replies):
            self.replayed = i + 1
            return self.replies[i]
        return None

    def record_reply(self, response: Any) -> None:
        """Keep a model response the visit's session got, to journal if the visit suspends
        (:meth:`journal_replies`), so that a resume need not ask again."""
        if self.on_progress is not None:
            kept = self.kept
            if isinstance(kept, list):
                kept.append(response)
            else:
                self.kept = [response]

    def journal_replies(self) -> None:
        """Journal the responses kept since the attempt began (the visit is suspending).
        Only the suspending attempt's responses are journalled: a resume replays them,
        never those of an attempt that failed."""
        kept, self.kept = self.kept, ()
        if self.on_progress is not None:
            for response in kept:
                self.on_progress(response)

    def enter(self) -> None:
        """Make this scope the current one for the rest of the calling context.

        For a fleet item: the fleet's worker renders the item, then runs its session, in
        the worker's own context, so the item's scope entered while rendering is the one
        its session, tools and middleware see (the next item's replaces it)."""
        _current.set(self)

    def run(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Call ``fn(*args)`` with this scope current (``interrupt`` sees it)."""
        token = self._begin()
        try:
            return fn(*args)
        finally:
            _current.reset(token)

    @contextlib.contextmanager
    def attempt(self) -> Iterator[None]:
        """What :meth:`run` does around its call, for a ``with`` block: in a coroutine
        (an async session's run), the scope is current in its task's context."""
        token = self._begin()
        try:
            yield
        finally:
            try:
                _current.reset(token)
            except ValueError:  # left in another context (an async stream its loop closed): none to restore here
                pass

    def _begin(self) -> contextvars.Token[VisitScope | None]:
        # a retried attempt asks its questions again from the first, in a new session
        self.calls = 0
        self.replayed = 0
        self.session = None
        self.kept = ()
        return _current.set(self)


_current: contextvars.ContextVar[VisitScope | None] = contextvars.ContextVar("wingman_visit_scope", default=None)


def current_scope() -> VisitScope | None:
    """The durable visit in progress on this thread (None outside journalled runs)."""
    return _current.get()


def interrupt(payload: Any) -> Any:
    """Suspend the run until someone answers ``payload``; return that answer.

    Call it from a function node, a tool or middleware of a formation run journalled in a
    store (``Formation.run(..., store=...)``). The first time, it suspends the run (the
    visit is abandoned; ``run()`` returns ``status == "suspended"``); when the run is
    resumed with ``answer=value`` the visit runs again and this call returns ``value``.

    Args:
        payload: what to ask (any value the store can journal: text, JSON, a model).

    Returns:
        The answer given to ``resume``.

    Raises:
        NoStoreError: the run is not journalled (no ``store=``), or this is not inside a
            formation node; pass ``store=RunStore(path)`` (or a path) to ``run``/``start``.
            The run is found through a context variable: from a thread the node started,
            call it in the node's context (``contextvars.copy_context()`` taken in the node,
            ``ctx.run(...)`` in the thread).

    Example:
        >>> def approve(draft: str) -> str:
        ...     verdict = interrupt({"approve?": draft})
        ...     return draft if verdict == "yes" else "rejected"
    """
    scope = _current.get()
    if scope is None:
        raise NoStoreError(
            "interrupt() needs a journalled formation run to suspend: call it inside a function node, or a tool or "
            "middleware of an agent or fleet node, of a formation run with a store, "
            "e.g. formation.run(input, store='runs.sqlite'). If the run has a store, this call came from a thread "
            "the node started itself, which does not carry the run's context: call interrupt() on the node's own "
            "thread, or run the thread's code in the run's context: ctx = contextvars.copy_context() in the node, "
            "then ctx.run(fn, ...) in the thread (with a pool: pool.submit(contextvars.copy_context().run, fn, *args))"
        )
    i = scope.calls
    scope.calls = i + 1
    if i < len(scope.answers):
        return scope.answers[i]
    raise RunSuspended(payload, scope)
