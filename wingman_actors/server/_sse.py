"""Server-sent events: encoding, and the bridge that streams a blocking generator running
on a worker thread to an async response.

A client that disconnects cancels the producer: its ``on_cancel`` hook stops the run at the
next boundary and the generator is closed on its own thread, so nothing keeps running.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from starlette.responses import StreamingResponse

from ._threads import WorkerPool

__all__ = ["Event", "ThreadedStream", "encode", "sse_response"]

Event = tuple[str, Any]
"""One SSE event: its name and its JSON data."""


def encode(name: str, data: Any) -> bytes:
    """``event: <name>\\ndata: <json>\\n\\n``."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n".encode()


class ThreadedStream:
    """Iterates ``make()`` on a worker thread; the async side reads what it produced.

    Items are ``("item", Event)``, then exactly one ``("end", None)`` or ``("error", exc)``.
    Must be created inside the event loop.

    Args:
        pool: where the producer runs.
        make: builds the blocking iterator (called on the worker thread).
        on_cancel: called (from the event loop) when the consumer gives up early.
    """

    def __init__(
        self, pool: WorkerPool, make: Callable[[], Iterable[Event]], on_cancel: Callable[[], None] | None = None
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._stop = threading.Event()
        self._done = False
        self._on_cancel = on_cancel
        pool.submit(self._pump, make)

    def _put(self, item: tuple[str, Any]) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the event loop is closed: nobody is listening any more
            self._stop.set()

    def _pump(self, make: Callable[[], Iterable[Event]]) -> None:
        try:
            iterator: Iterator[Event] = iter(make())
            try:
                for event in iterator:
                    self._put(("item", event))
                    if self._stop.is_set():
                        break
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
        except BaseException as exc:
            self._put(("error", exc))
        else:
            self._put(("end", None))

    async def next(self) -> tuple[str, Any]:
        """The next item; ``("end", None)`` or ``("error", exc)`` is the last."""
        item = await self._queue.get()
        if item[0] != "item":
            self._done = True
        return item

    def cancel(self) -> None:
        """Stop the producer if it is still going (idempotent)."""
        if self._done or self._stop.is_set():
            return
        self._stop.set()
        if self._on_cancel is not None:
            self._on_cancel()

    async def __aiter__(self) -> AsyncIterator[tuple[str, Any]]:
        while not self._done:
            yield await self.next()


def sse_response(
    stream: ThreadedStream,
    *,
    first: Iterable[Event] = (),
    on_error: Callable[[BaseException], Event | None],
) -> StreamingResponse:
    """A ``text/event-stream`` response: the ``first`` events already read, then the rest of
    ``stream``; a producer error becomes the event ``on_error`` returns (None: no event)."""

    async def body() -> AsyncIterator[bytes]:
        try:
            for name, data in first:
                yield encode(name, data)
            async for kind, value in stream:
                if kind == "item":
                    yield encode(*value)
                elif kind == "error":
                    event = on_error(value)
                    if event is not None:
                        yield encode(*event)
        finally:
            stream.cancel()

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
