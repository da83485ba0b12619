"""Session: the agentic loop, blocking (:meth:`Session.run`) and streaming
(:meth:`Session.run_stream`).

One run: add the user message; then repeatedly call the model, add its answer, execute its
tool calls (concurrently, results back in call order) and add the results, until the model
answers without tools. At ``max_steps`` one final call without tools asks for the answer.

Example:
    >>> from wingman_actors import Agent, Session
    >>> from wingman_actors.testing import ScriptedProvider
    >>> session = Session(Agent("a", provider=ScriptedProvider(["Paris."])))
    >>> session.run("Capital of France?").response
    'Paris.'
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Generator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from .._cancel import CancelToken, cancel_scope, current_token
from .._interrupts import RunSuspended, current_scope
from ..core import (
    ContentBlock,
    InferenceRequest,
    InferenceResponse,
    Message,
    StreamEvent,
    StreamEventType,
    Usage,
)
from ..errors import AgentError, ErrorKind
from ..integrations import otel
from ..providers._base import Provider
from ..tools import ToolContext
from ._agent import Agent
from ._async_api import AsyncSessionRuns
from ._context_budget import ContextWindow
from ._hooks import compaction_events, emit, emit_stop, read_only
from ._inputs import check_timeout, start_history, user_message
from ._middleware import RunContext
from ._model_calls import ModelCall, compaction_call, compactions, infer, infer_stream, traced_infer
from ._on_session import on_a_session
from ._prepare import Prepares
from ._result import Result, Spender, StepTrace, ToolCall, charge
from ._session_ids import new_session_id
from ._stream import SessionStream, Unbegun
from ._structured import OutputSchema, OutputValidationError, only_tool_calls, unmatched
from ._tool_steps import ToolBatch, ToolStep
from ._turns import begin_turn, end_unfinished, refused, warn_step_limit

__all__ = ["Result", "Session", "SessionStream"]

_LIMIT_NOTE = (
    "You have reached the maximum number of steps for this task. Do not call any more tools: "
    "give your final answer now, using what you have."
)

RunGen = Generator[StreamEvent | ModelCall | ToolBatch, Any, Result]
"""A run of the loop: it yields stream events and, driven by the async driver
(``aio``), the model calls and tool batches for the driver to make."""

class Session(AsyncSessionRuns):
    """A conversation with an agent: history plus the loop that extends it.

    Args:
        agent: the agent to run.
        work_dir: where tools work (file tools are confined to it); default the cwd.
        history: messages to start from (e.g. a stored conversation): ``Message`` objects or
            message dicts, whose ``content`` may be text (``{"role": "user", "content": "hi"}``).
        id: the session's id (generated when not given).
        store: a :class:`~wingman_actors.store.RunStore`: a tool that calls
            :func:`~wingman_actors.interrupt` (or ``ask_human``) then suspends the run
            instead of failing it: :meth:`run` returns a result with
            ``status="suspended"``, and :meth:`resume` (in any process, with the same
            agent) continues it with an answer, without repeating its model calls.

    A session runs one message at a time; use one session per concurrent conversation.
    Close it (or use it as a context manager) to release tool resources such as the
    persistent bash shell.
    """

    __slots__ = (
        "__weakref__", "_busy", "_ctx", "_lineage", "_live", "_prepares", "_schema", "_spans", "_store", "_token",
        "_tool_ctx", "_tools", "_turn", "_unbegun", "_window", "_work_dir", "agent", "history", "id",
    )

    def __init__(
        self,
        agent: Agent,
        *,
        work_dir: str | Path | None = None,
        history: list[Message] | None = None,
        id: str | None = None,
        store: Any = None,
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"Session needs an Agent, got {type(agent).__name__}")
        if store is not None:
            from ._waiting import check_store

            check_store(store)
        self._store = store
        self._lineage: tuple[int, str | None] | None = None  # (depth, parent's id), set by a delegate call
        self._prepares = Prepares(agent) if agent.prepare is not None else None
        self.agent = agent
        if id is not None and not isinstance(id, str):
            raise TypeError(f"Session id must be a str (or None for a new one), got {type(id).__name__}")
        self.id = id or new_session_id()
        if work_dir is not None and not Path(work_dir).is_dir():
            raise ValueError(f"work_dir {str(work_dir)!r} is not an existing directory")
        self._work_dir = Path(work_dir).resolve() if work_dir is not None else None
        self.history: list[Message] = start_history(history) if history else []
        self._tools = agent.tool_registry
        self._schema = OutputSchema.of(agent.output_schema) if agent.output_schema is not None else None
        self._tool_ctx: ToolContext | None = None
        self._busy = threading.Lock()
        self._token: CancelToken | None = None
        self._unbegun: weakref.WeakSet[Unbegun] | None = None  # streams made, not yet iterated
        self._ctx: RunContext | None = None  # the last run's (spent_so_far)
        # the children (delegated runs) the tool step in progress started, while their usage
        # is not yet in the run's: spent_so_far counts them
        self._live: list[Spender] | None = None
        self._turn = 0  # where the run in progress began in the history (end_unfinished)
        self._spans: otel.SessionSpans | None = None
        self._window = (
            ContextWindow(agent.context_budget, agent.compactor, agent.name)
            if agent.context_budget is not None else None
        )

    @property
    def work_dir(self) -> Path:
        """Where the session's tools work (the current directory when none was given)."""
        return self._work_dir if self._work_dir is not None else Path.cwd()

    # -- public API -------------------------------------------------------------------

    def run(
        self, message: str | Message, *, timeout: float | timedelta | None = None, parent_token: CancelToken | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Result:
        """Run the loop on ``message`` and return the :class:`Result`. Blocks the calling
        thread until the run ends (also inside a running event loop, which it stalls:
        from a coroutine, ``await session.arun(message)``).

        ``timeout``: seconds the run may take (None or ``math.inf``: no limit).
        ``parent_token``: the run also stops when this token is cancelled or its deadline
        passes (a delegating agent passes its own run's token to the runs it starts).
        ``metadata``: what the run is about (a tenant, a user, a task's data): the agent's
        ``prepare`` and middleware see it as ``RunContext.metadata``, tools as
        ``ToolContext.metadata``.

        With a ``store``, a tool's ``interrupt()`` ends the run with ``status="suspended"``
        (see :meth:`resume`).

        Raises:
            AgentError: the provider failed (after its retries), the run timed out
                (``kind=timeout``), was cancelled, or the structured output stayed invalid.
            TypeError: ``message`` is neither a str nor a Message, or ``timeout`` is not a number.
            ValueError: ``timeout`` is not > 0.
        """
        if self._store is not None:
            from ._waiting import run_waiting

            return run_waiting(self, message, check_timeout(timeout), parent_token, metadata)
        return self._run_blocking(message, check_timeout(timeout), parent_token, metadata)  # (a timedelta: seconds)

    @on_a_session
    def resume(
        self, session_id: str, *, store: Any = None, answer: Any = None, timeout: float | timedelta | None = None
    ) -> Result:
        """Continue the suspended run of session ``session_id`` with ``answer``.

        The call of ``interrupt()`` that suspended it returns ``answer``; the model calls
        made before it are not made again (tools before it run again). This session takes
        over that session's id and history; it must have the same agent (by name). Blocks
        the calling thread until the run ends (from a coroutine, use :meth:`aresume`).

        Args:
            session_id: the id of the suspended session (``session.id``).
            store: the store it was suspended in (default: this session's store).
            answer: what the interrupt is answered with.
            timeout: as for :meth:`run`.

        Raises:
            TypeError: called on the class (``Session.resume(session_id, ...)``): call it on
                a session of the suspended session's agent, ``Session(agent).resume(...)``;
                ``session_id`` is not a str, or ``timeout`` not a number.
            ValueError: no store given, nothing of that session is waiting in it, an empty
                ``session_id``, or a ``timeout`` not > 0. These are refused before the run
                is touched: the answer is not recorded, the session stays suspended.
            StoreError: the run cannot be resumed (expired, finished, another agent's), or
                the answer cannot be journalled (the session stays suspended).
        """
        from ._waiting import resume_waiting

        return resume_waiting(self, session_id, store if store is not None else self._store, answer,
                              check_timeout(timeout))

    def _run_blocking(
        self, message: str | Message, timeout: float | None, parent_token: CancelToken | None,
        metadata: Mapping[str, Any] | None,
    ) -> Result:
        # Drives the loop itself rather than through _run: one generator less per run.
        ctx, provider, msg = self._open(message, timeout, parent_token, metadata)
        result: Result | None = None
        failure: BaseException | None = None
        try:
            loop = self._loop(ctx, provider, msg, False)
            try:
                while True:
                    next(loop)
            except StopIteration as stop:
                result = stop.value
                return stop.value  # type: ignore[no-any-return]  # the loop returns a Result
            finally:
                loop.close()
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._close(ctx, result, failure)

    def run_stream(
        self, message: str | Message, *, timeout: float | timedelta | None = None, parent_token: CancelToken | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionStream:
        """Run the loop on ``message``, streaming provider events and ``tool_start`` /
        ``tool_end`` events; call ``.result()`` on the stream after iterating it. Each
        step of the iteration blocks the calling thread (from a coroutine, use
        :meth:`astream`). With a ``store``, an ``interrupt()`` ends the stream, and ``.result()``
        is the suspended result :meth:`run` would return (continue with :meth:`resume`)."""
        if self._store is not None:
            from ._waiting import stream_waiting

            return SessionStream(stream_waiting(self, message, check_timeout(timeout), parent_token, metadata))
        return SessionStream(self._run(message, timeout=check_timeout(timeout), stream=True, parent_token=parent_token,
                                       metadata=metadata))

    def cancel(self, reason: str = "cancelled by caller") -> None:
        """Cancel the run in progress (from another thread); it stops at its next boundary.
        With none in progress, streams made and not yet iterated begin cancelled."""
        if not isinstance(reason, str):
            raise TypeError(f"cancel: reason must be a str (it is the run's error message), got {reason!r}")
        token = self._token
        if token is not None:
            token.cancel(reason)
        elif self._unbegun:
            for stream in list(self._unbegun):
                stream.reason = reason
            token = self._token  # a stream that began meanwhile may have looked before its mark was set
            if token is not None:
                token.cancel(reason)

    def _spent_so_far(self) -> Usage | None:
        """What the run in progress (else the last run) has spent on model calls so far,
        read from another thread; None before any run. For a formation node whose attempt
        is cut (its timeout, its run cancelled): those calls were paid for, and counted."""
        ctx, live = self._ctx, self._live
        if ctx is None:
            return None
        if not live:
            return ctx.usage
        return Usage.sum([ctx.usage, *(u for spent in list(live) if (u := spent()) is not None)])

    def close(self) -> None:
        """Release tool resources (the bash shell...). The session stays usable."""
        ctx, self._tool_ctx = self._tool_ctx, None
        if ctx is not None:
            ctx.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the loop ---------------------------------------------------------------------

    def _open(
        self, message: str | Message, timeout: float | None, parent_token: CancelToken | None,
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[RunContext, Provider, Message]:
        """Start a run: the session is taken, the run's token and spans made."""
        timeout = check_timeout(timeout)  # (math.inf: None, no limit)
        # Refused before the session is taken, so a bad value leaves it free.
        frozen = read_only(metadata) if metadata is not None else None
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(
                f"session {self.id} is already running a message; use one Session per concurrent conversation "
                "(a stream left before its end runs until closed: stream.close(), or await stream.aclose())"
            )
        token: CancelToken | None = None
        try:
            provider = self.agent.provider
            if provider is None:
                raise AgentError(
                    f"agent {self.agent.name!r} has no provider: pass provider=new_provider(...) to Agent",
                    kind=ErrorKind.INVALID,
                )
            msg = user_message(message)
            # A child of the caller's token: the delegating parent's, else the current one
            # (cancelling a formation node's attempt reaches this run even before it begins).
            token = CancelToken(timeout=timeout, parent=parent_token if parent_token is not None else current_token())
            self._token = token
            self._spans = otel.session_spans(self.agent.name, provider, self.id)
        except BaseException:
            self._token = None
            if token is not None:
                token.release()
            self._busy.release()
            raise
        if frozen is None:
            ctx = RunContext(self.agent, self.id, self.history, token)
        else:
            ctx = RunContext(self.agent, self.id, self.history, token, metadata=frozen)
        if self._lineage is not None:
            ctx.depth, ctx.parent_session_id = self._lineage
        self._ctx = ctx
        self._live = None
        self._turn = len(self.history)
        bus = self.agent.events
        if bus is not None and "session_start" in bus.kinds:
            emit(bus, "session_start", ctx, message=msg.text)
        return ctx, provider, msg

    def _close(self, ctx: RunContext, result: Result | None, failure: BaseException | None) -> None:
        """End a run started by :meth:`_open` (``failure``: what it raised, if anything,
        told what the run had spent)."""
        token = ctx.token
        # what a failed or suspended run spent on model calls (paid for: the stop event says it)
        spent = self._spent_so_far() if isinstance(failure, Exception | RunSuspended) else None
        if isinstance(failure, Exception):
            charge(failure, spent)  # a run cut while its children worked counts theirs
        spans = self._spans
        bus = self.agent.events
        if bus is not None and "session_stop" in bus.kinds:
            emit_stop(bus, self.agent.name, self.id, result, failure, self._lineage, spent)
        if result is None and not isinstance(failure, RunSuspended):
            end_unfinished(self.history, self._turn, failure)  # a suspended run's turn stays open for resume()
        if failure is not None and not isinstance(failure, Exception):
            failure = None  # a suspension (or an exit) is no error of the run's
        try:
            if spans is not None:
                spans.end(result.usage if result is not None else None, failure)
        finally:
            self._spans = None
            self._token = None
            token.release()  # the parent (a fleet's run, a delegating run) lets it go
            self._busy.release()

    def _run(
        self, message: str | Message, *, timeout: float | None, stream: bool, parent_token: CancelToken | None = None,
        metadata: Mapping[str, Any] | None = None,
        aio: bool = False,
    ) -> RunGen:
        """The run as a generator that begins when first advanced (see :meth:`cancel`)."""
        mark = Unbegun()
        if self._unbegun is None:
            self._unbegun = weakref.WeakSet()
        self._unbegun.add(mark)
        return self._begun(mark, message, timeout, stream, parent_token, metadata, aio)

    def _begun(
        self, mark: Unbegun, message: str | Message, timeout: float | None, stream: bool,
        parent_token: CancelToken | None, metadata: Mapping[str, Any] | None, aio: bool,
    ) -> RunGen:
        try:
            ctx, provider, msg = self._open(message, timeout, parent_token, metadata)
        finally:
            self._unbegun.discard(mark)  # type: ignore[union-attr]  # (_run made it)
        if mark.reason is not None:  # cancelled before it began: it stops at its first boundary
            ctx.token.cancel(mark.reason)
        result: Result | None = None
        failure: BaseException | None = None
        try:
            result = yield from self._loop(ctx, provider, msg, stream, aio)
        except AgentError as exc:
            failure = exc
            if stream:
                yield StreamEvent(type=StreamEventType.ERROR, error=str(exc), error_kind=exc.kind.value)
            raise
        except Exception as exc:
            failure = exc
            if stream:
                yield StreamEvent(type=StreamEventType.ERROR, error=str(exc), error_kind="agent")
            raise
        except RunSuspended as exc:
            failure = exc
            raise
        finally:
            self._close(ctx, result, failure)
        return result

    def _loop(self, ctx: RunContext, provider: Provider, msg: Message, stream: bool, aio: bool = False) -> RunGen:
        started = time.perf_counter()
        mws = self.agent.middleware
        for mw in mws:
            msg = mw.before_agent(ctx, msg) or msg
        prompt_index = begin_turn(self.history, msg)
        instructions = self._instructions(self.agent.system_prompt)
        prepares = self._prepares
        bus = self.agent.events
        # made when first needed (a run's first model call waits without them)
        calls: list[ToolCall] | None = None
        trace: list[StepTrace] | None = None
        usage: Usage | None = None
        limit, limit_hit, corrected, step = self.agent.steps_limit, False, False, 0
        asked_past_limit: list[str] = []  # the tools the last call past the limit asked for (not run)
        scope = current_scope()  # a journalled formation visit: model responses are journalled
        if scope is not None and not scope.owns(self.id):
            scope = None
        while True:
            ctx.token.check()
            step += 1
            ctx.step = step
            tools, model, prompt = self._tools, provider, instructions
            model_name: str | None = None
            if prepares is not None:
                prepared = prepares.call(ctx)
                if prepared is not None:
                    tools = prepares.tools(prepared.tools) if prepared.tools is not None else tools
                    if prepared.model is not None:
                        model, model_name = prepares.model(prepared.model, model)
                    if prepared.instructions is not None:
                        prompt = self._instructions(self.agent.prompt_with(prepared.instructions))
            with_tools = step <= limit and len(tools) > 0
            if step > limit and not limit_hit:
                limit_hit = True
                warn_step_limit(self.agent.name, limit, self.agent.max_steps is None)
                self._add_user_text(_LIMIT_NOTE)
            # messages: a list of the request's own (validating list[Message] builds one), so
            # the history growing later leaves the request as it was made
            request = InferenceRequest(
                messages=self.history, tools=tools.definitions() if with_tools else [],
                instructions=prompt, output_schema=self._schema.schema if self._schema is not None else None,
                max_tokens=self.agent.max_tokens, temperature=self.agent.temperature, model=model_name,
            )
            if self._window is not None:
                if trace is None:
                    trace = []
                request, spent = yield from self._fit(request, prompt_index, step, trace, ctx, aio)
                if spent is not None:
                    usage = spent if usage is None else usage + spent
            for mw in mws:
                request = mw.before_model(ctx, request) or request
            replayed = scope.next_reply() if scope is not None else None
            if bus is not None and "model_start" in bus.kinds:
                emit(bus, "model_start", ctx, step=step, request=request, journalled=replayed is not None)
            t0 = time.perf_counter()
            if replayed is not None:  # resumed after an interrupt: this call was made before
                response = replayed
            elif aio:  # the async driver makes the call (Session.arun/astream)
                response = yield ModelCall(model, request, ctx.token, stream, self._spans)
            elif self._spans is not None:
                response = yield from traced_infer(self._spans, model, request, ctx.token, stream)
            elif stream:
                response = yield from infer_stream(model, request, ctx.token)
            else:
                response = infer(model, request, ctx.token)
            if bus is not None and "model_end" in bus.kinds:
                emit(bus, "model_end", ctx, step=step, response=response, usage=response.usage,
                     duration_s=time.perf_counter() - t0, journalled=replayed is not None)
            if scope is not None and replayed is None:
                scope.record_reply(response)
            for mw in mws:
                response = mw.after_model(ctx, response) or response
            content = response.content
            thinking: str | None = None
            if len(content) == 1 and content[0].type == "text":  # the common answer: one text block
                tool_uses: list[ContentBlock] = []
            else:
                tool_uses = response.tool_calls
                thinking = response.thinking or None
            if tool_uses and step > limit:
                # The final call (past the step limit) has no tools: drop stray calls, not loop (before
                # it, a call when prepare offered none is answered as unknown by the tool step)
                kept = [b for b in response.content if b.type != "tool_use"]
                response = response.model_copy(update={"content": kept, "stop_reason": "end_turn"})
                asked_past_limit = [b.name or "?" for b in tool_uses]
                tool_uses = []
            # Responses are immutable, so a one-step run's usage is its response's.
            usage = response.usage if usage is None else usage + response.usage
            ctx.usage = usage
            self.history.append(response.to_message(sender=self.agent.name))
            text = response.text
            if trace is None:
                trace = []
            trace.append(
                StepTrace(
                    kind="model", name=self._model_name(response), step=step, input=len(request.messages),
                    output=text or None, usage=response.usage, duration_s=time.perf_counter() - t0,
                    thinking=thinking,
                )
            )
            if tool_uses:
                traced = len(trace)
                live: list[Spender] = []
                self._live = live
                step_tools = ToolStep(self.agent, tools, self._spans, self._context(ctx), live)
                if calls is None:
                    calls = []
                results = yield from step_tools.run(ctx, tool_uses, step, calls, trace, stream, aio)
                # Runs the tools started (delegated agents) count towards this run's usage.
                usage = sum((entry.usage for entry in trace[traced:] if entry.children), usage)
                ctx.usage = usage
                self._live = None  # their usage is in the run's now
                self.history.append(Message.tool_results(results))
                continue
            output: Any = text
            if self._schema is not None:
                if response.refused:  # declined: no retry, no JSON error about its words
                    raise refused(self.agent.name, response)
                try:
                    output = self._schema.validate_text(text)
                except OutputValidationError as exc:
                    if corrected and asked_past_limit and not text.strip():  # no answer, only calls for tools
                        raise only_tool_calls(self.agent.name, limit, asked_past_limit) from exc
                    if corrected or response.stop_reason == "max_tokens":  # cut off: a retry would be too
                        raise unmatched(self.agent.name, exc, response) from exc
                    corrected = True
                    self._add_user_text(
                        f"Your answer does not match the required output schema: {exc}. "
                        "Reply again with only a JSON document that matches the schema."
                    )
                    continue
            result = Result(
                response=text, output=output, tool_calls=calls if calls is not None else [], usage=usage, steps=step,
                stop_reason=response.stop_reason, refused=response.refused, max_steps_reached=limit_hit, trace=trace,
                duration_s=time.perf_counter() - started,
            )
            for mw in mws:
                result = mw.after_agent(ctx, result) or result
            return result

    def _fit(
        self, request: InferenceRequest, prompt_index: int, step: int, trace: list[StepTrace], ctx: RunContext,
        aio: bool,
    ) -> Generator[ModelCall, Any, tuple[InferenceRequest, Usage | None]]:
        """Fit the request to the agent's context budget; a compaction goes into the trace (and
        on the bus) and its usage is returned. With ``aio`` the compactor's calls are yielded to
        the async driver (which awaits them), else made here, blocking."""
        assert self._window is not None
        t0 = time.perf_counter()
        spans, observe = self._spans, compaction_events(self.agent.events, ctx, step)
        if aio:
            fitted = yield from compactions(self._window.fitting(request, prompt_index), ctx.token, spans, observe)
        else:
            with cancel_scope(ctx.token):
                fitted = self._window.fit(request, prompt_index, call=compaction_call(spans, observe))
        for note in fitted.failures:  # the compactor failed: the trace says what was done instead
            trace.append(StepTrace(kind="model", name="compact failed", step=step, input=fitted.dropped, output=note,
                                   is_error=True))
        compaction = fitted.compaction
        if compaction is None:
            return fitted.request, None
        trace.append(
            StepTrace(
                kind="model", name=f"compact {self._model_name(compaction)}", step=step, input=fitted.dropped,
                output=compaction.text, usage=compaction.usage, duration_s=time.perf_counter() - t0,
            )
        )
        return fitted.request, compaction.usage

    def _instructions(self, prompt: str) -> str:
        """The system prompt of a request: ``prompt`` and, with an output schema, its note."""
        if self._schema is None:
            return prompt
        return (prompt + "\n\n" if prompt else "") + self._schema.instruction()

    def _add_user_text(self, text: str) -> None:
        self.history.append(Message.user(text))

    def _model_name(self, response: InferenceResponse) -> str:
        provider = self.agent.provider
        return response.model or getattr(provider, "model", "") or getattr(provider, "id", "model")

    # -- tools ------------------------------------------------------------------------

    def _context(self, ctx: RunContext) -> ToolContext:
        tool_ctx = self._tool_ctx
        if tool_ctx is None:
            tool_ctx = self._tool_ctx = ToolContext(self.work_dir, agent=self.agent.name, session_id=self.id)
            # A session dropped without close() still releases its tools (the bash shell)
            # when collected. Registered here, not in __init__: most sessions never run a
            # tool, and a finaliser on every one of them costs each fleet task.
            weakref.finalize(self, tool_ctx.close)
        tool_ctx.token = ctx.token
        tool_ctx.metadata = ctx.metadata
        tool_ctx.session_id = self.id  # resume() may have given the session another id
        return tool_ctx

