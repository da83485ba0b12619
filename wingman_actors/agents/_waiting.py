"""Sessions that wait: ``Session(agent, store=RunStore(...))`` suspends a run on ``interrupt()``.

A tool (or middleware) of such a session that calls :func:`~wingman_actors.interrupt` (the
``ask_human`` tool does) ends the run with ``Result(status="suspended", interrupt=payload)``
instead of an error. The run is then journalled in the store as a one-node run (the node is
the agent; the formation name ``"session:<agent name>"``): the history before the message,
the message, its metadata, the model responses of the run so far, and the interrupt.
Nothing is written to the store by a run that does not suspend.

:meth:`Session.resume <wingman_actors.Session.resume>` (in any process, with an agent of the
same name) records the answer, restores the history, and runs the message again: the
journalled model responses are replayed instead of calling the model, tools run again (so
keep side effects after the ``interrupt()`` call, or make them idempotent), and that call
of ``interrupt()`` returns the answer. A suspended session expires after the store's
``suspend_ttl``, like a suspended formation run.

:meth:`Session.arun <wingman_actors.Session.arun>` and :meth:`Session.aresume` do the same
on an event loop: the run is awaited there, the store's reads and writes are made on a
worker thread.

The store's run id is the session id; a later turn of the same session that suspends too
gets ``"<session id>:2"``, ``":3"``... and :meth:`resume` takes the newest.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._cancel import CancelToken
from .._event_loop import off_loop
from .._interrupts import RunSuspended, VisitScope
from ..core import Message, Usage
from ._result import Result

if TYPE_CHECKING:
    from ..store import FormationShape, JournalStore
    from ._agent import Agent
    from ._async_session import AsyncSessionStream
    from ._session import RunGen, Session

__all__ = [
    "arun_waiting", "aresume_waiting", "astream_waiting", "check_store", "resume_waiting", "run_waiting",
    "stream_waiting",
]

_T = TypeVar("_T")
_VISIT = 1  # a session's run is one visit of its one node


def check_store(store: object) -> None:
    """Refuse what is not a run store, with the fix."""
    from ..store import JournalStore  # the store layer sits above agents: imported only when store= is used

    if not isinstance(store, JournalStore):
        raise TypeError(
            f"Session(store=...) takes a RunStore, got {type(store).__name__}; e.g. "
            "Session(agent, store=RunStore('runs.sqlite')) (from wingman_actors.store import RunStore)"
        )


def _shape(agent: Agent) -> FormationShape:
    from ..store import FormationShape

    return FormationShape(((agent.name, "agent"),), ())


def _formation(agent: Agent) -> str:
    return f"session:{agent.name}"


def _hold(response: Any) -> None:
    """Until a run suspends it has no record in the store: its scope keeps the model
    responses (:meth:`VisitScope.record_reply`) and journals them only then."""


def run_waiting(
    session: Session, message: str | Message, timeout: float | None, parent_token: CancelToken | None,
    metadata: Mapping[str, Any] | None,
) -> Result:
    """:meth:`Session.run` of a session with a store."""
    turn = _fresh(session, message, metadata)
    return _attempt(session, turn, timeout, parent_token)


async def arun_waiting(
    session: Session, message: str | Message, timeout: float | None, parent_token: CancelToken | None,
    metadata: Mapping[str, Any] | None,
) -> Result:
    """:meth:`Session.arun` of a session with a store."""
    turn = _fresh(session, message, metadata)
    return await _aattempt(session, turn, timeout, parent_token)


def stream_waiting(
    session: Session, message: str | Message, timeout: float | None, parent_token: CancelToken | None,
    metadata: Mapping[str, Any] | None,
) -> RunGen:
    """:meth:`Session.run_stream` of a session with a store: the run's events, then its
    result, suspended on ``interrupt()`` as :func:`run_waiting`'s."""
    turn = _fresh(session, message, metadata)
    # interrupt() finds the scope in the context; the loop runs step by step in whichever
    # thread iterates the stream, so every step runs in this one context, the scope current.
    context = contextvars.copy_context()
    context.run(turn.scope.enter)
    run: RunGen = session._run(turn.message, timeout=timeout, stream=True, parent_token=parent_token,
                               metadata=metadata)
    try:
        sent: Any = None
        while True:
            try:
                item = context.run(run.send, sent)
            except StopIteration as stop:
                result: Result = stop.value
                return result
            sent = yield item
    except RunSuspended as signal:
        if signal.scope is not turn.scope:
            raise  # an interrupt of an enclosing formation run: that run suspends
        return _suspend(session, turn, signal.payload)
    finally:
        context.run(run.close)


def astream_waiting(
    session: Session, message: str | Message, timeout: float | None, parent_token: CancelToken | None,
    metadata: Mapping[str, Any] | None,
) -> AsyncSessionStream:
    """:meth:`Session.astream` of a session with a store: :func:`stream_waiting`, awaited."""
    from ._async_session import AsyncSessionStream

    turn = _fresh(session, message, metadata)
    run = session._run(turn.message, timeout=timeout, stream=True, parent_token=parent_token, metadata=metadata,
                       aio=True)

    async def suspended(signal: RunSuspended) -> Result:
        if signal.scope is not turn.scope:
            raise signal  # an interrupt of an enclosing formation run: that run suspends
        return await off_loop(_suspend, session, turn, signal.payload)

    return AsyncSessionStream(run, scope=turn.scope, on_suspend=suspended)


def resume_waiting(session: Session, session_id: str, store: Any, answer: Any, timeout: float | None) -> Result:
    """:meth:`Session.resume`."""
    _check_resume(session, session_id, store, timeout)
    turn = _reopen(session, session_id, store, answer)
    _take_over(session, session_id, turn)
    return _attempt(session, turn, timeout, None)


async def aresume_waiting(
    session: Session, session_id: str, store: Any, answer: Any, timeout: float | None
) -> Result:
    """:meth:`Session.aresume`: :func:`resume_waiting` with the store's reads and writes
    on a worker thread and the run awaited on the caller's loop."""
    _check_resume(session, session_id, store, timeout)
    loop = asyncio.get_running_loop()
    reopening = asyncio.ensure_future(asyncio.to_thread(_reopen, session, session_id, store, answer))
    try:
        turn = await asyncio.shield(reopening)
    except asyncio.CancelledError:
        def claimed(done: asyncio.Future[_Turn]) -> None:  # cancelled while claiming: the run did not run
            if not done.cancelled() and done.exception() is None:
                loop.run_in_executor(None, _ended, done.result(), asyncio.CancelledError())

        reopening.add_done_callback(claimed)
        raise
    _take_over(session, session_id, turn)
    return await _aattempt(session, turn, timeout, None)


@dataclass(slots=True)
class _Turn:
    """One attempt at a message of a waiting session: what its run needs and journals."""

    store: Any
    scope: VisitScope
    run_id: str | None  # None until the turn first suspends
    history: list[Message]  # the history before the message
    message: Message
    metadata: Mapping[str, Any] | None


def _fresh(session: Session, message: str | Message, metadata: Mapping[str, Any] | None) -> _Turn:
    scope = VisitScope("", session.agent.name, _VISIT, (), _hold, None)
    from ._inputs import user_message

    msg = user_message(message)
    return _Turn(session._store, scope, None, list(session.history), msg, metadata)


def _check_resume(session: Session, session_id: Any, store: Any, timeout: Any) -> None:
    """Refuse bad arguments before the run is claimed and the answer recorded (a resume
    refused later would have spent the answer)."""
    if not isinstance(session_id, str) or not session_id:
        error = TypeError if not isinstance(session_id, str) else ValueError
        raise error(f"resume: session_id must be a non-empty str (a suspended session's .id), got {session_id!r}")
    if timeout is not None:
        from ._inputs import check_timeout

        check_timeout(timeout)
    if store is None:
        raise ValueError(
            "resume needs the store the session was suspended in: Session(agent, store=store).resume(session_id, "
            "answer=...) or session.resume(session_id, store=RunStore(path), answer=...)"
        )
    check_store(store)
    if session._busy.locked():
        raise RuntimeError(f"session {session.id} is running a message; resume in another Session")


def _check_agent(store: Any, session_id: str, run_id: str, agent: Agent) -> None:
    """Refuse, in a session's terms, a resume on a session of another agent (the store's
    shape check would say it in a formation's: nodes missing and new)."""
    from ..store import RunNotResumableError

    record = store.get(run_id)
    if record.formation == _formation(agent):
        return
    prefix = "session:"
    if record.formation.startswith(prefix):
        needed = record.formation[len(prefix):]
        raise RunNotResumableError(
            f"session {session_id!r} was suspended by agent {needed!r}, not {agent.name!r}: resume it on a session "
            f"of an agent named {needed!r} (Session(<the {needed!r} agent>, store=store).resume({session_id!r}, "
            "answer=...)); the answer was not recorded",
            run_id=run_id, status=record.status,
        )
    raise RunNotResumableError(
        f"{session_id!r} is a run of formation {record.formation!r}, not a session: resume it with "
        f"Formation.resume({session_id!r}, store=..., answer=...) on that formation",
        run_id=run_id, status=record.status,
    )


def _reopen(session: Session, session_id: str, store: Any, answer: Any) -> _Turn:
    """Claim the newest suspended run of ``session_id`` and record ``answer`` (blocking:
    the store's reads and durable writes)."""
    agent = session.agent
    run_id = _newest(store, session_id)
    _check_agent(store, session_id, run_id, agent)
    journal = store.claim_run(run_id, _shape(agent), formation=_formation(agent))
    if journal.pending_interrupt is not None:
        try:
            store.answer(run_id, answer)
        except BaseException:
            # Refused (an answer the store cannot keep): the run was not resumed, so it
            # waits as before, not "running" in this process.
            store.set_status(run_id, "suspended", wait=True)
            raise
        journal = store.load(run_id)
    node = agent.name
    saved = journal.run.input
    record = functools.partial(store.record_progress, run_id, node, _VISIT)
    scope = VisitScope(run_id, node, _VISIT, journal.answers(node, _VISIT), record,
                       list(journal.progress.get((node, _VISIT, None), ())))
    return _Turn(store, scope, run_id, list(saved["history"]), saved["message"], saved["metadata"] or None)


def _take_over(session: Session, session_id: str, turn: _Turn) -> None:
    session.id = session_id
    session.history = list(turn.history)


def _newest(store: JournalStore, session_id: str) -> str:
    """The store's newest run of session ``session_id`` (see the module docs)."""
    from ..store import UnknownRunError

    found: str | None = None
    n = 1
    while True:
        run_id = session_id if n == 1 else f"{session_id}:{n}"
        try:
            store.get(run_id)
        except UnknownRunError:
            break
        found, n = run_id, n + 1
    if found is None:
        raise ValueError(
            f"no suspended session {session_id!r} in this store: pass the id of a session whose run returned "
            "status='suspended' (session.id), and the store it ran with"
        )
    return found


def _free_id(store: JournalStore, session_id: str) -> str:
    newest = None
    try:
        newest = _newest(store, session_id)
    except ValueError:
        return session_id
    n = 2 if newest == session_id else int(newest.rsplit(":", 1)[1]) + 1
    return f"{session_id}:{n}"


def _attempt(session: Session, turn: _Turn, timeout: float | None, parent_token: CancelToken | None) -> Result:
    """Run the turn's message under its scope (where ``interrupt()`` finds its answers);
    suspend on it."""
    try:
        result = turn.scope.run(session._run_blocking, turn.message, timeout, parent_token, turn.metadata)
    except RunSuspended as signal:
        if signal.scope is not turn.scope:
            raise  # an interrupt of an enclosing formation run: that run suspends
        return _suspend(session, turn, signal.payload)
    except BaseException as exc:
        _ended(turn, exc)
        raise
    _ended(turn, None)
    return result


async def _aattempt(
    session: Session, turn: _Turn, timeout: float | None, parent_token: CancelToken | None
) -> Result:
    """:func:`_attempt` awaited: the run on the caller's loop, the store's writes on a
    worker thread (finished even when the awaiting task is cancelled)."""
    try:
        with turn.scope.attempt():
            result = await session._arun(turn.message, timeout, parent_token, turn.metadata)
    except RunSuspended as signal:
        if signal.scope is not turn.scope:
            raise
        return await off_loop(_suspend, session, turn, signal.payload)
    except BaseException as exc:
        if turn.run_id is not None:
            await off_loop(_ended, turn, exc)
        raise
    if turn.run_id is not None:
        await off_loop(_ended, turn, None)
    return result


def _ended(turn: _Turn, error: BaseException | None) -> None:
    """Journal how a resumed turn ended (a turn never suspended has no record)."""
    if turn.run_id is None:
        return
    if error is None:
        turn.store.set_status(turn.run_id, "succeeded", wait=True)
    else:
        turn.store.set_status(turn.run_id, "failed", error=f"{type(error).__name__}: {error}", wait=True)


def _suspend(session: Session, turn: _Turn, payload: Any) -> Result:
    agent = session.agent
    node = agent.name
    store, scope, run_id = turn.store, turn.scope, turn.run_id
    if run_id is None:
        run_id = _free_id(store, session.id)
        saved = {"history": turn.history, "message": turn.message,
                 "metadata": dict(turn.metadata) if turn.metadata else None}
        store.begin_run(_formation(agent), _shape(agent), saved, run_id=run_id)
    scope.on_progress = functools.partial(store.record_progress, run_id, node, _VISIT)
    scope.journal_replies()
    store.record_interrupt(run_id, node, _VISIT, payload)
    store.set_status(run_id, "suspended", wait=True)
    session.history = list(turn.history)  # the turn is not over: resume() runs it again
    # what the turn's model calls spent up to the interrupt (they were paid for); the
    # resumed result counts them again, as the whole turn's
    ctx = session._ctx
    spent = session._spent_so_far() or Usage()
    return Result(status="suspended", interrupt=payload, stop_reason="tool_use", usage=spent,
                  steps=ctx.step if ctx is not None else 0)
