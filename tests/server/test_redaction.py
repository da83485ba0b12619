"""Secrets never leave: a provider that repeats the key in its error (as OpenAI's
"Incorrect API key provided: sk-..." does) is answered, streamed, recorded and logged with
the key masked."""

from __future__ import annotations

import logging
import sqlite3
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter

from tests.providers.test_openai import completion
from tests.server.harness import FUNCTIONS_MODULE, RunningServer, running, scripted_agent
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors.server import ServerConfig

KEY = "sk-proj-leaky-0123456789abcdef"


def echo_key(request: Request) -> Reply:
    """An OpenAI-compatible endpoint refusing the key, and quoting it back."""
    given = request.headers.get("authorization", "").removeprefix("Bearer ")
    return Reply.json({"error": {"message": f"Incorrect API key provided: {given}", "type": "invalid_request_error",
                                 "code": "invalid_api_key"}}, status=401)


@pytest.fixture
def leaky(loopback: LoopbackServer, client: httpx.Client) -> str:
    """An agent whose provider echoes the stored key in its error; returns its id."""
    loopback.handler = echo_key
    assert client.put("/provider/auth", json={"providers": {"openai": {"key": KEY}}}).status_code == 200
    response = client.post("/agents", json={"name": "leaky", "provider": "openai", "model": "m",
                                            "options": {"base_url": loopback.url, "max_retries": 0}})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG):
        yield caplog


def test_the_provider_really_echoes_the_key(loopback: LoopbackServer, leaky: str, client: httpx.Client) -> None:
    sid = client.post("/sessions").json()["id"]
    client.post(f"/sessions/{sid}/message", json={"agent_id": leaky, "message": "hi"})
    assert loopback.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_message_error_masks_the_key(leaky: str, client: httpx.Client, logs: pytest.LogCaptureFixture) -> None:
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": leaky, "message": "hi"})
    assert response.status_code == 502
    assert "Incorrect API key provided: [redacted]" in response.json()["error"]
    assert KEY not in response.text
    assert KEY not in logs.text


def test_message_stream_masks_the_key(leaky: str, client: httpx.Client, logs: pytest.LogCaptureFixture) -> None:
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message/stream", json={"agent_id": leaky, "message": "hi"})
    assert "[redacted]" in response.text
    assert KEY not in response.text
    assert KEY not in logs.text


def test_fleet_results_mask_the_key(leaky: str, client: httpx.Client, logs: pytest.LogCaptureFixture) -> None:
    fleet = client.post("/fleets", json={"name": "f", "agent_id": leaky}).json()["id"]
    body = {"tasks": [{"message": "a"}, {"message": "b"}]}
    blocking = client.post(f"/fleets/{fleet}/run", json=body)
    streamed = client.post(f"/fleets/{fleet}/run/stream", json=body)
    assert blocking.status_code == 200
    assert all("[redacted]" in r["error"] for r in blocking.json())
    record = client.get("/runs", params={"fleet_id": fleet})
    assert len(record.json()) == 2
    assert "[redacted]" in record.json()[0]["error"]
    for response in (blocking, streamed, record):
        assert KEY not in response.text
    assert KEY not in logs.text


def test_formation_runs_mask_the_key_in_answers_records_and_database(
    leaky: str, client: httpx.Client, server: RunningServer, logs: pytest.LogCaptureFixture
) -> None:
    body = {"name": "leak", "nodes": [{"name": "ask", "kind": "agent", "agent_id": leaky}]}
    fid = client.post("/formations", json=body).json()["id"]
    blocking = client.post(f"/formations/{fid}/run", json={"input": "hi"})
    streamed = client.post(f"/formations/{fid}/run/stream", json={"input": "hi"})
    assert blocking.status_code == 502
    run = client.get(f"/runs/{blocking.json()['run_id']}")
    assert "[redacted]" in run.json()["error"]
    for response in (blocking, streamed, run, client.get("/runs")):
        assert KEY not in response.text
    with sqlite3.connect(server.config.database) as db:
        stored = [db.execute(f"SELECT * FROM {table}").fetchall()  # run records, the run journal, messages
                  for table in ("run_records", "runs", "journal", "messages")]
    assert KEY not in repr(stored)
    assert KEY not in logs.text


def test_environment_keys_are_masked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_key = "sk-ant-from-the-environment-42"
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    with running(config) as server, server.client() as client:
        agent = scripted_agent(client, f"my key is {env_key}")
        sid = client.post("/sessions").json()["id"]
        answer = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "tell me"})
        assert answer.json()["response"] == "my key is [redacted]"
        for response in (answer, client.get(f"/sessions/{sid}"), client.get("/agents")):
            assert env_key not in response.text
    with sqlite3.connect(config.database) as db:
        assert env_key not in repr(db.execute("SELECT content FROM messages").fetchall())


def test_only_key_like_values_are_masked_so_answers_stay_valid_json() -> None:
    import json

    from wingman_actors.server._redact import Redactor

    redactor = Redactor(["short", "12345678", 'has "quotes" in it', "sk-real-key-42"])
    body = json.dumps({"n": 12345678, "a": "short", "k": "sk-real-key-42!"}).encode()
    assert json.loads(redactor.data(body)) == {"n": 12345678, "a": "short", "k": "[redacted]!"}


# -- the server's log -----------------------------------------------------------------------


class FormattedLog(logging.Handler):
    """What a logger writes, formatted as the server's own handler would (``formatter``);
    a record that fails to format is kept as what logging then prints to stderr: the
    traceback of the failure, with the exception in flight chained to it."""

    def __init__(self, formatter: logging.Formatter, lines: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(formatter)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        self.lines.append("--- Logging error ---\n" + traceback.format_exc())


ACCESS_FORMAT = LOGGING_CONFIG["formatters"]["access"]["fmt"]


@pytest.fixture
def logged_server(tmp_path: Path) -> Iterator[RunningServer]:
    """A server of its own with uvicorn's access log on, as ``wingman-actors serve`` runs."""
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False)
    server = RunningServer(config, access_log=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server_log(logged_server: RunningServer, caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Every line ``logged_server``'s loggers write, at DEBUG, uvicorn's access log included
    (it uses uvicorn's own formatter, which reads the record's arguments)."""
    caplog.set_level(logging.DEBUG)  # after uvicorn set its levels: uvicorn.Config sets them
    caplog.set_level(logging.INFO, logger="uvicorn.access")  # both restored after the test
    lines: list[str] = []
    plain = FormattedLog(logging.Formatter("%(name)s %(levelname)s %(message)s"), lines)
    attached = [("", plain), ("uvicorn", plain), ("uvicorn.access", FormattedLog(AccessFormatter(ACCESS_FORMAT, use_colors=False), lines))]
    for name, handler in attached:  # uvicorn's loggers do not propagate to the root
        logging.getLogger(name).addHandler(handler)
    try:
        yield lines
    finally:
        for name, handler in attached:
            logging.getLogger(name).removeHandler(handler)


def refuse_then_reject(status: int = 429) -> Callable[[Request], Reply]:
    """A provider (either wire format) that quotes the key back: ``status`` the first time
    (retryable, so the retry is logged with the provider's words), then 401."""
    calls: list[int] = []

    def reply(request: Request) -> Reply:
        given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        calls.append(1)
        code, kind = (status, "rate_limit_error") if len(calls) == 1 else (401, "authentication_error")
        return Reply.json({"type": "error", "error": {"type": kind, "message": f"Incorrect API key provided: {given}"}},
                          status=code, headers={"retry-after": "0"})

    return reply


@pytest.mark.parametrize("route", ["session", "formation"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_server_log_masks_a_key_the_provider_repeats(
    provider: str, route: str, loopback: LoopbackServer, logged_server: RunningServer, server_log: list[str]
) -> None:
    loopback.handler = refuse_then_reject()
    with logged_server.client() as client:
        assert client.put("/provider/auth", json={"providers": {provider: {"key": KEY}}}).status_code == 200
        agent = client.post("/agents", json={"name": "leaky", "provider": provider, "model": "m",
                                             "options": {"base_url": loopback.url, "max_retries": 1}}).json()["id"]
        if route == "session":
            sid = client.post("/sessions").json()["id"]
            answer = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
        else:
            body = {"name": "leak", "nodes": [{"name": "ask", "kind": "agent", "agent_id": agent}]}
            fid = client.post("/formations", json=body).json()["id"]
            answer = client.post(f"/formations/{fid}/run", json={"input": "hi"})
    assert answer.status_code == 502 and "[redacted]" in answer.text
    assert [r.headers.get("x-api-key") or r.headers["authorization"][7:] for r in loopback.requests] == [KEY, KEY]
    log = "\n".join(server_log)
    assert KEY not in log
    assert "Incorrect API key provided: [redacted]" in log  # the retry's line
    assert '"POST /' in log and "Logging error" not in log  # the access log still writes its lines


def test_the_access_log_masks_a_key_in_a_query_string(logged_server: RunningServer, server_log: list[str]) -> None:
    with logged_server.client() as client:
        assert client.put("/provider/auth", json={"providers": {"openai": {"key": KEY}}}).status_code == 200
        assert client.get("/agents", params={"note": KEY}).status_code == 200
    (line,) = [line for line in server_log if "GET /agents" in line]
    assert line.endswith('"GET /agents?note=[redacted] HTTP/1.1" 200 OK')


def test_a_logged_exception_that_quotes_a_key_is_kept_only_as_masked_text(caplog: pytest.LogCaptureFixture) -> None:
    from wingman_actors.server._redact import Redactor, redact_logs

    log = logging.getLogger("tests.redaction")
    with redact_logs(Redactor([KEY])), caplog.at_level(logging.INFO, logger=log.name):
        for error in (RuntimeError(f"refused {KEY}"), RuntimeError("refused nothing")):
            try:
                raise error
            except RuntimeError:
                log.exception("call failed")
    leaky, plain = caplog.records
    assert leaky.exc_info is None and leaky.exc_text is not None  # no handler can render the raw exception
    assert "RuntimeError: refused [redacted]" in leaky.exc_text
    assert plain.exc_info is not None and plain.exc_info[1] is not None  # the rest keep their exception
    assert KEY not in caplog.text


# --- agents' provider headers ---------------------------------------------------------------

HEADER_TOKEN = "tok-header-0123456789abcdef"


def _header_agent(client: httpx.Client, loopback: LoopbackServer) -> dict[str, object]:
    response = client.post("/agents", json={
        "name": "headed", "provider": "openai", "model": "m",
        "options": {"base_url": loopback.url, "max_retries": 0,
                    "headers": {"Authorization": f"Bearer {HEADER_TOKEN}", "X-Team": "research-and-development"}},
    })
    assert response.status_code == 201, response.text
    agent: dict[str, object] = response.json()
    return agent


def _ok(request: Request) -> Reply:
    return Reply.json(completion("hi"))


def test_agent_answers_show_header_names_with_their_values_masked(
    loopback: LoopbackServer, client: httpx.Client
) -> None:
    created = _header_agent(client, loopback)
    shown = {"Authorization": "[redacted]", "X-Team": "[redacted]"}

    fetched = client.get(f"/agents/{created['id']}")
    listed = client.get("/agents")

    assert created["options"]["headers"] == shown  # type: ignore[index]
    assert fetched.json()["options"]["headers"] == shown
    assert next(a for a in listed.json() if a["id"] == created["id"])["options"]["headers"] == shown
    for text in (fetched.text, listed.text):
        assert HEADER_TOKEN not in text and "research-and-development" not in text


def test_a_run_sends_the_stored_header_values(loopback: LoopbackServer, client: httpx.Client) -> None:
    loopback.handler = _ok
    agent = _header_agent(client, loopback)
    sid = client.post("/sessions").json()["id"]

    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent["id"], "message": "hi"})

    assert response.status_code == 200, response.text
    assert loopback.requests[-1].headers["authorization"] == f"Bearer {HEADER_TOKEN}"
    assert loopback.requests[-1].headers["x-team"] == "research-and-development"


def test_an_update_that_sends_the_masked_headers_back_keeps_their_values(
    loopback: LoopbackServer, client: httpx.Client
) -> None:
    loopback.handler = _ok
    agent = _header_agent(client, loopback)
    options = client.get(f"/agents/{agent['id']}").json()["options"]

    updated = client.put(f"/agents/{agent['id']}", json={"options": {**options, "temperature": 0.5}})
    sid = client.post("/sessions").json()["id"]
    client.post(f"/sessions/{sid}/message", json={"agent_id": agent["id"], "message": "hi"})

    assert updated.status_code == 200, updated.text
    assert updated.json()["options"]["headers"]["Authorization"] == "[redacted]"
    assert loopback.requests[-1].headers["authorization"] == f"Bearer {HEADER_TOKEN}"


def test_a_new_agent_with_a_masked_header_value_is_refused_naming_the_header(
    loopback: LoopbackServer, client: httpx.Client
) -> None:
    response = client.post("/agents", json={"name": "copied", "provider": "openai", "model": "m",
                                            "options": {"base_url": loopback.url, "headers": {"X-Key": "[redacted]"}}})

    assert response.status_code == 400
    assert "options.headers.X-Key" in response.json()["error"]


def test_a_provider_error_quoting_an_authorization_header_is_masked(
    loopback: LoopbackServer, client: httpx.Client, logs: pytest.LogCaptureFixture
) -> None:
    loopback.handler = echo_key  # quotes the bearer token back
    agent = _header_agent(client, loopback)
    sid = client.post("/sessions").json()["id"]

    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent["id"], "message": "hi"})

    assert response.status_code == 502
    assert "Incorrect API key provided: [redacted]" in response.json()["error"]
    assert HEADER_TOKEN not in response.text and HEADER_TOKEN not in logs.text


def _bash_call(command: str) -> Reply:
    """An OpenAI-compatible answer calling the bash tool with ``command``."""
    return Reply.json({"id": "c", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "bash", "arguments": f'{{"command": "{command}"}}'}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}})


def test_a_stored_key_the_bash_tool_prints_is_masked_in_what_the_model_sees(
    loopback: LoopbackServer, client: httpx.Client, work_root: Path,
) -> None:
    # DESIGN, Limits: "known keys are masked in its output"; the server's stored keys are known
    # to it, though not in its environment (here a file holds one; the database does too).
    (work_root / "notes.txt").write_text(f"the key is {KEY}\n", encoding="utf-8")
    assert client.put("/provider/auth", json={"providers": {"openai": {"key": KEY}}}).status_code == 200
    agent = client.post("/agents", json={"name": "sh", "tools": ["bash"], "provider": "openai", "model": "m",
                                         "options": {"base_url": loopback.url, "max_retries": 0}}).json()["id"]
    loopback.queue(_bash_call("cat notes.txt"), Reply.json(completion("done")))
    sid = client.post("/sessions").json()["id"]

    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "read the notes"})

    assert response.status_code == 200, response.text
    seen = [m for m in loopback.requests[-1].json()["messages"] if m["role"] == "tool"]
    assert seen and "the key is" in seen[0]["content"]
    assert KEY not in seen[0]["content"]
