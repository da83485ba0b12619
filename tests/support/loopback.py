"""A tiny HTTP server on 127.0.0.1 for speaking a provider's wire format in tests.

Each test scripts the answers: a handler gets the parsed request and returns a
:class:`Reply` (status, headers, body) whose body may be bytes or an iterator of byte
chunks (flushed one by one, for SSE and NDJSON streaming). :meth:`Reply.never` never
answers, and ``Reply(..., hang=True)`` stops before the end of its body; both hold the
connection until the client closes it, which the server counts (``wait_closed``).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    peer: Any = None  # the client's (host, port): one per connection
    names: list[str] = field(default_factory=list)  # the header names in the order sent, repeats kept

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # after the body's chunks, wait for the client to hang up

    @classmethod
    def never(cls) -> Reply:
        """No answer at all: the request is read, then nothing is sent until the client closes."""
        return cls(status=0, hang=True)

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
        return cls(status, json.dumps(data).encode(), {"content-type": "application/json", **(headers or {})})

    @classmethod
    def sse(cls, events: Iterable[tuple[str | None, Any]], status: int = 200) -> Reply:
        """Server-sent events: (event name or None, data); data dicts are JSON-encoded."""

        def chunks() -> Iterator[bytes]:
            for name, data in events:
                text = data if isinstance(data, str) else json.dumps(data)
                head = f"event: {name}\n" if name else ""
                yield f"{head}data: {text}\n\n".encode()

        return cls(status, chunks(), {"content-type": "text/event-stream", "cache-control": "no-cache"})

    @classmethod
    def ndjson(cls, lines: Iterable[Any], status: int = 200) -> Reply:
        return cls(status, (json.dumps(x).encode() + b"\n" for x in lines), {"content-type": "application/x-ndjson"})


Handler = Callable[[Request], Reply]


class LoopbackServer:
    """Serve scripted replies on 127.0.0.1; records every request in ``.requests``.

    Use :meth:`queue` to answer the next requests in order, or set ``.handler`` for logic.
    """

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.replies: list[Reply | Handler] = []
        self.handler: Handler | None = None
        self.closed = 0  # connections the client closed while a reply was hanging
        self.closed_at: list[float] = []  # when (time.monotonic()) each of them closed
        self.accepted = 0  # connections the server accepted
        self.ended = 0  # connections whose handler has finished (the client closed it, or the server stopped)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                # Connection threads die with the client's keep-alive socket; name them
                # so the thread-leak guard can tell them from the code under test's.
                threading.current_thread().name = "loopback-http-conn"
                with outer._lock:
                    outer.accepted += 1
                super().setup()

            def finish(self) -> None:
                try:
                    super().finish()
                finally:
                    with outer._lock:
                        outer.ended += 1

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, self.client_address,
                    [k.lower() for k in self.headers.keys()],
                )
                reply = outer._reply_for(req)
                if reply.status == 0:
                    self._hang()
                    return
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if isinstance(reply.body, bytes):
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                else:
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    try:
                        for chunk in reply.body:
                            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                            self.wfile.flush()
                        if reply.hang:
                            self._hang()
                            return
                        self.wfile.write(b"0\r\n\r\n")
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                self.wfile.flush()

            def _hang(self) -> None:
                """Send nothing more; return once the client has closed the connection
                (or the server stops), counting a close in ``outer.closed``."""
                conn = self.connection
                while not outer._stopping.is_set():
                    ready, _, _ = select.select([conn], [], [], 0.02)
                    if not ready:
                        continue
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        with outer._lock:
                            outer.closed += 1
                            outer.closed_at.append(time.monotonic())
                        break
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        class _Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that hangs up early (a stream closed on purpose) is not an error.
                import sys

                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self._server = _Server(("127.0.0.1", 0), _H)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="loopback-http", daemon=True
        )

    def _reply_for(self, req: Request) -> Reply:
        with self._lock:
            self.requests.append(req)
            item: Reply | Handler | None = self.replies.pop(0) if self.replies else self.handler
        if item is None:
            return Reply.json({"error": {"message": "loopback server: no reply scripted"}}, status=599)
        return item(req) if callable(item) else item

    def queue(self, *replies: Reply | Handler) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def wait_closed(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until ``count`` hanging connections have been closed by the client."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.closed >= count:
                    return True
            time.sleep(0.005)
        return False

    def wait_request_closed(self, timeout: float = 5.0) -> bool:
        """Wait until the client has closed the connection of its one request: a hanging
        request closed (as :meth:`wait_closed` counts), or, when the client gave up before
        this server's handler had read the request (a loaded machine, a short timeout),
        every connection it opened ended. A connection left open makes this False."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending, _, _ = select.select([self._server.socket], [], [], 0)
            with self._lock:
                if self.closed >= 1 or (not pending and self.accepted >= 1 and self.accepted == self.ended):
                    return True
            time.sleep(0.005)
        return False

    def wait_all_closed(self, timeout: float = 5.0) -> bool:
        """Wait until no connection to the server is open: every accepted connection has
        ended and none waits in the listen backlog. A client that left a connection open
        (whether or not its request had been sent) makes this False."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending, _, _ = select.select([self._server.socket], [], [], 0)
            with self._lock:
                if not pending and self.accepted == self.ended:
                    return True
            time.sleep(0.01)
        return False

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (for connection-refused tests)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
