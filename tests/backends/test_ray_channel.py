"""The direct channel between a replica's proxy and its Ray actor, on the loopback (the
channel needs Ray's cloudpickle, not a running Ray)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from multiprocessing import AuthenticationError
from multiprocessing.connection import Listener
from typing import Any

import pytest

pytest.importorskip("ray")

from wingman_actors.backends._ray_channel import Channel, ChannelLost, ChannelServer
from wingman_actors.backends._ray_wire import AgentEvent, Done, Process, Suspended

KEY = b"k" * 32


def _answers(request: Any, link: Any = None) -> Iterator[Any]:
    """A node stand-in: echoes, streams, fails or returns what cannot be pickled."""
    payload = request.payload
    if payload == "fail":
        raise ValueError("the node failed")
    if payload == "stream":
        for i in range(3):
            yield AgentEvent(i)  # type: ignore[arg-type]  # any picklable value will do here
        yield Suspended("asked")
        return
    if payload == "unpicklable":
        yield Done(threading.Lock(), None)
        return
    yield Done(payload * 2, None)


@pytest.fixture
def served() -> Iterator[tuple[ChannelServer, Channel]]:
    """A server answering with :func:`_answers`, and one channel to it."""
    server = ChannelServer(_answers, KEY, "127.0.0.1")
    channel = Channel(server.address, KEY)
    try:
        yield server, channel
    finally:
        channel.close()
        server.close()


def test_a_request_is_answered_by_its_messages_in_order_up_to_the_final_one(
    served: tuple[ChannelServer, Channel],
) -> None:
    _, channel = served
    assert [type(m).__name__ for m in channel.exchange(Process("stream", "s", None))] == [
        "AgentEvent", "AgentEvent", "AgentEvent", "Suspended"]
    assert [m.event for m in channel.exchange(Process("stream", "s", None)) if type(m) is AgentEvent] == [0, 1, 2]
    done = next(channel.exchange(Process("ab", "s", None)))
    assert (done.output, done.usage) == ("abab", None)


def test_the_nodes_error_is_raised_in_the_driver_and_the_channel_serves_on(
    served: tuple[ChannelServer, Channel],
) -> None:
    _, channel = served
    with pytest.raises(ValueError, match="the node failed"):
        next(channel.exchange(Process("fail", "s", None)))
    assert next(channel.exchange(Process(1, "s", None))).output == 2


def test_an_output_that_cannot_be_pickled_is_an_error_naming_the_fix(served: tuple[ChannelServer, Channel]) -> None:
    _, channel = served
    with pytest.raises(RuntimeError, match=r"sent a Done message, which cannot be pickled.*return plain data"):
        next(channel.exchange(Process("unpicklable", "s", None)))
    assert next(channel.exchange(Process(2, "s", None))).output == 4


def test_a_connection_without_the_key_is_refused_and_the_server_serves_on(
    served: tuple[ChannelServer, Channel],
) -> None:
    server, channel = served
    with pytest.raises(AuthenticationError):
        Channel(server.address, b"x" * 32)
    assert next(channel.exchange(Process(3, "s", None))).output == 6


def test_a_peer_that_connects_and_stays_silent_does_not_stop_the_next_connection() -> None:
    import socket

    server = ChannelServer(_answers, KEY, "127.0.0.1", handshake_timeout=0.5)
    silent = socket.create_connection(server.address)  # e.g. a port scanner: never answers
    try:
        box: list[Any] = []
        connecting = threading.Thread(target=lambda: box.append(Channel(server.address, KEY, timeout=3.0)))
        connecting.start()
        connecting.join(10)
        assert not connecting.is_alive() and len(box) == 1, box  # before: it waited behind the silent peer
        channel = box[0]
        try:
            assert next(channel.exchange(Process(4, "s", None))).output == 8
        finally:
            channel.close()
        silent.settimeout(5)
        data = silent.recv(1024)  # the challenge
        assert data and silent.recv(1024) == b""  # then, its time up, the actor hung up on it
    finally:
        silent.close()
        server.close()


def test_an_actor_that_accepts_but_never_starts_the_handshake_times_out() -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # the kernel accepts the connection; nobody ever speaks
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="did not start the handshake"):
            Channel(listener.getsockname(), KEY, timeout=0.5)
        assert time.monotonic() - started < 5
    finally:
        listener.close()


def test_an_address_that_does_not_answer_times_out_instead_of_blocking() -> None:
    import socket

    # a listener whose queue of pending connections is full: Linux drops further attempts,
    # as a firewall would
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    pending = []
    try:
        for _ in range(4):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(server.getsockname())
            pending.append(s)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            Channel(server.getsockname(), KEY, timeout=0.5)
        assert time.monotonic() - started < 5
    finally:
        for s in pending:
            s.close()
        server.close()


def test_a_connection_the_actor_closes_is_lost_mid_exchange_and_seen_closed_while_idle() -> None:
    # a bare listener stands for an actor whose process dies: its ends of the connections close
    listener = Listener(("127.0.0.1", 0), authkey=KEY)
    accepted: list[Any] = []
    accepting = threading.Thread(target=lambda: accepted.extend(listener.accept() for _ in range(2)))
    accepting.start()
    busy = Channel(listener.address, KEY)  # type: ignore[arg-type]
    idle = Channel(listener.address, KEY)  # type: ignore[arg-type]
    accepting.join(5)
    try:
        assert not idle.closed()
        replies = busy.exchange(Process(1, "s", None))
        accepted[0].recv_bytes()  # the request arrived; then the process dies
        for conn in accepted:
            conn.close()
        with pytest.raises(ChannelLost, match="closed"):
            next(replies)
        deadline = time.monotonic() + 5
        while not idle.closed() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert idle.closed()
    finally:
        busy.close()
        idle.close()
        listener.close()


# On Ray: the formation's inputs take the channel, and the Ray calls when there is none.


class _Counted(Channel):
    exchanges = 0

    def exchange(self, request: Any, board: Any = None) -> Iterator[Any]:
        type(self).exchanges += 1
        return super().exchange(request, board)


def _pid(x: int) -> int:
    import os

    return os.getpid()


@pytest.mark.ray
def test_on_ray_each_visit_is_one_exchange_on_the_channel(ray_session: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors import Agent, Formation
    from wingman_actors.formation.events import FormationEvent, FormationEventType
    from wingman_actors.testing import ScriptedProvider

    monkeypatch.setattr("wingman_actors.backends._ray_replica.Channel", _Counted)
    _Counted.exchanges = 0
    events: list[FormationEvent] = []
    formation = Formation("direct").add_agent("talker", Agent("talker", provider=ScriptedProvider(["a b c"], cycle=True)))
    formation.add_function("upper", str.upper).connect("talker", "upper")
    with formation.start(backend="ray") as running:
        assert [running.submit("hi").result().output for _ in range(3)] == ["A B C"] * 3
        assert running.submit("hi", on_event=events.append).result().output == "A B C"  # the call path
    assert _Counted.exchanges == 8
    assert "a b c" == "".join(e.data["text"] for e in events if e.type == FormationEventType.AGENT_TEXT)


@pytest.mark.ray
def test_on_ray_without_a_channel_inputs_go_as_ray_calls(
    ray_session: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    from wingman_actors import Agent, Formation
    from wingman_actors.formation.events import FormationEvent, FormationEventType
    from wingman_actors.testing import ScriptedProvider

    def unreachable(address: Any, key: bytes) -> Channel:
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr("wingman_actors.backends._ray_replica.Channel", unreachable)
    events: list[FormationEvent] = []
    formation = Formation("by-ray").add_agent("talker", Agent("talker", provider=ScriptedProvider(["a b c"], cycle=True)))
    formation.add_function("upper", str.upper).connect("talker", "upper")
    with formation.start(backend="ray") as running:
        assert running.submit("hi").result().output == "A B C"
        assert running.submit("hi", on_event=events.append).result().output == "A B C"
    assert "".join(e.data["text"] for e in events if e.type == FormationEventType.AGENT_TEXT) == "a b c"
    assert "no direct channel to its Ray actor" in caplog.text


@pytest.mark.ray
def test_on_ray_an_idle_replica_whose_process_died_takes_the_next_input_without_a_failed_attempt(
    ray_session: Any,
) -> None:
    import os
    import signal

    from wingman_actors import Formation

    formation = Formation("idle-death").add_function("pid", _pid)
    with formation.start(backend="ray") as running:
        first = running.submit(0).result().output
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _alive(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        result = running.submit(1).result(timeout=60)
    assert result.output != first
    assert result.nodes["pid"].attempts == 1


def _alive(pid: int) -> bool:
    """Whether any thread of ``pid`` lives (its sockets close when the last one ends)."""
    import os

    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return False
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                if not any(line.startswith("State:") and "Z" in line for line in f):
                    return True
        except FileNotFoundError:
            continue
    return False


_FLOWS = """
from dataclasses import dataclass


@dataclass
class Note:
    text: str


def shout(note: Note) -> Note:
    return Note(note.text.upper())
"""


@pytest.mark.ray
def test_on_ray_inputs_and_outputs_of_classes_only_the_driver_can_import_cross_the_channel(
    ray_session: Any, tmp_path: Any,
) -> None:
    from tests.backends.conftest import module_from_file
    from wingman_actors import Formation

    class Local:  # not importable by name anywhere: goes by value, as Ray would send it
        def __init__(self, n: int) -> None:
            self.n = n

    def wrap(n: int) -> Local:
        return Local(n * 2)

    source = tmp_path / "flows.py"
    source.write_text(_FLOWS)
    name = "wingman_test_channel_flows"  # a formation file the launcher loaded: no import finds it
    with module_from_file(source, name) as flows:
        note = Formation("by-value").add_function("shout", flows.shout).run(flows.Note("hi"), backend="ray").output
        local = Formation("local").add_function("wrap", wrap).run(21, backend="ray").output
    assert note.text == "HI" and type(note).__name__ == "Note"
    assert local.n == 42 and type(local).__name__ == "Local"


def test_no_channels_with_rays_tls_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors.backends._ray import channels_allowed

    monkeypatch.delenv("RAY_USE_TLS", raising=False)
    assert channels_allowed()
    monkeypatch.setenv("RAY_USE_TLS", "1")
    assert not channels_allowed()


class _RefusedOnce(_Counted):
    refused = 0

    def __init__(self, address: tuple[str, int], key: bytes) -> None:
        if not type(self).refused:  # as when the actor restarted since its address was asked
            type(self).refused += 1
            raise ConnectionRefusedError("refused")
        super().__init__(address, key)


@pytest.mark.ray
def test_on_ray_a_refused_connection_asks_the_actors_address_again_before_giving_up_the_channel(
    ray_session: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    from wingman_actors import Formation

    monkeypatch.setattr("wingman_actors.backends._ray_replica.Channel", _RefusedOnce)
    _RefusedOnce.exchanges = _RefusedOnce.refused = 0
    assert Formation("refused").add_function("inc", _pid).run(1, backend="ray").output > 0
    assert (_RefusedOnce.refused, _RefusedOnce.exchanges) == (1, 1)
    assert "no direct channel" not in caplog.text
