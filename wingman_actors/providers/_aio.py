"""Async plumbing of the providers: the async stream type, the providers' async methods,
and one async HTTP client per event loop. The run's cancel token reaches an awaiting task
through :class:`TokenBridge` (``_token_bridge.py``, re-exported here).

A provider's ``arun_inference(request)`` and ``astream_inference(request)`` mirror
``run_inference`` and ``stream_inference``: the same request building, response parsing,
retries (:meth:`~wingman_actors.providers._retry.RetryPolicy.acall`) and error mapping,
awaited on the caller's event loop without a thread. Cancelling the awaiting task closes
the request (httpx closes a connection whose task is cancelled); so does a cancel of the
run's :class:`~wingman_actors._cancel.CancelToken` from any thread (:class:`TokenBridge`
cancels the task, and the run's cancel error is raised), and every request's timeout is
cut to the run's remaining time, as in the sync path.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, ClassVar

from .._event_loop import DaemonIterator
from ..core import InferenceRequest, InferenceResponse, StreamEvent, StreamEventType
from ..errors import AgentError, ErrorKind
from ._retry import RetryPolicy, stopped
from ._token_bridge import TokenBridge

__all__ = ["AsyncClients", "AsyncInferenceStream", "AsyncProviderMethods", "TokenBridge", "final_response"]


class AsyncInferenceStream:
    """An async iterable of :class:`StreamEvent` whose final response is ready after iteration.

    Example:
        >>> stream = provider.astream_inference(request)                     # doctest: +SKIP
        >>> text = "".join([e.text or "" async for e in stream])             # doctest: +SKIP
        >>> stream.response.usage                                             # doctest: +SKIP
    """

    def __init__(self, events: AsyncIterator[StreamEvent], close: Callable[[], Awaitable[None]] | None = None) -> None:
        self._events = events
        self._close = close
        self._response: InferenceResponse | None = None
        self._started = False

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if self._started:
            raise RuntimeError("an AsyncInferenceStream can be iterated only once")
        self._started = True
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[StreamEvent]:
        try:
            async for event in self._events:
                if event.type is StreamEventType.MESSAGE_STOP and event.response is not None:
                    self._response = event.response
                yield event
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Release the connection; safe to call more than once."""
        close, self._close = self._close, None
        if close is not None:
            await close()

    @property
    def response(self) -> InferenceResponse:
        """The assembled response. Raises if the stream has not been consumed to its end."""
        if self._response is None:
            raise RuntimeError("the stream has not finished: iterate it to the end first")
        return self._response

    async def consume(self) -> InferenceResponse:
        """Iterate to the end, dropping events, and return the response."""
        async for _ in self:
            pass
        return self.response


class AsyncClients:
    """One async client per event loop (an async client's connections belong to the loop
    that opened them), made by ``make`` on first use in that loop and closed by ``aclose``
    (default: its ``aclose()`` method).

    A loop's client is also closed when the loop shuts down through ``asyncio.run`` (or
    any runner that cancels the tasks left when its main coroutine ends): a guard task,
    started with the client, closes it when cancelled. So ``asyncio.run(session.arun(...))``
    called again and again leaves no connection open (each call's loop is new).
    """

    def __init__(self, make: Callable[[], Any], aclose: Callable[[Any], Awaitable[None]] | None = None) -> None:
        self._make = make
        self._aclose: Callable[[Any], Awaitable[None]] = aclose if aclose is not None else _aclose
        # loop -> (client, the guard task that closes it at the loop's shutdown)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, asyncio.Task[None]]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        # The last loop's client, found without the lock and the weak dictionary's look-up
        # (every request asks): (a weak reference to the loop, its client); set and cleared
        # under the lock, with the entries.
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], Any] | None = None

    def get(self) -> Any:
        """The running loop's client."""
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0]() is loop:
            return last[1]
        with self._lock:
            entry = self._clients.get(loop)
            if entry is None:
                client = self._make()
                entry = self._clients[loop] = (client, loop.create_task(self._guard(loop, client)))
            self._last = (weakref.ref(loop), entry[0])
            return entry[0]

    async def _guard(self, loop: asyncio.AbstractEventLoop, client: Any) -> None:
        try:
            await asyncio.Event().wait()  # until cancelled: aclose(), or the loop's runner ending
        finally:
            with self._lock:
                entry = self._clients.get(loop)
                if entry is not None and entry[0] is client:
                    del self._clients[loop]
                    self._last = None
            await self._aclose(client)

    async def aclose(self) -> None:
        """Close the running loop's client."""
        with self._lock:
            entry = self._clients.pop(asyncio.get_running_loop(), None)
            self._last = None
        if entry is not None:
            client, guard = entry
            guard.cancel()
            await self._aclose(client)

    def close(self) -> None:
        """Close every loop's client from sync code: on its loop when that loop runs in
        another thread, at once when it is not running; a closed loop's is dropped."""
        with self._lock:
            clients, self._clients = list(self._clients.items()), weakref.WeakKeyDictionary()
            self._last = None
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for loop, (_client, guard) in clients:
            if loop.is_closed():
                continue
            if loop is here:  # sync close() called on the loop itself: the guard closes it soon
                guard.cancel()
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(_settled(guard), loop).result(timeout=5)
            else:
                loop.run_until_complete(_settled(guard))


async def _aclose(client: Any) -> None:
    await client.aclose()


async def _settled(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait until it has ended."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


class AsyncProviderMethods:
    """``arun_inference`` and ``astream_inference`` of :class:`~wingman_actors.providers.BaseProvider`:
    the retry policy around ``_ainfer`` and ``_astream``, as the sync methods wrap ``_infer``
    and ``_stream``. A provider without async code of its own gets ``_astream`` running its
    sync ``_stream`` a step at a time on a worker thread."""

    id: ClassVar[str]
    retry: RetryPolicy

    def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release what the running event loop's calls opened (nothing here)."""

    async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
        """One model call, awaited."""
        return await self.retry.acall(self._ainfer, request, describe=f"{self.id} inference")

    def astream_inference(self, request: InferenceRequest) -> AsyncInferenceStream:
        """One streamed model call: ``async for`` its events, then read ``.response``."""
        events = self._astream_with_retry(request)
        return AsyncInferenceStream(events, close=events.aclose)

    async def _astream_with_retry(self, request: InferenceRequest) -> AsyncGenerator[StreamEvent, None]:
        # Retry only while nothing has been yielded, as the sync path does.
        async def first() -> tuple[AsyncGenerator[StreamEvent, None], StreamEvent | None]:
            it = self._astream(request)
            try:
                return it, await it.__anext__()
            except StopAsyncIteration:
                return it, None
            except BaseException:
                await it.aclose()
                raise

        it, head = await self.retry.acall(first, describe=f"{self.id} stream")
        bridge = TokenBridge()
        try:
            if head is not None:
                yield head
            while True:
                try:
                    event = await bridge.run(it.__anext__())
                except StopAsyncIteration:
                    break
                yield event
        except AgentError as exc:
            if bridge.token is not None and (bridge.token.cancelled or bridge.token.expired):
                stopped(bridge.token, exc)
            raise
        finally:
            bridge.close()
            await it.aclose()

    async def _ainfer(self, request: InferenceRequest) -> InferenceResponse:
        response: InferenceResponse | None = None
        async for event in self._astream(request):
            if event.type is StreamEventType.MESSAGE_STOP:
                response = event.response
        return final_response(self.id, response)

    async def _astream(self, request: InferenceRequest) -> AsyncGenerator[StreamEvent, None]:
        # The blocking stream on a daemon thread of its own: one left stuck when the run
        # stops holds neither the caller's loop shutdown nor the interpreter at exit.
        pumped: DaemonIterator[StreamEvent] = DaemonIterator(
            lambda: self._stream(request), name=f"wingman-{self.id}-stream"
        )
        try:
            async for event in pumped:
                yield event
        finally:
            pumped.close()


def final_response(provider: str, response: InferenceResponse | None) -> InferenceResponse:
    """``response``, the final message of a consumed stream; raises if there was none."""
    if response is None:
        raise AgentError("the stream ended without a final message", kind=ErrorKind.AGENT, provider=provider)
    return response
