"""Error edges: ``connect(a, handler, on_error=True)``. When ``a`` fails after its retries
the handler receives a NodeFailure and the run goes on; when ``a`` succeeds the handler
is skipped along that edge."""

from __future__ import annotations

import dataclasses
import pickle
import threading
from typing import Any

import networkx as nx
import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


def broken(x: int) -> int:
    raise ValueError(f"cannot take {x}")


def handle(failure: NodeFailure) -> str:
    return f"handled {failure.node}"


def guarded(fn: Any, **policies: Any) -> Formation:
    """``a`` (``fn``) → ``b``, and ``a`` → ``handler`` on error."""
    return (Formation("g").add_function("a", fn, **policies).add_function("b", lambda x: x * 10)
            .add_function("handler", handle).connect("a", "b").connect("a", "handler", on_error=True))


def test_the_handler_receives_a_node_failure_describing_the_failed_visit() -> None:
    seen: list[NodeFailure] = []
    f = (Formation("g").add_function("a", broken, retries=2, backoff=0).add_function("handler", seen.append)
         .connect("a", "handler", on_error=True))
    result = f.run(7)
    [failure] = seen
    assert (failure.node, failure.input, failure.attempts, failure.run_id) == ("a", 7, 3, result.run_id)
    assert isinstance(failure.error, ValueError) and str(failure.error) == "cannot take 7"


def test_the_run_succeeds_with_the_handler_output_when_the_node_fails() -> None:
    result = guarded(broken).run(1)
    assert (result.status, result.outputs) == ("succeeded", {"handler": "handled a"})


def test_the_failed_node_trace_says_failed_and_the_handler_trace_succeeded() -> None:
    nodes = guarded(broken, retries=1, backoff=0).run(1).nodes
    assert (nodes["a"].status, nodes["a"].attempts, nodes["a"].error) == ("failed", 2, "ValueError: cannot take 1")
    assert (nodes["handler"].status, nodes["b"].status) == ("succeeded", "skipped")


def test_a_success_skips_the_handler() -> None:
    calls: list[Any] = []
    f = (Formation("g").add_function("a", lambda x: x + 1).add_function("handler", calls.append)
         .connect("a", "handler", on_error=True))
    result = f.run(1)
    assert (result.outputs, calls, result.nodes["handler"].status) == ({"a": 2}, [], "skipped")


def test_a_success_routes_along_the_normal_edges() -> None:
    result = guarded(lambda x: x + 1).run(1)
    assert result.outputs == {"b": 20}


def test_the_failed_node_normal_successors_are_skipped() -> None:
    f = guarded(broken).add_function("c", lambda x: x).connect("b", "c")
    nodes = f.run(1).nodes
    assert (nodes["b"].status, nodes["c"].status) == ("skipped", "skipped")


def test_a_timeout_is_routed_to_the_handler() -> None:
    gate = threading.Event()
    seen: list[NodeFailure] = []
    f = (Formation("g").add_function("a", lambda x: gate.wait(5), timeout=0.1).add_function("handler", seen.append)
         .connect("a", "handler", on_error=True))
    try:
        result = f.run(1)
    finally:
        gate.set()
    assert result.nodes["a"].status == "failed"
    assert isinstance(seen[0].error, NodeTimeoutError) and seen[0].error.node == "a"


def test_an_agent_node_out_of_time_hands_its_handler_a_node_timeout_error() -> None:
    for _ in range(3):  # the session's own deadline (the node's) and the node's timer race for it
        seen: list[NodeFailure] = []
        slow = Agent("w", provider=ScriptedProvider(["late"], latency_s=2, cycle=True))
        (Formation("g").add_agent("a", slow, timeout=0.1).add_function("handler", seen.append)
         .connect("a", "handler", on_error=True).run("q"))
        assert isinstance(seen[0].error, NodeTimeoutError) and seen[0].error.node == "a"


def test_an_error_that_retry_on_does_not_name_reaches_the_handler_after_one_attempt() -> None:
    seen: list[NodeFailure] = []
    f = (Formation("g").add_function("a", broken, retries=5, retry_on=ConnectionError)
         .add_function("handler", seen.append).connect("a", "handler", on_error=True))
    f.run(1)
    assert seen[0].attempts == 1


def test_node_failed_is_emitted_and_the_run_finishes() -> None:
    events: list[FormationEvent] = []
    guarded(broken).run(1, on_event=events.append)
    kinds = [(e.type.value, e.node) for e in events]
    assert ("node_failed", "a") in kinds and ("node_finished", "handler") in kinds
    assert kinds[-1] == ("run_finished", None)


def test_a_node_without_error_edges_still_fails_the_run() -> None:
    f = guarded(lambda x: x).add_function("c", broken).connect("b", "c")
    with pytest.raises(FormationRuntimeError, match="node 'c' failed"):
        f.run(1)


def test_every_error_edge_of_a_node_receives_the_failure() -> None:
    f = (Formation("g").add_function("a", broken).add_function("log", lambda e: f"log {e.node}")
         .add_function("alert", lambda e: f"alert {e.attempts}")
         .connect("a", "log", on_error=True).connect("a", "alert", on_error=True))
    assert f.run(1).outputs == {"log": "log a", "alert": "alert 1"}


def test_a_join_after_the_handler_gets_whichever_branch_ran() -> None:
    f = (Formation("g").add_function("a", lambda x: broken(x) if x < 0 else x)
         .add_function("fallback", lambda e: 0).add_function("out", lambda branches: branches)
         .connect("a", "out").connect("a", "fallback", on_error=True).connect("fallback", "out"))
    assert f.run(5).output == {"a": 5}
    assert f.run(-5).output == {"fallback": 0}


def test_a_skipped_node_skips_its_handler_too() -> None:
    calls: list[Any] = []
    f = (Formation("g").add_function("start", lambda x: x).add_function("a", broken)
         .add_function("handler", calls.append).connect("start", "a", when=lambda x: x > 0)
         .add_function("other", lambda x: x).connect("start", "other", otherwise=True)
         .connect("a", "handler", on_error=True))
    result = f.run(-1)
    assert (calls, result.nodes["a"].status, result.nodes["handler"].status) == ([], "skipped", "skipped")


def test_a_hand_built_graph_with_on_error_edges_is_the_same_thing() -> None:
    graph = nx.DiGraph()
    graph.add_node("a", kind="function", fn=broken)
    graph.add_node("handler", kind="function", fn=handle)
    graph.add_edge("a", "handler", on_error=True)
    built = Formation("b").add_function("a", broken).add_function("handler", handle)
    built.connect("a", "handler", on_error=True)
    assert dict(built.graph.edges["a", "handler"]) == {"on_error": True}
    assert Formation("hand", graph).run(1).outputs == {"handler": "handled a"}


def test_a_node_whose_only_out_edges_are_error_edges_is_a_sink() -> None:
    f = Formation("g").add_function("a", lambda x: x).add_function("handler", handle)
    f.connect("a", "handler", on_error=True)
    assert f.validate().sinks == ("a", "handler")
    assert f.run(3).outputs == {"a": 3}


def test_a_loop_through_an_error_edge_can_repair_the_input() -> None:
    def strict(x: int | NodeFailure) -> int:
        if isinstance(x, NodeFailure) or x < 0:
            raise ValueError("negative")
        return x

    attempts: list[Any] = []

    def repair(failure: NodeFailure) -> int:
        attempts.append(failure.input)
        return abs(failure.input)

    f = (Formation("loop").add_function("start", lambda x: x).add_function("a", strict)
         .add_function("repair", repair).add_function("out", str)
         .connect("start", "a", "out").connect("a", "repair", on_error=True).connect("repair", "a"))
    result = f.run(-4)
    assert (result.outputs["out"], attempts, result.nodes["a"].status, result.nodes["a"].visits) == (
        "4", [-4], "succeeded", 2)


def test_a_failure_in_the_last_visit_of_a_loop_says_failed() -> None:
    def count(x: int) -> int:
        if x >= 2:
            raise ValueError("too far")
        return x + 1

    f = (Formation("loop").add_function("a", count).add_function("handler", handle).add_function("out", str)
         .connect("a", "a", when=lambda x: x < 5).connect("a", "out", when=lambda x: x >= 5)
         .connect("a", "handler", on_error=True))
    result = f.run(0)
    assert (result.outputs, result.nodes["a"].status, result.nodes["a"].visits) == (
        {"handler": "handled a"}, "failed", 3)


def test_an_agent_handler_reads_the_failure_as_text() -> None:
    provider = ScriptedProvider(["sorry"])
    f = (Formation("g").add_function("a", broken).add_agent("explain", Agent("e", provider=provider))
         .connect("a", "explain", on_error=True))
    assert f.run(3).outputs == {"explain": "sorry"}
    assert "node 'a' failed after 1 attempt(s): ValueError: cannot take 3" in str(provider.requests[0].messages[-1])


def test_a_cancelled_run_keeps_the_handled_node_failed() -> None:
    gate = threading.Event()
    started = threading.Event()

    def slow_handler(failure: NodeFailure) -> str:
        started.set()
        gate.wait(5)
        return "late"

    f = (Formation("g").add_function("a", broken).add_function("handler", slow_handler)
         .connect("a", "handler", on_error=True))
    events: list[FormationEvent] = []
    with f.start(on_event=events.append) as running:
        future = running.submit(1)
        assert started.wait(5)
        assert running.cancel(future.run_id)
        gate.set()
    [cancelled] = [e for e in events if e.type == "run_cancelled"]
    assert cancelled.data["unfinished"] == ["handler"]
    assert (cancelled.data["nodes"]["a"].status, cancelled.data["nodes"]["handler"].status) == ("failed", "cancelled")


def test_node_failure_is_a_frozen_picklable_value() -> None:
    failure = NodeFailure("a", ValueError("x"), {"k": [1]}, 2, "run-1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        failure.node = "b"  # type: ignore[misc]
    copy = pickle.loads(pickle.dumps(failure))
    assert (copy.node, copy.input, copy.attempts, copy.run_id, str(copy.error)) == ("a", {"k": [1]}, 2, "run-1", "x")
    assert str(failure) == "node 'a' failed after 2 attempt(s): ValueError: x"


def test_an_error_edge_back_to_the_node_itself_hands_it_its_own_failure() -> None:
    def parse(x: str | NodeFailure) -> int:
        if isinstance(x, NodeFailure):
            return -1  # the fallback visit
        return int(x)

    f = Formation("self").add_function("parse", parse).add_function("out", str)
    f.connect("parse", "out").connect("parse", "parse", on_error=True)
    result = f.run("not a number")
    assert (result.outputs["out"], result.nodes["parse"].visits, result.nodes["parse"].status) == ("-1", 2, "succeeded")


def test_a_loop_of_failures_through_an_error_edge_is_bounded_by_max_visits() -> None:
    f = (Formation("stuck").add_function("start", lambda x: x).add_function("a", lambda x: broken(0), max_visits=3)
         .add_function("h", lambda e: 0).connect("start", "a").connect("a", "h", on_error=True).connect("h", "a"))
    with pytest.raises(FormationRuntimeError, match="max_visits=3"):
        f.run(1)
