"""Agents created over HTTP are as capable as the library's: ``@tool`` functions of the
``--functions`` modules, MCP servers (a real one, built with the ``mcp`` SDK, over stdio and
over streamable HTTP), ``max_steps`` and ``context_budget``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.harness import FUNCTIONS_MODULE, completion, openai_agent, running, scripted_agent
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.server import ServerConfig

PID_SERVER = Path(__file__).with_name("mcp_pid_server.py")


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    """A scripted reply calling one tool."""
    return {"content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}], "stop_reason": "tool_use"}


def message(client: httpx.Client, agent: str, text: str = "go") -> dict[str, Any]:
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": text})
    assert response.status_code == 200, response.text
    return dict(response.json())


def tool_call_completion(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion asking for one tool call, as an OpenAI-compatible endpoint sends it."""
    body = completion("")
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[httpx.Client]:
    """A server of its own (its MCP connections start threads and processes), with the MCP
    test server's script in its work root."""
    pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')
    shutil.copy(PID_SERVER, tmp_path / PID_SERVER.name)
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    with running(config) as server, server.client() as client:
        yield client


@pytest.fixture
def http_peer() -> Iterator[str]:
    """The MCP test peer (tests/integrations/mcp_peer.py) on streamable HTTP, on a loopback port."""
    pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')
    import uvicorn

    from tests.integrations.mcp_peer import build

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(build().streamable_http_app(), lifespan="on", log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="loopback-http-mcp")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the loopback MCP server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


# -- @tool functions ---------------------------------------------------------------------


def test_an_agent_calls_a_tool_function_of_the_functions_modules(client: httpx.Client) -> None:
    agent = scripted_agent(client, call("count_words", {"text": "one two three"}), "counted",
                           tools=["count_words", "read"], options={"cycle": False})
    body = message(client, agent)
    (tool_call,) = body["tool_calls"]
    assert (tool_call["name"], tool_call["output"], tool_call["is_error"]) == ("count_words", "3 words", False)


def test_a_formation_agent_node_may_use_a_tool_function(client: httpx.Client) -> None:
    agent = scripted_agent(client, call("count_words", {"text": "a b"}), "two words", tools=["count_words"],
                           options={"cycle": False})
    declaration = {"name": "counting", "nodes": [{"name": "count", "kind": "agent", "agent_id": agent}]}
    fid = client.post("/formations", json=declaration).json()["id"]
    run = client.post(f"/formations/{fid}/run", json={"input": "count a b"}).json()
    assert (run["status"], run["output"]) == ("succeeded", "two words")


def test_an_unknown_tool_is_refused_listing_the_tool_functions_too(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "a", "tools": ["count_letters"]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["tools"]
    assert "count_words" in response.json()["error"]


def test_the_document_lists_the_tool_functions_among_the_tools(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    assert "count_words" in doc["components"]["schemas"]["AgentCreate"]["properties"]["tools"]["items"]["enum"]


# -- max_steps and context_budget ----------------------------------------------------------


def test_max_steps_and_context_budget_are_stored_and_cleared_with_null(client: httpx.Client) -> None:
    created = client.post("/agents", json={"name": "a", "max_steps": 3, "context_budget": 4000}).json()
    assert (created["max_steps"], created["context_budget"]) == (3, 4000)
    assert client.get(f"/agents/{created['id']}").json()["max_steps"] == 3
    cleared = client.put(f"/agents/{created['id']}", json={"max_steps": None, "context_budget": None}).json()
    assert (cleared["max_steps"], cleared["context_budget"]) == (None, None)


@pytest.mark.parametrize(("field", "value"), [("max_steps", 0), ("max_steps", 10**6), ("context_budget", 100),
                                              ("max_steps", True)])
def test_out_of_range_max_steps_and_context_budget_are_400_naming_them(client: httpx.Client, field: str,
                                                                        value: Any) -> None:
    response = client.post("/agents", json={"name": "a", field: value})
    assert response.status_code == 400
    assert response.json()["fields"] == [field]


def test_max_steps_ends_the_tool_calls_with_one_last_call_without_tools(client: httpx.Client,
                                                                        loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(tool_call_completion("count_words", {"text": "a b"})), Reply.json(completion("done")))
    agent = openai_agent(client, loopback.url)
    client.put(f"/agents/{agent}", json={"tools": ["count_words"], "max_steps": 1})
    body = message(client, agent)
    assert body["response"] == "done"
    first, last = (r.json() for r in loopback.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["count_words"]
    assert "tools" not in last


def test_context_budget_leaves_old_turns_out_of_requests(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.queue(*(Reply.json(completion(f"answer {i}")) for i in range(3)))
    agent = openai_agent(client, loopback.url)
    client.put(f"/agents/{agent}", json={"context_budget": 3000})
    sid = client.post("/sessions").json()["id"]
    texts = ("first", "alpha " * 1500, "beta " * 1500)  # each long one fits the budget, not both
    for text in texts:
        response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": text})
        assert response.status_code == 200, response.text
    sent = [m["content"] for m in loopback.requests[2].json()["messages"] if m["role"] == "user"]
    assert sent == [texts[0], texts[2]]


# -- MCP -----------------------------------------------------------------------------------


def test_an_agent_calls_the_tools_of_an_mcp_server_over_stdio(mcp_server: httpx.Client, tmp_path: Path) -> None:
    agent = scripted_agent(mcp_server, call("where", {}), "found it",
                           mcp=[{"command": [sys.executable, PID_SERVER.name]}], options={"cycle": False})
    (tool_call,) = message(mcp_server, agent)["tool_calls"]
    assert tool_call["is_error"] is False
    assert tool_call["output"] == str(tmp_path)  # it runs in the work root


def test_runs_share_one_mcp_connection_closed_when_the_server_stops(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')
    shutil.copy(PID_SERVER, tmp_path / PID_SERVER.name)
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False)
    with running(config) as server, server.client() as client:
        agents = [scripted_agent(client, call("p_pid", {}), "ok", name=f"a{i}", options={"cycle": True},
                                 mcp=[{"command": [sys.executable, PID_SERVER.name], "prefix": "p_"}])
                  for i in range(2)]
        pids = {message(client, agent)["tool_calls"][0]["output"] for agent in (*agents, agents[0])}
        assert len(pids) == 1
    pid = int(pids.pop())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_agent_calls_the_tools_of_an_mcp_server_over_http(mcp_server: httpx.Client, http_peer: str) -> None:
    agent = scripted_agent(mcp_server, call("echo", {"text": "hi"}), "heard",
                           mcp=[{"url": http_peer, "include": ["echo"]}], options={"cycle": False})
    (tool_call,) = message(mcp_server, agent)["tool_calls"]
    assert (tool_call["output"], tool_call["is_error"]) == ("echo: hi", False)


def test_an_mcp_program_neither_allowed_nor_under_the_work_root_is_400(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "a", "mcp": [{"command": ["/bin/sh", "-c", "id"]}]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["mcp[0].command"]
    assert "--mcp-command /bin/sh" in response.json()["error"]


def test_an_mcp_argument_that_is_a_path_outside_the_work_root_is_400(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "a", "mcp": [{"command": [sys.executable, str(PID_SERVER)]}]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["mcp[0].command"]
    assert "outside the work root" in response.json()["error"]


@pytest.mark.parametrize("arg", ["--file=/etc/passwd", "--dir=../../etc"])
def test_an_mcp_option_whose_value_is_a_path_outside_the_work_root_is_400(client: httpx.Client, arg: str) -> None:
    # "--opt=PATH" hands the program a path as surely as "--opt PATH" does.
    response = client.post("/agents", json={"name": "a", "mcp": [{"command": [sys.executable, arg]}]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["mcp[0].command"]
    assert "outside the work root" in response.json()["error"]


def test_without_bash_the_servers_python_needs_mcp_command(tmp_path: Path) -> None:
    refusing = ServerConfig(db_path=tmp_path / "a.db", work_root=tmp_path, entry_points=False, allow_bash=False)
    allowing = ServerConfig(db_path=tmp_path / "b.db", work_root=tmp_path, entry_points=False, allow_bash=False,
                            mcp_commands=(sys.executable,))
    body = {"name": "a", "mcp": [{"command": [sys.executable, "server.py"]}]}
    for config, status in ((refusing, 400), (allowing, 201)):
        with running(config) as server, server.client() as client:
            assert client.post("/agents", json=body).status_code == status


def test_an_executable_under_the_work_root_may_be_an_mcp_server(client: httpx.Client, work_root: Path) -> None:
    script = work_root / "project" / "server.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    response = client.post("/agents", json={"name": "a", "mcp": [{"command": ["project/server.sh"]}]})
    assert response.status_code == 201, response.text
    assert response.json()["mcp"] == [{"command": ["project/server.sh"]}]


def test_an_mcp_server_with_both_command_and_url_is_400(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "a", "mcp": [{"command": ["x"], "url": "http://h/mcp"}]})
    assert response.status_code == 400
    assert all(f.startswith("mcp[0]") for f in response.json()["fields"])


def test_an_mcp_server_that_cannot_be_reached_is_a_502(mcp_server: httpx.Client) -> None:
    agent = scripted_agent(mcp_server, "never", mcp=[{"url": "http://127.0.0.1:9/mcp"}])
    sid = mcp_server.post("/sessions").json()["id"]
    response = mcp_server.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "go"})
    assert response.status_code == 502
    assert response.json()["kind"] == "network"
    assert "MCP server" in response.json()["error"]


@pytest.mark.parametrize(("given", "field", "fix"), [
    ({"command": "python server.py"}, "mcp[0].command", r"a list of strings: the program and its arguments"),
    ({"command": [1]}, "mcp[0].command", r"a list of strings: the program and its arguments"),
    ({"url": 3}, "mcp[0].url", r"a string, an http:// or https:// endpoint"),
])
def test_an_mcp_command_or_url_of_the_wrong_json_type_is_400_naming_the_field_and_the_fix(
    client: httpx.Client, given: dict[str, Any], field: str, fix: str
) -> None:
    response = client.post("/agents", json={"name": "a", "mcp": [given]})

    assert response.status_code == 400
    assert response.json()["fields"] == [field]
    assert response.json()["error"].startswith(f"invalid request: {field}: ")
    assert fix in response.json()["error"]
