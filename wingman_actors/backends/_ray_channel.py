"""The data path of the Ray backend: a direct connection between a replica's driver-side
proxy and its Ray actor.

A Ray actor call costs about a millisecond of CPU on each side (task submission, the
reply's object, ``ray.get``): on a small machine running a dozen replicas that cost, not
the node's work, bounds an agent formation's makespan. So Ray places, starts, restarts
and kills the replicas' processes, and carries the control calls (``interrupt``,
``ping``), while each input and its answer go over a socket the actor listens on: one
pickled request, then the pickled messages of :mod:`._ray_wire` in order, the last one a
:class:`~._ray_wire.Done`, :class:`~._ray_wire.Suspended` or :class:`~._ray_wire.Failed`
(tens of microseconds a message).

The connection is authenticated (``multiprocessing.connection``'s HMAC challenge, with a
random key the driver hands the actor through Ray), the actor listens on its node's
address (the loopback for a local Ray the formation started), and the socket sends TCP
keepalives, so a node that vanishes from a cluster is noticed. A connection that closes
mid-exchange means the actor's process died: :class:`ChannelLost`.

In the middle of an exchange the actor may ask for the run's Blackboard, which stays in
the driver: a :class:`~._ray_wire.BoardOp` is answered by the driver's end (the board
callable given to :meth:`Channel.exchange`) with a :class:`~._ray_wire.BoardAnswer` on
the same connection, which the node reads through its :class:`Link` (see :mod:`._ray_board`).
"""

from __future__ import annotations

import logging
import pickle
import socket
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, Listener, answer_challenge, deliver_challenge
from typing import Any, cast

from ..errors import WingmanError, shippable_error
from ._ray_wire import BoardAnswer, BoardOp, Done, Failed, Process, Suspended

__all__ = ["BoardAnswerer", "Channel", "ChannelLost", "ChannelServer", "Link"]

log = logging.getLogger("wingman_actors.backends")

_FINAL = (Done, Suspended, Failed)


_SCALARS = frozenset({str, bytes, int, float, bool, type(None)})


def _dumps(value: Any) -> bytes:
    """``value`` pickled as Ray would (cloudpickle: a class or function that the other
    process cannot import goes by value, as do the modules registered for that)."""
    from ray import cloudpickle

    data: bytes = cloudpickle.dumps(value, protocol=5)  # type: ignore[no-untyped-call]
    return data


def _request(request: Any) -> bytes:
    """A request to the actor, pickled: a plain input with the C pickler (several times
    faster), anything else as Ray would (the input may hold classes the actor's process
    cannot import)."""
    if type(request) is Process and type(request.payload) in _SCALARS:
        return pickle.dumps(request, protocol=5)
    return _dumps(request)


def _reply(message: Any) -> bytes:
    """A message to the driver, pickled: with the C pickler when it can (the driver runs
    the same code, so what the actor imports by name the driver can too), else as Ray
    would (a class the actor received by value goes back by value)."""
    try:
        return pickle.dumps(message, protocol=5)
    except Exception:
        return _dumps(message)


def _tune(sock: socket.socket) -> None:
    """No delay for small messages, and TCP keepalives: a peer gone with its machine is
    noticed within ~15 s instead of never."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 5), ("TCP_KEEPINTVL", 2), ("TCP_KEEPCNT", 4)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def _shut(conn: Connection) -> None:
    """Shut the connection's socket down both ways: a read blocked on it returns at once
    (closing the descriptor alone would not wake it)."""
    try:
        sock = socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return  # already closed
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()  # a duplicate of the descriptor


def _tune_accepted(conn: Connection) -> None:
    sock = socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM)
    try:
        _tune(sock)
    finally:
        sock.close()  # a duplicate of the descriptor: the connection keeps its own


def _connect(address: tuple[str, int], key: bytes, timeout: float) -> Connection:
    """What ``multiprocessing.connection.Client(address, authkey=key)`` does, with a time
    limit on reaching the address (an unreachable one would block for minutes)."""
    sock = socket.create_connection(address, timeout=timeout)
    try:
        sock.settimeout(None)  # blocking again: the connection's reads wait for the answer
        _tune(sock)
    except BaseException:
        sock.close()
        raise
    conn: Connection = Connection(sock.detach())
    try:
        if not conn.poll(timeout):  # an actor that accepted but never challenges: not forever
            raise TimeoutError(f"the node's Ray actor at {address[0]}:{address[1]} accepted the connection but "
                               f"did not start the handshake within {timeout:g}s")
        answer_challenge(conn, key)
        deliver_challenge(conn, key)
    except BaseException:
        conn.close()
        raise
    return conn


class ChannelLost(WingmanError, RuntimeError):
    """The connection to a replica's Ray actor closed mid-exchange: its process died."""


BoardAnswerer = Callable[[BoardOp], BoardAnswer]
"""The driver's end of a run's Blackboard for one exchange (:class:`~._ray_board.DriverBoard`)."""


class Channel:
    """The driver's end: one proxy's connection to its replica's actor.

    Args:
        address: where the actor listens (``ChannelServer.address``).
        key: the authentication key the actor was given.
        timeout: how long reaching the address may take.
    """

    def __init__(self, address: tuple[str, int], key: bytes, timeout: float = 5.0) -> None:
        self._conn = _connect((address[0], address[1]), key, timeout)

    def exchange(self, request: Any, board: BoardAnswerer | None = None) -> Iterator[Any]:
        """Send ``request``; yield the actor's messages up to and including the final
        one (a :class:`Failed` is raised as its error instead). Raises
        :class:`ChannelLost` when the connection closes first; the request is sent before
        the first message is asked for, whether or not the caller iterates.

        ``board`` answers the Blackboard operations the node asks for meanwhile (the run's
        board: see :mod:`._ray_board`); each is answered before the next message is read,
        and none is yielded."""
        conn = self._conn
        try:
            conn.send_bytes(_request(request))
        except (OSError, EOFError) as exc:
            raise ChannelLost(f"the connection to the node's Ray actor closed ({str(exc) or type(exc).__name__})") from exc
        return self._replies(conn, board)

    @staticmethod
    def _replies(conn: Connection, board: BoardAnswerer | None) -> Iterator[Any]:
        while True:
            try:
                data = conn.recv_bytes()
            except (OSError, EOFError) as exc:
                raise ChannelLost(
                    f"the connection to the node's Ray actor closed ({str(exc) or type(exc).__name__})"
                ) from exc
            message = pickle.loads(data)
            kind = type(message)
            if kind is Failed:
                raise message.error
            if kind is BoardOp:
                try:
                    conn.send_bytes(_answer(board, message))
                except (OSError, EOFError) as exc:
                    raise ChannelLost(
                        f"the connection to the node's Ray actor closed ({str(exc) or type(exc).__name__})"
                    ) from exc
                continue
            yield message
            if kind in _FINAL:
                return

    def closed(self) -> bool:
        """Whether the actor closed the connection (between exchanges it sends nothing,
        so anything to read means its end closed: its process died)."""
        try:
            return bool(self._conn.poll())
        except (OSError, EOFError):
            return True

    def close(self) -> None:
        self._conn.close()


def _answer(board: BoardAnswerer | None, op: BoardOp) -> bytes:
    """The driver's answer to ``op``, pickled (an error that cannot be is sent as its message)."""
    answer = board(op) if board is not None else BoardAnswer(None, RuntimeError(
        "the run has no blackboard: the node asked for one its request did not announce"))
    try:
        return _reply(answer)
    except Exception as exc:
        error = answer.error
        what = f"{type(error).__name__}: {error}" if error is not None else f"a {type(answer.value).__name__} value"
        return _reply(BoardAnswer(None, RuntimeError(
            f"the run's blackboard answered {op.method} with {what}, which cannot be pickled to the node "
            f"({type(exc).__name__}: {exc})")))


class Link:
    """The actor's end of one connection, for what a node sends and reads in the middle
    of an exchange: its Blackboard's operations and their answers (:mod:`._ray_board`).
    Only one operation is in flight at a time, and none between exchanges, so the node's
    read never competes with the server's read of the next request."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def send(self, message: Any) -> None:
        """Send ``message`` to the driver now (raises OSError or EOFError when the
        connection is gone)."""
        self._conn.send_bytes(_reply(message))

    @staticmethod
    def pickled(message: Any) -> bytes:
        """``message`` pickled for the driver, to be yielded by the handler among its
        messages (sent as it is, in order with them). Pickling here, in the sender's
        thread, raises there what cannot be pickled, before anything is sent."""
        return _reply(message)

    def recv(self) -> Any:
        """The driver's next message (raises OSError or EOFError when the connection is gone)."""
        return pickle.loads(self._conn.recv_bytes())


class ChannelServer:
    """The actor's end: accepts the proxies' connections (one thread each) and answers
    each request with the messages ``handle(request, link)`` yields.

    Args:
        handle: a request (and the connection's :class:`Link`, for the node's Blackboard
            round trips) to its messages (the last one final); what it raises is sent as
            :class:`Failed`.
        key: the authentication key connections must prove they hold.
        host: the address to listen on (None: this Ray node's address).
    """

    def __init__(self, handle: Callable[[Any, Link], Iterator[Any]], key: bytes, host: str | None = None,
                 handshake_timeout: float = 5.0) -> None:
        if host is None:
            from ray.util import get_node_ip_address

            host = get_node_ip_address()  # type: ignore[no-untyped-call]
        self._handle = handle
        self._key = key
        self._handshake_timeout = handshake_timeout
        self._closing = False
        self._serving: list[threading.Thread] = []
        # No authkey here: the listener would run the handshake inside accept(), and a peer
        # that connects and stays silent would stop every later connection. Each connection
        # gets its own thread, whose handshake has a time limit (_admit).
        self._listener = Listener((host, 0))
        self.address: tuple[str, int] = self._listener.address  # type: ignore[assignment]
        self._accepting = threading.Thread(target=self._accept, name="wingman-ray-channel", daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        # in an actor, lives as long as its process (Ray ends the process, not the thread)
        while True:
            try:
                conn = self._listener.accept()
            except OSError:
                return  # the listener closed
            if self._closing:
                conn.close()
                return
            thread = threading.Thread(target=self._admit, args=(conn,), name="wingman-ray-serve", daemon=True)
            self._serving = [t for t in self._serving if t.is_alive()]
            self._serving.append(thread)
            thread.start()

    def _admit(self, conn: Connection) -> None:
        """The handshake (``multiprocessing``'s HMAC challenge, both ways), then serve. A
        peer that does not finish it within the time limit is disconnected."""
        admitted = threading.Event()

        def give_up() -> None:
            if not admitted.is_set():
                _shut(conn)  # wakes the handshake's read

        timer = threading.Timer(self._handshake_timeout, give_up)
        timer.daemon = True
        timer.start()
        try:
            deliver_challenge(conn, self._key)
            answer_challenge(conn, self._key)
        except Exception as exc:  # a wrong key (AuthenticationError), a silent or vanished peer
            log.warning("a connection to a node's Ray actor failed its handshake (%s: %s)", type(exc).__name__, exc)
            conn.close()
            return
        finally:
            admitted.set()
            timer.cancel()
        _tune_accepted(conn)
        self._serve(conn)

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting connections and wait (up to ``timeout``) for the served ones to
        end, which they do when their proxies close them."""
        self._closing = True
        try:
            socket.create_connection(self.address, timeout=1.0).close()  # wakes the accepting thread
        except OSError:
            pass
        self._accepting.join(timeout)
        self._listener.close()
        for thread in self._serving:
            thread.join(timeout)

    def _serve(self, conn: Connection) -> None:
        link = Link(conn)
        try:
            while True:
                try:
                    request = pickle.loads(conn.recv_bytes())
                except (OSError, EOFError):
                    return  # the proxy ended (or gave up on an exchange): so does this thread
                for message in self._answers(request, link):
                    conn.send_bytes(message)
        except (OSError, EOFError):
            return
        finally:
            conn.close()

    def _answers(self, request: Any, link: Link) -> Iterator[bytes]:
        try:
            for message in self._handle(request, link):
                yield message if type(message) is bytes else _pickled(message)  # bytes: Link.pickled
        except GeneratorExit:
            raise
        except BaseException as exc:  # the node's error, for the driver's supervision
            yield _pickled(Failed(exc))


def _pickled(message: Any) -> bytes:
    """``message`` pickled; one that cannot be becomes a :class:`Failed` saying so."""
    try:
        if type(message) is Failed:  # an error its class cannot rebuild from its args, too
            return _reply(Failed(cast(BaseException, shippable_error(message.error))))
        return _reply(message)
    except Exception as exc:
        what = (f"raised {type(message.error).__name__}: {message.error}" if type(message) is Failed
                else f"sent a {type(message).__name__} message")
        return _dumps(Failed(RuntimeError(
            f"the node {what}, which cannot be pickled back to the driver ({type(exc).__name__}: {exc}); "
            "return plain data (str, dict, list, pydantic models) from a node on the Ray backend"
        )))
