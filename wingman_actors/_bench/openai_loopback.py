"""A loopback OpenAI-compatible chat server for the ``async_sessions`` benchmark: every
``POST .../chat/completions`` is answered ``"ok"`` after a fixed delay.

Run as ``python -m wingman_actors._bench.openai_loopback DELAY_S`` in a process of its own
(its connections are not the measured process's threads); it prints its port, then serves
until its stdin closes. One asyncio loop, HTTP/1.1 keep-alive, no dependencies.
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


async def _client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(delay)
            writer.write(_HEAD + _BODY)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(delay: float) -> None:
    """Serve on a free port of 127.0.0.1, print it, stop when stdin closes."""
    server = await asyncio.start_server(lambda r, w: _client(r, w, delay), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    os._exit(0)  # the connections' tasks go with the process: nothing to unwind


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1])))
