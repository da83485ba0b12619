"""The run's Blackboard seen from a Ray actor: a RemoteBoard's operations travel up the
replica's channel and the driver's DriverBoard answers them from the one real board (on
the loopback: the channel needs Ray's cloudpickle for functions sent by value, not a
running Ray)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors.backends._ray_board import DriverBoard, RemoteBoard
from wingman_actors.backends._ray_wire import BoardOp, Done, Process
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.orchestration import Blackboard, current_blackboard, use_blackboard

KEY = b"k" * 32
_SENTINEL = object()


def _node(request: Any, link: Any) -> Iterator[Any]:
    """A node stand-in that works on the run's board through ``link`` (a RemoteBoard, as
    the Ray actor makes one for a visit of a run that has a board)."""
    board = RemoteBoard("n", link.send, link.recv)
    try:
        with use_blackboard(board):
            yield Done(request.payload(current_blackboard()), None)
    finally:
        board.close()


@pytest.fixture
def exchange() -> Iterator[Any]:
    """``exchange(fn, board)``: ``fn(remote board)`` run as a node in a server on the
    loopback, its board operations answered from ``board``; returns what ``fn`` returned."""
    pytest.importorskip("ray")
    from wingman_actors.backends._ray_channel import Channel, ChannelServer

    server = ChannelServer(_node, KEY, "127.0.0.1")
    channel = Channel(server.address, KEY)

    def run(fn: Any, board: Blackboard) -> Any:
        answer = DriverBoard(board, "n", None, lambda: False)
        return next(channel.exchange(Process(fn, "s", None, None, True), answer)).output

    try:
        yield run
    finally:
        channel.close()
        server.close()


def test_a_nodes_board_operations_mid_exchange_are_answered_from_the_drivers_board(exchange: Any) -> None:
    def work(board: Blackboard) -> Any:
        board.set("a", [1, 2])
        board.update("n", lambda n: n + 5, 10)  # a lambda: sent by value, run in the driver
        board.delete("gone")
        return [board.get("a"), board.get("n"), board.keys(), "a" in board, "zzz" in board, len(board),
                board.to_dict(), board.watch("a", timeout=1)]

    real = Blackboard({"gone": True})

    assert exchange(work, real) == [[1, 2], 15, ["a", "n"], True, False, 2, {"a": [1, 2], "n": 15}, [1, 2]]
    assert real.to_dict() == {"a": [1, 2], "n": 15}


def test_a_get_of_a_missing_key_returns_the_nodes_own_default_object(exchange: Any) -> None:
    assert exchange(lambda board: board.get("missing", _SENTINEL) is _SENTINEL, Blackboard()) is True


def test_an_error_of_the_drivers_board_is_raised_in_the_node_with_its_message(exchange: Any) -> None:
    def work(board: Blackboard) -> str:
        try:
            board.delete("nope")
        except KeyError as exc:
            return str(exc)
        return "no error"

    local = Blackboard({"x": 1})
    with pytest.raises(KeyError) as raised:
        local.delete("nope")

    assert exchange(work, Blackboard({"x": 1})) == str(raised.value)


def test_an_update_function_that_cannot_be_pickled_fails_in_the_node_and_the_exchange_goes_on(
    exchange: Any,
) -> None:
    def work(board: Blackboard) -> Any:
        import threading

        lock = threading.Lock()
        try:
            board.update("k", lambda v: (lock, v)[1], 0)
        except TypeError as exc:
            return [str(exc), board.update("k", lambda v: v + 1, 0)]
        return "no error"

    message, after = exchange(work, Blackboard())

    assert message.startswith("node 'n': blackboard update() sends its arguments to the driver")
    assert "give update() a function that holds nothing live" in message
    assert after == 1


def test_a_value_that_is_not_json_is_refused_in_the_node_before_any_round_trip() -> None:
    sent: list[Any] = []
    board = RemoteBoard("n", sent.append, lambda: None)

    with pytest.raises(TypeError, match=r"blackboard value for 'k' is not JSON-serialisable"):
        board.set("k", {1, 2})
    assert sent == []


def test_a_remote_board_refuses_operations_after_its_visit_ended() -> None:
    board = RemoteBoard("n", lambda op: None, lambda: None)
    board.close()

    with pytest.raises(RuntimeError, match=r"node 'n' used the run's blackboard after its visit ended"):
        board.get("k")


def test_a_remote_board_without_a_channel_names_the_cause_and_the_fix() -> None:
    with pytest.raises(RuntimeError, match=r"node 'n' cannot reach the run's blackboard: its inputs reach its Ray "
                                           r"actor as Ray calls .* or use backend='threads'"):
        RemoteBoard("n").set("k", 1)


def test_a_remote_board_whose_connection_closed_says_so() -> None:
    def gone() -> Any:
        raise EOFError

    board = RemoteBoard("n", lambda op: None, gone)

    with pytest.raises(RuntimeError, match=r"node 'n' lost its connection to the driver"):
        board.keys()


def test_a_driver_watch_that_times_out_has_the_message_of_a_local_watch() -> None:
    real = Blackboard({"other": 1})
    with pytest.raises(TimeoutError) as local:
        real.watch("k", timeout=0.2)

    answer = DriverBoard(real, "n", None, lambda: False)(BoardOp("watch", ("k", 0.2)))

    assert type(answer.error) is TimeoutError and str(answer.error) == str(local.value)


def test_a_driver_watch_ends_at_the_attempts_time_limit() -> None:
    started = time.monotonic()
    answer = DriverBoard(Blackboard(), "n", 0.3, lambda: False)(BoardOp("watch", ("k", None)))

    assert type(answer.error) is TimeoutError
    assert "node 'n' reached its attempt's time limit (0.3s) while it watched blackboard key 'k'" in str(answer.error)
    assert time.monotonic() - started < 2


def test_a_driver_watch_gives_up_when_the_attempt_is_no_longer_wanted() -> None:
    wanted = [True]
    real = Blackboard()
    watch = DriverBoard(real, "n", None, lambda: not wanted[0])
    started = time.monotonic()
    wanted[0] = False

    answer = watch(BoardOp("watch", ("k", None)))

    assert isinstance(answer.error, AgentError) and answer.error.kind == ErrorKind.CANCELLED
    assert "stopped watching blackboard key 'k'" in str(answer.error)
    assert time.monotonic() - started < 2


def test_a_driver_watch_returns_as_soon_as_the_key_is_set() -> None:
    import threading

    real = Blackboard()
    timer = threading.Timer(0.2, real.set, ("k", "v"))
    timer.start()
    try:
        answer = DriverBoard(real, "n", None, lambda: False)(BoardOp("watch", ("k", 10)))
    finally:
        timer.join()

    assert (answer.value, answer.error) == ("v", None)


@pytest.mark.parametrize("timeout", [float("nan"), -1, "5", True])
def test_a_node_s_board_on_ray_refuses_a_watch_timeout_as_a_local_board_does(timeout: Any) -> None:
    sent: list[Any] = []
    board = RemoteBoard("n", sent.append, lambda: None)
    with pytest.raises((TypeError, ValueError), match=r"Blackboard\.watch: timeout must be a number"):
        board.watch("k", timeout=timeout)
    with pytest.raises((TypeError, ValueError), match=r"Blackboard\.watch: timeout must be a number"):
        Blackboard().watch("k", timeout=timeout)
    assert sent == []  # refused in the node, before the driver is asked
