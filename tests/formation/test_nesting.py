"""Nested formations at run time: a formation node runs its formation as one node
(outputs, events by path, traces, failures, policies, cancellation, time limits)."""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError
from typing import Any

import networkx as nx  # type: ignore[import-untyped]
import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation._nesting import NestedRunError
from wingman_actors.formation._result import NodeStatus
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.orchestration import Blackboard
from wingman_actors.testing import ScriptedProvider, run_node

SLACK = 0.6


def inc(x: int) -> int:
    return x + 1


def double(x: int) -> int:
    return 2 * x


def show(x: int) -> str:
    return f"= {x}"


def pipeline(name: str = "inner") -> Formation:
    """inc -> double."""
    return Formation(name).add_function("inc", inc).add_function("double", double).connect("inc", "double")


def nested(inner: Formation, **policies: Any) -> Formation:
    """src -> sub (inner) -> show."""
    return (Formation("outer").add_function("src", inc).add_formation("sub", inner, **policies)
            .add_function("show", show).connect("src", "sub", "show"))


@pytest.fixture
def gate() -> Iterator[tuple[threading.Event, threading.Event, Any]]:
    """A function node that signals it started, then blocks until released (released when
    the test ends, so no thread leaks)."""
    entered, release = threading.Event(), threading.Event()

    def wait(x: int) -> int:
        entered.set()
        release.wait(4)
        return x

    yield entered, release, wait
    release.set()


def test_the_formation_node_outputs_the_inner_single_sinks_output() -> None:
    assert nested(pipeline()).run(1).output == "= 6"  # ((1 + 1) + 1) * 2


def test_an_inner_formation_with_several_sinks_outputs_the_dict_of_sink_outputs() -> None:
    inner = (Formation("fork").add_function("inc", inc).add_function("double", double).add_function("neg", lambda x: -x)
             .connect("inc", "double").connect("inc", "neg"))
    outer = Formation("outer").add_formation("sub", inner)
    assert outer.run(1).output == {"double": 4, "neg": -2}


def test_a_formation_node_with_several_predecessors_passes_their_dict_to_the_inner_sources() -> None:
    inner = Formation("sum").add_function("total", lambda d: sum(d.values()))
    outer = (Formation("outer").add_function("a", inc).add_function("b", double).add_formation("sub", inner)
             .connect("a", "sub").connect("b", "sub"))
    assert outer.run(5).output == 16


def test_a_hand_built_graph_with_a_formation_node_runs_like_the_builders() -> None:
    graph = nx.DiGraph()
    graph.add_node("src", kind="function", fn=inc)
    graph.add_node("sub", kind="formation", formation=pipeline())
    graph.add_edge("src", "sub")
    assert Formation("hand", graph).run(1).output == 6


def test_inner_events_reach_the_outer_listeners_named_by_path() -> None:
    events: list[FormationEvent] = []
    result = nested(pipeline()).run(1, on_event=events.append)
    finished = [e.node for e in events if e.type is FormationEventType.NODE_FINISHED]
    assert finished == ["src", "sub/inc", "sub/double", "sub", "show"]
    assert {e.run_id for e in events} == {result.run_id}


def test_events_of_a_formation_nested_two_deep_carry_the_whole_path() -> None:
    middle = Formation("middle").add_formation("deep", pipeline())
    events: list[FormationEvent] = []
    Formation("outer").add_formation("mid", middle).run(1, on_event=events.append)
    started = [e.node for e in events if e.type is FormationEventType.NODE_STARTED]
    assert started == ["mid", "mid/deep", "mid/deep/inc", "mid/deep/double"]


def test_only_one_run_finished_event_is_emitted_for_a_nested_run() -> None:
    events: list[FormationEvent] = []
    nested(pipeline()).run(1, on_event=events.append)
    assert [e.type for e in events].count(FormationEventType.RUN_FINISHED) == 1


def test_run_stream_yields_the_inner_events_by_path() -> None:
    nodes = [e.node for e in nested(pipeline()).run_stream(1) if e.type is FormationEventType.NODE_STARTED]
    assert nodes == ["src", "sub", "sub/inc", "sub/double", "show"]


def test_the_result_has_the_inner_traces_under_path_names_after_the_formation_node() -> None:
    result = nested(pipeline()).run(1)
    assert list(result.nodes) == ["src", "sub", "sub/inc", "sub/double", "show"]
    assert result.nodes["sub/inc"].status is NodeStatus.SUCCEEDED
    assert result.nodes["sub/inc"].parent == "sub"
    assert result.nodes["sub"].parent is None


def test_inner_usage_counts_once_in_the_run_and_in_the_formation_nodes_trace() -> None:
    agent = Agent("writer", provider=ScriptedProvider(["a draft"]))
    inner = Formation("inner").add_agent("write", agent)
    result = Formation("outer").add_formation("sub", inner).run("topic")
    used = result.nodes["sub/write"].usage
    assert used.output_tokens > 0
    assert result.nodes["sub"].usage == used
    assert result.usage == used


def test_a_failing_inner_node_fails_the_run_naming_the_formation_node_and_the_inner_node() -> None:
    def boom(x: int) -> int:
        raise ValueError("no luck")

    inner = Formation("inner").add_function("inc", inc).add_function("boom", boom).connect("inc", "boom")
    with pytest.raises(FormationRuntimeError) as caught:
        nested(inner).run(1)
    assert caught.value.node == "sub"
    assert isinstance(caught.value.__cause__, NestedRunError)
    assert "sub/boom" in str(caught.value) and "no luck" in str(caught.value)


def test_the_nested_run_error_a_failing_formation_node_raises_pickles_with_its_attributes() -> None:
    # what an error edge ships to a handler in another process (the Ray backend)
    inner_error = FormationRuntimeError("node 'boom' failed", node="boom", attempts=2, run_id="r-1")
    err = NestedRunError("sub", "inner", inner_error)
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), str(again), again.node, again.formation) == (NestedRunError, str(err), "sub", "inner")
    assert (again.inner.node, again.inner.attempts, again.inner.run_id) == ("boom", 2, "r-1")


def test_retries_rerun_the_inner_run_as_a_whole() -> None:
    calls: list[str] = []

    def flaky(x: int) -> int:
        calls.append("flaky")
        if calls.count("flaky") == 1:
            raise ValueError("first time")
        return x

    inner = Formation("inner").add_function("inc", lambda x: calls.append("inc") or x + 1).add_function("flaky", flaky)
    inner.connect("inc", "flaky")
    result = nested(inner, retries=1, backoff=0).run(1)
    assert result.output == "= 3"
    assert calls == ["inc", "flaky", "inc", "flaky"]
    assert result.nodes["sub"].attempts == 2


def test_retry_on_naming_the_inner_nodes_error_retries_the_formation_node() -> None:
    calls: list[str] = []

    def flaky(x: int) -> int:
        calls.append("flaky")
        if len(calls) == 1:
            raise ConnectionError("blip")
        return x

    inner = Formation("inner").add_function("flaky", flaky)
    result = nested(inner, retries=2, retry_on=ConnectionError, backoff=0).run(1)
    assert result.output == "= 2"
    assert result.nodes["sub"].attempts == 2


def test_retry_on_naming_the_error_of_a_formation_nested_two_deep_retries_the_outer_node() -> None:
    calls: list[str] = []

    def flaky(x: int) -> int:
        calls.append("flaky")
        if len(calls) == 1:
            raise ConnectionError("blip")
        return x

    middle = Formation("middle").add_formation("deep", Formation("inner").add_function("flaky", flaky))
    assert nested(middle, retries=1, retry_on=ConnectionError, backoff=0).run(1).output == "= 2"


def test_retry_on_naming_another_error_gives_the_formation_node_up_at_once() -> None:
    calls: list[str] = []

    def broken(x: int) -> int:
        calls.append("broken")
        raise KeyError("missing")

    inner = Formation("inner").add_function("broken", broken)
    with pytest.raises(FormationRuntimeError, match="KeyError"):
        nested(inner, retries=2, retry_on=ConnectionError, backoff=0).run(1)
    assert calls == ["broken"]


def test_on_error_skip_skips_the_formation_node_and_its_dependents() -> None:
    def boom(x: int) -> int:
        raise ValueError("no luck")

    inner = Formation("inner").add_function("boom", boom)
    result = nested(inner, on_error="skip").run(1)
    assert result.nodes["sub"].status is NodeStatus.SKIPPED
    assert result.nodes["show"].status is NodeStatus.SKIPPED


def test_a_node_timeout_cancels_the_inner_run_at_the_limit(gate: Any) -> None:
    entered, _, wait = gate
    inner = Formation("inner").add_function("wait", wait)
    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError) as caught:
        nested(inner, timeout=0.3).run(1)
    assert time.perf_counter() - t0 < 0.3 + SLACK
    assert entered.is_set()
    assert "timed out" in str(caught.value.__cause__)


def test_a_run_timeout_cancels_the_inner_run_at_the_limit(gate: Any) -> None:
    _, _, wait = gate
    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError, match="timed out"):
        nested(Formation("inner").add_function("wait", wait)).run(1, timeout=0.3)
    assert time.perf_counter() - t0 < 0.3 + SLACK


def test_cancelling_the_outer_run_cancels_its_inner_run_and_the_node_takes_new_work(gate: Any) -> None:
    entered, release, wait = gate
    calls: list[int] = []
    inner = Formation("inner").add_function("wait", wait).add_function("log", lambda x: calls.append(x) or x)
    inner.connect("wait", "log")
    with nested(inner).start() as running:
        first = running.submit(1)
        assert entered.wait(3)
        assert first.cancel() is True
        with pytest.raises(CancelledError):
            first.result(timeout=1)
        release.set()
        assert running.submit(10).result(timeout=3).output == "= 11"
    assert calls == [11]  # the cancelled inner run never reached its second node


def test_the_inner_formations_threads_start_with_the_outer_and_stop_with_it() -> None:
    def inner_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("wingman-node-inc-")]

    running = nested(pipeline()).start()
    try:
        assert inner_threads()  # before any run
    finally:
        running.stop()
    assert inner_threads() == []


def test_many_runs_in_flight_through_a_nested_formation_each_get_their_own_output() -> None:
    with nested(pipeline(), concurrency=3).start() as running:
        futures = [running.submit(i) for i in range(40)]
        outputs = [f.result(timeout=10).output for f in futures]
    assert outputs == [f"= {((i + 1) + 1) * 2}" for i in range(40)]


def test_inner_nodes_share_the_outer_runs_blackboard() -> None:
    def note(x: int, blackboard: Blackboard) -> int:
        blackboard.set("seen", x)
        return x

    board = Blackboard()
    Formation("outer").add_formation("sub", Formation("inner").add_function("note", note)).run(7, blackboard=board)
    assert board.get("seen") == 7


def test_an_inner_node_requiring_a_blackboard_is_a_setup_error_of_the_outer_run_without_one() -> None:
    def note(x: int, blackboard: Blackboard) -> int:
        return x

    outer = Formation("outer").add_formation("sub", Formation("inner").add_function("note", note))
    with pytest.raises(FormationSetupError, match="'sub' takes a 'blackboard' parameter"):
        outer.run(1)


def test_run_node_runs_a_formation_node_alone() -> None:
    ran = run_node(nested(pipeline()), "sub", 1)
    assert ran.output == 4
    assert ran.trace.status is NodeStatus.SUCCEEDED


def test_a_formation_node_in_a_loop_runs_its_formation_once_per_visit() -> None:
    step = Formation("step").add_function("inc", inc)
    loop = Formation("loop").add_function("start", inc).add_formation("step", step).add_function("done", show)
    loop.connect("start", "step").connect("step", "step", when=lambda x: x < 5).connect("step", "done", when=lambda x: x >= 5)
    result = loop.run(0)
    assert result.output == "= 5"
    assert result.nodes["step"].visits == 4
