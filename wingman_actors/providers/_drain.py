"""The rest of a streamed answer's body, read after its last event so that its connection
is kept alive.

A stream's protocol ends before its HTTP body does: ``data: [DONE]`` (OpenAI-compatible
servers) and Ollama's ``done`` line come before the end of the chunked encoding
(``0\\r\\n\\r\\n``). httpx returns a connection to its pool only when the response is
closed after its whole body was read; closed earlier, the connection is closed with it,
and the next call pays a new TCP (and TLS) handshake. So, after the last event, the rest
of the body is read: usually nothing more than that end, there already or a moment later.

Reading it is bounded, since a server may go on sending after the end (keep-alive
comments) or go silent without ending the body, and each read's timeout only bounds the
wait for the next bytes: at most :data:`DRAIN_S` (and the run's remaining time), and
no further than :data:`DRAIN_BYTES` of events or lines, after which the connection is
closed, as it was before (on the sync path by shutting its socket down from the deadline
thread, as a cancel does; on the async path by cancelling the read). Errors are ignored: the answer is whole. HTTP/2 is left alone: closing a stream
there keeps its connection.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx

from ._abort import remaining_timeout, shutdown
from ._deadlines import at_deadline

__all__ = ["DRAIN_BYTES", "DRAIN_S", "adrain", "drain"]

DRAIN_S = 1.0
"""The longest the rest of a body is read after the stream's last event (seconds)."""
DRAIN_BYTES = 1024
"""The most that is read after the stream's last event: a server sending events or lines
after its end goes on sending, and is not waited for."""


def _drainable(response: httpx.Response) -> bool:
    # closed: the body was read to its end already (httpx closes it there)
    return not response.is_closed and response.http_version == "HTTP/1.1"


def drain(rest: Iterator[object], response: httpx.Response) -> None:
    """Read what is left of ``response`` through ``rest`` (the iterator its events were
    read from), for at most :data:`DRAIN_S`, so its connection goes back to the pool."""
    if not _drainable(response):
        return
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if not isinstance(sock, socket.socket):
        return  # no way to bound a blocking read: the connection is closed, as before
    lock = threading.Lock()
    reading = True

    def cut() -> None:
        with lock:
            # once the response is closed its connection may serve another request
            if reading and not response.is_closed:
                shutdown(sock)

    forget = at_deadline(time.monotonic() + remaining_timeout(DRAIN_S), cut)
    start = response.num_bytes_downloaded
    try:
        for _ in rest:
            if response.num_bytes_downloaded - start > DRAIN_BYTES:
                break
    except httpx.HTTPError:
        pass
    finally:
        with lock:
            reading = False
        forget()


async def adrain(rest: AsyncIterator[object], response: httpx.Response) -> None:
    """:func:`drain` on the async path."""
    if not _drainable(response):
        return
    start = response.num_bytes_downloaded
    try:
        async with asyncio.timeout(remaining_timeout(DRAIN_S)):
            async for _ in rest:
                if response.num_bytes_downloaded - start > DRAIN_BYTES:
                    break
    except (TimeoutError, httpx.HTTPError):
        pass
