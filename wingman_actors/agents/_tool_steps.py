"""One step's tool calls in a session run: middleware around each call, the calls run
(concurrently, at most ``tool_concurrency`` at once, results back in call order), their
outcomes recorded as :class:`~wingman_actors.agents._result.ToolCall` and
:class:`~wingman_actors.agents._result.StepTrace` entries (with the runs a delegating tool started).

Used by :class:`~wingman_actors.agents._session.Session`; not a public API.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Generator, Iterable
from typing import Any

from .._cancel import _current as _current_token  # set inline: no scope object per call
from .._cancel import next_handed
from ..core import ContentBlock, Message, Role, StreamEvent, StreamEventType, Usage
from ..errors import AgentError, ErrorKind, ToolError, error_text
from ..integrations import otel
from ..tools import ToolContext, ToolRegistry
from ._agent import Agent
from ._hooks import emit
from ._middleware import RunContext
from ._result import ChildRun, Spender, StepTrace, ToolCall, collect_child_runs

__all__ = ["ToolBatch", "ToolStep", "close_unanswered", "failure_block"]

_Outcome = tuple[ContentBlock, float, list[ChildRun]]
log = logging.getLogger("wingman_actors.agents")


class ToolStep:
    """The tool calls of one model answer, run for a session's agent.

    Args:
        agent: the session's agent (its middleware, tool concurrency and result cap).
        tools: the agent's tools by name.
        spans: the run's OpenTelemetry spans, or None when not in use.
        tool_ctx: what tools get (work dir, cancel token, bash shell...).
    """

    __slots__ = ("agent", "live", "spans", "tool_ctx", "tools")

    def __init__(
        self, agent: Agent, tools: ToolRegistry, spans: otel.SessionSpans | None, tool_ctx: ToolContext,
        live: list[Spender] | None = None,
    ) -> None:
        self.agent = agent
        self.tools = tools
        self.spans = spans
        self.tool_ctx = tool_ctx
        self.live = live  # the step's children running now (report_live_child), read by the session

    def run(
        self,
        ctx: RunContext,
        uses: list[ContentBlock],
        step: int,
        calls: list[ToolCall],
        trace: list[StepTrace],
        stream: bool,
        aio: bool = False,
    ) -> Generator[StreamEvent | ToolBatch, Any, list[ContentBlock]]:
        """Run ``uses``; append to ``calls`` and ``trace``; return the result blocks in call
        order. Streams ``tool_start`` / ``tool_end`` events when ``stream``; each call's end
        is told as it finishes, while the others still run. With ``aio``, the calls are not
        run here: a :class:`ToolBatch` is yielded to the async driver, which starts them and
        sends back the outcomes of those that have finished; it is yielded again until
        every call has finished."""
        planned: list[tuple[ContentBlock, ContentBlock | None]] = []
        bus = self.agent.events
        for use in uses:
            call = use
            short: ContentBlock | None = None
            for mw in self.agent.middleware:
                got = mw.before_tool(ctx, call)
                if got is not None and got.type == "tool_result":
                    short = got
                    break
                if got is not None:
                    call = got
            planned.append((call, short))
            if bus is not None and "tool_start" in bus.kinds:
                emit(bus, "tool_start", ctx, step=step, call=call)
            if stream:
                yield StreamEvent(type=StreamEventType.TOOL_START, block=call)
        outcomes: list[_Outcome | None] = [None] * len(planned)
        shortened: list[tuple[int, _Outcome]] = [(i, (short, 0.0, [])) for i, (_, short) in enumerate(planned) if short is not None]
        yield from self._finished(ctx, step, planned, outcomes, shortened, stream)
        todo = [(i, call) for i, (call, short) in enumerate(planned) if short is None]
        if aio and todo:
            batch = ToolBatch(self, todo)
            left = len(todo)
            while left:  # the driver sends back the calls that finished since it was last asked
                left -= yield from self._finished(ctx, step, planned, outcomes, (yield batch), stream)
        elif todo:
            with contextlib.closing(self.run_calls(ctx, todo)) as finishing:
                yield from self._finished(ctx, step, planned, outcomes, finishing, stream)
        results: list[ContentBlock] = []
        for i, (call, _) in enumerate(planned):
            outcome = outcomes[i]
            assert outcome is not None
            block, duration, children = outcome
            results.append(self.cap(block))
            calls.append(
                ToolCall(
                    id=call.id or "", name=call.name or "", input=dict(call.input or {}),
                    output=block.content or "", is_error=block.is_error, duration_s=duration,
                )
            )
            trace.append(
                StepTrace(
                    kind="tool", name=call.name or "", step=step, input=call.input,
                    output=block.content, duration_s=duration, is_error=block.is_error,
                    usage=sum((c.usage for c in children), Usage()) if children else Usage(), children=children,
                )
            )
        ctx.token.check()
        return results

    def _finished(
        self, ctx: RunContext, step: int, planned: list[tuple[ContentBlock, ContentBlock | None]],
        outcomes: list[_Outcome | None], finished: Iterable[tuple[int, _Outcome]], stream: bool,
    ) -> Generator[StreamEvent, Any, int]:
        """Record the outcomes of ``finished`` calls (``(index, outcome)`` pairs, taken as they
        come: each call's end is told as it finishes, while the others still run) and tell
        each one's end; returns how many there were."""
        count = 0
        for i, outcome in finished:
            outcomes[i] = outcome
            count += 1
            yield from self._ended(ctx, step, planned[i][0], outcomes, i, stream)
        return count

    def _ended(
        self, ctx: RunContext, step: int, call: ContentBlock, outcomes: list[_Outcome | None], i: int, stream: bool,
    ) -> Generator[StreamEvent, Any, None]:
        """Call ``i`` has finished: its ``after_tool`` hooks, its ``tool_end`` event and stream event."""
        outcome = outcomes[i]
        assert outcome is not None
        block, duration, children = outcome
        for mw in self.agent.middleware:
            block = mw.after_tool(ctx, call, block) or block
        outcomes[i] = (block, duration, children)
        bus = self.agent.events
        if bus is not None and "tool_end" in bus.kinds:
            emit(bus, "tool_end", ctx, step=step, call=call, result=block, duration_s=duration)
        if stream:
            yield StreamEvent(type=StreamEventType.TOOL_END, block=block, duration_s=duration)

    def run_calls(self, ctx: RunContext, calls: list[tuple[int, ContentBlock]]) -> Generator[tuple[int, _Outcome], None, None]:
        """Run ``calls`` (index, call) on daemon threads, at most ``tool_concurrency`` at
        once, and yield their outcomes as they finish (closed early, e.g. a stream left
        while calls run, the calls in flight are abandoned).

        The session thread only waits: a cancel or the run's deadline wakes it at once, and
        the calls still in flight are abandoned as a formation abandons a stuck function
        attempt: logged once, their threads (daemons) left to end whenever the tools
        return, blocking neither the session, ``stop()`` nor interpreter exit.
        """
        token = ctx.token
        # Each call runs in a copy of the session's context, made here on its thread: tools
        # see the run's context variables (a delegating agent's depth, a visit's scope).
        todo = [(i, call, contextvars.copy_context()) for i, call in reversed(calls)]  # popped from the end
        finished: queue.SimpleQueue[tuple[int, _Outcome | None, BaseException | None] | None] = queue.SimpleQueue()
        lock = threading.Lock()
        in_flight: dict[int, str] = {}

        def work() -> None:
            while True:
                with lock:
                    if not todo:
                        return
                    i, call, context = todo.pop()
                    in_flight[i] = call.name or ""
                outcome: _Outcome | None = None
                error: BaseException | None = None
                try:
                    outcome = context.run(self.execute, call)
                except BaseException as exc:  # RunSuspended (an interrupt), SystemExit...: re-raised below
                    error = exc
                with lock:
                    del in_flight[i]
                finished.put((i, outcome, error))

        workers = [
            threading.Thread(target=work, name=f"wingman-tool-{self.agent.name}-{n}", daemon=True)
            for n in range(min(len(calls), self.agent.tool_concurrency))
        ]
        for thread in workers:
            thread.start()
        unregister = token.on_cancel(lambda: finished.put(None))
        done = 0
        try:
            while done < len(calls):
                i, outcome, error = next_handed(finished, token, lambda: self._abandon(ctx, todo, in_flight, lock))
                if error is not None:
                    with lock:
                        todo.clear()
                    raise error
                assert outcome is not None
                done += 1
                yield i, outcome
        except GeneratorExit:  # left early (the stream closed, an after_tool hook raised)
            self._abandon(ctx, todo, in_flight, lock)
            raise
        finally:
            unregister()
        for thread in workers:  # every call is done: they are only returning (and let go of the session)
            thread.join()

    def _abandon(
        self, ctx: RunContext, todo: list[Any], in_flight: dict[int, str], lock: threading.Lock
    ) -> None:
        """Give up on the calls in flight (and start no more): logged once."""
        with lock:
            todo.clear()
            names = sorted(in_flight.values())
        if names:
            log_abandoned(self.agent.name, names, ctx.session_id, ctx.token.cancelled,
                          "async def ones are cancelled, blocking ones' threads run on")

    def execute(self, call: ContentBlock) -> _Outcome:
        """One call, with the runs it started (delegation) and, when in use, its span.

        The run's token is the current one while the tool runs (on its thread): a session
        the tool runs (an agent used as a tool) is a child of the run, and stops with it."""
        spans = self.spans
        reset = _current_token.set(self.tool_ctx.token)
        try:
            with collect_child_runs(self.live) as children:
                if spans is None:
                    block, duration, _ = self.execute_tool(call)
                else:
                    found = self.tools.get(call.name or "")
                    with spans.tool(call, found.description if found is not None else "") as span:
                        block, duration, error = self.execute_tool(call)
                        span.result(block, error)
        finally:
            _current_token.reset(reset)
        return block, duration, children

    def execute_tool(self, call: ContentBlock) -> tuple[ContentBlock, float, Exception | None]:
        """One call: its result block (an error block when the tool failed), its duration
        and the exception it raised, if any."""
        t0 = time.perf_counter()
        name = call.name or ""
        tool = self.tools.get(name)
        call_id = call.id or ""
        if tool is None:
            text = f"Error: unknown tool {name!r}; available tools: {', '.join(self.tools.names) or 'none'}"
            return ContentBlock.tool_result_block(call_id, text, is_error=True), time.perf_counter() - t0, None
        tool_ctx = self.tool_ctx
        error: Exception | None = None
        try:
            if tool_ctx.token is not None:
                tool_ctx.token.check()
            out = tool.execute(dict(call.input or {}), tool_ctx)
            if asyncio.iscoroutine(out):  # a Tool of one's own whose execute is async def: awaited, not rendered
                out = tool_ctx.await_coroutine(out)
            block = ContentBlock.tool_result_block(call_id, out if isinstance(out, str) else str(out))
        except Exception as exc:
            error = exc
            block = failure_block(call_id, name, exc)
        return block, time.perf_counter() - t0, error

    def cap(self, block: ContentBlock) -> ContentBlock:
        """``block``, its text cut to the agent's ``max_tool_result_chars`` with a note."""
        text = block.content or ""
        cap = self.agent.max_tool_result_chars
        if len(text) <= cap:
            return block
        head = text[: cap - 80]
        marker = f"\n[... tool result truncated: {len(text) - len(head)} of {len(text)} characters omitted ...]"
        return block.model_copy(update={"content": head + marker})


def failure_block(call_id: str, name: str, exc: Exception) -> ContentBlock:
    """The error result block of a tool call that raised ``exc`` (sync and async calls)."""
    if isinstance(exc, ToolError):
        text = f"Error: {exc.message}" if exc.message else f"Error: tool {name!r} failed without saying why"
    elif isinstance(exc, AgentError):
        text = f"Error: {exc.message}" if exc.kind in (ErrorKind.CANCELLED, ErrorKind.TIMEOUT) else f"Error: {exc}"
    else:
        # an exception raised without a message is named alone, not followed by ': ' (error_text: one
        # whose __str__ raises is still reported to the model, not a crash of the session)
        detail = error_text(exc).partition(": ")[2]
        text = f"Error: tool {name!r} raised {type(exc).__name__}" + (f": {detail}" if detail else "")
    return ContentBlock.tool_result_block(call_id, text, is_error=True)


def close_unanswered(history: list[Message], failure: BaseException | None, text: str | None = None) -> None:
    """After a run that stopped without a result (``failure``: why, if known): answer each
    tool call of its unfinished turn, the last message of ``history``, with an error result,
    so the history stays one a provider accepts (a tool call without its result is
    refused) and the session's next run can send it. ``text``: the results' own text."""
    last = history[-1] if history else None
    if last is None or last.role is not Role.ASSISTANT:
        return
    calls = last.tool_calls
    if not calls:
        return
    if isinstance(failure, AgentError):
        why = failure.message
    elif isinstance(failure, Exception):
        why = f"{type(failure).__name__}: {failure}"
    else:
        why = "the run was stopped"
    text = text or f"Error: the run stopped before this tool call returned ({why}); its result is unknown"
    history.append(Message.tool_results(
        ContentBlock.tool_result_block(call.id or "", text, is_error=True) for call in calls
    ))


def log_abandoned(agent: str, names: list[str], session_id: str, cancelled: bool, fate: str) -> None:
    """Say once that a stopped run left tool calls ``names`` in flight, and ``fate`` of them."""
    why = "the run was cancelled" if cancelled else "the run's deadline passed"
    log.warning(
        "agent %r: abandoned %d tool call(s) in flight (%s) of session %s: %s; %s until the tools return, "
        "and the session goes on without them", agent, len(names), ", ".join(sorted(names)), session_id, why, fate,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ToolBatch:
    """The tool calls of one step, handed to the async driver (``Session.arun``) to run:
    ``calls`` are ``(index, call)`` pairs. The driver starts them when the batch is first
    yielded, and sends back the ``(index, outcome)`` pairs of the calls that have finished
    since (at least one, in the order they finished); the loop yields the same batch again
    while calls of it still run."""

    step: ToolStep
    calls: list[tuple[int, ContentBlock]]
