"""More behaviours ported from Google ADK's own test suite (google/adk-python,
``tests/unittests/agents/``): agent error callbacks, GraphAgent's rewind, resumability,
interrupts and cancellation, graph state, and some of them on ``backend="ray"``. (Split
from ``test_peer_adk.py``, whose module docstring maps ADK's agents onto formations.)

Deliberately different, or without a counterpart (each test that touches one says so):
- ``on_agent_error_callback`` observes a failure that still propagates; our error edge
  handles it (the run goes on from the handler, and the failed node is a sink with no
  output, so ``output`` is None and ``outputs`` holds the handler's: DESIGN "Sinks").
- ``rewind_to_node(..., invocation_index=i)`` rewinds the session in place; ours is
  ``Formation.fork(run_id, at=(node, visit))``, a new run that reuses the journal before
  that visit and leaves the original run unchanged. Visits count from 1; ADK's negative
  indexes (``-1``, the latest) are refused, naming the visits the run made.
- A saved ``current_node`` that no longer exists restarts an ADK graph from its start;
  ours refuses to resume a run in a formation whose nodes or edges differ, listing them.
- GraphState's lenient parsing (an invalid dict gives the default) has no counterpart: a
  node's output is typed, and a fork's ``output=`` that does not fit is refused.
- ADK's InterruptService (queued messages, reasoner actions) is our ``interrupt()``,
  ``break_before``/``break_after`` and ``fork(input=...)`` ("rerun with guidance").
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def step(name: str, counter: Counter) -> Any:
    """ADK's SimpleTestAgent: counts its calls, appends its name to what it received."""

    def run(message: str) -> str:
        counter.hit(name)
        return f"{message}>{name}"

    return run


def chain(counter: Counter, *names: str) -> Formation:
    """ADK's ``_build_linear_graph``: node0 → node1 → … (each a :func:`step`)."""
    f = Formation("g")
    for name in names:
        f.add_function(name, step(name, counter))
    return f.connect(*names)


def visits(store: RunStore, run_id: str) -> list[tuple[str, int, Any]]:
    return [(v.node, v.visit, v.output) for v in store.history(run_id)]


BOOM = RuntimeError("agent impl exploded")


def failing_agent(message: str) -> str:
    raise BOOM


# --- error callbacks ----------------------------------------------------------------------


def test_an_error_edge_hands_its_handler_the_exception_raised_with_the_node_and_its_input() -> None:
    # adk test_agent_error_callbacks.py::test_on_agent_error_callback_called_when_impl_raises and _receives_correct_agent
    failures: list[NodeFailure] = []
    f = (Formation("e").add_function("failing_agent", failing_agent)
         .add_function("tracker", lambda failure: failures.append(failure) or "handled")
         .connect("failing_agent", "tracker", on_error=True))
    result = f.run("go")
    assert [(x.error, x.node, x.input, x.attempts) for x in failures] == [(BOOM, "failing_agent", "go", 1)]
    assert failures[0].error is BOOM
    assert (result.status, result.output, result.outputs) == ("succeeded", "handled", {"tracker": "handled"})
    assert result.nodes["failing_agent"].status == "failed"


def test_without_an_error_edge_the_run_fails_with_the_original_exception_as_its_cause() -> None:
    # adk test_agent_error_callbacks.py::test_original_exception_reraised_after_notification
    with pytest.raises(FormationRuntimeError, match=r"node 'failing_agent' failed after 1 attempt") as info:
        Formation("e").add_function("failing_agent", failing_agent).run("go")
    assert info.value.__cause__ is BOOM


def test_on_the_error_path_the_failed_nodes_successor_does_not_run() -> None:
    # adk test_agent_error_callbacks.py::test_after_agent_callback_not_called_on_error
    counter = Counter()
    f = (Formation("e").add_function("failing_agent", failing_agent)
         .add_function("after", lambda m: counter.hit("after")).add_function("tracker", lambda failure: "handled")
         .connect("failing_agent", "after").connect("failing_agent", "tracker", on_error=True))
    result = f.run("go")
    assert counter.count("after") == 0 and result.nodes["after"].status == "skipped"


def test_on_success_the_error_handler_is_not_called_and_the_successor_runs() -> None:
    # adk test_agent_error_callbacks.py::test_on_agent_error_callback_not_called_on_success and _still_called_on_success
    counter = Counter()
    f = (Formation("e").add_function("success_agent", lambda m: "done").add_function("after", lambda m: m)
         .add_function("tracker", lambda failure: counter.hit("tracker"))
         .connect("success_agent", "after").connect("success_agent", "tracker", on_error=True))
    assert f.run("go").outputs == {"after": "done"}
    assert counter.count("tracker") == 0


def test_every_error_edge_of_a_failing_node_is_handed_the_failure() -> None:
    # adk test_agent_error_callbacks.py::test_multiple_plugins_all_notified_on_agent_error
    f = (Formation("e").add_function("failing_agent", failing_agent)
         .add_function("a", lambda failure: ("a", failure.error)).add_function("b", lambda failure: ("b", failure.error))
         .connect("failing_agent", "a", on_error=True).connect("failing_agent", "b", on_error=True))
    assert f.run("go").outputs == {"a": ("a", BOOM), "b": ("b", BOOM)}


def test_an_agent_whose_model_raises_hands_its_error_edge_that_exception() -> None:
    # adk test_agent_error_callbacks.py (an LlmAgent whose model fails): the provider's exception, unwrapped
    failures: list[NodeFailure] = []
    f = (Formation("e").add_agent("failing_agent", Agent("failing_agent", provider=ScriptedProvider([BOOM])))
         .add_function("tracker", lambda failure: failures.append(failure) or "handled")
         .connect("failing_agent", "tracker", on_error=True))
    assert f.run("go").outputs == {"tracker": "handled"}
    assert failures[0].error is BOOM


# --- rewind ---------------------------------------------------------------------------------


def test_forking_at_a_node_reuses_the_visits_before_it_and_runs_the_rest(store: RunStore) -> None:
    # adk test_graph_rewind.py::test_rewind_to_node_basic and test_rewind_restores_state
    counter = Counter()
    f = chain(counter, "step1", "step2", "step3")
    run_id = f.run("Start", store=store).run_id
    forked = f.fork(run_id, store=store, at="step2", output="Output 2")
    assert visits(store, forked) == [("step1", 1, "Start>step1"), ("step2", 1, "Output 2"),
                                     ("step3", 1, "Output 2>step3")]
    assert counter.calls == {"step1": 1, "step2": 1, "step3": 2}


def test_forking_leaves_the_original_run_as_it_was(store: RunStore) -> None:
    # adk test_graph_rewind.py::test_rewind_preserves_path and test_rewind_session_state_integration
    f = chain(Counter(), "a", "b", "c")
    run_id = f.run("Start", store=store).run_id
    before = visits(store, run_id)
    f.fork(run_id, store=store, at="b", output="B")
    assert visits(store, run_id) == before
    assert store.get(run_id).status == "succeeded"


def test_forking_at_a_node_the_formation_does_not_have_names_the_nodes_it_has(store: RunStore) -> None:
    # adk test_graph_rewind.py::test_rewind_invalid_node ("has not been executed yet")
    f = chain(Counter(), "step1", "step2")
    run_id = f.run("Start", store=store).run_id
    with pytest.raises(ValueError, match=r"no node 'nonexistent_node' to fork at; its nodes are 'step1', 'step2'"):
        f.fork(run_id, store=store, at="nonexistent_node", output="x")


def test_forking_at_a_visit_the_run_never_made_says_how_many_it_made(store: RunStore) -> None:
    # adk test_graph_rewind.py::test_rewind_invalid_invocation_index ("out of range")
    f = Formation("g").add_function("step1", lambda m: "Output 1")
    run_id = f.run("Start", store=store).run_id
    with pytest.raises(ValueError, match=r"never made visit 10 of node 'step1' \(it made 1\)"):
        f.fork(run_id, store=store, at=("step1", 10), output="x")


def test_forking_at_a_negative_visit_is_refused_saying_visits_count_from_one(store: RunStore) -> None:
    # adk test_graph_rewind.py::test_rewind_negative_index. DESIGN differs: no -1 for the latest visit
    f = Formation("g").add_function("repeater", lambda m: "Repeated")
    run_id = f.run("Start", store=store).run_id
    with pytest.raises(ValueError, match=r"\(node, visit\) with a visit number >= 1, got \('repeater', -1\)"):
        f.fork(run_id, store=store, at=("repeater", -1), output="x")


def test_forking_at_the_second_visit_of_a_looping_node_keeps_the_first_and_loops_on(store: RunStore) -> None:
    # adk test_graph_rewind.py::test_rewind_to_node_in_loop (invocation_index=1: the second)
    f = (Formation("loop").add_function("entry", lambda n: n).add_function("counter", lambda n: n + 1, max_visits=10)
         .add_function("validator", lambda n: n).connect("entry", "counter")
         .connect("counter", "counter", when=lambda n: n < 3).connect("counter", "validator", otherwise=True))
    run_id = f.run(0, store=store).run_id
    assert [v[1:] for v in visits(store, run_id) if v[0] == "counter"] == [(1, 1), (2, 2), (3, 3)]
    forked = f.fork(run_id, store=store, at=("counter", 2), output=0)
    assert [v[1:] for v in visits(store, forked) if v[0] == "counter"] == [(1, 1), (2, 0), (3, 1), (4, 2), (5, 3)]


def test_forking_a_branching_run_at_its_start_routes_the_new_output_again(store: RunStore) -> None:
    # adk test_graph_rewind.py::test_rewind_with_branching; a branch the run did not take cannot be forked at
    f = (Formation("branch").add_function("start", lambda m: m).add_function("branch_a", lambda m: f"A({m})")
         .add_function("branch_b", lambda m: f"B({m})").add_function("end", lambda d: d, join="any")
         .connect("start", "branch_a", when=lambda m: m == "a").connect("start", "branch_b", otherwise=True)
         .connect("branch_a", "end").connect("branch_b", "end"))
    run_id = f.run("a", store=store).run_id
    forked = f.fork(run_id, store=store, at="start", output="b")
    assert visits(store, forked)[-1] == ("end", 1, {"branch_b": "B(b)"})
    with pytest.raises(ValueError, match=r"never made visit 1 of node 'branch_b' \(it made none\)"):
        f.fork(run_id, store=store, at="branch_b", output="x")


# --- resumability, interrupts and cancellation ------------------------------------------


def test_a_failed_run_resumes_at_the_node_that_failed_and_not_before(store: RunStore) -> None:
    # adk test_graph_resumability.py::test_resume_from_saved_node (saved current_node="nB")
    counter, broken = Counter(), [True]

    def nB(m: str) -> str:
        counter.hit("nB")
        if broken[0]:
            raise ConnectionError("flaky")
        return f"{m}>nB"

    f = (Formation("g").add_function("nA", step("nA", counter)).add_function("nB", nB)
         .add_function("nC", step("nC", counter)).connect("nA", "nB", "nC"))
    with pytest.raises(FormationRuntimeError):
        f.run("in", store=store, run_id="r1")
    broken[0] = False
    assert f.resume("r1", store=store).output == "in>nA>nB>nC"
    assert counter.calls == {"nA": 1, "nB": 2, "nC": 1}


def test_a_run_resumed_in_a_formation_without_its_node_is_refused_listing_the_differences(store: RunStore) -> None:
    # adk test_graph_resumability.py::test_resume_with_removed_node_restarts. DESIGN differs: refused
    run_id = chain(Counter(), "nA", "nB").run("in", store=store, break_after=["nA"]).run_id
    with pytest.raises(ValueError, match=r"node 'nB' \(function\) is missing") as info:
        chain(Counter(), "nA", "nX").resume(run_id, store=store)
    assert "node 'nX' (function) is new" in str(info.value)


def test_an_interrupt_suspends_the_run_and_the_answer_resumes_it_without_rerunning_what_came_before(
        store: RunStore) -> None:
    # adk test_graph_resumability.py::test_pause_on_long_running_tool and test_resume_after_pause_continues
    counter = Counter()

    def pauser(m: str) -> str:
        counter.hit("nB")
        return f"{m}>{interrupt({'tool': 'long_running_tool'})}"

    f = (Formation("g").add_function("nA", step("nA", counter)).add_function("nB", pauser)
         .add_function("nC", step("nC", counter)).connect("nA", "nB", "nC"))
    paused = f.run("in", store=store)
    assert (paused.status, paused.interrupt) == ("suspended", {"node": "nB", "payload": {"tool": "long_running_tool"}})
    assert counter.count("nC") == 0 and paused.outputs == {}
    done = f.resume(paused.run_id, store=store, answer="result")
    assert (done.status, done.output) == ("succeeded", "in>nA>result>nC")
    assert counter.calls == {"nA": 1, "nB": 2, "nC": 1}


def test_breakpoints_before_and_after_a_node_suspend_the_run_once_each(store: RunStore) -> None:
    # adk test_interrupt_integration.py::test_interrupt_timing_both (InterruptMode.BOTH)
    counter = Counter()
    f = chain(counter, "node_a", "node_b")
    before = f.run("test", store=store, break_before=["node_a"], break_after=["node_a"])
    assert before.interrupt == {"node": "node_a", "payload": {"breakpoint": "before", "input": "test"}}
    after = f.resume(before.run_id, store=store)
    assert after.interrupt == {"node": "node_a", "payload": {"breakpoint": "after", "output": "test>node_a"}}
    assert f.resume(after.run_id, store=store).output == "test>node_a>node_b"
    assert counter.calls == {"node_a": 1, "node_b": 1}


def test_a_fork_with_a_new_input_reruns_the_node_with_guidance(store: RunStore) -> None:
    # adk test_interrupt_integration.py::test_full_interrupt_workflow_rerun ({"guidance": "Be more specific"})
    counter = Counter()
    f = chain(counter, "node_a", "node_b")
    run_id = f.run("test", store=store).run_id
    forked = f.fork(run_id, store=store, at="node_a", input="test (Be more specific)")
    assert visits(store, forked)[-1] == ("node_b", 1, "test (Be more specific)>node_a>node_b")
    assert counter.calls == {"node_a": 2, "node_b": 2}


def test_a_run_cancelled_during_its_second_node_keeps_the_first_and_resumes_from_the_second(
        store: RunStore, gate: tuple[threading.Event, threading.Event]) -> None:
    # adk test_interrupt_cancellation.py::test_immediate_cancellation_saves_state (cancelled at node2)
    entered, release = gate
    counter = Counter()

    def node2(m: str) -> str:
        if counter.hit("node2") == 1:
            entered.set()
            release.wait(10)
        return f"{m}>node2"

    f = (Formation("g").add_function("node1", step("node1", counter)).add_function("node2", node2)
         .add_function("node3", step("node3", counter)).connect("node1", "node2", "node3"))
    with f.start(store=store) as running:
        future = running.submit("start")
        assert entered.wait(5)
        assert running.cancel(future.run_id) is True
    run_id = future.run_id
    assert store.get(run_id).status == "cancelled"
    assert visits(store, run_id) == [("node1", 1, "start>node1")]
    release.set()
    assert f.resume(run_id, store=store).output == "start>node1>node2>node3"
    assert counter.calls == {"node1": 1, "node2": 2, "node3": 1}


def test_an_agent_visited_again_in_a_cycle_starts_a_fresh_conversation() -> None:
    # adk test_graph_resumability.py::TestCycleReset::test_cycle_resets_sub_agent_state
    provider = ScriptedProvider(["go", "done"])
    f = (Formation("g").add_function("entry", lambda m: m).add_agent("nA", Agent("a", provider=provider), max_visits=5)
         .add_function("nB", lambda m: m, max_visits=5).add_function("end", lambda m: m)
         .connect("entry", "nA", "nB").connect("nB", "nA", when=lambda m: m == "go").connect("nB", "end", otherwise=True))
    result = f.run("start")
    assert (result.output, result.nodes["nA"].visits) == ("done", 2)
    assert [[b.text for m in r.messages for b in m.content] for r in provider.requests] == [["start"], ["go"]]


# --- graph state ------------------------------------------------------------------------------


class ReviewResult(BaseModel):
    decision: str
    reasoning: str


class ChildModel(BaseModel):
    score: float
    label: str


def test_model_outputs_journalled_before_an_interrupt_reach_the_join_as_models_after_resume(store: RunStore) -> None:
    # adk test_graph_state.py::TestGraphStateGetParsed (a dict in state parsed back to its model)
    seen: list[tuple[str, str]] = []

    def merge(review: ReviewResult, score: ChildModel) -> str:
        seen.append((type(review).__name__, type(score).__name__))
        return f"{review.decision}/{score.label}/{interrupt('ok?')}"

    f = (Formation("state").add_function("review", lambda m: ReviewResult(decision="approve", reasoning=m))
         .add_function("score", lambda m: ChildModel(score=0.95, label="good")).add_function("merge", merge)
         .connect("review", "merge").connect("score", "merge"))
    paused = f.run("looks good", store=store)
    assert f.resume(paused.run_id, store=store, answer="yes").output == "approve/good/yes"
    assert seen == [("ReviewResult", "ChildModel")] * 2


def test_an_agents_structured_answer_is_journalled_and_not_asked_for_again_on_resume(store: RunStore) -> None:
    # adk test_graph_state.py::TestParseStateValue::test_json_string_to_model (the model's JSON text → the model)
    provider = ScriptedProvider([json.dumps({"decision": "reject", "reasoning": "needs work"})])
    broken = [True]

    def after(review: ReviewResult) -> str:
        if broken[0]:
            raise ConnectionError("flaky")
        return review.decision

    f = (Formation("g").add_agent("reviewer", Agent("reviewer", provider=provider, output_schema=ReviewResult))
         .add_function("after", after).connect("reviewer", "after"))
    with pytest.raises(FormationRuntimeError):
        f.run("review this", store=store, run_id="r1")
    broken[0] = False
    assert f.resume("r1", store=store).output == "reject"
    assert len(provider.requests) == 1
    assert store.history("r1")[0].output == ReviewResult(decision="reject", reasoning="needs work")


def test_a_forked_output_is_validated_into_the_nodes_model_and_a_wrong_one_is_refused(store: RunStore) -> None:
    # adk test_graph_state.py::test_dict_to_model and test_invalid_dict_returns_default. DESIGN differs: refused.
    # (The dict was checked against the model, then journalled and delivered as the dict.)
    seen: list[Any] = []

    def review(m: str) -> ReviewResult:
        return ReviewResult(decision="approve", reasoning=m)

    f = (Formation("g").add_function("review", review)
         .add_function("after", lambda r: seen.append(r) or r.decision).connect("review", "after"))
    run_id = f.run("x", store=store).run_id
    f.fork(run_id, store=store, at="review", output={"decision": "reject", "reasoning": "bad"})
    assert seen[-1] == ReviewResult(decision="reject", reasoning="bad")
    with pytest.raises(ValueError, match=r"does not fit its output type ReviewResult: decision: Field required"):
        f.fork(run_id, store=store, at="review", output={"wrong_key": 123})


# --- backend="ray" ----------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_error_edge_on_ray_hands_its_handler_the_failure() -> None:
    """adk test_agent_error_callbacks.py::test_on_agent_error_callback_called_when_impl_raises on backend="ray"."""
    f = (Formation("e").add_function("failing_agent", failing_agent)
         .add_function("tracker", lambda failure: (failure.node, str(failure.error)))
         .connect("failing_agent", "tracker", on_error=True))
    assert f.run("go", backend="ray", timeout=120).outputs == {"tracker": ("failing_agent", "agent impl exploded")}


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_map_over_a_map_on_ray_answers_every_inner_item_in_order() -> None:
    """adk test_map_agent.py::test_map_agent_with_map_agent on backend="ray" (two replicas wide)."""
    leaf = Formation("leaf").add_function("nested_mock", lambda x: x * 10)
    inner_map = Formation("inner").add_map("inner_map", formation=leaf, max_workers=2)
    outer = Formation("outer").add_map("outer_map", formation=inner_map, max_workers=2)
    assert outer.run([[1, 2], [3, 4]], backend="ray", timeout=120).output == [[10, 20], [30, 40]]


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_interrupted_run_on_ray_resumes_without_rerunning_what_came_before(store: RunStore) -> None:
    """adk test_graph_resumability.py::test_resume_after_pause_continues on backend="ray"."""

    def pauser(m: str) -> str:
        return f"{m}>{interrupt('approve?')}"

    f = Formation("g").add_function("nA", lambda m: f"{m}>nA").add_function("nB", pauser).connect("nA", "nB")
    paused = f.run("in", store=store, backend="ray", timeout=120)
    assert paused.interrupt == {"node": "nB", "payload": "approve?"}
    done = f.resume(paused.run_id, store=store, answer="yes", backend="ray", timeout=120)
    assert done.output == "in>nA>yes"
    assert [v.node for v in store.history(paused.run_id)] == ["nA", "nB"]
