"""Behaviours of Microsoft Semantic Kernel's own test suite (microsoft/semantic-kernel,
``python/tests/unit/processes/`` — the Process framework: ``test_process_builder.py``,
``test_process_step_builder.py``, ``test_process_edge_builder.py``,
``local_runtime/test_local_process.py``, ``local_runtime/test_local_step.py``,
``kernel_process/test_kernel_process_state.py`` — and ``python/tests/unit/agents/``'s group
chat and orchestration tests), ported to formations: steps are nodes, an event routed to a
step is an edge, a step's event with a condition is a route (``when=``), ``on_function_error``
is an error edge, a step's state is the blackboard, a sub-process is a nested formation, and
an agent group chat is a loop of agent nodes.

Where we deliberately differ:
- SK's ``DefaultTerminationStrategy(maximum_iterations=N)`` ends a group chat quietly after N
  turns (``is_complete`` stays False). Our loop bound, ``max_visits``, fails the run with a
  ``FormationRuntimeError`` saying so: a loop that should end on a condition must say so
  with a route (pinned below).
- SK emits a step's events by name and any step may listen to any event; ours route by the
  upstream output (predicate or type). Several SK events from one step are our conditional
  edges on that step's output."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.formation import NodeFailure
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunStore

# -- steps and events ------------------------------------------------------------------


def test_an_event_emitted_by_a_step_reaches_the_step_listening_to_it_in_order() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_builder.py (steps chained with
    on_function_result(...).send_event_to(next_step)) and local_runtime/test_local_process.py (run_once)."""
    order = Order()
    f = (
        Formation("process")
        .add_function("a", lambda x: [*x, "a"])
        .add_function("b", lambda x: [*x, "b"])
        .add_function("c", lambda x: [*x, "c"])
        .connect("a", "b")
        .connect("b", "c")
    )
    result = f.run([], on_event=order)

    assert result.output == ["a", "b", "c"] and order.nodes == ["a", "b", "c"]


def test_one_event_sent_to_two_steps_reaches_both() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_step_edge_builder.py (one event,
    several send_event_to targets)."""
    f = (
        Formation("fanout")
        .add_function("start", lambda x: x)
        .add_function("left", lambda x: f"left {x}")
        .add_function("right", lambda x: f"right {x}")
        .connect("start", "left")
        .connect("start", "right")
    )
    assert f.run("go").outputs == {"left": "left go", "right": "right go"}


def test_a_step_with_two_parameters_fed_by_two_steps_runs_once_with_both_values() -> None:
    """From semantic-kernel python/tests/unit/processes/local_runtime/test_local_step.py (a function with
    several parameters runs only when every parameter has a value: fan-in by parameter_name)."""
    counter = Counter()

    def combine(first: str, second: str) -> str:
        counter.hit("combine")
        return f"{first}+{second}"

    f = (
        Formation("fanin")
        .add_function("start", lambda x: x)
        .add_function("first", lambda x: f"1{x}")
        .add_function("second", lambda x: f"2{x}")
        .add_function("combine", combine)
        .connect("start", "first")
        .connect("start", "second")
        .connect("first", "combine")
        .connect("second", "combine")
    )
    assert f.run("x").output == "1x+2x" and counter.count("combine") == 1


def test_a_step_emitting_one_of_two_events_routes_to_the_matching_step_only() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_step_builder.py (on_event(name) edges:
    a step emits a named event and only its listeners run)."""
    counter = Counter()

    def accept(x: int) -> str:
        counter.hit("accept")
        return f"accepted {x}"

    def reject(x: int) -> str:
        counter.hit("reject")
        return f"rejected {x}"

    f = (
        Formation("events")
        .add_function("check", lambda x: x)
        .add_function("accept", accept)
        .add_function("reject", reject)
        .connect("check", "accept", when=lambda x: x >= 0)
        .connect("check", "reject", otherwise=True)
    )
    assert f.run(5).outputs == {"accept": "accepted 5"}
    assert f.run(-1).outputs == {"reject": "rejected -1"}
    assert (counter.count("accept"), counter.count("reject")) == (1, 1)


def test_an_event_nobody_listens_to_fails_the_run_naming_the_step() -> None:
    """From semantic-kernel python/tests/unit/processes/local_runtime/test_local_process.py
    (test_send_message_with_invalid_event: an event with no route is an error, not silence)."""
    f = (
        Formation("unrouted")
        .add_function("check", lambda x: x)
        .add_function("accept", lambda x: x)
        .connect("check", "accept", when=lambda x: x > 100)
    )
    with pytest.raises(NoRouteError) as caught:
        f.run(1)
    assert caught.value.node == "check"


# -- cycles ----------------------------------------------------------------------------


def test_a_step_cycles_until_its_exit_condition_then_the_process_ends() -> None:
    """From semantic-kernel python/tests/unit/processes (the cycle samples: a counter step sends its event
    back to itself until the count reaches the limit, then emits the exit event)."""
    counter = Counter()

    def count(n: int) -> int:
        counter.hit("count")
        return n + 1

    f = (
        Formation("cycle")
        .add_function("count", count)
        .add_function("done", lambda n: f"stopped at {n}")
        .connect("count", "count", when=lambda n: n < 3)
        .connect("count", "done", otherwise=True)
    )
    result = f.run(0)

    assert result.output == "stopped at 3" and counter.count("count") == 3
    assert result.nodes["count"].outputs == [1, 2, 3]


def test_a_cycle_through_two_steps_visits_each_as_often_as_the_loop_turns() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_edge_builder.py (edges back to an
    earlier step form a cycle between two steps)."""
    f = (
        Formation("pingpong")
        .add_function("start", lambda n: n)
        .add_function("ping", lambda n: n + 1)
        .add_function("pong", lambda n: n * 10)
        .add_function("out", lambda n: n)
        .connect("start", "ping")
        .connect("ping", "pong")
        .connect("pong", "ping", when=lambda n: n < 100)
        .connect("pong", "out", otherwise=True)
    )
    result = f.run(0)

    assert result.output == 110  # 0 -> 1 -> 10 -> 11 -> 110
    assert result.nodes["ping"].visits == 2 and result.nodes["pong"].visits == 2


def test_a_cycle_that_never_meets_its_exit_fails_at_the_visit_limit_with_a_clear_error() -> None:
    """From semantic-kernel python/tests/unit/agents/test_group_chat_strategies/test_default_termination_strategy.py
    (maximum_iterations bounds the loop). Differs: SK ends quietly; we fail the run naming the node
    and the limit (see the module docstring)."""
    f = (
        Formation("endless")
        .add_function("spin", lambda n: n + 1, max_visits=4)
        .add_function("done", lambda n: n)
        .connect("spin", "spin", when=lambda n: n >= 0)
        .connect("spin", "done", otherwise=True)
    )
    with pytest.raises(FormationRuntimeError, match=r"spin.*max_visits=4"):
        f.run(0, timeout=20)


# -- step state ------------------------------------------------------------------------


def test_a_step_keeps_its_state_across_its_visits_of_one_run() -> None:
    """From semantic-kernel python/tests/unit/processes/kernel_process/test_kernel_process_step_state.py
    (a KernelProcessStep[State] keeps state between invocations). Ours: the blackboard."""

    def tally(n: int, blackboard: Blackboard) -> int:
        blackboard.set("seen", [*blackboard.get("seen", []), n])
        return n + 1

    board = Blackboard()
    f = (
        Formation("stateful")
        .add_function("tally", tally)
        .add_function("done", lambda n: n)
        .connect("tally", "tally", when=lambda n: n < 3)
        .connect("tally", "done", otherwise=True)
    )
    f.run(0, blackboard=board)

    assert board.get("seen") == [0, 1, 2]


def test_state_one_step_writes_is_read_by_a_later_step() -> None:
    """From semantic-kernel python/tests/unit/processes/kernel_process/test_kernel_process_state.py (the
    process state holds every step's state)."""

    def write(x: str, blackboard: Blackboard) -> str:
        blackboard.set("customer", x)
        return "written"

    def read(_: str, blackboard: Blackboard) -> str:
        return f"hello {blackboard.get('customer')}"

    f = Formation("shared").add_function("write", write).add_function("read", read).connect("write", "read")
    assert f.run("Ada", blackboard=Blackboard()).output == "hello Ada"


# -- errors ----------------------------------------------------------------------------


def test_a_failing_step_routes_its_error_to_the_error_handler_step() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_step_builder.py
    (on_function_error(...).send_event_to(handler): the handler gets the exception and the process
    goes on)."""

    def charge(amount: int) -> str:
        raise ValueError(f"card declined for {amount}")

    def handle(failure: NodeFailure) -> str:
        return f"{failure.node} failed on {failure.input}: {failure.error}"

    f = (
        Formation("pay")
        .add_function("charge", charge)
        .add_function("ship", lambda x: x)
        .add_function("handle", handle)
        .connect("charge", "ship")
        .connect("charge", "handle", on_error=True)
    )
    result = f.run(42)

    assert result.outputs == {"handle": "charge failed on 42: card declined for 42"}
    assert result.nodes["charge"].status == "failed" and result.nodes["ship"].status == "skipped"


def test_a_failing_step_without_a_handler_fails_the_process_naming_the_step_and_cause() -> None:
    """From semantic-kernel python/tests/unit/processes/local_runtime/test_local_step.py (an exception in a
    step function without an error edge surfaces from the process)."""

    def boom(_: Any) -> None:
        raise RuntimeError("inventory unavailable")

    f = Formation("fail").add_function("a", lambda x: x).add_function("boom", boom).connect("a", "boom")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1)

    assert caught.value.node == "boom" and isinstance(caught.value.__cause__, RuntimeError)
    assert caught.value.nodes["a"].output == 1 and caught.value.nodes["boom"].status == "failed"


def recovering(flaky: Callable[[int], int]) -> Formation:
    """An error event routed back into a cycle: ``start -> flaky -> out``; an error of ``flaky``
    goes to ``recover`` (the failed input plus 100), whose answer goes back into ``flaky``.
    (test_peer_sk_ray.py runs it on Ray.)"""

    def recover(failure: NodeFailure) -> int:
        return int(failure.input) + 100

    return (
        Formation("recovering")
        .add_function("start", lambda n: n)
        .add_function("flaky", flaky)
        .add_function("recover", recover)
        .add_function("out", lambda n: n)
        .connect("start", "flaky")
        .connect("flaky", "out")
        .connect("flaky", "recover", on_error=True)
        .connect("recover", "flaky", when=lambda n: n > 0)
    )


def test_an_error_handler_inside_a_cycle_lets_the_loop_go_on() -> None:
    """From semantic-kernel python/tests/unit/processes (a step whose error event is routed back into the
    process: the failure is handled and the next step runs)."""
    attempts = Counter()

    def flaky(n: int) -> int:
        if attempts.hit("flaky") == 1:
            raise ConnectionError("first try fails")
        return n * 2

    result = recovering(flaky).run(1)

    assert result.output == 202 and attempts.count("flaky") == 2


# -- sub-processes and many runs --------------------------------------------------------


def test_a_sub_process_runs_as_one_step_of_the_outer_process() -> None:
    """From semantic-kernel python/tests/unit/processes/test_process_builder.py (add_step_from_process: a
    process used as a step; its output continues the outer process)."""
    inner = (
        Formation("inner")
        .add_function("double", lambda x: x * 2)
        .add_function("inc", lambda x: x + 1)
        .connect("double", "inc")
    )
    outer = (
        Formation("outer")
        .add_function("start", lambda x: x)
        .add_formation("sub", inner)
        .add_function("end", lambda x: f"result {x}")
        .connect("start", "sub")
        .connect("sub", "end")
    )
    order = Order()
    assert outer.run(5, on_event=order).output == "result 11"
    assert order.nodes == ["start", "sub", "sub/double", "sub/inc", "end"]


def test_two_process_instances_run_at_once_keep_their_own_values() -> None:
    """From semantic-kernel python/tests/unit/processes/local_runtime/test_local_process.py (each
    start/run_once is its own process instance with its own state)."""
    gate = threading.Event()

    def wait(x: int) -> int:
        if x == 1:
            gate.wait(10)
        return x

    f = Formation("two").add_function("wait", wait, concurrency=2).add_function("inc", lambda x: x + 1).connect("wait", "inc")
    with f.start() as running:
        slow = running.submit(1)
        fast = running.submit(2)
        assert fast.result(timeout=10).output == 3
        gate.set()
        assert slow.result(timeout=10).output == 2


def test_a_process_stopped_by_a_failure_resumes_without_running_its_finished_steps_again(store: RunStore) -> None:
    """From semantic-kernel python/tests/unit/processes/dapr_runtime/test_process_actor.py (a process's
    state is saved per step and a restarted process continues from it)."""
    counter = Counter()
    healthy = threading.Event()

    def load(x: int) -> int:
        counter.hit("load")
        return x + 1

    def save(x: int) -> int:
        counter.hit("save")
        if not healthy.is_set():
            raise ConnectionError("database down")
        return x * 10

    f = Formation("durable").add_function("load", load).add_function("save", save).connect("load", "save")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store, run_id="r1")
    assert caught.value.node == "save"

    healthy.set()
    result = f.resume("r1", store=store)

    assert result.output == 20 and counter.count("load") == 1 and counter.count("save") == 2
