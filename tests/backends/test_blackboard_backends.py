"""A run's Blackboard is shared with every node the same way on each backend: on Ray,
nodes in Ray actor processes reach the one board of the driver by round trips over their
replica's channel (see ``wingman_actors/backends/_ray_board.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.orchestration import Blackboard, blackboard_tools
from wingman_actors.testing import ScriptedProvider


def _write(x: int, blackboard: Blackboard) -> int:
    blackboard.set("seen", x)
    return x + 1


def _read(x: int, blackboard: Blackboard) -> list[Any]:
    return [x, blackboard.get("seen")]


def _count_50(x: int, blackboard: Blackboard) -> int:
    for _ in range(50):
        blackboard.update("count", lambda n: n + 1, 0)
    return x


def _wait_ready(x: int, blackboard: Blackboard) -> Any:
    return blackboard.watch("ready", timeout=30)


def _set_ready_later(x: int, blackboard: Blackboard) -> int:
    time.sleep(0.5)  # the other branch is watching by then
    blackboard.set("ready", x * 10)
    return x


def _impatient(x: int, blackboard: Blackboard) -> Any:
    return blackboard.watch("never", timeout=0.3)


def _set_a_set(x: int, blackboard: Blackboard) -> str:
    try:
        blackboard.set("k", {1, 2})
    except TypeError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def _update_with_a_value(x: int, blackboard: Blackboard) -> str:
    try:
        blackboard.update("k", x)  # type: ignore[arg-type]
    except TypeError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def _add_item(item: int, blackboard: Blackboard) -> int:
    blackboard.update("sum", lambda total: total + item, 0)
    return item * 2


def _count_one(x: int, blackboard: Blackboard) -> int:
    return int(blackboard.update("count", lambda n: n + 1, 0))


def test_a_value_set_by_one_node_is_read_by_the_next_and_seen_by_the_drivers_board(backend: str) -> None:
    board = Blackboard({"start": "here"})
    formation = Formation("rb").add_function("a", _write).add_function("b", _read).connect("a", "b")

    result = formation.run(5, blackboard=board, backend=backend)

    assert result.output == [6, 5]
    assert board.to_dict() == {"seen": 5, "start": "here"}


def test_two_parallel_nodes_updating_one_counter_50_times_each_leave_exactly_100(backend: str) -> None:
    formation = (
        Formation("count").add_function("src", lambda x: x).add_function("left", _count_50)
        .add_function("right", _count_50).add_function("join", lambda left, right: left + right)
        .connect("src", "left", "join").connect("src", "right", "join")
    )
    board = Blackboard()

    assert formation.run(1, blackboard=board, backend=backend).output == 2
    assert board.get("count") == 100


def test_one_branch_watches_a_key_another_branch_sets_later(backend: str) -> None:
    formation = (
        Formation("meet").add_function("src", lambda x: x).add_function("waiter", _wait_ready)
        .add_function("setter", _set_ready_later).add_function("join", lambda waiter, setter: [waiter, setter])
        .connect("src", "waiter", "join").connect("src", "setter", "join")
    )

    assert formation.run(4, blackboard=Blackboard(), backend=backend).output == [40, 4]


def test_a_watch_that_times_out_raises_timeout_error_in_the_node(backend: str) -> None:
    formation = Formation("late").add_function("impatient", _impatient)

    with pytest.raises(FormationRuntimeError, match=r"TimeoutError: blackboard key 'never' was not set within 0\.3s"):
        formation.run(1, blackboard=Blackboard({"other": 1}), backend=backend)


def test_a_map_nodes_function_sees_the_runs_board(backend: str) -> None:
    formation = Formation("m").add_map("double", _add_item, max_workers=3)
    board = Blackboard()

    assert formation.run([1, 2, 3, 4], blackboard=board, backend=backend).output == [2, 4, 6, 8]
    assert board.get("sum") == 10


def test_a_board_given_to_start_is_shared_by_every_run_and_submit_can_give_a_run_its_own(backend: str) -> None:
    shared, own = Blackboard(), Blackboard()
    with Formation("c").add_function("count", _count_one).start(blackboard=shared, backend=backend) as running:
        results = [running.submit(i).result(60).output for i in range(3)]
        mine = running.submit(0, blackboard=own).result(60).output

    assert sorted(results) == [1, 2, 3] and shared.get("count") == 3
    assert mine == 1 and own.get("count") == 1


def test_an_agent_node_writes_with_blackboard_tools_and_a_later_function_reads(backend: str) -> None:
    write = InferenceResponse.of_tool_calls([("s1", "team_state_set", {"key": "plan", "value": ["a", "b"]})])
    agent = Agent("lead", provider=ScriptedProvider([write, "done"]), tools=blackboard_tools("team"))

    def report(answer: str, blackboard: Blackboard) -> str:
        return f"{answer}: {blackboard.get('plan')}"

    formation = Formation("team").add_agent("lead", agent).add_function("report", report).connect("lead", "report")
    board = Blackboard()

    assert formation.run("go", blackboard=board, backend=backend).output == "done: ['a', 'b']"
    assert board.get("plan") == ["a", "b"]


async def _async_write(x: int, blackboard: Blackboard) -> int:
    blackboard.set("async", x)
    return int(blackboard.update("async", lambda n: n + 1))


def test_an_async_function_node_uses_the_runs_board(backend: str) -> None:
    board = Blackboard()

    assert Formation("a").add_function("w", _async_write).run(3, blackboard=board, backend=backend).output == 4
    assert board.get("async") == 4


def test_the_nodes_of_a_nested_formation_share_the_outer_runs_board(backend: str) -> None:
    inner = Formation("inner").add_function("a", _write).add_function("b", _read).connect("a", "b")
    board = Blackboard()

    assert Formation("outer").add_formation("sub", inner).run(7, blackboard=board, backend=backend).output == [8, 7]
    assert board.get("seen") == 7


@pytest.mark.ray
@pytest.mark.parametrize(("misuse", "error"), [
    (_set_a_set, "TypeError: blackboard value for 'k' is not JSON-serialisable (set:"),
    # refused before any round trip to the driver's board
    (_update_with_a_value, "TypeError: blackboard update of 'k': fn must be a callable"),
])
def test_a_misuse_of_the_board_raises_the_same_type_error_on_ray_as_on_threads(
    ray_session: Any, misuse: Callable[[int, Blackboard], str], error: str,
) -> None:
    formation = Formation("bad").add_function("bad", misuse)

    on_threads = formation.run(3, blackboard=Blackboard(), backend="threads").output
    on_ray = formation.run(3, blackboard=Blackboard(), backend="ray").output

    assert on_ray == on_threads
    assert on_ray.startswith(error)


def _update_holding_a_lock_when_negative(item: int, blackboard: Blackboard) -> Any:
    if item >= 0:
        return blackboard.update("k", lambda v: v + item, 0)
    import threading

    lock = threading.Lock()
    try:
        blackboard.update("k", lambda v: (lock, v)[1], 0)
    except TypeError as exc:
        return str(exc)
    return "no error"


def test_an_update_function_that_cannot_be_pickled_fails_in_its_map_item_and_the_visit_goes_on(backend: str) -> None:
    formation = Formation("m").add_map("m", _update_holding_a_lock_when_negative, max_workers=2)
    board = Blackboard()
    with formation.start(blackboard=board, backend=backend) as running:
        refused, two = running.submit([-1, 2]).result(60).output
        again = running.submit([3]).result(60).output

    if backend == "threads":  # nothing is pickled: the function runs
        assert refused == "no error"
    else:  # the map's visit takes the call path: the op never left, and the channel is intact
        assert refused.startswith("node 'm': blackboard update() sends its arguments to the driver")
    assert (two, again, board.get("k")) == (2, [5], 5)


@pytest.mark.ray
def test_on_ray_a_node_that_does_not_use_the_board_sends_no_board_message(
    ray_session: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wingman_actors.backends import _ray_channel

    answered: list[str] = []
    answer = _ray_channel._answer

    def counted(board: Any, op: Any) -> bytes:
        answered.append(op.method)
        return answer(board, op)

    monkeypatch.setattr(_ray_channel, "_answer", counted)
    formation = Formation("quiet").add_function("plain", lambda x: x + 1).add_function("reader", _read)
    formation.connect("plain", "reader")

    assert formation.run(1, blackboard=Blackboard({"seen": 0}), backend="ray").output == [2, 0]
    assert answered == ["get"]  # one round trip: the reader's get


@pytest.mark.ray
def test_on_ray_without_a_channel_a_node_using_the_board_fails_naming_the_cause_and_the_fix(
    ray_session: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable(address: Any, key: bytes) -> Any:
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr("wingman_actors.backends._ray_replica.Channel", unreachable)
    formation = Formation("by-ray").add_function("a", _write)

    with pytest.raises(FormationRuntimeError, match=r"cannot reach the run's blackboard: its inputs reach its Ray "
                                                    r"actor as Ray calls .* or use backend='threads'"):
        formation.run(1, blackboard=Blackboard(), backend="ray")


@pytest.mark.ray
def test_on_ray_a_node_timeout_ends_a_watch_without_a_time_limit(ray_session: Any) -> None:
    def forever(x: int, blackboard: Blackboard) -> Any:
        return blackboard.watch("never")

    formation = Formation("stuck").add_function("forever", forever, timeout=0.5)
    started = time.perf_counter()

    with pytest.raises(FormationRuntimeError, match=r"timed out after 0\.5s"):
        formation.run(1, blackboard=Blackboard(), backend="ray")

    assert time.perf_counter() - started < 15  # and the leak check sees the proxy's thread ended


@pytest.mark.ray
def test_on_ray_a_cancelled_run_ends_a_watch_without_a_time_limit(ray_session: Any) -> None:
    def forever(x: int, blackboard: Blackboard) -> Any:
        return blackboard.watch("never")

    events: list[FormationEvent] = []
    formation = Formation("cancel").add_function("forever", forever)
    with formation.start(backend="ray", blackboard=Blackboard(), on_event=events.append) as running:
        future = running.submit(1)
        deadline = time.monotonic() + 30
        while not any(e.type == FormationEventType.NODE_STARTED for e in events) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the node is watching
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result()
        stopping = time.perf_counter()
    assert time.perf_counter() - stopping < 10  # the proxy's watch gave up: the formation stopped
