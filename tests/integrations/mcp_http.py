"""An MCP server built with the SDK, served over streamable HTTP on a loopback port for one test
(tests/integrations/test_peer_mcp*.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


class LoopbackServer:
    """A uvicorn server on a loopback port; ``stop()`` ends it (idempotent)."""

    def __init__(self, app: Any) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level="critical", timeout_graceful_shutdown=1))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="loopback-http-mcp"
        )
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the loopback MCP server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()


@contextmanager
def serve_http(app: Any) -> Iterator[LoopbackServer]:
    """Serve the ASGI ``app`` (an SDK server's ``streamable_http_app()``) while the block runs."""
    server = LoopbackServer(app)
    try:
        yield server
    finally:
        server.stop()
