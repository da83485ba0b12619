"""A loopback OpenAI-compatible chat server for the ``async_sessions`` benchmark: every
``POST .../chat/completions`` is answered ``"ok"`` after a fixed delay.

Run as ``python -m wingman_actors._bench.openai_loopback DELAY_S`` in a process of its own
(its connections are not the measured process's threads); it prints its port, then serves
until its stdin closes. One asyncio loop, HTTP/1.1 keep-alive, no dependencies; answers on a connection
go out in the order its requests came (one delay for all).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

__all__ = ["serve"]

_BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}).encode()
_HEAD = (f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(_BODY)}\r\n"
         "connection: keep-alive\r\n\r\n").encode()


class _Client(asyncio.Protocol):
    """One connection: each complete request (head and ``content-length`` body, several
    may arrive in one read) is answered after the delay by a timer on the loop. A
    protocol rather than streams and a task per request: the server shares the
    benchmark's two cores, and what it spends per request is not the client's to pay."""

    def __init__(self, delay: float) -> None:
        self._delay = delay
        self._buffer = b""
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer + data if self._buffer else data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            length = 0
            for line in buffer[:end].split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if len(buffer) < end + 4 + length:
                break  # the body is still coming
            buffer = buffer[end + 4 + length:]
            self._loop.call_later(self._delay, self._answer)
        self._buffer = buffer

    def _answer(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(_HEAD + _BODY)


async def serve(delay: float) -> None:
    """Serve on a free port of 127.0.0.1, print it, stop when stdin closes."""
    server = await asyncio.get_running_loop().create_server(lambda: _Client(delay), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    os._exit(0)  # the connections' tasks go with the process: nothing to unwind


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1])))
