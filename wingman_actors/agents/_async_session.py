"""The async driver of a session run: ``Session.arun``/``astream`` and ``Fleet.arun``.

The loop itself (retries, middleware, tools, journalling, structured output) is the one
generator :meth:`Session._loop` the blocking ``run`` drives; driven with ``aio``, it yields
the work that waits — a :class:`~._model_calls.ModelCall`, a
:class:`~._tool_steps.ToolBatch` — and this driver does that work on the caller's event
loop and sends the outcome back (a tool batch's calls as they finish: the loop yields the
batch again until all have, so each call's end is told as it finishes, as in ``run``):

* a model call awaits the provider's ``arun_inference(request)`` (or iterates its
  ``astream_inference(request)``, an async iterator of stream events) when it has them,
  so the run waits on no thread of its own; a provider without them has its blocking
  ``run_inference``/``stream_inference`` called on a worker thread;
* ``async def`` tools are awaited on an event loop of the runtime's (not the caller's:
  one that blocks holds neither the caller's loop nor the run's deadline), other tools
  run on a worker thread, as the blocking run runs them.

The run's deadline bounds every await; cancelling the awaiting task cancels the run's
token (what its tools and delegated runs watch), closes the loop (its ``finally`` blocks
run: the session is free again) and re-raises ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from .._cancel import CancelToken, cancel_scope, current_token
from .._cancel import _current as _current_token  # set inline: no scope object per call
from .._event_loop import DaemonIterator, in_daemon_thread
from .._interrupts import RunSuspended, VisitScope
from ..core import ContentBlock, InferenceResponse, Message, StreamEvent, StreamEventType
from ..providers._token_bridge import TokenBridge
from ..tools._base import UNWIND_S
from ._model_calls import ModelCall, cannot_stream
from ._result import Result, collect_child_runs
from ._tool_steps import ToolBatch, ToolStep, failure_block, log_abandoned

if TYPE_CHECKING:
    from ._fleet import Fleet, FleetResult
    from ._session import RunGen, Session

__all__ = ["AsyncSessionStream", "arun_fleet", "complete", "drive"]

_Outcome = tuple[ContentBlock, float, list[Any]]


@contextlib.asynccontextmanager
async def _deadline(token: CancelToken) -> AsyncIterator[None]:
    """Bound the awaits inside by the run's deadline: past it, ``AgentError(kind=timeout)``."""
    remaining = token.remaining()
    if remaining is None:
        yield
        return
    try:
        async with asyncio.timeout(remaining):
            yield
    except TimeoutError:
        token.check()  # the deadline passed: the run's timeout error
        raise


async def complete(session: Session, message: str | Message, timeout: float | None,
                   parent_token: CancelToken | None, metadata: Mapping[str, Any] | None) -> Result:
    """A run of ``session``'s loop, not streamed, to its end: its :class:`Result`
    (``Session.arun``). The loop is driven here, as ``Session._run_blocking`` drives it, in
    one coroutine: no generator of ``Session._run``'s and no async generator of
    :func:`drive`'s held by each run in flight."""
    ctx, provider, msg = session._open(message, timeout, parent_token, metadata)
    gen = session._loop(ctx, provider, msg, False, True)
    result: Result | None = None
    failure: BaseException | None = None
    send: Any = None
    error: BaseException | None = None
    tools: _Tools | None = None  # the step's tool calls, while they run
    try:
        while True:
            try:
                item = gen.throw(error) if error is not None else gen.send(send)
            except StopIteration as stop:
                result = cast(Result, stop.value)
                return result
            send = error = None
            if type(item) is ModelCall and item.spans is None and item.token.deadline is None:
                # the common call, awaited here as _infer awaits it: no coroutine of its own in flight
                token = item.token
                try:
                    pending, prior = _begin(item)
                    del item  # not held through the await: the provider has the request
                    try:
                        send = await pending
                    finally:
                        _current_token.set(prior)
                    token.check()
                except BaseException as exc:
                    error = _call_failed(token, exc)
            elif type(item) is ToolBatch:
                try:
                    tools = _tools_of(item, tools)
                    send = await tools.finished()
                except BaseException as exc:
                    error = _thrown(item, exc)
            elif type(item) is ModelCall:
                try:
                    send = await _work(item)
                except BaseException as exc:
                    error = _thrown(item, exc)
            # else: an event, which a run not streamed does not yield
    except (Exception, RunSuspended) as exc:  # what Session._run counts as the run's failure
        failure = exc
        raise
    finally:
        try:
            if tools is not None:  # the run stopped while calls of its step still ran
                await tools.stop()
        finally:  # a cancel repeated meanwhile (AnyIO's scopes) still frees the session
            gen.close()
            session._close(ctx, result, failure)


async def drive(gen: RunGen) -> AsyncGenerator[StreamEvent | Result, None]:
    """Drive a run of the loop made with ``aio``: yield its stream events, then its
    :class:`Result` (last). The work of each item is :func:`complete`'s."""
    send: Any = None
    error: BaseException | None = None
    tools: _Tools | None = None  # the step's tool calls, while they run
    try:
        while True:
            try:
                item = gen.throw(error) if error is not None else gen.send(send)
            except StopIteration as stop:
                yield cast(Result, stop.value)
                return
            send = error = None
            if type(item) is ModelCall and item.stream:
                try:
                    async for got in _model(item):
                        if type(got) is InferenceResponse:
                            send = got
                        else:
                            yield cast(StreamEvent, got)
                except BaseException as exc:
                    error = _thrown(item, exc)
            elif type(item) is ToolBatch:
                try:
                    tools = _tools_of(item, tools)
                    send = await tools.finished()
                except BaseException as exc:
                    error = _thrown(item, exc)
            elif type(item) is ModelCall:
                try:
                    send = await _work(item)
                except BaseException as exc:
                    error = _thrown(item, exc)
            else:
                yield cast(StreamEvent, item)
    finally:
        try:
            if tools is not None:  # the run stopped (the stream left) while calls of its step still ran
                await tools.stop()
        finally:  # a cancel repeated meanwhile (AnyIO's scopes) still ends the run
            gen.close()


def _work(call: ModelCall) -> Awaitable[InferenceResponse]:
    """What the driver awaits for a model call not streamed: the response it sends back to the loop."""
    if call.spans is not None:
        return _response(call)
    return _infer(call)  # the common call: no generator of its own


def _thrown(item: ModelCall | ToolBatch, exc: BaseException) -> BaseException:
    """The error to throw into the loop for ``item``'s failure ``exc``; re-raises what
    must not go there: the awaiting task's cancel (after cancelling the run's token),
    and anything not an error of the run's (an interrupt from a model call)."""
    if type(item) is ModelCall:
        return _call_failed(item.token, exc)
    if isinstance(exc, asyncio.CancelledError):
        token = cast(ToolBatch, item).step.tool_ctx.token
        assert token is not None  # the session gives its tools the run's token
        token.cancel("the task awaiting the run was cancelled")
        raise exc
    if isinstance(exc, Exception | RunSuspended):
        return exc  # an interrupt() in a tool unwinds the loop as in the blocking run
    raise exc


def _call_failed(token: CancelToken, exc: BaseException) -> BaseException:
    """:func:`_thrown` for a model call of the run of ``token``: its error, thrown into
    the loop; the awaiting task's cancel (the token cancelled) and an interrupt re-raised."""
    if isinstance(exc, asyncio.CancelledError):
        token.cancel("the task awaiting the run was cancelled")
        raise exc
    if isinstance(exc, Exception):
        return exc
    raise exc


async def _response(call: ModelCall) -> InferenceResponse:
    """A call in its ``chat`` span, not streamed: its response."""
    response: InferenceResponse | None = None
    async for got in _model(call):
        response = cast(InferenceResponse, got)  # not streamed: the response only
    assert response is not None
    return response


async def _model(call: ModelCall) -> AsyncIterator[StreamEvent | InferenceResponse]:
    """One model call, in its ``chat`` span when OpenTelemetry is in use: the stream's
    events (when streaming), then the response."""
    chat = call.spans.chat(call.request, call.provider) if call.spans is not None else None
    try:
        if call.stream:
            response = None
            async for got in _stream(call):
                if type(got) is InferenceResponse:
                    response = got
                else:
                    yield got
            assert response is not None
        elif chat is not None:
            with chat.current():
                response = await _infer(call)
        else:
            response = await _infer(call)
    except BaseException as exc:
        if chat is not None:
            chat.failed(exc)
        raise
    if chat is not None:
        chat.done(response)
    yield response


def _begin(call: ModelCall) -> tuple[Awaitable[InferenceResponse], CancelToken | None]:
    """Begin ``call``: what to await (the provider's ``arun_inference``, else its
    ``run_inference`` on a worker thread), with the run's token made current until the
    caller sets back the token current before, returned too (the provider's retries and
    request timeout read it). Set back, not reset: no ``contextvars.Token`` kept through
    the await."""
    provider = call.provider
    prior = _current_token.get()
    _current_token.set(call.token)
    try:
        ainfer = getattr(provider, "arun_inference", None)
        pending = (ainfer(call.request) if ainfer is not None
                   else in_daemon_thread(provider.run_inference, call.request, name="wingman-model-call"))
    except BaseException:
        _current_token.set(prior)
        raise
    return pending, prior


async def _infer(call: ModelCall) -> InferenceResponse:
    """A call not streamed, bounded by the run's deadline (:func:`complete` awaits the
    common call, without a deadline or a span, itself)."""
    pending, prior = _begin(call)
    token = call.token
    try:
        if token.deadline is None:
            response: InferenceResponse = await pending
        else:
            async with _deadline(token):
                response = await pending
    finally:
        _current_token.set(prior)
    token.check()
    return response


async def _stream(call: ModelCall) -> AsyncIterator[StreamEvent | InferenceResponse]:
    """A streamed call: the events, then the response (from ``message_stop``)."""
    provider, token = call.provider, call.token
    astream = getattr(provider, "astream_inference", None)
    response: InferenceResponse | None = None
    if astream is not None:
        with cancel_scope(token):
            made = astream(call.request)
            if inspect.isawaitable(made):  # an ``async def`` that returns the iterator
                made = await made
            events = made.__aiter__()
        try:
            while True:
                with cancel_scope(token):
                    try:
                        async with _deadline(token):
                            event = await events.__anext__()
                    except StopAsyncIteration:
                        break
                if event.type is StreamEventType.MESSAGE_STOP and event.response is not None:
                    response = event.response
                yield event
                token.check()
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        if response is None:
            response = getattr(events, "response", None)
    else:  # blocking calls only: made on a daemon thread of its own (one left stuck holds nothing of ours)
        if getattr(provider, "stream_inference", None) is None:
            raise cannot_stream(provider)
        pumped: DaemonIterator[StreamEvent] = DaemonIterator(
            lambda: provider.stream_inference(call.request), name="wingman-model-stream"
        )
        try:
            while True:
                with cancel_scope(token):
                    try:
                        async with _deadline(token):
                            event = await pumped.__anext__()
                    except StopAsyncIteration:
                        break
                yield event
                token.check()
        finally:
            pumped.close()
        response = getattr(pumped.source, "response", None)
    if response is None:
        raise RuntimeError(f"provider {getattr(provider, 'id', provider)!r}: its stream ended without a response "
                           "(no message_stop event carrying it)")
    yield response


class _Tools:
    """The calls of a :class:`ToolBatch` running on the caller's loop, at most the agent's
    ``tool_concurrency`` at once, started when the loop first yields the batch; each time
    it yields it, :meth:`finished` gives the outcomes of the calls that have finished since.

    A cancel of the run's token (``session.cancel()``, from any thread) cancels the calls
    in flight at once: an ``async def`` tool's coroutine gets ``CancelledError`` at its
    ``await`` (its ``finally`` runs), a blocking tool's thread is left to finish, as the
    blocking run leaves it; then the run's cancel error is raised. So does the run's
    deadline (its timeout error). A run that stops while calls still run (the stream left,
    a hook raising) has them stopped the same way (:meth:`stop`)."""

    __slots__ = ("batch", "done", "in_flight", "taken", "tasks")

    def __init__(self, batch: ToolBatch) -> None:
        self.batch = batch
        step = batch.step
        token = step.tool_ctx.token
        room = asyncio.Semaphore(step.agent.tool_concurrency)
        self.done: list[tuple[int, _Outcome]] = []  # in the order the calls finished
        self.taken = 0  # how many of them finished() has given
        self.in_flight: dict[int, str] = {}

        async def one(index: int, call: ContentBlock) -> None:
            # In this call's task (a context of its own): the run's token is the current one, so
            # a session the tool runs (an agent used as a tool) is a child of the run, as in run()
            _current_token.set(token)
            async with room:
                self.in_flight[index] = call.name or ""
                outcome = await _execute(step, call)
                del self.in_flight[index]
                self.done.append((index, outcome))

        self.tasks = [asyncio.ensure_future(one(i, c)) for i, c in batch.calls]

    async def finished(self) -> list[tuple[int, _Outcome]]:
        """The outcomes of the calls that finished since the last time, waiting for one if none has."""
        token = self.batch.step.tool_ctx.token
        assert token is not None  # the session gives its tools the run's token
        if self.taken == len(self.done):
            with cancel_scope(token):
                bridge = TokenBridge()  # a cancel of the token cancels this task's await below
            try:
                async with _deadline(token):
                    await bridge.run(self._one_more())
            except BaseException as exc:
                # the run stopped (an interrupt in one call stops the others unlogged)
                await self.stop(log=token.cancelled or token.expired or isinstance(exc, asyncio.CancelledError))
                raise
            finally:
                bridge.close()
        got, self.taken = self.done[self.taken:], len(self.done)
        return got

    async def _one_more(self) -> None:
        """Wait until a call has finished; raise what a call raised (an interrupt)."""
        running = [task for task in self.tasks if not task.done()]
        if running:
            await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in self.tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise cast(BaseException, task.exception())

    async def stop(self, *, log: bool = True) -> None:
        """Stop the calls still running (those in flight logged once as abandoned, with
        ``log``); their coroutines' ``finally`` blocks run (on the runtime's loop) before
        the run goes on."""
        tasks = [task for task in self.tasks if not task.done()]
        if not tasks:
            return
        step = self.batch.step
        token = step.tool_ctx.token
        assert token is not None
        if self.in_flight and log:
            log_abandoned(step.agent.name, list(self.in_flight.values()), step.tool_ctx.session_id,
                          not token.expired, "async def ones are cancelled, blocking ones' threads run on")
        self.in_flight.clear()
        for task in tasks:  # one call raised (an interrupt), or the run stopped: the others stop too
            task.cancel()
        await asyncio.wait(tasks, timeout=UNWIND_S)
        for task in self.tasks:  # what other calls raised meanwhile is not logged as never retrieved
            if task.done() and not task.cancelled():
                task.exception()


def _tools_of(batch: ToolBatch, tools: _Tools | None) -> _Tools:
    """The running calls of ``batch``: ``tools`` when they are its, else started now."""
    return tools if tools is not None and tools.batch is batch else _Tools(batch)


async def _execute(step: ToolStep, call: ContentBlock) -> _Outcome:
    """One call: an ``async def`` tool awaited on the runtime's loop, any other on a worker thread
    (:meth:`ToolStep.execute`, as the blocking run calls it)."""
    tool = step.tools.get(call.name or "")
    aexecute = getattr(tool, "aexecute", None)
    if aexecute is None:  # on a daemon thread: one left stuck holds neither the caller's loop nor exit
        return await in_daemon_thread(step.execute, call, name=f"wingman-tool-{step.agent.name}")
    spans, name, call_id = step.spans, call.name or "", call.id or ""
    with collect_child_runs(step.live) as children, contextlib.ExitStack() as stack:
        span = stack.enter_context(spans.tool(call, tool.description)) if spans is not None else None  # type: ignore[union-attr]
        t0 = time.perf_counter()
        error: Exception | None = None
        try:
            if step.tool_ctx.token is not None:
                step.tool_ctx.token.check()
            out = await aexecute(dict(call.input or {}), step.tool_ctx)
            block = ContentBlock.tool_result_block(call_id, out if isinstance(out, str) else str(out))
        except Exception as exc:
            error = exc
            block = failure_block(call_id, name, exc)
        duration = time.perf_counter() - t0
        if span is not None:
            span.result(block, error)
    return block, duration, children


class AsyncSessionStream:
    """The events of a streamed async run (``Session.astream``), for ``async for``;
    :meth:`result` once iteration has ended. If the run fails, an ``error`` event is
    yielded and then the error is raised from the iteration. Left before its end,
    :meth:`aclose` it (or use it in ``async with``): until then the run goes on holding
    the session (an ``async for`` left by ``break`` closes only when collected).

    Args:
        gen: the run, made for the async driver.
        scope: a waiting session's turn (where ``interrupt()`` finds its answers), current
            while the run goes on; None for a session without a store.
        on_suspend: with ``scope``, what makes the suspended result of an ``interrupt()``.
    """

    def __init__(self, gen: RunGen, *, scope: VisitScope | None = None,
                 on_suspend: Callable[[RunSuspended], Awaitable[Result]] | None = None) -> None:
        self._gen = gen
        self._scope = scope
        self._on_suspend = on_suspend
        self._result: Result | None = None
        self._error: BaseException | None = None
        self._events: AsyncGenerator[StreamEvent, None] | None = None

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        self._events = events = self._iterate()
        return events

    async def aclose(self) -> None:
        """End the run where it is (nothing more is streamed; its provider request is
        closed, the session free for its next message); a finished stream is left as it is."""
        if self._events is not None:
            await self._events.aclose()
        self._gen.close()

    async def __aenter__(self) -> AsyncSessionStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _iterate(self) -> AsyncGenerator[StreamEvent, None]:
        driven = drive(self._gen)
        try:
            with self._scope.attempt() if self._scope is not None else contextlib.nullcontext():
                async for item in driven:
                    if type(item) is Result:
                        self._result = item
                    else:
                        yield cast(StreamEvent, item)
        except RunSuspended as signal:
            if self._on_suspend is None:
                self._error = signal
                raise
            self._result = await self._on_suspend(signal)  # the stream ends; result() is the suspended one
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            await driven.aclose()  # left early: the calls still running stop now, not when collected

    def result(self) -> Result:
        """The run's result; raises the run's error if it failed."""
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise RuntimeError("the stream has not finished: iterate it to the end first")
        return self._result


async def arun_fleet(fleet: Fleet) -> list[FleetResult]:
    """Every task of ``fleet`` as an async session on the caller's loop, at most
    ``fleet.cap`` at once; one result per task, in task order."""
    from ._fleet import _fleet_result, task_metadata

    n = len(fleet)
    if n == 0:
        return []
    token = CancelToken(parent=current_token())
    fleet._track(token)
    room = asyncio.Semaphore(fleet.cap)

    async def one(index: int) -> FleetResult:
        async with room:
            started = time.perf_counter()
            result: Result | None = None
            error: BaseException | None = None
            data = None
            session: Session | None = None
            try:
                session, message, data = fleet._open_session(index)
                try:
                    result = await session.arun(message, timeout=fleet.timeout, parent_token=token,
                                                metadata=task_metadata(data))
                finally:
                    fleet._close_session(index, session)
            except (Exception, RunSuspended) as exc:
                error = exc
            spent = session._spent_so_far() if error is not None and session is not None else None
            return _fleet_result(index, fleet._worker_name(index), result, error, data, time.perf_counter() - started,
                                 spent)

    try:
        return list(await asyncio.gather(*(one(i) for i in range(n))))
    except asyncio.CancelledError:
        token.cancel("the task awaiting the fleet was cancelled")
        raise
    finally:
        fleet._untrack(token)
        token.release()
