"""Behaviours of Microsoft Agent Framework's workflow tests (python/packages/core/tests/workflow/
in microsoft/agent-framework), ported to formations: an Executor is a function node, ``add_edge`` an
edge, ``add_fan_out_edges``/``add_fan_in_edges`` a fan-out and a join, a switch-case edge group
``when=`` edges with its ``Default`` the ``otherwise=True`` edge, a cycle a back edge, the
workflow's ``max_iterations`` our per-node ``max_visits``, and ``run(stream=True)`` our
``run_stream``. Checkpoints, request_info and sub-workflows are in
tests/durable/test_peer_maf_durable.py and tests/formation/test_peer_maf_more.py.

Deliberately different (each test that touches one says so):
- MAF's executors choose at run time whether to send a message on or ``yield_output``; ours route
  by ``when=`` conditions on the output, and a run's outputs are its sinks' (the other nodes'
  values are on their traces): ``output_from`` has no counterpart.
- MAF refuses a second concurrent run on one Workflow instance ("Workflow is already running");
  a Formation is a declaration, and concurrent runs of it are independent.
- MAF keeps shared state across runs of one Workflow instance (until ``reset()``); our runs share
  nothing unless given the same ``blackboard``.
- MAF's convergence failure (``WorkflowConvergenceException``) is for the whole workflow's
  supersteps; ours is per node (``max_visits``) and names the node."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import Blackboard
from wingman_actors.testing import ScriptedProvider


def inc(by: int = 1) -> Any:
    def step(x: int) -> int:
        return x + by

    return step


def ping_pong(limit: int = 10, *, max_visits: int = 10) -> Formation:
    """MAF's executor_a <-> executor_b cycle: each adds 1; ``a`` leaves the cycle for ``done`` once its
    value reaches ``limit``. MAF starts at ``a`` itself; ours needs an entry node outside the cycle
    (a cycle with none is a setup error saying so)."""
    return (Formation("pingpong").add_function("start", lambda x: x)
            .add_function("a", inc(), max_visits=max_visits).add_function("b", inc(), max_visits=max_visits)
            .add_function("done", lambda x: x)
            .connect("start", "a").connect("a", "b", when=lambda v: v < limit).connect("b", "a")
            .connect("a", "done", otherwise=True))


# -- runs and streams -------------------------------------------------------------------------


def test_a_cycle_of_two_nodes_runs_until_its_exit_condition_and_gives_the_value() -> None:
    """From microsoft/agent-framework python/packages/core/tests/workflow/test_workflow.py::test_workflow_run."""
    result = ping_pong().run(0)

    assert result.output == 11  # a: 1, b: 2, ..., a: 9, b: 10, a: 11 (not below 10: leaves)
    assert (result.nodes["a"].visits, result.nodes["b"].visits) == (6, 5)


def test_a_streamed_cycle_ends_with_run_finished_carrying_the_result() -> None:
    """From test_workflow.py::test_workflow_run_streaming (every event is a workflow event; the
    output arrives in the stream)."""
    events = list(ping_pong().run_stream(0))

    assert all(isinstance(e, FormationEvent) for e in events)
    assert (events[0].type, events[-1].type) == ("run_started", "run_finished")
    assert events[-1].data["result"].output == 11
    assert [e.data["output"] for e in events if e.type == "node_finished" and e.node == "done"] == [11]


def test_a_cycle_that_would_pass_its_visit_limit_fails_naming_the_node() -> None:
    """From test_workflow.py::test_workflow_run_not_completed (max_iterations=5 raises
    WorkflowConvergenceException). Ours: the per-node ``max_visits`` limit, and the error names the
    node and the limit."""
    with pytest.raises(FormationRuntimeError) as caught:
        ping_pong(max_visits=3).run(0)

    assert "max_visits" in str(caught.value)
    assert "'a'" in str(caught.value) or "'b'" in str(caught.value)


def test_a_streamed_cycle_that_passes_its_visit_limit_ends_the_stream_with_run_failed() -> None:
    """From test_workflow.py::test_workflow_run_stream_not_completed (the streamed run raises the
    convergence error). Ours: the stream ends with ``run_failed`` carrying the error."""
    events = list(ping_pong(max_visits=3).run_stream(0))

    assert events[-1].type == "run_failed"
    assert "max_visits" in str(events[-1].data["error"])
    assert not any(e.type == "run_finished" for e in events)


def test_a_fan_out_gives_each_sinks_output() -> None:
    """From test_workflow.py::test_fan_out_multiple_completed_events (both fan-out targets
    yield an output)."""
    f = (Formation("fan").add_function("a", inc()).add_function("b", inc()).add_function("c", inc(2))
         .connect("a", "b").connect("a", "c"))
    result = f.run(0)

    assert result.outputs == {"b": 2, "c": 3}


def test_a_fan_in_waits_for_both_branches_and_receives_their_values() -> None:
    """From test_workflow.py::test_fan_in (aggregator sums what both branches sent: 2 + 2)."""
    seen: list[dict[str, int]] = []

    def aggregate(values: dict[str, int]) -> int:
        seen.append(values)
        return sum(values.values())

    f = (Formation("fanin").add_function("a", inc()).add_function("b", inc()).add_function("c", inc())
         .add_function("aggregator", aggregate)
         .connect("a", "b", "aggregator").connect("a", "c", "aggregator"))
    result = f.run(0)

    assert result.output == 4
    assert seen == [{"b": 2, "c": 2}]
    assert result.nodes["aggregator"].visits == 1


def one_plus_the_case(values: dict[str, int]) -> int:
    """The hub: the one processor that ran, plus 1 (the other case is skipped)."""
    [value] = values.values()
    return value + 1


def comprehensive() -> Formation:
    """MAF's switch-case -> fan-out -> fan-in workflow: router (+1), proc_a (+1) when the value is
    below 5 else proc_b (+2), a hub (+1), two parallel nodes (+3, +5), an aggregator (sum)."""
    return (Formation("groups").add_function("router", inc()).add_function("proc_a", inc()).add_function("proc_b", inc(2))
            .add_function("hub", one_plus_the_case).add_function("p1", inc(3)).add_function("p2", inc(5))
            .add_function("aggregator", lambda p1, p2: p1 + p2)
            .connect("router", "proc_a", when=lambda m: m < 5).connect("router", "proc_b", otherwise=True)
            .connect("proc_a", "hub").connect("proc_b", "hub")
            .connect("hub", "p1", "aggregator").connect("hub", "p2", "aggregator"))


def test_switch_case_then_fan_out_then_fan_in_takes_the_matching_case_for_a_small_number() -> None:
    """From test_workflow.py::test_comprehensive_edge_groups_workflow (2 -> router 3 -> proc_a 4 ->
    hub 5 -> 8 and 10 -> 18)."""
    order = Order()
    result = comprehensive().run(2, on_event=order)

    assert result.output == 18
    assert "proc_b" not in order.nodes
    assert result.nodes["proc_b"].status == "skipped"


def test_switch_case_falls_to_its_default_for_a_large_number_on_the_same_formation() -> None:
    """From test_workflow.py::test_comprehensive_edge_groups_workflow (8 -> router 9 -> the Default,
    proc_b 11 -> hub 12 -> 15 and 17 -> 32; the same workflow object runs both inputs)."""
    f = comprehensive()
    assert f.run(2).output == 18
    result = f.run(8)

    assert result.output == 32
    assert result.nodes["proc_a"].status == "skipped"


def test_a_switch_case_join_without_join_any_still_fires_when_the_other_case_is_skipped() -> None:
    """From test_workflow.py::test_comprehensive_edge_groups_workflow (both processors feed one hub,
    only one of them runs). Ours with the default ``join="all"``: the skipped case counts as
    delivered, so the hub fires once with the one value."""
    received: list[dict[str, int]] = []

    def hub(values: dict[str, int]) -> int:
        received.append(values)
        return sum(values.values()) + 1

    f = (Formation("groups").add_function("router", inc()).add_function("proc_a", inc()).add_function("proc_b", inc(2))
         .add_function("hub", hub)
         .connect("router", "proc_a", when=lambda m: m < 5).connect("router", "proc_b", otherwise=True)
         .connect("proc_a", "hub").connect("proc_b", "hub"))

    assert f.run(8).output == 12
    assert received == [{"proc_b": 11}]


def test_a_cycles_events_come_from_both_nodes_each_start_before_its_finish() -> None:
    """From test_workflow.py::test_workflow_with_simple_cycle_and_exit_condition (executor events
    come from both nodes of the cycle)."""
    f = (Formation("cycle").add_function("start", lambda x: x).add_function("exec_a", inc(2)).add_function("exec_b", inc())
         .add_function("out", lambda x: x).connect("start", "exec_a")
         .connect("exec_a", "exec_b", when=lambda v: v < 6).connect("exec_b", "exec_a")
         .connect("exec_a", "out", otherwise=True))
    events = list(f.run_stream(2))

    started = [e.node for e in events if e.type == "node_started"]
    assert started == ["start", "exec_a", "exec_b", "exec_a", "out"]
    assert events[-1].data["result"].output == 7
    for node in ("exec_a", "exec_b"):
        kinds = [e.type for e in events if e.node == node and e.type in ("node_started", "node_finished")]
        assert kinds == ["node_started", "node_finished"] * started.count(node)


# -- runs of one formation: concurrent, sequential, state --------------------------------------


def test_two_concurrent_runs_of_one_formation_are_both_served() -> None:
    """From test_workflow.py::test_workflow_concurrent_execution_prevention. Deliberately different:
    MAF refuses the second run ("Workflow is already running"); a Formation is a declaration, and
    two runs of it at once (from two threads) are independent and both succeed."""
    gate = threading.Event()
    entered = Counter()

    def slow(x: int) -> int:
        entered.hit("slow")
        assert gate.wait(10)
        return x * 10

    f = Formation("slowly").add_function("slow", slow)
    results: dict[int, int] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, f.run(n, timeout=20).output)) for n in (1, 2)]
    for t in threads:
        t.start()
    try:
        from tests.support.peers import until
        assert until(lambda: entered.count("slow") == 2, within=15)
    finally:
        gate.set()
        for t in threads:
            t.join(20)

    assert results == {1: 10, 2: 20}


def test_runs_and_streams_of_one_formation_follow_each_other_in_any_order() -> None:
    """From test_workflow.py::test_workflow_sequential_runs_after_completion (run, run, streamed,
    run: each finishes and leaves the formation runnable)."""
    f = ping_pong(limit=3)

    assert f.run(0).output == 3
    assert f.run(0).output == 3
    assert list(f.run_stream(0))[-1].data["result"].output == 3
    assert f.run(1).output == 4  # 1 -> a 2 -> b 3 -> a 4


def test_a_stream_never_iterated_starts_nothing_and_leaves_the_formation_runnable() -> None:
    """From test_workflow.py::test_workflow_unconsumed_stream_releases_run_lock (a stream dropped
    without iterating leaks nothing; the next run succeeds). Ours: nothing runs until the stream
    is iterated, and the suite's thread-leak check holds."""
    ran = Counter()
    f = Formation("lazy").add_function("x", lambda v: ran.hit("x") and v)
    stream = f.run_stream(1)
    del stream
    gc.collect()

    assert ran.count("x") == 0
    assert f.run(5).output == 5


def test_a_stream_left_after_its_first_event_cancels_that_run_and_the_next_run_is_unaffected() -> None:
    """From test_workflow.py::test_workflow_partial_stream_does_not_clobber_successor_active_run
    (a partly consumed stream dropped while a new one starts must not disturb the new one)."""
    gate = threading.Event()

    def wait(x: int) -> int:
        gate.wait(10)
        return x

    f = Formation("partial").add_function("first", lambda x: x).add_function("wait", wait).connect("first", "wait")
    first = f.run_stream(1)
    assert next(first).type == "run_started"
    second = f.run_stream(2)
    first.close()  # type: ignore[attr-defined]  # leaving early cancels the first run
    gate.set()
    events = list(second)

    assert events[-1].type == "run_finished"
    assert events[-1].data["result"].output == 2


def test_runs_of_one_formation_share_no_state_unless_given_the_same_blackboard() -> None:
    """From test_workflow.py::test_workflow_multiple_runs_preserve_state and
    ::test_workflow_multiple_runs_no_state_collision_after_rebuild. Deliberately different: MAF keeps
    shared state across runs of one instance; ours share a ``Blackboard`` only when given one."""

    def record(message: str, blackboard: Blackboard) -> list[str]:
        seen = [*blackboard.get("processed", []), message]
        blackboard.set("processed", seen)
        return seen

    f = Formation("state").add_function("state_executor", record)
    board = Blackboard()

    assert f.run("run1:message1", blackboard=board).output == ["run1:message1"]
    assert f.run("run2:message2", blackboard=board).output == ["run1:message1", "run2:message2"]
    assert f.run("run3:message3", blackboard=Blackboard()).output == ["run3:message3"]  # the rebuild: a fresh slate


# -- outputs -------------------------------------------------------------------------------------


def test_a_runs_output_is_its_sinks_value_and_the_other_nodes_values_are_on_their_traces() -> None:
    """From test_workflow.py::test_output_executors_filters_outputs_non_streaming. Deliberately
    different: MAF's ``output_from`` picks which executors' yields count; ours, the sinks' values are
    the outputs, and each node's value is on its trace."""
    f = Formation("out").add_function("executor_a", lambda _: 10).add_function("executor_b", lambda _: 20).connect("executor_a", "executor_b")
    result = f.run(0)

    assert (result.output, result.outputs) == (20, {"executor_b": 20})
    assert result.nodes["executor_a"].output == 10


def test_a_fan_in_runs_output_is_the_aggregators_alone() -> None:
    """From test_workflow.py::test_output_executors_filtering_with_fan_in (start -> [+10, +20] ->
    sum: only the aggregator's 40 is an output)."""
    f = (Formation("fanin").add_function("executor_start", lambda _: 5)
         .add_function("executor_a", inc(10)).add_function("executor_b", inc(20))
         .add_function("aggregator", lambda executor_a, executor_b: executor_a + executor_b)
         .connect("executor_start", "executor_a", "aggregator").connect("executor_start", "executor_b", "aggregator"))
    result = f.run(0)

    assert result.outputs == {"aggregator": 40}


def test_a_chain_of_three_has_the_last_as_its_only_output_and_every_value_on_its_trace() -> None:
    """From test_workflow.py::test_output_executors_with_multiple_specified_executors (outputs of a
    -> b -> c)."""
    f = (Formation("abc").add_function("a", lambda _: 1).add_function("b", lambda _: 2).add_function("c", lambda _: 3)
         .connect("a", "b", "c"))
    result = f.run(0)

    assert result.outputs == {"c": 3}
    assert [result.nodes[n].output for n in "abc"] == [1, 2, 3]


# -- validation ---------------------------------------------------------------------------------


def test_an_edge_to_an_undeclared_node_is_a_setup_error_naming_it() -> None:
    """From microsoft/agent-framework python/packages/core/tests/workflow/test_validation.py (an edge
    to an executor not in the workflow fails the build, naming it)."""
    with pytest.raises(FormationSetupError, match="no node named 'missing'"):
        Formation("v").add_function("a", inc()).connect("a", "missing")


def test_a_type_mismatch_along_an_edge_is_a_setup_error_naming_both_types() -> None:
    """From test_validation.py (TypeCompatibilityError: an edge whose source's output type the target
    cannot handle fails validation, naming the types)."""

    def emits_str(x: int) -> str:
        return str(x)

    def wants_int(x: int) -> int:
        return x

    f = Formation("v").add_function("a", emits_str).add_function("b", wants_int).connect("a", "b")
    with pytest.raises(FormationSetupError) as caught:
        f.validate()

    assert "str" in str(caught.value) and "int" in str(caught.value)
    assert "'b'" in str(caught.value)


def test_a_cycle_without_a_conditional_edge_is_a_setup_error() -> None:
    """From test_validation.py (graph connectivity and cycle checks at build time). Ours: a cycle is
    legal only through a conditional edge, else it could never end."""
    f = (Formation("v").add_function("start", lambda x: x).add_function("a", inc()).add_function("b", inc())
         .connect("start", "a", "b").connect("b", "a"))
    f.add_function("out", lambda x: x).connect("b", "out")

    with pytest.raises(FormationSetupError, match="cycle"):
        f.validate()


# -- the builder -----------------------------------------------------------------------------------


def test_a_formation_with_no_nodes_is_a_setup_error_saying_to_declare_one() -> None:
    """From microsoft/agent-framework python/packages/core/tests/workflow/test_workflow_builder.py::
    test_workflow_builder_without_start_executor_throws."""
    with pytest.raises(FormationSetupError, match="no nodes"):
        Formation("empty").validate()


def test_the_fluent_builder_chains_edges_fan_out_fan_in_and_a_chain_into_one_graph() -> None:
    """From test_workflow_builder.py::test_workflow_builder_fluent_api (a -> b, b -> [c, d] -> e,
    chain e -> f: six executors, the start executor a)."""
    f = Formation("fluent")
    for name in "abcdf":
        f.add_function(f"executor_{name}", lambda x: x)
    f.add_function("executor_e", lambda executor_c, executor_d: executor_c + executor_d)
    f.connect("executor_a", "executor_b").connect("executor_b", "executor_c", "executor_e")
    f.connect("executor_b", "executor_d", "executor_e").connect("executor_e", "executor_f")

    order = Order()
    result = f.run(2, on_event=order)

    assert (f.graph.number_of_nodes(), f.graph.number_of_edges()) == (6, 6)
    assert (result.output, order.nodes[0], order.nodes[-1]) == (4, "executor_a", "executor_f")


def test_declaring_a_node_name_twice_is_a_setup_error_naming_it() -> None:
    """From test_workflow_builder.py::test_add_agent_duplicate_id_raises_error ("Duplicate executor
    ID")."""
    f = Formation("dup").add_function("first", lambda x: x)

    with pytest.raises(FormationSetupError, match="'first'"):
        f.add_function("first", lambda x: x + 1)
    assert f.run(1).output == 1  # the refused declaration changed nothing


def test_one_agent_in_two_nodes_gives_each_node_its_own_conversation() -> None:
    """From test_workflow_builder.py::test_add_agent_reuses_same_wrapper (one agent instance used twice
    in a workflow). Ours: an Agent is an immutable configuration; each node runs its own session, so
    the second node's model call does not carry the first node's conversation."""
    provider = ScriptedProvider(["draft", "reviewed"])
    agent = Agent("reuse_agent", provider=provider)
    f = Formation("reuse").add_agent("writer", agent).add_agent("reviewer", agent).connect("writer", "reviewer")
    result = f.run("write about llamas")

    assert result.output == "reviewed"
    assert [m.text for m in provider.requests[1].messages] == ["draft"]


def test_a_fan_in_whose_one_source_also_feeds_the_other_waits_for_both_and_gets_each_once() -> None:
    """From test_workflow_builder.py::test_register_with_fan_in_edges (Source1 -> Source2, and both
    fan in to the Aggregator)."""
    received: list[dict[str, int]] = []

    def aggregator(values: dict[str, int]) -> int:
        received.append(values)
        return sum(values.values())

    f = (Formation("fanin").add_function("Source1", lambda x: x).add_function("Source2", lambda x: x * 10)
         .add_function("Aggregator", aggregator)
         .connect("Source1", "Source2", "Aggregator").connect("Source1", "Aggregator"))
    result = f.run(3)

    assert result.output == 33
    assert received == [{"Source1": 3, "Source2": 30}]
