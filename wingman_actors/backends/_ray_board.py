"""The run's Blackboard on the Ray backend: one real board in the driver, reached from
the nodes' Ray actor processes by round trips over each replica's channel.

A :class:`~wingman_actors.orchestration.Blackboard` is memory of one process (it refuses
to be pickled: a copy would silently stop being shared). So the board a run was given
stays in the driver, and a request to a replica's actor says only whether the run has
one. During that visit the actor makes a :class:`RemoteBoard` the active board
(``current_blackboard()``, a function's ``blackboard`` parameter, ``blackboard_tools``):
each of its methods sends a :class:`~._ray_wire.BoardOp` up the exchange and waits for
the driver's :class:`~._ray_wire.BoardAnswer`, which the replica's proxy computes with a
:class:`DriverBoard` on the run's board before it reads on. ``update``'s function travels
by value (cloudpickle) and runs in the driver, under the real board's lock: atomic, as on
the threads backend. Errors (a ``watch`` that timed out, a value that is not JSON) are
raised in the node with the driver's message.

Costs: a node that does not use the board, or a run without one, sends no message more;
each operation is one round trip on the channel (measured on the docs' backends page).
One replica's operations go one at a time (its proxy answers them in order), so a
``watch`` holds that replica's other board calls until it returns — items of one map
visit that wait for each other through the board belong on the threads backend.

A ``watch`` in the driver waits at most until its own timeout or the attempt's time
limit, and gives up (the node gets the error) as soon as the run ends or the attempt is
abandoned, so neither the proxy's thread nor the node's is left waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import AgentError, ErrorKind
from ..orchestration._blackboard import (
    Blackboard,
    _check_key,
    _encode,
    check_update,
    check_watch_timeout,
    watch_timeout,
)
from ._ray_wire import BoardAnswer, BoardMethod, BoardOp

__all__ = ["DriverBoard", "RemoteBoard"]

_SLICE = 0.1  # how often a driver-side watch checks that its run and attempt still stand


class RemoteBoard(Blackboard):
    """The run's Blackboard as a node in a Ray actor sees it: every method is a round trip
    to the driver, which applies it to the one real board (see the module docstring).

    Args:
        node: the node's name (errors name it).
        send: sends a :class:`~._ray_wire.BoardOp` to the driver, in order with the
            visit's other messages; None: the node's inputs come as Ray calls, with no
            channel to answer on (every method raises an error saying so).
        recv: the next message from the driver (the op's answer).
    """

    def __init__(self, node: str, send: Callable[[Any], None] | None = None,
                 recv: Callable[[], Any] | None = None) -> None:
        # no Blackboard.__init__: this board holds nothing of its own
        self._node = node
        self._send = send
        self._recv = recv
        self._lock = threading.Lock()  # one operation at a time on the connection
        self._closed: str | None = None if send is not None and recv is not None else (
            f"node {node!r} cannot reach the run's blackboard: its inputs reach its Ray actor as Ray calls "
            "(there is no direct channel: a Ray Client 'ray://' address, Ray's TLS, or an actor the driver "
            "cannot connect to), and the board, which stays in the driver, is reached over that channel; "
            "join the cluster with backend_options={'address': 'auto'} (or 'host:port') from a machine that "
            "reaches its nodes, or use backend='threads'"
        )

    def close(self) -> None:
        """The visit has ended: wait for an operation in flight, refuse any later one."""
        with self._lock:
            if self._closed is None:
                self._closed = (f"node {self._node!r} used the run's blackboard after its visit ended (from a "
                                "thread it left running); finish the work that uses the board within the visit")

    def _ask(self, method: BoardMethod, *args: Any) -> Any:
        with self._lock:
            if self._closed is not None:
                raise RuntimeError(self._closed)
            assert self._send is not None and self._recv is not None  # not closed: both given
            try:
                self._send(BoardOp(method, args))
            except (OSError, EOFError) as exc:
                raise self._lost(exc) from exc
            except Exception as exc:  # pickling the op failed: nothing was sent
                raise TypeError(
                    f"node {self._node!r}: blackboard {method}() sends its arguments to the driver, which holds "
                    f"the run's board, and they cannot be pickled ({type(exc).__name__}: {exc}); give update() "
                    "a function that holds nothing live (a lock, a client, an open file)"
                ) from exc
            try:
                answer = self._recv()
            except (OSError, EOFError) as exc:
                raise self._lost(exc) from exc
            except Exception as exc:  # the answer arrived whole but cannot be unpickled here
                raise RuntimeError(f"node {self._node!r} could not read the driver's answer to blackboard "
                                   f"{method}() ({type(exc).__name__}: {exc})") from exc
        if type(answer) is not BoardAnswer:  # cannot happen: the driver answers each op before anything else
            raise RuntimeError(f"node {self._node!r} got a {type(answer).__name__} for its blackboard {method}")
        if answer.error is not None:
            raise answer.error
        return answer.value

    def _lost(self, exc: BaseException) -> RuntimeError:
        """The connection to the driver is gone: this and every later operation fail."""
        self._closed = (f"node {self._node!r} lost its connection to the driver, which holds the run's "
                        f"blackboard ({str(exc) or type(exc).__name__})")
        return RuntimeError(self._closed)

    def get(self, key: str, default: Any = None) -> Any:
        found, value = self._ask("get", key)
        return value if found else default  # the default stays here: a sentinel keeps its identity

    def set(self, key: str, value: Any) -> None:
        _encode(key, value)  # a key or value the board refuses fails here, with its message, before a round trip
        self._ask("set", key, value)

    def update(self, key: str, fn: Callable[[Any], Any], default: Any = None) -> Any:
        check_update(key, fn)
        return self._ask("update", key, fn, default)  # fn by value: it runs in the driver, under the board's lock

    def delete(self, key: str) -> None:
        self._ask("delete", key)

    def keys(self) -> list[str]:
        keys: list[str] = self._ask("keys")
        return keys

    def watch(self, key: str, timeout: float | None = None) -> Any:
        _check_key(key)
        check_watch_timeout(timeout)  # as a local board: refused here, not waited on in the driver
        return self._ask("watch", key, timeout)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = self._ask("to_dict")
        return found

    def __contains__(self, key: object) -> bool:
        return bool(self._ask("contains", key))

    def __len__(self) -> int:
        return int(self._ask("len"))


_ABSENT = object()


class DriverBoard:
    """The driver's end of one attempt's board operations: applies each
    :class:`~._ray_wire.BoardOp` to the run's real board and returns the answer.

    Args:
        board: the run's board.
        node: the node's name (errors name it).
        limit: the attempt's time limit in seconds (None: none), from now.
        gone: whether the attempt is no longer wanted (the run ended, or the attempt was
            abandoned): a ``watch`` gives up then.
    """

    __slots__ = ("board", "deadline", "gone", "limit", "node")

    def __init__(self, board: Blackboard, node: str, limit: float | None, gone: Callable[[], bool]) -> None:
        self.board = board
        self.node = node
        self.limit = limit
        self.deadline = None if limit is None else time.monotonic() + limit
        self.gone = gone

    def __call__(self, op: BoardOp) -> BoardAnswer:
        try:
            return BoardAnswer(self._apply(op.method, op.args))
        except Exception as exc:  # raised in the node, with this message
            return BoardAnswer(None, exc)

    def _apply(self, method: BoardMethod, args: tuple[Any, ...]) -> Any:
        board = self.board
        if method == "get":
            value = board.get(args[0], _ABSENT)
            return (False, None) if value is _ABSENT else (True, value)
        if method == "set":
            return board.set(*args)
        if method == "update":
            return board.update(*args)
        if method == "watch":
            return self._watch(*args)
        if method == "keys":
            return board.keys()
        if method == "delete":
            return board.delete(*args)
        if method == "to_dict":
            return board.to_dict()
        if method == "contains":
            return args[0] in board
        if method == "len":
            return len(board)
        raise ValueError(f"unknown blackboard operation {method!r} from node {self.node!r}")

    def _watch(self, key: str, timeout: float | None) -> Any:
        """``board.watch(key, timeout)``, in slices: between them, give up when the attempt
        is no longer wanted or has reached its time limit."""
        board = self.board
        end = None if timeout is None else time.monotonic() + timeout
        deadline = self.deadline
        while True:
            now = time.monotonic()
            wait = _SLICE
            if end is not None:
                wait = min(wait, end - now)
            if deadline is not None:
                wait = min(wait, deadline - now)
            try:
                return board.watch(key, max(0.0, wait))
            except TimeoutError:
                pass
            now = time.monotonic()
            if end is not None and now >= end:
                raise watch_timeout(key, timeout, board.keys())
            if deadline is not None and now >= deadline:
                raise TimeoutError(f"node {self.node!r} reached its attempt's time limit ({self.limit or 0:g}s) while "
                                   f"it watched blackboard key {key!r}")
            if self.gone():
                raise AgentError(f"node {self.node!r} stopped watching blackboard key {key!r}: its run ended "
                                 "or its attempt was given up", kind=ErrorKind.CANCELLED)
