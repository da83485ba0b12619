"""Our MCP server (``build_server``, ``wingman-actors mcp serve``) driven by the official MCP SDK's
own ``Client``, ported from the SDK's server and session tests (modelcontextprotocol/python-sdk
tests/server/mcpserver/test_server.py, tests/shared/test_session.py, tests/client/). The served
tools are tests/integrations/mcp_served_tools.py; most tests connect in-process (the SDK's
``Client(server)``), the process tests over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')

from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from wingman_actors.integrations.mcp import build_server, load_tools
from wingman_actors.tools import ToolContext

SERVED = str(Path(__file__).with_name("mcp_served_tools.py"))
_T = TypeVar("_T")


def _with_client(work_dir: Path, go: Callable[[Client], Awaitable[_T]]) -> _T:
    """Run ``go`` with the SDK's client connected in-process to our server of the served tools."""
    ctx = ToolContext(work_dir)  # closed here: it holds the async tools' event loop

    async def main() -> _T:
        async with Client(build_server(load_tools([], SERVED), work_dir, context=ctx)) as client:
            return await go(client)

    try:
        return asyncio.run(main())
    finally:
        ctx.close()


def _text(result: Any) -> str:
    (block,) = result.content
    return str(block.text)


def _stdio(work_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "wingman_actors", "mcp", "serve", "--tools-module", SERVED, "--work-dir", str(work_dir)],
    )


def test_the_sdk_client_lists_every_tool_with_its_docstring_and_schema(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_list_tools."""
    listed = _with_client(tmp_path, lambda c: c.list_tools())
    by_name = {t.name: t for t in listed.tools}
    assert list(by_name) == ["shout", "explode", "refuse", "mute", "nap", "anap", "person", "pid", "wait", "meet"]
    shout = by_name["shout"]
    assert shout.input_schema["required"] == ["text"]
    assert shout.input_schema["properties"]["times"] == {"default": 1, "type": "integer"}
    assert listed.next_cursor is None


def test_a_listing_asked_for_with_a_cursor_still_answers_every_tool(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_list_methods_cursor.py::test_list_tools_cursor_parameter
    (our server answers in one page, whatever cursor a client sends)."""

    async def go(c: Client) -> list[Any]:
        return [await c.list_tools(cursor=cursor) for cursor in (None, "", "some_cursor_value")]

    for page in _with_client(tmp_path, go):
        assert len(page.tools) == 10 and page.next_cursor is None


def test_non_ascii_descriptions_arguments_and_results_cross_unchanged(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServer::test_non_ascii_description."""

    async def go(c: Client) -> tuple[str, Any]:
        listed = await c.list_tools()
        return next(t.description for t in listed.tools if t.name == "shout"), await c.call_tool(
            "shout", {"text": "¡hola, 世界! 👋 ñ", "times": 2}
        )

    description, result = _with_client(tmp_path, go)
    assert description == "🌟 Upper-case the text: á é í ó ú ñ 漢字 🎉."
    assert not result.is_error and _text(result) == "¡HOLA, 世界! 👋 Ñ ¡HOLA, 世界! 👋 Ñ"


def test_a_tool_that_raises_is_an_error_result_naming_the_tool_and_the_exception(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_exception_handling."""
    result = _with_client(tmp_path, lambda c: c.call_tool("explode", {"reason": "boom"}))
    assert result.is_error
    assert _text(result) == "tool 'explode' raised ValueError: exploded: boom"


@pytest.mark.parametrize(("tool_error", "text"), [
    (True, "tool 'mute' failed without saying why"),
    (False, "tool 'mute' raised TimeoutError"),
])
def test_a_failure_without_a_message_is_an_error_result_saying_so(tmp_path: Path, tool_error: bool, text: str) -> None:
    # as an agent's tool results say it (not a bare "" or a trailing ": ")
    result = _with_client(tmp_path, lambda c: c.call_tool("mute", {"tool_error": tool_error}))
    assert result.is_error and _text(result) == text


def test_a_tool_error_is_an_error_result_with_the_tools_own_message(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_error_handling."""
    result = _with_client(tmp_path, lambda c: c.call_tool("refuse", {"reason": "not today"}))
    assert result.is_error and _text(result) == "refused: not today"


def test_a_structured_return_is_served_as_its_json_text(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_tool_structured_output_basemodel.
    The SDK's server also lists an output schema and sends structured content; ours serves the JSON as text only."""

    async def go(c: Client) -> tuple[Any, Any]:
        listed = await c.list_tools()
        return next(t for t in listed.tools if t.name == "person"), await c.call_tool("person", {"name": "Ada"})

    listed, result = _with_client(tmp_path, go)
    assert not result.is_error and json.loads(_text(result)) == {"name": "Ada", "age": 7}
    assert listed.output_schema is None and result.structured_content is None


def test_an_async_tool_is_awaited_and_answers(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_server.py::TestServerTools::test_call_tool."""
    result = _with_client(tmp_path, lambda c: c.call_tool("anap", {"seconds": 0.01}))
    assert not result.is_error and _text(result) == "awaited 0.01"


def test_arguments_of_the_wrong_type_are_an_error_result_naming_the_argument(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_tool_manager.py::TestCallTools::test_call_tool_with_invalid_args."""
    result = _with_client(tmp_path, lambda c: c.call_tool("shout", {"text": "x", "times": "many"}))
    assert result.is_error and "invalid arguments for tool 'shout'" in _text(result) and "times" in _text(result)


def test_concurrent_calls_of_one_client_run_at_once(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_concurrency.py (blocking tools on worker threads)."""

    async def go(c: Client) -> list[Any]:
        return list(await asyncio.gather(*(c.call_tool("meet", {}) for _ in range(3))))

    results = _with_client(tmp_path, go)  # each call of meet waits (5 s at most) until all three are in
    assert [(_text(r), r.is_error) for r in results] == [("met", False)] * 3


def test_a_request_the_client_gives_up_on_leaves_the_stdio_server_serving(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_session.py::test_request_cancellation
    (the client's read timeout cancels the request; the server answers the next one)."""

    async def main() -> tuple[str, float, Any]:
        async with Client(_stdio(tmp_path), mode="legacy") as c:
            started = time.monotonic()
            with pytest.raises(MCPError, match=r"(?i)timed out") as info:
                await c.call_tool("nap", {"seconds": 3}, read_timeout_seconds=0.3)
            waited = time.monotonic() - started
            return str(info.value), waited, await c.call_tool("shout", {"text": "still here"})

    _, waited, after = asyncio.run(main())
    assert waited < 2
    assert _text(after) == "STILL HERE"


def test_a_request_the_client_gives_up_on_cancels_an_async_tool_on_the_server(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_session.py::test_request_cancellation
    (the SDK's server cancels the handler of a request its client cancelled)."""
    marker = tmp_path / "marker"

    async def main() -> None:
        async with Client(_stdio(tmp_path), mode="legacy") as c:
            with pytest.raises(MCPError, match=r"(?i)timed out"):
                await c.call_tool("wait", {"marker": str(marker), "seconds": 3}, read_timeout_seconds=0.3)
            deadline = time.monotonic() + 10  # an uncancelled tool ends after 3 s without writing the marker
            while not marker.exists():
                assert time.monotonic() < deadline, "the async tool was never cancelled"
                await asyncio.sleep(0.02)
            assert marker.read_text() == "cancelled"

    asyncio.run(main())


def test_the_stdio_server_process_ends_when_the_client_disconnects(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_stdio.py::test_stdio_client_universal_cleanup."""

    async def main() -> int:
        async with Client(_stdio(tmp_path), mode="legacy") as c:
            return int(_text(await c.call_tool("pid", {})))

    pid = asyncio.run(main())
    deadline = time.monotonic() + 10
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the server process outlived its client"
        time.sleep(0.02)


def test_a_client_leaving_during_a_slow_call_lets_the_stdio_server_exit_without_a_signal(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_stdio.py::test_stdio_client_graceful_stdin_exit
    (a server exits when its stdin closes; a blocking tool still running must not hold it until the client's SIGTERM)."""
    log = tmp_path / "server.log"

    async def main() -> None:
        with log.open("w") as errlog:
            async with Client(stdio_client(_stdio(tmp_path), errlog=errlog), mode="legacy") as c:
                with pytest.raises(MCPError, match=r"(?i)timed out"):
                    await c.call_tool("nap", {"seconds": 5}, read_timeout_seconds=0.3)

    asyncio.run(main())
    text = log.read_text()
    assert "serving shout" in text  # the server's own log did reach the file
    assert "SIGTERM" not in text, text
