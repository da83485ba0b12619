"""mcp_tools against a real MCP server written with the SDK's own server API (tests/integrations/mcp_peer.py)."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')

import uvicorn

from wingman_actors import Agent, Fleet, Formation, Session, Task
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind, ToolError
from wingman_actors.integrations.mcp import MCPConnectionError, mcp_tools
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

from .mcp_peer import build

PEER = [sys.executable, str(Path(__file__).with_name("mcp_peer.py"))]


def _call(name: str, args: dict[str, Any], call_id: str = "c1") -> InferenceResponse:
    return InferenceResponse.of_tool_calls([(call_id, name, args)])


@dataclass
class HttpPeer:
    url: str
    seen: list[dict[str, str]]


@pytest.fixture
def http_peer() -> Iterator[HttpPeer]:
    """The peer server on streamable HTTP, on a loopback port, recording request headers."""
    app = build().streamable_http_app()
    seen: list[dict[str, str]] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(recording, lifespan="on", log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="loopback-http-mcp")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the loopback MCP server did not start"
        time.sleep(0.01)
    try:
        yield HttpPeer(f"http://127.0.0.1:{port}/mcp", seen)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_stdio_server_tools_arrive_with_names_descriptions_and_schemas() -> None:
    with mcp_tools(command=PEER) as tools:
        by_name = {t.name: t for t in tools}
        assert list(by_name) == ["echo", "add", "fail", "crash", "slow", "whoami"]
        add = by_name["add"].definition
        assert add.description == "Add two integers."
        assert add.input_schema["required"] == ["a", "b"]
        assert add.input_schema["properties"]["a"]["type"] == "integer"


def test_an_agent_calls_stdio_tools_and_gets_text_and_structured_results() -> None:
    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "echo", {"text": "hi"}), ("c2", "add", {"a": 2, "b": 3})]),
        "done",
    ])
    with mcp_tools(command=PEER) as tools:
        result = Session(Agent("a", provider=provider, tools=tools)).run("go")
    assert result.response == "done"
    echo, add = result.tool_calls
    assert (echo.output, echo.is_error) == ("echo: hi", False)
    assert '"total": 5' in add.output and not add.is_error


def test_a_server_error_result_reaches_the_model_as_an_error_result() -> None:
    provider = ScriptedProvider([_call("fail", {"reason": "no"}), "ok"])
    with mcp_tools(command=PEER) as tools:
        result = Session(Agent("a", provider=provider, tools=tools)).run("go")
    (call,) = result.tool_calls
    assert call.is_error and "refused: no" in call.output
    sent_back = provider.requests[1].messages[-1].content[0]
    assert sent_back.is_error and "refused: no" in (sent_back.content or "")


def test_arguments_are_validated_against_the_server_schema_before_the_call() -> None:
    with mcp_tools(command=PEER) as tools:
        add = next(t for t in tools if t.name == "add")
        with pytest.raises(ToolError, match=r"'b' is a required property.*a: 'x' is not of type 'integer'"):
            add.execute({"a": "x"}, ToolContext())


def test_a_server_that_crashes_mid_call_gives_error_results_and_never_hangs() -> None:
    provider = ScriptedProvider([_call("crash", {}), _call("echo", {"text": "again"}, "c2"), "gave up"])
    started = time.monotonic()
    with mcp_tools(command=PEER, timeout=20) as tools:
        result = Session(Agent("a", provider=provider, tools=tools)).run("go")
    assert time.monotonic() - started < 15
    crash, after = result.tool_calls
    assert crash.is_error and "closed the connection during the call" in crash.output
    assert after.is_error and "'echo' is unavailable" in after.output and "no longer connected" in after.output
    assert result.response == "gave up"


def test_a_call_slower_than_the_timeout_is_an_error_result() -> None:
    with mcp_tools(command=PEER, timeout=0.5) as tools:
        slow = next(t for t in tools if t.name == "slow")
        started = time.monotonic()
        with pytest.raises(ToolError, match=r"timed out|did not answer"):
            slow.execute({"seconds": 5}, ToolContext())
        assert time.monotonic() - started < 3
        echo = next(t for t in tools if t.name == "echo")
        assert echo.execute({"text": "still here"}, ToolContext()) == "echo: still here"


def test_env_and_cwd_reach_the_stdio_server(tmp_path: Path) -> None:
    with mcp_tools(command=PEER, env={"PEER_TAG": "tagged"}, cwd=tmp_path, include=["whoami"]) as tools:
        (whoami,) = tools
        assert whoami.execute({}, ToolContext()) == f"{tmp_path.resolve()}|tagged"


def test_tools_fail_clearly_after_the_block_has_closed() -> None:
    with mcp_tools(command=PEER, include=["echo"]) as tools:
        pass
    with pytest.raises(ToolError, match="closed"):
        tools[0].execute({"text": "late"}, ToolContext())


def test_streamable_http_server_serves_tools_and_receives_headers(http_peer: HttpPeer) -> None:
    provider = ScriptedProvider([_call("echo", {"text": "over http"}), "ok"])
    with mcp_tools(url=http_peer.url, headers={"Authorization": "Bearer t0ken"}) as tools:
        result = Session(Agent("a", provider=provider, tools=tools)).run("go")
    assert result.tool_calls[0].output == "echo: over http"
    assert any(h.get("authorization") == "Bearer t0ken" for h in http_peer.seen)


def test_a_fleet_shares_one_connection_across_concurrent_sessions(http_peer: HttpPeer) -> None:
    def reply(request: Any) -> Any:
        last = request.messages[-1]
        if last.tool_results_blocks:
            return last.tool_results_blocks[0].content
        return _call("echo", {"text": last.text}, f"c-{last.text}")

    provider = ScriptedProvider([reply], cycle=True)
    with mcp_tools(url=http_peer.url, include=["echo"]) as tools:
        fleet = Fleet(Agent("w", provider=provider, tools=tools), [Task(f"t{i}") for i in range(8)], max_workers=8)
        results = fleet.run()
    assert [r.result.response for r in results if r.result] == [f"echo: t{i}" for i in range(8)]


def test_a_prefix_tells_two_servers_tools_apart() -> None:
    with mcp_tools(command=PEER, prefix="peer_", include=["echo"]) as tools:
        assert [t.name for t in tools] == ["peer_echo"]
        assert tools[0].execute({"text": "x"}, ToolContext()) == "echo: x"


def test_a_server_that_cannot_start_is_a_connection_error() -> None:
    with pytest.raises(MCPConnectionError, match="cannot connect"), mcp_tools(command=["/no/such/server"]):
        pass


def test_an_unreachable_url_is_a_connection_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(MCPConnectionError), mcp_tools(url=f"http://127.0.0.1:{port}/mcp", connect_timeout=5):
        pass


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of command"),
        ({"command": ["x"], "url": "http://h/mcp"}, "exactly one of command"),
        ({"command": "python server.py"}, "non-empty list of strings"),
        ({"command": ["x"], "headers": {"a": "b"}}, "headers= applies to url"),
        ({"url": "http://h/mcp", "env": {"A": "1"}}, "env= and cwd= apply to command"),
        ({"url": "ftp://h/mcp"}, "must start with http"),
        ({"command": ["x"], "timeout": 0}, "must be > 0"),
        ({"command": ["x"], "prefix": "my server."}, r"prefix must be letters, digits, '_' or '-'"),
    ],
)
def test_bad_arguments_are_refused_before_connecting(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message), mcp_tools(**kwargs):
        pass


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"command": ["x"], "include": "echo"}, r"include must be a list of the server's tool names, e.g. \['echo'\]"),
        ({"command": ["x"], "timeout": "5"}, "timeout and connect_timeout must be numbers of seconds"),
        ({"command": ["x"], "prefix": 3}, "prefix must be a str"),
        ({"command": ["x"], "env": {"A": 1}}, r"env must be a dict of str to str, e.g. \{'NAME': 'value'\}; got \{'A': 1\}"),
        ({"command": ["x"], "env": "A=1"}, "env must be a dict of str to str"),
        ({"url": "http://h/mcp", "headers": {"x-n": 1}}, "headers must be a dict of str to str"),
    ],
)
def test_arguments_of_the_wrong_type_are_refused_before_connecting(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message), mcp_tools(**kwargs):
        pass


def test_include_naming_an_unknown_tool_lists_the_servers_tools() -> None:
    with pytest.raises(ValueError, match=r"no tool\(s\) \['nope'\]; it has: add, crash"), mcp_tools(command=PEER, include=["nope"]):
        pass


def test_a_server_that_never_answers_the_handshake_times_out_promptly() -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(30)"]
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match=r"no answer to the handshake within 1s"), mcp_tools(
        command=silent, connect_timeout=1
    ):
        pass
    assert time.monotonic() - started < 8


def test_a_session_timeout_stops_a_slow_mcp_call() -> None:
    provider = ScriptedProvider([_call("slow", {"seconds": 20})])
    with mcp_tools(command=PEER, include=["slow"]) as tools:
        started = time.monotonic()
        with pytest.raises(AgentError) as info:
            Session(Agent("a", provider=provider, tools=tools)).run("go", timeout=1.0)
        assert time.monotonic() - started < 5
    assert info.value.kind is ErrorKind.TIMEOUT


def test_a_formation_agent_node_uses_mcp_tools() -> None:
    provider = ScriptedProvider([_call("add", {"a": 20, "b": 22}), "the sum is 42"])
    with mcp_tools(command=PEER, include=["add"]) as tools:
        formation = Formation("sums").add_agent("adder", Agent("adder", provider=provider, tools=tools))
        result = formation.run("add 20 and 22", timeout=30)
    assert result.output == "the sum is 42"
    assert '"total": 42' in (provider.requests[1].messages[-1].content[0].content or "")


def test_mcp_tools_refuse_pickling_with_a_clear_error() -> None:
    import pickle

    with mcp_tools(command=PEER, include=["echo"]) as tools, pytest.raises(TypeError, match="cannot be sent to another process"):
        pickle.dumps(tools[0])
