"""``/sessions``: stored conversations, and sending them messages (blocking or SSE).

Runs of one session are serialized by a per-session lock, and the history is read inside
that lock and extended in one transaction after a successful run, so concurrent messages
never lose a turn. A failed run stores nothing: the session is as it was before the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import APIRouter, Body
from starlette.responses import Response

from ..agents import Result, Session
from ..core import Message
from ..errors import AgentError
from ..store import FormationMismatchError, RunNotResumableError, StoreError
from ._context import ServerContext
from ._convert import delegation_tree, jsonable, result_fields, usage_dict
from ._deps import Ctx
from ._errors import ApiError, from_agent_error
from ._schemas import (
    AbortOut,
    AgentOut,
    MessageIn,
    MessageOut,
    SessionCreate,
    SessionOut,
    SessionResumeIn,
    SessionUpdate,
    StatusOut,
)
from ._sse import Event, ThreadedStream
from ._streaming import Canceller, Reported, start_stream

__all__ = ["router"]

# runs one turn on the opened session: (session, agent record, stored history, seconds left) -> its result
_Step = Callable[[Session, AgentOut, list[Message], float], Result]

router = APIRouter(prefix="/sessions", tags=["sessions"])


@router.post("", status_code=201, summary="Create a session")
async def create(ctx: Ctx, response: Response, body: Annotated[SessionCreate | None, Body()] = None) -> SessionOut:
    """``work_dir`` must lie under the server's work root (default: the root itself)."""
    body = body or SessionCreate()
    work_dir = await ctx.pool.run(lambda: ctx.resolve_work_dir(body.work_dir))
    session = await ctx.pool.run(ctx.store.create_session, body.title, work_dir)
    response.headers["Location"] = f"/sessions/{session.id}"
    return session


@router.get("", summary="List sessions (newest first), with their history")
async def list_all(ctx: Ctx) -> list[SessionOut]:
    """Every stored session."""
    return await ctx.pool.run(ctx.store.list_sessions)


@router.get("/{id}", summary="Get a session including its history")
async def get_one(id: str, ctx: Ctx) -> SessionOut:
    """404 for an unknown id."""
    return await ctx.pool.run(ctx.store.get_session, id)


@router.put("/{id}", summary="Update session metadata (title, work_dir)")
async def update(id: str, body: SessionUpdate, ctx: Ctx) -> SessionOut:
    """Metadata only: history grows through the message routes."""

    def apply() -> SessionOut:
        ctx.store.get_session(id)  # 404 before judging the work_dir
        work_dir = None if body.work_dir is None else ctx.resolve_work_dir(body.work_dir)
        return ctx.store.update_session(id, body.title, work_dir)

    return await ctx.pool.run(apply)


@router.delete("/{id}", summary="Delete a session and its history")
async def delete(id: str, ctx: Ctx) -> StatusOut:
    """``{"status": "deleted"}``; 404 for an unknown id."""
    await ctx.pool.run(ctx.store.delete_session, id)
    ctx.forget_session(id)
    return StatusOut(status="deleted")


def _prepare(ctx: ServerContext, id: str, agent_id: str) -> tuple[AgentOut, str]:
    session = ctx.store.get_session(id)
    agent = ctx.store.get_agent(agent_id)
    return agent, ctx.check_work_dir(session.work_dir)


def _turn(ctx: ServerContext, id: str, agent_id: str, deadline: float, step: _Step) -> MessageOut:
    """One turn of session ``id`` with agent ``agent_id``, under the session's lock and the
    request's ``deadline``: ``step(session, agent_record, history, remaining)`` runs it
    (and stores the new messages) on the session opened with the stored ``history``."""
    agent_record, work_dir = _prepare(ctx, id, agent_id)
    lock = ctx.session_lock(id)
    if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
        raise ApiError(504, f"session {id} stayed busy with earlier messages past the request timeout; retry later",
                       kind="timeout")
    try:
        history = ctx.store.load_history(id)
        with (
            ctx.runnable_agent(agent_record) as agent,
            ctx.open_session(id, agent, work_dir, history) as session,
        ):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ApiError(504, "the request timed out before the run started", kind="timeout")
            result = step(session, agent_record, history, remaining)
    finally:
        lock.release()
    return MessageOut(**result_fields(result))


def _run_message(ctx: ServerContext, id: str, body: MessageIn, deadline: float) -> MessageOut:
    def step(session: Session, _agent: AgentOut, history: list[Message], remaining: float) -> Result:
        try:
            result = session.run(body.message, timeout=remaining)
        except AgentError as exc:
            raise from_agent_error(exc) from exc
        ctx.store.append_messages(id, session.history[len(history):])
        return result

    return _turn(ctx, id, body.agent_id, deadline, step)


@router.post("/{id}/message", summary="Send a message and wait for the result")
async def message(id: str, body: MessageIn, ctx: Ctx) -> MessageOut:
    """Runs the agent ``agent_id`` on the session's history plus ``message``; returns
    ``{"response", "output", "tool_calls", "usage", "steps", "delegations", "status", "interrupt"}``
    (the delegation tree). ``status: "suspended"`` when a tool asked a person (``ask_human``):
    ``interrupt`` is the question; answer it with ``POST /sessions/{id}/resume``.
    502/504 when the provider fails."""
    deadline = time.monotonic() + ctx.config.request_timeout
    return await ctx.pool.run(_run_message, ctx, id, body, deadline)


def _common_prefix(a: list[Message], b: list[Message]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _resume_message(ctx: ServerContext, id: str, body: SessionResumeIn, deadline: float) -> MessageOut:
    def step(session: Session, agent_record: AgentOut, history: list[Message], remaining: float) -> Result:
        try:
            result = session.resume(id, answer=body.answer, timeout=remaining)
        except AgentError as exc:
            raise from_agent_error(exc) from exc
        except FormationMismatchError as exc:
            raise ApiError(409, f"session {id} waits for another agent than {agent_record.name!r}: {exc}",
                           kind="mismatch") from None
        except RunNotResumableError as exc:
            # A suspended run is resumable: refused while suspended, it waits for another agent.
            if exc.status == "suspended":
                raise ApiError(409, f"session {id} waits for another agent than {agent_record.name!r}: {exc}",
                               kind="mismatch") from None
            raise ApiError(409, f"session {id} cannot be resumed: {exc}", kind="not_resumable") from None
        except StoreError as exc:
            raise ApiError(409, f"session {id} cannot be resumed: {exc}", kind="not_resumable") from None
        except ValueError as exc:
            raise ApiError(409, f"session {id} is not waiting for an answer: send it a message instead ({exc})",
                           kind="not_suspended") from None
        # The resumed turn follows the history the session had when it was suspended
        # (a prefix of the stored one, which may have grown since).
        ctx.store.append_messages(id, session.history[_common_prefix(session.history, history):])
        return result

    return _turn(ctx, id, body.agent_id, deadline, step)


@router.post("/{id}/resume", summary="Answer a suspended session's question and continue its message")
async def resume(id: str, body: SessionResumeIn, ctx: Ctx) -> MessageOut:
    """Continues the message that ended ``status: "suspended"``: the pending ``ask_human`` (or
    ``interrupt()``) returns ``answer``, and the model calls made before it are not made again.
    Answers like ``POST /sessions/{id}/message`` (it may suspend again). 409 when the session
    is not waiting, its wait expired, or ``agent_id`` is not the agent that waits."""
    deadline = time.monotonic() + ctx.config.request_timeout
    return await ctx.pool.run(_resume_message, ctx, id, body, deadline)


def _stream_message(
    ctx: ServerContext, id: str, message: str, agent_record: AgentOut, work_dir: str, canceller: Canceller
) -> Iterator[Event]:
    lock = ctx.session_lock(id)
    while not lock.acquire(timeout=0.2):  # streams have no deadline: wait for the turn, or the client to leave
        if canceller.cancelled.is_set():
            return
    try:
        history = ctx.store.load_history(id)
        with (
            ctx.runnable_agent(agent_record) as agent,
            ctx.open_session(id, agent, work_dir, history) as session,
        ):
            canceller.target = session
            if canceller.cancelled.is_set():
                return
            stream = session.run_stream(message)
            try:
                for event in stream:
                    yield event.type.value, event.model_dump(mode="json", exclude_none=True)
            except AgentError as exc:  # the session already streamed it as an `error` event
                raise Reported(str(exc)) from exc
            result = stream.result()
            ctx.store.append_messages(id, session.history[len(history):])
            yield "done", {"usage": usage_dict(result.usage), "steps": result.steps, "response": result.response,
                           "delegations": delegation_tree(result), "status": result.status,
                           "interrupt": jsonable(result.interrupt)}
    finally:
        lock.release()


@router.post("/{id}/message/stream", summary="Send a message and stream SSE events")
async def message_stream(id: str, body: MessageIn, ctx: Ctx) -> Response:
    """One SSE event per StreamEvent, named by its type (``message_start``, ``text_delta``,
    ``tool_start``, ``tool_end``...), then ``done`` with usage, steps, response, the
    delegation tree, ``status`` and ``interrupt`` (``"suspended"`` and the question when a
    tool asked a person: answer it with ``POST /sessions/{id}/resume``). No request timeout."""
    agent_record, work_dir = await ctx.pool.run(_prepare, ctx, id, body.agent_id)
    canceller = Canceller()
    stream = ThreadedStream(
        ctx.pool, lambda: _stream_message(ctx, id, body.message, agent_record, work_dir, canceller), canceller
    )
    return await start_stream(stream)


@router.post("/{id}/abort", summary="Cancel every run in flight for the session")
async def abort(id: str, ctx: Ctx) -> AbortOut:
    """``{"session_id", "aborted"}``: how many runs were cancelled (0 when none was running;
    idempotent). An aborted run stores nothing and its request answers 502 ``kind: cancelled``
    (a stream ends with an ``error`` event). 404 for an unknown session."""
    await ctx.pool.run(ctx.store.get_session, id)
    return AbortOut(session_id=id, aborted=ctx.abort(id))
