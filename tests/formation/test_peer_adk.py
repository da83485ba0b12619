"""Behaviours ported from Google ADK's own test suite (google/adk-python,
``tests/unittests/agents/``): sequential, parallel and loop agents, a sequence of parallel
agents, parallel agents that call tools, GraphAgent's parallel groups and routing, agent
timeouts and error callbacks. ``test_peer_adk_more.py`` takes rewind, resumability,
interrupts and graph state (journalled runs); ``test_peer_adk_maps.py`` takes MapAgent.

ADK composes agents (``SequentialAgent``, ``ParallelAgent``, ``LoopAgent``, ``GraphAgent``)
that share one session's events and ``state``; here each sub-agent is a node (a function
node for ADK's ``BaseAgent`` test doubles, an agent node with the testkit's
``ScriptedProvider`` for ``LlmAgent`` with ``MockModel``), a sequence is a chain of edges,
a parallel agent a fan-out, its end a fan-in (``join="all"``, GraphAgent's ``WAIT_ALL``;
``join="any"``, ``WAIT_ANY``), a loop a back edge with ``when=``. What an ADK agent
"sees" of the session is what our node receives: its predecessors' outputs.

Deliberately different, or without a counterpart (each test that touches one says so):
- ADK's ``LoopAgent(max_iterations=n)`` stops quietly after n rounds; our loops end through
  a condition on the back edge, and one that passes ``max_visits`` fails naming the node.
- GraphAgent picks one edge (highest ``priority``, then ``weight``); every one of our
  conditional edges whose condition holds fires, and ``otherwise=True`` is the fallback.
  Weighted random routing and ``WAIT_N`` joins have no counterpart.
- GraphAgent ends quietly when no edge matches; ours fails with ``NoRouteError``.
- ``on_agent_error_callback`` observes a failure that still propagates; our error edge
  (``connect(a, handler, on_error=True)``) handles it, and the run goes on from the
  handler. Without one, the run fails with the exception chained as its cause.
- ``total_timeout`` raises ``AgentTimeoutError`` from the agent; a node's ``timeout`` fails
  the node (``NodeTimeoutError``, retried by policy) and so the run.
- Branch names, ``include_contents`` and per-event metadata have no counterpart: a node's
  session is its own, so there is nothing of another agent's to filter out.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter, Order, sleeps_until_cancelled
from wingman_actors import Agent, Formation, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Role
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


def says(text: str) -> Any:
    """ADK's ``SimpleAgent``: answers ``text`` whatever it receives."""

    def run(_: Any) -> str:
        return text

    return run


def saw(provider: ScriptedProvider, call: int = 0) -> str:
    """The text of every message of the provider's ``call``-th request."""
    return " ".join(b.text or "" for m in provider.requests[call].messages for b in m.content)


class Finished:
    """The order nodes finished in (``node_finished`` events), and an event per node."""

    def __init__(self) -> None:
        self.nodes: list[str] = []
        self.done: dict[str, threading.Event] = {}

    def event(self, node: str) -> threading.Event:
        return self.done.setdefault(node, threading.Event())

    def __call__(self, event: FormationEvent) -> None:
        if event.type == "node_finished" and event.node is not None:
            self.nodes.append(event.node)
            self.event(event.node).set()


# --- SequentialAgent and ParallelAgent -----------------------------------------------


def test_a_sequence_runs_each_agent_once_in_order_each_given_the_previous_answer() -> None:
    # adk test_sequential_agent.py::test_run_async
    order = Order()
    f = Formation("seq").add_function("agent_1", lambda m: f"{m}>1").add_function("agent_2", lambda m: f"{m}>2")
    result = f.connect("agent_1", "agent_2").run("Hello", on_event=order)
    assert order.nodes == ["agent_1", "agent_2"]
    assert result.output == "Hello>1>2"


def test_parallel_agents_run_at_once_and_the_one_that_is_not_held_finishes_first() -> None:
    # adk test_parallel_agent.py::test_run_async (agent_1 has a delay: agent_2's event comes first)
    finished = Finished()

    def agent_1(m: str) -> str:
        assert finished.event("agent_2").wait(5)  # held until agent_2 has finished: they overlap
        return "Hello, async agent_1!"

    f = (Formation("par").add_function("root", lambda m: m).add_function("agent_1", agent_1)
         .add_function("agent_2", says("Hello, async agent_2!")).connect("root", "agent_1").connect("root", "agent_2"))
    result = f.run("go", on_event=finished, timeout=10)
    assert finished.nodes == ["root", "agent_2", "agent_1"]
    assert result.outputs == {"agent_1": "Hello, async agent_1!", "agent_2": "Hello, async agent_2!"}


def test_a_sequence_inside_a_parallel_agent_keeps_its_order_beside_the_other_branch() -> None:
    # adk test_parallel_agent.py::test_run_async_branches (Parallel[Sequential[agent_2, agent_3], agent_1])
    finished = Finished()

    def agent_1(m: str) -> str:
        assert finished.event("agent_3").wait(5)
        return "agent_1"

    f = (Formation("branches").add_function("root", lambda m: m).add_function("agent_1", agent_1)
         .add_function("agent_2", says("agent_2")).add_function("agent_3", lambda m: f"{m}>agent_3")
         .connect("root", "agent_2", "agent_3").connect("root", "agent_1"))
    result = f.run("go", on_event=finished, timeout=10)
    assert finished.nodes == ["root", "agent_2", "agent_3", "agent_1"]
    assert result.outputs == {"agent_3": "agent_2>agent_3", "agent_1": "agent_1"}


def test_a_failing_parallel_branch_fails_the_run_and_cancels_an_endless_async_sibling() -> None:
    # adk test_parallel_agent.py::test_stop_agent_if_sub_agent_fails (agent_2 yields forever)
    started, cancelled = threading.Event(), threading.Event()

    def agent_1(m: str) -> str:
        assert started.wait(5)
        raise RuntimeError("agent_1 failed")

    async def agent_2(m: str) -> str:
        started.set()
        try:
            while True:
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    f = Formation("stop").add_function("agent_1", agent_1).add_function("agent_2", agent_2)
    with pytest.raises(FormationRuntimeError) as info:
        f.run("go", timeout=10)
    assert info.value.node == "agent_1"
    assert cancelled.wait(2)


# --- parallel agents that call tools; a sequence of parallel agents ----------------------


@tool
def simple_tool(agent_name: str, value: str) -> dict[str, str]:
    """A simple tool for testing."""
    return {"agent": agent_name, "processed": value}


def calls(agent: str, *values: str, final: str) -> ScriptedProvider:
    """A model that calls ``simple_tool`` once per value, one call per answer, then answers ``final``."""
    return ScriptedProvider([
        *(InferenceResponse.of_tool_calls([(f"{agent}-{i}", "simple_tool", {"agent_name": agent, "value": v})])
          for i, v in enumerate(values)), final])


def tool_blocks(request: InferenceRequest) -> list[str]:
    return [f"{b.type}:{b.id or b.tool_use_id}" for m in request.messages for b in m.content if b.type != "text"]


def test_parallel_agents_calling_tools_each_see_their_own_calls_and_results_and_no_one_elses() -> None:
    # adk test_parallel_include_none_bug.py::test_parallel_agent_include_none_loses_own_events
    a = calls("agent_a", "first", "second", final="Agent A completed both calls")
    b = calls("agent_b", "test", final="Agent B done")
    f = (Formation("parallel_root").add_function("root", lambda m: m)
         .add_agent("agent_a", Agent("agent_a", provider=a, tools=[simple_tool]))
         .add_agent("agent_b", Agent("agent_b", provider=b, tools=[simple_tool]))
         .connect("root", "agent_a").connect("root", "agent_b"))
    result = f.run("Execute both agents", timeout=10)
    assert result.outputs == {"agent_a": "Agent A completed both calls", "agent_b": "Agent B done"}
    assert tool_blocks(a.requests[1]) == ["tool_use:agent_a-0", "tool_result:agent_a-0"]
    assert tool_blocks(a.requests[2]) == ["tool_use:agent_a-0", "tool_result:agent_a-0",
                                          "tool_use:agent_a-1", "tool_result:agent_a-1"]
    assert tool_blocks(b.requests[1]) == ["tool_use:agent_b-0", "tool_result:agent_b-0"]


def test_an_agent_beside_one_that_calls_tools_is_asked_with_the_task_alone() -> None:
    # adk test_parallel_include_none_bug.py::test_parallel_agent_with_default_contents_works
    a = calls("agent_a", "test", final="Agent A done")
    b = ScriptedProvider(["Agent B done"])
    f = (Formation("parallel_root").add_function("root", lambda m: m)
         .add_agent("agent_a", Agent("agent_a", provider=a, tools=[simple_tool]))
         .add_agent("agent_b", Agent("agent_b", provider=b)).connect("root", "agent_a").connect("root", "agent_b"))
    f.run("Execute both agents", timeout=10)
    assert [(m.role, [c.text for c in m.content]) for m in b.requests[0].messages] == [
        (Role.USER, ["Execute both agents"])]
    assert len(a.requests) == 2 and len(b.requests) == 1


def sequence_of_parallels() -> tuple[Formation, dict[str, ScriptedProvider]]:
    """Sequential[Parallel1[Alice, Bob], Parallel2[David, Eve]]: each of David and Eve joins
    Alice and Bob."""
    providers = {name: ScriptedProvider([f"I am {name}"]) for name in ("Alice", "Bob", "David", "Eve")}
    f = Formation("Root")
    for name, provider in providers.items():
        f.add_agent(name, Agent(name, provider=provider))
    for second in ("David", "Eve"):
        f.connect("Alice", second).connect("Bob", second)
    return f, providers


def test_agents_after_a_parallel_group_are_asked_with_every_answer_of_the_group() -> None:
    # adk test_sequence_of_parallel_agents.py::test_sequential_parallels
    f, providers = sequence_of_parallels()
    result = f.run("Start", timeout=10)
    assert result.outputs == {"David": "I am David", "Eve": "I am Eve"}
    for second in ("David", "Eve"):
        assert "I am Alice" in saw(providers[second]) and "I am Bob" in saw(providers[second])


def test_each_agent_of_the_second_group_runs_once_after_both_of_the_first() -> None:
    # adk test_sequence_of_parallel_agents.py and test_graph_parallel.py::test_parallel_group_already_executed
    f, providers = sequence_of_parallels()
    order = Order()
    result = f.run("Start", on_event=order, timeout=10)
    assert sorted(order.nodes[:2]) == ["Alice", "Bob"] and sorted(order.nodes[2:]) == ["David", "Eve"]
    assert [result.nodes[n].visits for n in ("David", "Eve")] == [1, 1]
    assert [len(providers[n].requests) for n in ("David", "Eve")] == [1, 1]


# --- GraphAgent: parallel groups ----------------------------------------------------------


def test_a_wait_all_join_runs_once_with_both_fetch_results() -> None:
    # adk test_graph_parallel.py::test_parallel_basic (JoinStrategy.WAIT_ALL)
    counter = Counter()

    def process(fetch_user: str, fetch_products: str) -> str:
        counter.hit("process")
        return f"processed {fetch_user} and {fetch_products}"

    f = (Formation("test_graph").add_function("fetch_user", says("user_data"))
         .add_function("fetch_products", says("product_data")).add_function("process", process)
         .connect("fetch_user", "process").connect("fetch_products", "process"))
    assert f.run("Start").output == "processed user_data and product_data"
    assert counter.count("process") == 1


def test_a_wait_any_join_runs_with_the_fast_branch_and_cancels_the_slow_one() -> None:
    # adk test_graph_parallel.py::test_parallel_wait_any. DESIGN differs: ADK lets the slow one finish
    release = threading.Event()

    def slow(m: str) -> str:
        release.wait(5)
        return "Completed after 100ms"

    f = (Formation("race").add_function("fast", says("Completed after 10ms")).add_function("slow", slow)
         .add_function("process", lambda first: first, join="any").connect("fast", "process").connect("slow", "process"))
    try:
        result = f.run("Start", timeout=10)
    finally:
        release.set()
    assert result.output == {"fast": "Completed after 10ms"}
    assert result.nodes["slow"].status == "cancelled"


def test_a_failing_parallel_node_fails_the_run_with_its_own_error_as_the_cause() -> None:
    # adk test_graph_parallel.py::test_parallel_error_fail_fast (ErrorPolicy.FAIL_FAST re-raises ValueError)
    def bad(m: str) -> str:
        raise ValueError("Test error")

    f = Formation("mixed").add_function("good", says("success")).add_function("bad", bad)
    with pytest.raises(FormationRuntimeError, match="Test error") as info:
        f.run("Start")
    assert info.value.node == "bad"
    assert isinstance(info.value.__cause__, ValueError)


def test_a_failing_parallel_node_that_is_skipped_lets_the_join_run_with_the_others() -> None:
    # adk test_graph_parallel.py::test_parallel_error_continue (ErrorPolicy.CONTINUE): ours, on_error="skip"
    def bad(m: str) -> str:
        raise ValueError("Test error")

    f = (Formation("mixed").add_function("good", says("success")).add_function("bad", bad, on_error="skip")
         .add_function("process", lambda d: sorted(d)).connect("good", "process").connect("bad", "process"))
    result = f.run("Start")
    assert result.output == ["good"]
    assert (result.nodes["bad"].status, result.nodes["process"].status) == ("skipped", "succeeded")


def test_a_join_after_a_fan_out_runs_after_both_branches_and_they_after_their_source() -> None:
    # adk test_graph_parallel.py::test_parallel_integration_with_conditional_routing (the order of events)
    finished = Finished()
    f = (Formation("g").add_function("validate", says("valid")).add_function("process1", says("result1"))
         .add_function("process2", says("result2")).add_function("merge", lambda d: "merged")
         .connect("validate", "process1", "merge").connect("validate", "process2", "merge"))
    assert f.run("Start", on_event=finished).output == "merged"
    assert finished.nodes[0] == "validate" and finished.nodes[-1] == "merge"
    assert sorted(finished.nodes[1:3]) == ["process1", "process2"]


def test_connecting_a_node_that_is_not_declared_is_a_setup_error_naming_it_and_the_fix() -> None:
    # adk test_graph_parallel.py::test_parallel_group_validation ("not found in graph")
    f = Formation("test_graph").add_function("agent1", says("result1"))
    with pytest.raises(FormationSetupError, match=r"no node named 'nonexistent'") as info:
        f.connect("agent1", "nonexistent")
    assert "declare it first with add_function" in str(info.value)


# --- GraphAgent: routing ------------------------------------------------------------------


def test_every_edge_whose_condition_holds_fires_where_graph_agent_takes_the_highest_priority() -> None:
    # adk test_graph_routing.py::test_priority_routing_basic. DESIGN differs: no priority; both fire
    f = (Formation("g").add_function("start", says("starting")).add_function("high_priority", says("high"))
         .add_function("low_priority", says("low")).connect("start", "low_priority", when=lambda s: True)
         .connect("start", "high_priority", when=lambda s: True))
    assert f.run("Start").outputs == {"high_priority": "high", "low_priority": "low"}


def test_the_otherwise_edge_is_taken_when_no_condition_holds() -> None:
    # adk test_graph_routing.py::test_fallback_edge_priority_zero (priority=0 is the fallback)
    f = (Formation("g").add_function("start", lambda m: {"trigger_condition": False})
         .add_function("conditional", says("conditional_path")).add_function("fallback", says("fallback_path"))
         .connect("start", "conditional", when=lambda s: s["trigger_condition"])
         .connect("start", "fallback", otherwise=True))
    result = f.run("Start")
    assert result.outputs == {"fallback": "fallback_path"}
    assert result.nodes["conditional"].status == "skipped"


def test_the_edge_whose_condition_holds_is_taken_and_not_the_fallback_nor_a_failing_condition() -> None:
    # adk test_graph_routing.py::test_priority_and_condition (score 0.5: > 0.8 fails, > 0.3 holds)
    f = (Formation("g").add_function("start", lambda m: {"score": 0.5})
         .add_function("low_no_match", says("low_no_match_path")).add_function("high_match", says("high_match_path"))
         .add_function("fallback", says("fallback_path"))
         .connect("start", "low_no_match", when=lambda s: s["score"] > 0.8)
         .connect("start", "high_match", when=lambda s: s["score"] > 0.3).connect("start", "fallback", otherwise=True))
    assert f.run("Start").outputs == {"high_match": "high_match_path"}


@pytest.mark.parametrize(("kind", "taken"), [("A", "path1"), ("B", "path2"), ("C", "default")])
def test_a_router_sends_each_kind_of_output_down_its_own_edge(kind: str, taken: str) -> None:
    # adk test_graph_routing.py::TestConditionalRouting::test_node_routing_multiple_edges_picks_first_match
    f = (Formation("router").add_function("router", lambda m: {"type": m}).add_function("path1", says("1"))
         .add_function("path2", says("2")).add_function("default", says("d"))
         .connect("router", "path1", when=lambda s: s["type"] == "A")
         .connect("router", "path2", when=lambda s: s["type"] == "B").connect("router", "default", otherwise=True))
    assert list(f.run(kind).outputs) == [taken]


def test_a_node_whose_conditions_all_fail_and_that_has_no_fallback_fails_the_run_with_no_route() -> None:
    # adk test_graph_routing.py::test_conditional_edge_false. DESIGN differs: GraphAgent ends quietly
    f = (Formation("g").add_function("start", lambda m: {"value": 5}).add_function("next", says("next"))
         .connect("start", "next", when=lambda s: s["value"] > 10))
    with pytest.raises(NoRouteError) as info:
        f.run("Start")
    assert info.value.node == "start"


# --- LoopAgent ------------------------------------------------------------------------------


def looping(body: Any, *, until: Any, max_visits: int = 10) -> Formation:
    """LoopAgent[body]: ``entry`` → ``body``, back to ``body`` until ``until`` holds, then ``done``."""
    return (Formation("loop").add_function("entry", lambda m: m).add_function("body", body, max_visits=max_visits)
            .add_function("done", lambda m: m).connect("entry", "body")
            .connect("body", "body", when=lambda out: not until(out)).connect("body", "done", otherwise=True))


def test_a_loop_runs_its_body_as_many_times_as_its_condition_allows() -> None:
    # adk test_loop_agent.py::test_run_async (max_iterations=2: two "Hello" events)
    f = looping(lambda n: n + 1, until=lambda n: n >= 2)
    result = f.run(0)
    assert result.nodes["body"].outputs == [1, 2]
    assert result.output == 2


def test_a_loop_that_never_ends_fails_at_max_visits_naming_the_node() -> None:
    # adk test_loop_agent.py::test_run_async. DESIGN differs: max_iterations ends an ADK loop quietly
    f = looping(lambda n: n + 1, until=lambda n: False, max_visits=2)
    with pytest.raises(FormationRuntimeError, match=r"node 'body' was visited more than max_visits=2 times") as info:
        f.run(0)
    assert "raise its max_visits" in str(info.value)


def test_an_escalating_agent_ends_the_loop_and_the_agent_after_it_does_not_run() -> None:
    # adk test_loop_agent.py::test_run_async_with_escalate_action (the ignored agent never runs)
    order = Order()
    f = (Formation("loop").add_function("non_escalating", lambda m: m, max_visits=5)
         .add_function("escalating", lambda m: {"escalate": True, "text": "Hello"}, max_visits=5)
         .add_function("ignored", lambda m: m, max_visits=5).add_function("done", lambda m: m["text"])
         .add_function("entry", lambda m: m).connect("entry", "non_escalating", "escalating")
         .connect("escalating", "ignored", when=lambda m: not m["escalate"]).connect("ignored", "non_escalating")
         .connect("escalating", "done", otherwise=True))
    result = f.run("go", on_event=order)
    assert order.nodes == ["entry", "non_escalating", "escalating", "done"]
    assert (result.output, result.nodes["ignored"].status) == ("Hello", "skipped")


def test_an_agent_whose_answer_mentions_the_stop_word_ends_the_loop_at_once() -> None:
    # adk test_loop_agent.py::test_run_async_with_termination_condition_text_mention
    provider = ScriptedProvider(["Hello, async agent!", "never asked"])
    f = (Formation("loop").add_function("entry", lambda m: m)
         .add_agent("agent", Agent("agent", provider=provider), max_visits=10).add_function("done", lambda m: m)
         .connect("entry", "agent").connect("agent", "agent", when=lambda m: "Hello" not in m)
         .connect("agent", "done", otherwise=True))
    assert f.run("go").output == "Hello, async agent!"
    assert len(provider.requests) == 1


def test_the_loop_condition_starts_afresh_in_every_run_of_a_started_formation() -> None:
    # adk test_loop_agent.py::test_run_async_termination_condition_resets_between_runs
    f = looping(lambda n: n + 1, until=lambda n: n % 3 == 0)
    with f.start() as running:
        first, second = running.submit(0).result(10), running.submit(0).result(10)
    assert first.nodes["body"].outputs == second.nodes["body"].outputs == [1, 2, 3]


# --- agent timeouts -------------------------------------------------------------------------


def test_a_node_past_its_timeout_fails_the_run_within_the_limit_naming_the_node_and_the_time() -> None:
    # adk test_agent_timeout.py::test_run_async_total_timeout_triggers and test_agent_timeout_error_message
    async def slow(m: str) -> str:
        await asyncio.sleep(5)
        return "Done"

    f = Formation("t").add_function("my_agent_msg", slow, timeout=0.1)
    began = time.monotonic()
    with pytest.raises(FormationRuntimeError) as info:
        f.run("go")
    assert time.monotonic() - began < 0.1 + 1.0  # the limit, plus a margin for a loaded machine
    assert info.value.node == "my_agent_msg"
    assert "timed out after 0.1s" in str(info.value)
    assert type(info.value.__cause__).__name__ == "NodeTimeoutError"


def test_a_node_that_finishes_within_its_timeout_succeeds() -> None:
    # adk test_agent_timeout.py::test_run_async_total_timeout_not_triggered_if_fast_enough
    async def fast(m: str) -> str:
        await asyncio.sleep(0.01)
        return "Done"

    assert Formation("t").add_function("test_agent_fast", fast, timeout=5).run("go").output == "Done"


def test_a_timed_out_coroutine_is_cancelled() -> None:
    # adk test_agent_timeout.py::test_run_async_cancelled_properly
    cancelled = threading.Event()

    slow = sleeps_until_cancelled(cancelled)

    with pytest.raises(FormationRuntimeError):
        Formation("t").add_function("test_agent_cancel", slow, timeout=0.1).run("go")
    assert cancelled.wait(2)


def test_a_nested_formation_past_its_timeout_cancels_the_node_running_inside_it() -> None:
    # adk test_agent_timeout.py::test_sub_agent_cascade_cancellation
    cancelled = threading.Event()

    sub_agent = sleeps_until_cancelled(cancelled)

    inner = Formation("inner").add_function("sub_agent", sub_agent)
    f = Formation("outer").add_formation("parent_agent", inner, timeout=0.1)
    with pytest.raises(FormationRuntimeError) as info:
        f.run("go")
    assert info.value.node == "parent_agent"
    assert cancelled.wait(2)


def test_a_run_past_its_timeout_cancels_the_first_child_and_never_starts_the_second() -> None:
    # adk test_agent_timeout.py::test_parent_timeout_cascades_cancel_to_children
    cancelled, counter = threading.Event(), Counter()

    child_1 = sleeps_until_cancelled(cancelled)

    inner = (Formation("inner").add_function("child_1", child_1)
             .add_function("child_2", lambda m: counter.hit("child_2")).connect("child_1", "child_2"))
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.1s; unfinished: parent_multi"):
        Formation("outer").add_formation("parent_multi", inner).run("go", timeout=0.1)
    assert cancelled.wait(2)
    assert counter.count("child_2") == 0


def test_an_agent_whose_model_hangs_fails_at_its_timeout() -> None:
    # adk test_agent_timeout.py::test_llm_agent_with_timeout_fields (an LlmAgent with total_timeout)
    release = threading.Event()

    def hang(request: InferenceRequest) -> str:
        release.wait(5)
        return "late"

    f = Formation("t").add_agent("test_agent_fields", Agent("slow", provider=ScriptedProvider([hang])), timeout=0.2)
    try:
        with pytest.raises(FormationRuntimeError, match=r"test_agent_fields' attempt 1 timed out after 0.2s"):
            f.run("go")
    finally:
        release.set()
