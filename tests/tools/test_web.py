"""The webfetch tool, against a loopback HTTP server (offline)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply, free_port
from wingman_actors.errors import ToolError
from wingman_actors.tools import ToolContext, builtin_tool
from wingman_actors.tools._web import html_to_text

webfetch = builtin_tool("webfetch")

PAGE = b"""<!doctype html><html><head><title>T</title><style>body{color:red}</style>
<script>var hidden = 1;</script></head>
<body><h1>Main title</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p></body></html>"""


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ToolContext]:
    ctx = ToolContext(tmp_path)
    yield ctx
    ctx.close()


def fetch(ctx: ToolContext, url: str, **extra: Any) -> str:
    return webfetch.execute({"url": url, **extra}, ctx)


def test_html_is_converted_to_text(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply(200, PAGE, {"content-type": "text/html; charset=utf-8"}))
    out = fetch(ctx, loopback.url + "/page")
    assert "Main title" in out and "bold" in out
    assert "<p>" not in out and "<b>" not in out
    assert "color:red" not in out and "hidden" not in out


def test_html_links_become_absolute(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply(200, PAGE, {"content-type": "text/html"}))
    assert f"{loopback.url}/next" in fetch(ctx, loopback.url + "/page")


def test_plain_text_is_returned_as_is(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply(200, b"<b>not html</b>\nline 2\n", {"content-type": "text/plain"}))
    assert fetch(ctx, loopback.url) == "<b>not html</b>\nline 2\n"


def test_json_is_returned_as_is(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json({"a": [1, 2]}))
    assert fetch(ctx, loopback.url) == '{"a": [1, 2]}'


def test_redirects_are_followed_and_noted(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply(302, b"", {"location": "/final"}), Reply(200, b"arrived", {"content-type": "text/plain"}))
    out = fetch(ctx, loopback.url + "/start")
    assert out == f"[redirected to {loopback.url}/final]\narrived"


def test_not_found_is_an_error_with_the_status(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply(404, b"missing", {"content-type": "text/plain"}))
    with pytest.raises(ToolError, match=r"HTTP 404 Not Found") as info:
        fetch(ctx, loopback.url + "/missing")
    assert info.value.tool == "webfetch"


def test_binary_content_is_refused(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply(200, b"\x89PNG\x00", {"content-type": "image/png"}))
    with pytest.raises(ToolError, match=r"not text"):
        fetch(ctx, loopback.url)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "javascript:alert(1)", "/relative"])
def test_non_http_urls_are_refused(ctx: ToolContext, url: str) -> None:
    with pytest.raises(ToolError, match=r"only absolute http:// and https:// URLs"):
        fetch(ctx, url)


def test_connection_refused_is_an_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"could not fetch.*ConnectError"):
        fetch(ctx, f"http://127.0.0.1:{free_port()}/", timeout=2)


def test_long_text_is_truncated_with_a_marker(ctx: ToolContext, loopback: LoopbackServer) -> None:
    loopback.queue(Reply(200, b"x" * 1000, {"content-type": "text/plain"}))
    out = fetch(ctx, loopback.url, max_chars=100)
    assert out == "x" * 100 + "\n[... 900 characters truncated ...]"


def test_timeout_above_maximum_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"at most 120"):
        fetch(ctx, "http://127.0.0.1/", timeout=121)


def test_missing_url_is_an_invalid_argument(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid arguments for tool 'webfetch'.*url"):
        webfetch.execute({}, ctx)


def test_html_to_text_drops_tags() -> None:
    assert html_to_text("<p>Hello <i>world</i></p>") == "Hello _world_"
