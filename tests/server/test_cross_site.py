"""Cross-site and DNS-rebinding safety: what a web page can send to a server on localhost
without a CORS preflight is refused, and so are foreign origins and host names. Paths taken
from requests stay under the work root."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import RunningServer
from wingman_actors.server import ServerConfig

ALLOWED_ORIGIN = "https://app.example.org"
ALLOWED_HOST = "wingman.lan"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> Iterator[RunningServer]:
    config = ServerConfig(db_path=tmp_path_factory.mktemp("db") / "w.db", work_root=work_root, entry_points=False,
                          cors_origins=(ALLOWED_ORIGIN,), allowed_hosts=(ALLOWED_HOST, "*.corp.example"))
    running = RunningServer(config).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def bare(server: RunningServer) -> Iterator[httpx.Client]:
    """A client that sends no Content-Type unless told, as a web page's request may."""
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


def raw_request(server: RunningServer, head: str) -> tuple[int, bytes]:
    """Send ``head`` (request line and headers) verbatim; the status and body answered."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head_part, _, body = data.partition(b"\r\n\r\n")
    return int(head_part.split()[1]), body


def session_count(client: httpx.Client) -> int:
    return len(client.get("/sessions").json())


@pytest.mark.parametrize(("content_type", "body"), [
    (None, b'{"title": "beacon"}'),                      # sendBeacon / no-cors fetch of an untyped Blob
    ("text/plain;charset=UTF-8", b'{"title": "text"}'),  # sendBeacon of a string
    ("application/x-www-form-urlencoded", b""),          # a field-less HTML form
    ("multipart/form-data; boundary=x", b"--x--\r\n"),
    (None, b""),                                         # an empty untyped POST
])
def test_a_body_that_is_not_declared_json_is_415_and_creates_nothing(
    bare: httpx.Client, client: httpx.Client, content_type: str | None, body: bytes
) -> None:
    before = session_count(client)
    headers = {"Content-Type": content_type} if content_type else {}
    response = bare.post("/sessions", content=body, headers=headers)
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.json()["error"]
    assert session_count(client) == before


def test_put_needs_json_too(bare: httpx.Client, client: httpx.Client) -> None:
    sid = client.post("/sessions").json()["id"]
    assert bare.put(f"/sessions/{sid}", content=b'{"title": "x"}').status_code == 415
    assert client.get(f"/sessions/{sid}").json()["title"] == ""


def test_json_with_an_empty_body_is_served(bare: httpx.Client) -> None:
    response = bare.post("/sessions", headers={"Content-Type": "application/json"})
    assert response.status_code == 201


def test_a_foreign_origin_is_refused(client: httpx.Client) -> None:
    before = session_count(client)
    for origin in ("https://evil.example", "null", "http://127.0.0.1.evil.example"):
        post = client.post("/sessions", json={}, headers={"Origin": origin})
        get = client.get("/agents", headers={"Origin": origin})
        assert (post.status_code, get.status_code) == (403, 403), origin
        assert "--cors-origin" in post.json()["error"]
    assert session_count(client) == before


def test_the_servers_own_origin_and_configured_origins_are_served(client: httpx.Client, server: RunningServer) -> None:
    for origin in (server.url, ALLOWED_ORIGIN):
        assert client.post("/sessions", json={}, headers={"Origin": origin}).status_code == 201, origin


def test_a_foreign_host_is_refused(server: RunningServer) -> None:
    status, body = raw_request(server, "GET /agents HTTP/1.1\nHost: evil.example:8787\nConnection: close\n")
    assert status == 400
    assert b"--allowed-host evil.example" in body
    status, _ = raw_request(server, "POST /sessions HTTP/1.1\nHost: rebind.evil.example\n"
                                    "Content-Type: application/json\nContent-Length: 2\nConnection: close\n\n{}")
    assert status == 400


@pytest.mark.parametrize("host", ["localhost:8787", "127.0.0.1", "[::1]:1", ALLOWED_HOST, "api.corp.example",
                                  "WINGMAN.LAN."])
def test_bound_loopback_and_configured_hosts_are_served(server: RunningServer, host: str) -> None:
    status, _ = raw_request(server, f"GET /health HTTP/1.1\nHost: {host}\nConnection: close\n")
    assert status == 200


def test_replay_cassette_outside_the_work_root_is_refused_without_reading_it(
    client: httpx.Client, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0\n")
    answers = []
    for cassette in (str(outside), str(tmp_path / "missing.jsonl"), "../../../etc/passwd"):
        response = client.post("/agents", json={"name": "r", "provider": "replay", "options": {"cassette": cassette}})
        assert response.status_code == 400, cassette
        assert response.json()["fields"] == ["options.cassette"]
        answers.append(response.json()["error"].replace(repr(cassette), "PATH"))
    assert len(set(answers)) == 1  # the same answer whether the file exists or not
    assert "root:x" not in answers[0] and "JSON" not in answers[0]


def test_replay_cassette_under_the_work_root_is_used(client: httpx.Client, work_root: Path) -> None:
    (work_root / "empty.jsonl").write_text("")
    response = client.post("/agents", json={"name": "r", "provider": "replay", "options": {"cassette": "empty.jsonl"}})
    assert response.status_code == 201, response.text
    assert response.json()["options"] == {"cassette": "empty.jsonl"}


def test_replay_cassette_symlinked_out_of_the_root_is_refused(
    client: httpx.Client, work_root: Path, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    target.write_text("")
    link = work_root / "link.jsonl"
    link.symlink_to(target)
    try:
        body = {"name": "r", "provider": "replay", "options": {"cassette": "link.jsonl"}}
        assert client.post("/agents", json=body).status_code == 400
    finally:
        link.unlink()
