"""The life of an MCP connection, ported from the official MCP Python SDK's client and session
tests (modelcontextprotocol/python-sdk tests/client/, tests/shared/): paginated tool listings,
tool names, cleanup of servers and threads, cancellation, and servers that fail over HTTP,
reached through ``mcp_tools`` from sessions and formations (threads and Ray)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')

import anyio
from mcp.server.mcpserver import MCPServer

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation, Session
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind, FormationSetupError, ToolError
from wingman_actors.integrations.mcp import MCPConnectionError, mcp_tools
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

from . import mcp_peer_content, mcp_peer_lowlevel
from .mcp_http import LoopbackServer, serve_http

CONTENT = [sys.executable, str(Path(__file__).with_name("mcp_peer_content.py"))]
LOWLEVEL = [sys.executable, str(Path(__file__).with_name("mcp_peer_lowlevel.py"))]


def _call(name: str, args: dict[str, Any], call_id: str = "c1") -> InferenceResponse:
    return InferenceResponse.of_tool_calls([(call_id, name, args)])


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_for(check: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def paged() -> Iterator[tuple[str, list[str | None]]]:
    """The low-level peer listing 7 tools 3 to a page, over HTTP: its URL and the cursors it was asked for."""
    seen: list[str | None] = []
    with serve_http(mcp_peer_lowlevel.build("paged", 3, seen).streamable_http_app()) as server:
        yield server.url, seen


# --- tools/list pagination ---------------------------------------------------------------------


def test_tools_on_every_page_of_a_paginated_listing_arrive_in_order(paged: tuple[str, list[str | None]]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_list_methods_cursor.py::test_list_tools_cursor_parameter
    (and tests/client/test_list_all_pagination.py: every page, followed by its cursor)."""
    url, seen = paged
    with mcp_tools(url=url) as tools:
        assert [t.name for t in tools] == [f"tool_{i}" for i in range(7)]
    assert seen == [None, "3", "6"]


def test_a_tool_listed_on_a_later_page_can_be_included_and_called(paged: tuple[str, list[str | None]]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_list_tools_cursor.py::test_list_tools_cursor_parameter."""
    url, _ = paged
    provider = ScriptedProvider([_call("tool_6", {}), "done"])
    with mcp_tools(url=url, include=["tool_6", "tool_0"]) as tools:
        assert [t.name for t in tools] == ["tool_0", "tool_6"]  # the server's order
        result = Session(Agent("a", provider=provider, tools=tools)).run("go")
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == ("tool_6 ran", False)


def test_a_listing_whose_cursor_never_ends_is_refused_at_once_naming_the_server() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_list_all_pagination.py (a server whose every page
    names the same next cursor: the SDK's own re-list stops after a page cap; we refuse the server)."""
    with serve_http(mcp_peer_lowlevel.build("looping").streamable_http_app()) as server:
        started = time.monotonic()
        with pytest.raises(MCPConnectionError, match=r"tools/list.*cursor 'again'") as info, mcp_tools(
            url=server.url, connect_timeout=20
        ):
            pass
        assert time.monotonic() - started < 10  # not the connect timeout
    assert server.url in str(info.value)


# --- tool names --------------------------------------------------------------------------------


def test_names_a_model_cannot_take_are_made_safe_and_still_call_the_servers_tool() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_tool_name_validation.py::test_validate_tool_name_accepts_valid_names
    (the spec allows '.', which provider APIs refuse, and names longer than the 64 characters they take)."""
    with serve_http(mcp_peer_lowlevel.build("names").streamable_http_app()) as server, mcp_tools(
        url=server.url, include=["files.read", "n" * 80]
    ) as tools:
        dotted, long = tools
        assert (dotted.name, dotted.remote_name) == ("files_read", "files.read")
        assert (long.name, long.remote_name) == ("n" * 64, "n" * 80)
        assert dotted.execute({}, ToolContext()) == "files.read ran"
        assert long.execute({}, ToolContext()) == f"{'n' * 80} ran"


def test_two_server_names_made_the_same_are_refused_naming_both_and_the_fix() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_tool_name_validation.py (a server may list 'files.read' beside
    'files_read'; made safe they are one name, which an agent would refuse without saying where it came from)."""
    with serve_http(mcp_peer_lowlevel.build("names").streamable_http_app()) as server:
        with pytest.raises(ValueError, match=r"'files\.read' and 'files_read'.*'files_read'.*include=") as info, mcp_tools(
            url=server.url
        ):
            pass
        assert server.url in str(info.value)
        with mcp_tools(url=server.url, include=["files_read", "n" * 80]) as tools:  # the fix works
            Agent("a", tools=tools)


# --- cleanup -----------------------------------------------------------------------------------


def test_closing_the_block_stops_the_stdio_server_and_the_connections_thread() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_resource_cleanup.py::test_send_request_stream_cleanup
    and tests/client/test_stdio.py::test_stdio_client_universal_cleanup."""
    with mcp_tools(command=CONTENT, include=["pid"]) as tools:
        pid = int(tools[0].execute({}, ToolContext()))
        assert not _gone(pid)
        assert any(t.name.startswith("wingman-mcp-") for t in threading.enumerate())
    assert _gone(pid)
    assert _wait_for(lambda: not any(t.name.startswith("wingman-mcp-") for t in threading.enumerate()))


def test_a_server_killed_between_calls_gives_an_error_result_naming_it_without_waiting() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_stdio.py::test_stdio_client_bad_path
    (the server process dies under the client; a later call must fail, not wait for its timeout)."""
    with mcp_tools(command=CONTENT, include=["pid", "hello"], timeout=30) as tools:
        hello, pid_tool = tools  # the server's order
        os.kill(int(pid_tool.execute({}, ToolContext())), signal.SIGKILL)
        provider = ScriptedProvider([_call("hello", {}), "gave up"])
        started = time.monotonic()
        result = Session(Agent("a", provider=provider, tools=[hello])).run("go")
        assert time.monotonic() - started < 10
    (call,) = result.tool_calls
    assert call.is_error and "'hello'" in call.output and "mcp_peer_content.py" in call.output


def test_a_server_that_exits_before_the_handshake_is_a_connection_error_naming_it() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_stdio.py::test_stdio_client_nonexistent_command."""
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match=r"cannot connect") as info, mcp_tools(command=command, connect_timeout=20):
        pass
    assert time.monotonic() - started < 10
    assert "sys.exit(3)" in str(info.value)


# --- cancellation and time limits --------------------------------------------------------------


def test_a_session_timeout_during_a_call_cancels_the_request_on_the_server(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_session.py::test_request_cancellation
    (the server's handler is cancelled, and the connection serves the next call)."""
    marker = tmp_path / "marker"
    provider = ScriptedProvider([_call("wait", {"marker": str(marker), "seconds": 30})])
    with serve_http(mcp_peer_content.build().streamable_http_app()) as server, mcp_tools(
        url=server.url, include=["wait", "hello"]
    ) as tools:
        started = time.monotonic()
        with pytest.raises(AgentError) as info:
            Session(Agent("a", provider=provider, tools=tools)).run("go", timeout=0.5)
        assert time.monotonic() - started < 3
        assert info.value.kind is ErrorKind.TIMEOUT
        assert _wait_for(lambda: marker.exists()), "the server's handler was never cancelled"
        assert marker.read_text() == "cancelled"
        assert tools[0].execute({"name": "again"}, ToolContext()) == "¡Hola, again! 👋"  # hello: the server's order


def test_cancelling_a_session_from_another_thread_stops_its_mcp_call(tmp_path: Path) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_session.py::test_request_cancellation
    (the cancel comes from the caller, not a deadline)."""
    marker = tmp_path / "marker"
    provider = ScriptedProvider([_call("wait", {"marker": str(marker), "seconds": 30})])
    with serve_http(mcp_peer_content.build().streamable_http_app()) as server, mcp_tools(
        url=server.url, include=["wait"]
    ) as tools:
        session = Session(Agent("a", provider=provider, tools=tools))
        threading.Timer(0.3, session.cancel).start()
        started = time.monotonic()
        with pytest.raises(AgentError) as info:
            session.run("go")
        assert time.monotonic() - started < 3
        assert info.value.kind is ErrorKind.CANCELLED
        assert _wait_for(lambda: marker.exists())


def _meeting_server() -> MCPServer:
    """A server whose tool ``meet`` answers 'met' once two calls of it are in flight at once
    ('alone' after 5 s)."""
    server = MCPServer("meeting")
    arrived: list[int] = []
    everyone = anyio.Event()

    @server.tool()
    async def meet() -> str:
        """Waits for the other caller."""
        arrived.append(1)
        if len(arrived) == 2:
            everyone.set()
        with anyio.move_on_after(5):
            await everyone.wait()
            return "met"
        return "alone"

    return server


def test_two_calls_of_one_turn_run_at_once_on_one_connection() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_session_concurrency.py (requests multiplexed by id)."""
    calls = InferenceResponse.of_tool_calls([("c1", "meet", {}), ("c2", "meet", {})])
    provider = ScriptedProvider([calls, "done"])
    with serve_http(_meeting_server().streamable_http_app()) as server, mcp_tools(url=server.url) as tools:
        result = Session(Agent("a", provider=provider, tools=tools)).run("go")
    assert [(c.output, c.is_error) for c in result.tool_calls] == [("met", False), ("met", False)]


# --- streamable HTTP servers that fail -----------------------------------------------------------


async def _status_app(scope: Any, receive: Any, send: Any) -> None:
    """Answers every HTTP request with the status its path names (/401, /500...)."""
    if scope["type"] != "http":
        return
    status = int(scope["path"].strip("/").split("/")[0])
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"no MCP here"})


@pytest.mark.parametrize("status", [401, 404, 500])
def test_a_non_2xx_answer_to_the_handshake_is_a_connection_error_at_once_naming_the_status(status: int) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_non2xx_status.py::test_401_produces_error_response,
    ::test_403_produces_error_response and ::test_500_produces_error_response (an error, not a timeout)."""
    with serve_http(_status_app) as server:
        url = server.url.replace("/mcp", f"/{status}")
        started = time.monotonic()
        with pytest.raises(MCPConnectionError, match=str(status)) as info, mcp_tools(url=url, connect_timeout=20):
            pass
        assert time.monotonic() - started < 10
    assert url in str(info.value)


def test_an_http_server_that_stops_mid_session_gives_error_results_without_waiting() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/shared/test_streamable_http.py::test_streamablehttp_client_session_termination."""
    server = LoopbackServer(mcp_peer_content.build().streamable_http_app())
    try:
        with mcp_tools(url=server.url, include=["hello"], timeout=30) as tools:
            assert tools[0].execute({}, ToolContext()) == "¡Hola, 世界! 👋"
            server.stop()
            started = time.monotonic()
            with pytest.raises(ToolError, match=r"'hello'") as info:
                tools[0].execute({}, ToolContext())
            assert time.monotonic() - started < 10
            assert server.url in str(info.value)
    finally:
        server.stop()


# --- formations ---------------------------------------------------------------------------------


def test_a_formation_agent_node_sees_the_servers_structured_result(paged: tuple[str, list[str | None]]) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/server/mcpserver/test_integration.py::test_tool_structured_output
    (through an agent node of a formation, threads backend)."""
    url, _ = paged
    provider = ScriptedProvider([_call("tool_5", {}), "it ran"])
    with mcp_tools(url=url, include=["tool_5"]) as tools:
        result = Formation("f").add_agent("agent", Agent("agent", provider=provider, tools=tools)).run("go", timeout=30)
    assert result.output == "it ran"
    assert provider.requests[1].messages[-1].content[0].content == "tool_5 ran"


def _hello_through_mcp(name: str) -> str:
    """A function node that opens its own MCP connection where it runs (a Ray worker included)."""
    with mcp_tools(command=CONTENT, include=["hello"]) as tools:
        return tools[0].execute({"name": name}, ToolContext())


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_node_on_ray_opens_its_own_mcp_connection_and_calls_a_tool() -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_stdio.py::test_stdio_client (the client in a Ray worker)."""
    f = Formation("ray_mcp").add_function("call", _hello_through_mcp)
    assert f.run("Ray", backend="ray", timeout=120).output == "¡Hola, Ray! 👋"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_agent_node_holding_mcp_tools_on_ray_is_refused_naming_the_node_and_the_fix(
    paged: tuple[str, list[str | None]],
) -> None:
    """Ported from modelcontextprotocol/python-sdk tests/client/test_session.py::test_client_session_initialize
    (a live connection cannot travel to a Ray worker: DESIGN, a node that cannot be pickled is a setup error naming it)."""
    url, _ = paged
    with mcp_tools(url=url, include=["tool_0"]) as tools:
        f = Formation("ray_agent").add_agent("helper", Agent("helper", provider=ScriptedProvider(["x"]), tools=tools))
        with pytest.raises(FormationSetupError, match=r"node 'helper' cannot be pickled") as info:
            f.run("go", backend="ray", timeout=120)
    assert "MCP tool 'tool_0' holds a live connection" in str(info.value)
    assert "open mcp_tools(...) where the agent runs" in str(info.value)
