"""The Host and Origin checks (``OriginHostMiddleware``) decide once per set of values and
keep deciding the same."""

from __future__ import annotations

import asyncio
from typing import Any

from wingman_actors.server._guards import OriginHostMiddleware


def _statuses(middleware: OriginHostMiddleware, requests: list[tuple[bytes, bytes | None]]) -> list[int]:
    async def run() -> list[int]:
        out: list[int] = []
        sent: list[dict[str, Any]] = []

        async def send(message: Any) -> None:
            sent.append(message)

        for host, origin in requests:
            sent.clear()
            headers = [(b"host", host), *([(b"origin", origin)] if origin is not None else [])]
            scope = {"type": "http", "method": "GET", "path": "/", "headers": headers, "server": ("127.0.0.1", 8787)}
            await middleware(scope, None, send)  # type: ignore[arg-type]
            out.append(sent[0]["status"] if sent else 200)
        return out

    return asyncio.run(run())


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    pass


def test_the_same_host_and_origin_are_judged_the_same_every_time() -> None:
    guard = OriginHostMiddleware(_ok, allowed_origins=("https://app.example.org",))
    asked = [(b"127.0.0.1:8787", None), (b"evil.example", None), (b"localhost", b"https://evil.example"),
             (b"localhost:8787", b"https://app.example.org")]
    assert _statuses(guard, asked * 3) == [200, 400, 403, 200] * 3


def test_more_hosts_than_are_kept_are_each_judged_right() -> None:
    guard = OriginHostMiddleware(_ok, allowed_hosts=("*.corp.example",))
    asked = [(f"n{i}.{'corp' if i % 2 else 'evil'}.example".encode(), None) for i in range(600)]
    assert _statuses(guard, asked * 2) == [200 if i % 2 else 400 for i in range(600)] * 2
