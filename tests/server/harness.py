"""A real uvicorn server on a loopback port, in a thread, for the HTTP server tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from httpx_sse import connect_sse

from wingman_actors.server import ServerConfig, create_app

FUNCTIONS_MODULE = "tests.server.functions_fixture"


class RunningServer:
    """``create_app(config)`` served by uvicorn on 127.0.0.1, a free port, a named thread
    (with uvicorn's access log when ``access_log``, as ``wingman-actors serve`` has it; with uvicorn's
    ``http`` implementation, h11 unless told: ``serve`` takes httptools when it is installed)."""

    def __init__(self, config: ServerConfig, graceful_timeout: float | None = None, *, access_log: bool = False,
                 http: str = "h11") -> None:
        self.config = config
        # IPPROTO_TCP said explicitly: asyncio turns Nagle's algorithm off only on sockets whose
        # proto is IPPROTO_TCP, and socket.socket() makes proto 0; with Nagle on, every response
        # (headers and body written apart) waits ~40 ms for the client's delayed ACK.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.bind(("127.0.0.1", 0))
        self.port = int(self._socket.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        uv_config = uvicorn.Config(
            create_app(config), log_level="warning", ws="none", http=http, lifespan="on", access_log=access_log,
            timeout_graceful_shutdown=graceful_timeout,
        )
        self._server = uvicorn.Server(uv_config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="wingman-test-server", daemon=True
        )

    def start(self) -> RunningServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(15)
        self._socket.close()
        if self._thread.is_alive():
            raise RuntimeError("the test server did not stop")

    def client(self, token: str | None = None) -> httpx.Client:
        # Every POST, PUT and PATCH must say it sends JSON, even with no body (see JsonBodyMiddleware).
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=self.url, timeout=30, headers=headers)


@contextmanager
def running(config: ServerConfig) -> Iterator[RunningServer]:
    server = RunningServer(config).start()
    try:
        yield server
    finally:
        server.stop()


def sse_events(client: httpx.Client, path: str, body: Any) -> list[tuple[str, Any]]:
    """POST ``body`` to a streaming route; every event as ``(name, data)``."""
    with connect_sse(client, "POST", path, json=body) as source:
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(e.event, e.json()) for e in source.iter_sse()]


def scripted_agent(client: httpx.Client, *replies: Any, **fields: Any) -> str:
    """Create an agent on the scripted provider (replies cycle); return its id."""
    body = {"name": fields.pop("name", "helper"), "provider": "scripted",
            "options": {"replies": list(replies) or ["ok"], "cycle": True, **fields.pop("options", {})}, **fields}
    response = client.post("/agents", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def openai_agent(client: httpx.Client, base_url: str, **options: Any) -> str:
    """Create an agent on the OpenAI-compatible provider at ``base_url``; return its id."""
    body = {"name": "remote", "provider": "openai", "model": "m",
            "options": {"base_url": base_url, "max_retries": 0, **options}}
    response = client.post("/agents", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def completion(text: str) -> dict[str, Any]:
    """A chat.completion object as an OpenAI-compatible endpoint sends it."""
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1721596428, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
