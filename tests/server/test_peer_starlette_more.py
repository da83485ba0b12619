"""Starlette's and FastAPI's request tests (encode/starlette ``tests/test_requests.py``,
``tests/test_routing.py``, ``tests/middleware/test_cors.py``; fastapi/fastapi
``tests/test_tutorial/test_body*``, ``tests/test_request_body_parameters_media_type.py``)
ported as checks of our server on odd but valid HTTP: charset parameters and BOMs, empty and
chunked bodies, ``Expect: 100-continue``, pipelined requests on one keep-alive connection,
very long URLs, HEAD and OPTIONS. Each runs on both of uvicorn's HTTP implementations: h11 (the
tests' harness) and httptools (what ``wingman-actors serve`` runs on).

Differences pinned here: Starlette reads a ``charset`` parameter to decode a body; we read JSON as UTF-8 (or UTF-16/32
told by its bytes, as RFC 8259 and ``json.loads`` do) whatever the parameter says. FastAPI
answers a malformed body with 422; we answer 400 ``{"error"}``."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import FUNCTIONS_MODULE, RunningServer, scripted_agent
from tests.server.test_peer_starlette import assert_error
from wingman_actors.server import ServerConfig

WIRES = ["h11", pytest.param("httptools", marks=pytest.mark.skipif(
    importlib.util.find_spec("httptools") is None, reason="httptools is not installed"))]


WIRE_OF: dict[int, str] = {}  # a server's port -> its HTTP implementation


@pytest.fixture(scope="module", params=WIRES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           work_root: Path) -> Iterator[RunningServer]:
    """The module's server, on each HTTP implementation uvicorn has: the tests' h11, and httptools,
    which ``wingman-actors serve`` takes when it is installed (uvicorn's ``http="auto"``)."""
    db = tmp_path_factory.mktemp("db") / "wingman.db"
    config = ServerConfig(db_path=db, work_root=work_root, functions=(FUNCTIONS_MODULE,), entry_points=False)
    running = RunningServer(config, http=request.param).start()
    WIRE_OF[running.port] = request.param
    try:
        yield running
    finally:
        running.stop()


def raw(server: RunningServer, data: bytes) -> bytes:
    """Send ``data`` on one connection (its last request says ``Connection: close``); all the server
    answers, up to its closing of the connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def head_of(server: RunningServer, data: bytes) -> tuple[socket.socket, bytes]:
    """Send ``data``; the open connection and the first answer's status line and headers."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    sock.sendall(data)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return sock, received


def host(server: RunningServer) -> str:
    return f"Host: 127.0.0.1:{server.port}\r\n"


# --- HEAD and OPTIONS -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/health", "/agents", "/runs"])
def test_head_on_a_get_route_answers_as_the_get_without_a_body(client: httpx.Client, path: str) -> None:
    """From encode/starlette tests/test_routing.py::test_router (HEAD answered on GET routes)."""
    response, get = client.head(path), client.get(path)
    assert response.status_code == get.status_code == 200
    assert response.headers["content-length"] == str(len(get.content))
    assert response.headers["content-type"] == get.headers["content-type"]
    assert response.content == b""


def test_options_without_a_cors_preflight_is_405_naming_the_paths_methods(client: httpx.Client) -> None:
    """From encode/starlette tests/middleware/test_cors.py::test_cors_preflight_request (a bare
    OPTIONS, not a preflight, is not answered by CORS there either)."""
    agent = scripted_agent(client, name="options")
    assert_error(client.options(f"/agents/{agent}"), 405, "it allows DELETE, GET, PUT")


# --- Content-Type and charsets --------------------------------------------------------------


@pytest.mark.parametrize("content_type", [
    "application/json;charset=UTF-8", "APPLICATION/JSON; CHARSET=UTF-8", "application/json ;charset=utf-8",
    "application/problem+json", "application/json; charset=utf-16",
])
def test_a_json_content_type_with_parameters_or_in_any_case_is_taken(client: httpx.Client, content_type: str) -> None:
    """From fastapi tests/test_request_body_parameters_media_type.py and encode/starlette
    tests/test_requests.py::test_request_json (``application/json; charset=...``)."""
    response = client.post("/sessions", content=b'{"title": "typed"}', headers={"Content-Type": content_type})
    assert response.status_code == 201, response.text
    assert response.json()["title"] == "typed"


@pytest.mark.parametrize("content_type", [
    "application/jsonx", "text/json", "multipart/form-data; boundary=x", "application/json, text/plain",
])
def test_a_content_type_that_only_looks_like_json_is_415_and_stores_nothing(
    client: httpx.Client, content_type: str,
) -> None:
    """From fastapi tests/test_request_body_parameters_media_type.py (a body of another type)."""
    before = len(client.get("/sessions").json())
    assert_error(client.post("/sessions", content=b"{}", headers={"Content-Type": content_type}), 415,
                 "Content-Type: application/json")
    assert len(client.get("/sessions").json()) == before


def test_a_latin1_body_declared_as_latin1_is_400_telling_to_send_utf8(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py::test_request_json (Starlette decodes by the
    charset; we read JSON as UTF-8, as RFC 8259 requires, and say so)."""
    body = '{"title": "café"}'.encode("latin-1")
    response = client.post("/sessions", content=body, headers={"Content-Type": "application/json; charset=latin-1"})
    assert assert_error(response, 400, "UTF-8", "0xe9")["fields"] == ["body"]


def test_a_utf8_bom_before_the_json_is_skipped(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py::test_request_json (with a BOM, as Windows tools write)."""
    response = client.post("/sessions", content=b'\xef\xbb\xbf {"title": "bom"}\n')
    assert response.status_code == 201, response.text
    assert response.json()["title"] == "bom"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_utf16_or_utf32_body_is_read_by_its_bytes(client: httpx.Client, encoding: str) -> None:
    """From encode/starlette tests/test_requests.py::test_request_json (RFC 8259's encodings)."""
    response = client.post("/sessions", content='{"title": "é☃"}'.encode(encoding))
    assert response.status_code == 201, response.text
    assert response.json()["title"] == "é☃"


def test_two_boms_are_malformed_json(client: httpx.Client) -> None:
    """From fastapi tests/test_tutorial/test_body (a body that is not JSON)."""
    assert_error(client.post("/sessions", content=b"\xef\xbb\xbf\xef\xbb\xbf{}"), 400, "malformed JSON body")


# --- empty and odd bodies -------------------------------------------------------------------


def test_an_empty_body_creates_a_session_but_an_agent_needs_one(client: httpx.Client) -> None:
    """From fastapi tests/test_tutorial/test_body/test_tutorial001.py::test_post_no_body."""
    assert client.post("/sessions", content=b"").status_code == 201
    assert assert_error(client.post("/agents", content=b""), 400, "body is required")["fields"] == ["body"]


def test_an_empty_body_on_a_run_is_read_as_an_empty_object_every_field_of_it_being_optional(
    client: httpx.Client,
) -> None:
    """From fastapi tests/test_tutorial/test_body/test_tutorial001.py::test_post_no_body (a 422 there: that
    body has required fields; a run's has none, so no body is ``{}``, as on POST /sessions)."""
    fid = client.post("/formations", json={"name": "empty", "nodes": [
        {"name": "only", "kind": "function", "function": "clean"}], "edges": []}).json()["id"]
    bare, given = client.post(f"/formations/{fid}/run", content=b""), client.post(f"/formations/{fid}/run", json={})
    assert bare.status_code == given.status_code, bare.text
    assert bare.json()["kind"] == given.json()["kind"] == "input"  # None is not a str, with or without a body
    assert client.post(f"/formations/{fid}/run", json={"input": " x "}).json()["output"] == "x"


@pytest.mark.parametrize(("body", "words"), [
    (b"  \n", ("malformed JSON body",)), (b"[]", ("must be a JSON object",)), (b"{} {}", ("Extra data",)),
    (b'"title"', ("must be a JSON object",)),
])
def test_a_body_that_is_no_json_object_is_400_saying_what_is_wrong(
    client: httpx.Client, body: bytes, words: tuple[str, ...],
) -> None:
    """From fastapi tests/test_tutorial/test_body/test_tutorial001.py::test_post_broken_body and
    ::test_post_form_for_json (FastAPI's 422; ours is a 400)."""
    assert_error(client.post("/sessions", content=body), 400, *words)


def test_a_key_given_twice_in_a_body_takes_its_last_value(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py::test_request_json (JSON as ``json.loads`` reads it,
    as Starlette and FastAPI do: the last of duplicate keys wins)."""
    response = client.post("/sessions", content=b'{"title": "first", "title": "last"}')
    assert response.json()["title"] == "last"


def test_a_delete_with_a_body_that_is_not_json_deletes_without_reading_it(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py::test_request_body (a body the route does not read)."""
    agent = scripted_agent(client, name="deleted")
    response = client.request("DELETE", f"/agents/{agent}", content=b"<not json>",
                              headers={"Content-Type": "text/plain"})
    assert response.json() == {"status": "deleted"}
    assert client.get(f"/agents/{agent}").status_code == 404


def chunks_of(data: bytes, *cuts: int) -> Iterator[bytes]:
    start = 0
    for cut in (*cuts, len(data)):
        yield data[start:cut]
        start = cut


def test_a_chunked_body_cut_inside_a_bom_and_a_character_is_read_whole(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py::test_chunked_encoding (a body sent in chunks)."""
    data = '\ufeff{"title": "naïve ☃"}'.encode()
    cut = data.index("☃".encode()) + 1
    response = client.post("/sessions", content=chunks_of(data, 1, 2, cut))
    assert response.status_code == 201, response.text
    assert response.json()["title"] == "naïve ☃"


def test_an_empty_chunked_body_is_an_empty_body(server: RunningServer) -> None:
    """From encode/starlette tests/test_requests.py::test_request_body (an empty stream)."""
    answer = raw(server, (f"POST /sessions HTTP/1.1\r\n{host(server)}Content-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n").encode())
    assert answer.startswith(b"HTTP/1.1 201 "), answer[:200]


# --- Expect: 100-continue, keep-alive, long URLs ----------------------------------------------


def test_expect_100_continue_is_answered_and_the_body_then_read(server: RunningServer) -> None:
    """From encode/starlette tests/test_requests.py (a client waiting for 100 Continue, as curl does
    past 1 KiB)."""
    body = json.dumps({"title": "continued"}).encode()
    sock, first = head_of(server, (f"POST /sessions HTTP/1.1\r\n{host(server)}Content-Type: application/json\r\n"
                                   f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
                                   ).encode())
    with sock:
        assert first.startswith(b"HTTP/1.1 100 "), first
        sock.sendall(body)
        rest = first.split(b"\r\n\r\n", 1)[1]
        while chunk := sock.recv(65536):
            rest += chunk
    assert rest.startswith(b"HTTP/1.1 201 ") and b'"title":"continued"' in rest, rest[:300]


@pytest.mark.parametrize(("headers", "status"), [
    ("Content-Type: application/json\r\nContent-Length: 99999999\r\n", b"413"),
    ("Content-Type: text/plain\r\nContent-Length: 5\r\n", b"415"),
])
def test_expect_100_continue_with_a_body_refused_anyway_is_answered_without_waiting_for_it(
    server: RunningServer, headers: str, status: bytes,
) -> None:
    """From encode/starlette tests/test_requests.py (Expect: 100-continue): a body the server would
    refuse is refused before the client sends it, never with a 100 first."""
    sock, first = head_of(server, f"POST /sessions HTTP/1.1\r\n{host(server)}{headers}Expect: 100-continue\r\n\r\n"
                          .encode())
    sock.close()
    assert first.startswith(b"HTTP/1.1 " + status), first


def test_pipelined_requests_on_one_connection_are_answered_in_order(server: RunningServer) -> None:
    """From encode/starlette tests/test_requests.py (several requests on one keep-alive connection)."""
    body = b'{"title": "pipelined"}'
    answer = raw(server, (f"POST /sessions HTTP/1.1\r\n{host(server)}Content-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n").encode() + body
                 + f"GET /health HTTP/1.1\r\n{host(server)}\r\n".encode()
                 + f"GET /sessions HTTP/1.1\r\n{host(server)}Connection: close\r\n\r\n".encode())
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)
    assert statuses == [b"201", b"200", b"200"], answer[:500]
    created = answer.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1", 1)[0]
    listed = answer.rsplit(b"\r\n\r\n", 1)[1]
    assert json.loads(created)["id"] in [s["id"] for s in json.loads(listed)]


def test_a_415_keeps_the_connection_and_a_413_closes_it(server: RunningServer) -> None:
    """From encode/starlette tests/middleware (an error answered before the body is read)."""
    after_415 = raw(server, (f"POST /sessions HTTP/1.1\r\n{host(server)}Content-Type: text/plain\r\n"
                             f"Content-Length: 5\r\n\r\nhello").encode()
                    + f"GET /health HTTP/1.1\r\n{host(server)}Connection: close\r\n\r\n".encode())
    assert after_415.count(b"HTTP/1.1 ") == 2 and after_415.endswith(b'{"status":"ok"}'), after_415[-300:]
    too_big = 5 * 1024 * 1024
    after_413 = raw(server, (f"POST /sessions HTTP/1.1\r\n{host(server)}Content-Type: application/json\r\n"
                             f"Content-Length: {too_big}\r\n\r\n").encode())
    assert after_413.startswith(b"HTTP/1.1 413 ") and b"connection: close" in after_413.lower(), after_413[:300]


def test_many_requests_in_turn_on_one_keep_alive_connection_are_each_answered(server: RunningServer) -> None:
    """From encode/starlette tests/test_requests.py (a client reusing its connection)."""
    with httpx.Client(base_url=server.url, timeout=30, headers={"Content-Type": "application/json"},
                      limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)) as one:
        ids = [one.post("/sessions", json={"title": f"s{i}"}).json()["id"] for i in range(20)]
        listed = {s["id"] for s in one.get("/sessions").json()}
    assert set(ids) <= listed and len(set(ids)) == 20


def test_a_very_long_url_is_answered_in_the_error_shape(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py::test_request_url (a long URL)."""
    started = time.monotonic()
    assert_error(client.get("/agents/" + "A" * 60000), 404, "agent not found")
    assert client.get("/runs", params={"formation_id": "F" * 60000}).json() == []
    assert time.monotonic() - started < 30


def test_an_http_10_request_is_answered_and_the_connection_closed(server: RunningServer) -> None:
    """From encode/starlette tests/test_requests.py (an old client without keep-alive)."""
    answer = raw(server, f"GET /health HTTP/1.0\r\n{host(server)}\r\n".encode())
    assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == b"200" and answer.endswith(b'{"status":"ok"}')


def test_a_client_gone_before_its_body_ended_stores_nothing_and_the_server_goes_on(
    server: RunningServer, client: httpx.Client,
) -> None:
    """From encode/starlette tests/test_requests.py::test_request_disconnect (the client leaves while
    its body is read)."""
    before = len(client.get("/sessions").json())
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall((f"POST /sessions HTTP/1.1\r\n{host(server)}Content-Type: application/json\r\n"
                      "Content-Length: 100\r\n\r\n{\"title\": \"half").encode())
    assert client.get("/health").json() == {"status": "ok"}
    assert len(client.get("/sessions").json()) == before


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "GZIP", "gzip, identity"])
def test_a_compressed_body_is_415_saying_to_send_it_uncompressed_and_stores_nothing(
    client: httpx.Client, coding: str,
) -> None:
    """From fastapi tests/test_tutorial/test_custom_request_and_route/test_tutorial001.py (a gzip request
    body, which FastAPI's tutorial decodes with a custom request class): we decode no content coding,
    so the body is refused as such, never read as if it were plain JSON (a ``deflate`` body that happens
    to be plain JSON would be taken, one that is really deflated called "not UTF-8")."""
    before = len(client.get("/sessions").json())
    body = gzip.compress(b'{"title": "zipped"}') if coding.lower().startswith("gzip") else b'{"title": "plain"}'
    response = client.post("/sessions", content=body, headers={"Content-Encoding": coding})
    assert_error(response, 415, "Content-Encoding", "uncompressed")
    assert len(client.get("/sessions").json()) == before


def test_an_identity_content_encoding_is_no_encoding(client: httpx.Client) -> None:
    """From fastapi tests/test_tutorial/test_custom_request_and_route/test_tutorial001.py (an uncompressed
    body beside the gzip one)."""
    response = client.post("/sessions", content=b'{"title": "as is"}', headers={"Content-Encoding": "identity"})
    assert response.status_code == 201, response.text


def test_a_request_in_absolute_form_is_routed_by_its_path_as_serve_parses_it(server: RunningServer) -> None:
    """From encode/starlette tests/test_requests.py::test_request_url (``client.get("https://example.org:123/")``:
    the URL's path is what is routed; RFC 9112 section 3.2.2 has servers accept the absolute form). With
    httptools, which ``serve`` runs on (a dependency), it is; uvicorn's h11 implementation, which the tests'
    harness uses, routes the whole URL as the path, a 404 (uvicorn's, not ours: pinned so a change shows)."""
    answer = raw(server, f"GET http://127.0.0.1:{server.port}/health HTTP/1.1\r\n{host(server)}Connection: close"
                         "\r\n\r\n".encode())
    if WIRE_OF[server.port] == "httptools":
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"status":"ok"}'), answer[:300]
    else:
        assert answer.startswith(b"HTTP/1.1 404 ") and b"no route GET http://" in answer, answer[:300]


@pytest.mark.parametrize(("target", "status", "words"), [
    ("/%61gents", b"200", b"["),
    ("//agents", b"404", b"no route GET //agents"),
    ("/./agents", b"404", b"no route GET /./agents"),
    ("/runs?st%61tus=failed&status=failed", b"400", b"status: given 2 times"),
])
def test_a_raw_target_is_routed_by_its_decoded_path_as_sent_never_normalised(
    server: RunningServer, target: str, status: bytes, words: bytes,
) -> None:
    """From encode/starlette tests/test_routing.py::test_router and tests/test_requests.py::test_request_url
    (the path is percent-decoded, then matched as it is: no dot-segment or double-slash clean-up, which
    would answer a path other than the one asked; a query key is decoded before it is counted)."""
    answer = raw(server, f"GET {target} HTTP/1.1\r\n{host(server)}Connection: close\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 " + status + b" ") and words in answer.rsplit(b"\r\n\r\n", 1)[1], answer[:300]


def test_options_asterisk_is_a_404_in_the_error_shape(server: RunningServer) -> None:
    """From encode/starlette tests/middleware/test_cors.py (OPTIONS requests): ``OPTIONS *`` asks the
    server itself, which has no such route."""
    answer = raw(server, f"OPTIONS * HTTP/1.1\r\n{host(server)}Connection: close\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 404 ") and b'{"error":"no route OPTIONS *' in answer, answer[:300]


def test_broken_chunk_framing_is_uvicorns_plain_text_400_not_the_json_error_shape(server: RunningServer) -> None:
    """From encode/starlette tests/test_requests.py::test_chunked_encoding (with framing that is not
    HTTP): answered by uvicorn before the app sees a request, as ``text/plain``: the one error not in
    the ``{"error"}`` shape (pinned so a change shows)."""
    answer = raw(server, (f"POST /sessions HTTP/1.1\r\n{host(server)}Content-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\n{}\r\nzz\r\n").encode())
    assert answer.startswith(b"HTTP/1.1 400 ") and b"content-type: text/plain" in answer.lower(), answer[:300]
