"""``--max-body-bytes``: a request body larger than the limit is a 413 in the error shape,
found while it is read (with or without ``Content-Length``), and nothing is stored."""

from __future__ import annotations

import argparse
import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import RunningServer
from wingman_actors.server import ServerConfig
from wingman_actors.server._cli import add_serve_parser, build_config
from wingman_actors.server._config import DEFAULT_MAX_BODY_BYTES

LIMIT = 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> Iterator[RunningServer]:
    config = ServerConfig(db_path=tmp_path_factory.mktemp("db") / "w.db", work_root=work_root, entry_points=False,
                          max_body_bytes=LIMIT)
    running = RunningServer(config).start()
    try:
        yield running
    finally:
        running.stop()


def agent_body(size: int, name: str = "big") -> bytes:
    """A ``POST /agents`` body of exactly ``size`` bytes."""
    empty = json.dumps({"name": name, "provider": "scripted", "instructions": ""}).encode()
    return json.dumps({"name": name, "provider": "scripted", "instructions": "x" * (size - len(empty))}).encode()


def chunks(body: bytes, size: int = 100) -> Iterator[bytes]:
    """``body`` as an iterator, which httpx sends chunked, without ``Content-Length``."""
    for i in range(0, len(body), size):
        yield body[i:i + size]


def assert_too_large(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert f"{LIMIT} bytes" in error and "--max-body-bytes" in error


def agent_names(client: httpx.Client) -> list[str]:
    return [a["name"] for a in client.get("/agents").json()]


def test_a_body_larger_than_the_limit_is_413_and_stores_nothing(client: httpx.Client) -> None:
    response = client.post("/agents", content=agent_body(LIMIT + 1))
    assert_too_large(response)
    assert "big" not in agent_names(client)


def test_a_body_of_exactly_the_limit_is_accepted(client: httpx.Client) -> None:
    response = client.post("/agents", content=agent_body(LIMIT, "just fits"))
    assert response.status_code == 201, response.text


def test_a_chunked_body_larger_than_the_limit_is_413(client: httpx.Client) -> None:
    request = client.build_request("POST", "/agents", content=chunks(agent_body(LIMIT * 3)))
    assert "content-length" not in request.headers and request.headers["transfer-encoding"] == "chunked"
    assert_too_large(client.send(request))
    assert "big" not in agent_names(client)


def test_a_chunked_body_within_the_limit_is_accepted(client: httpx.Client) -> None:
    response = client.post("/agents", content=chunks(agent_body(LIMIT - 10, "chunked")))
    assert response.status_code == 201, response.text


def test_the_limit_holds_for_every_route_with_a_body(client: httpx.Client) -> None:
    big = json.dumps({"input": "x" * LIMIT}).encode()
    for method, path in (("POST", "/formations/x/run"), ("PUT", "/agents/x"), ("POST", "/fleets/x/run/stream")):
        assert_too_large(client.request(method, path, content=big))


def test_an_endless_chunked_body_is_answered_413_without_being_read_to_its_end(server: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"POST /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        sent = 0
        answered = False
        while sent < 64 * LIMIT and not answered:
            sock.sendall(b"100\r\n" + b" " * 256 + b"\r\n")  # a chunk of 256 bytes, and never the last one
            sent += 256
            answered = bool(select.select([sock], [], [], 0.01)[0])
        assert answered, f"no answer after {sent} bytes"
        head = sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 413 "), head[:200]
    assert sent < 16 * LIMIT


def test_a_content_length_over_the_limit_is_answered_before_the_body_is_sent(server: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"POST /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000000000\r\n\r\n")
        head = sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 413 "), head[:200]


def test_serve_takes_the_limit_as_a_flag_with_a_documented_default() -> None:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers(dest="command"))
    assert build_config(parser.parse_args(["serve", "--max-body-bytes", "2048"])).max_body_bytes == 2048
    assert build_config(parser.parse_args(["serve"])).max_body_bytes == DEFAULT_MAX_BODY_BYTES == 4 * 1024 * 1024
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--max-body-bytes", "0"])


def test_a_limit_that_is_not_a_positive_integer_is_refused() -> None:
    with pytest.raises(ValueError, match="max_body_bytes"):
        ServerConfig(max_body_bytes=0)
