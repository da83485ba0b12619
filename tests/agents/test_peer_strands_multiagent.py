"""Behaviours of Strands Agents' multi-agent tests (strands-agents/sdk-python
tests/strands/multiagent/test_graph.py and test_swarm.py), ported to formations of agent
nodes and to delegation: conditional edges that never fire, a failing agent node, cycles
(Strands' reset_on_revisit and max_node_executions), time limits, nested graphs, streamed
node events, a graph interrupted before a node (Strands' BeforeNodeCallEvent interrupt), a
graph resumed after a failure (Strands' session persistence), and a swarm member that asks a
person. Models are played by the scripted provider."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.agents.test_peer_strands import calls, count_async
from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation, Session, interrupt, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Usage
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def answers(text: str, input_tokens: int = 10, output_tokens: int = 20) -> ScriptedProvider:
    """A model that always answers ``text`` with that usage."""
    return ScriptedProvider([InferenceResponse.of_text(text, usage=Usage(input_tokens=input_tokens,
                                                                           output_tokens=output_tokens))],
                            cycle=True)


# -- graphs of agents ----------------------------------------------------------------------------


def test_a_graph_of_agents_runs_each_reachable_agent_once_and_never_the_one_behind_a_false_condition() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py::test_graph_execution
    (an entry agent, agents after it, one behind an always-false condition that never executes;
    the result's usage is the sum of the agents')."""
    models = {name: answers(f"{name} says hi", 10, 20) for name in ("start", "left", "right", "final", "blocked")}
    graph = Formation("graph")
    for name, model in models.items():
        graph.add_agent(name, Agent(name, provider=model))
    graph.connect("start", "left").connect("start", "right")
    graph.connect("start", "blocked", when=lambda _: False)
    graph.connect("left", "final").connect("right", "final")
    result = graph.run("Test comprehensive execution")

    assert {n: m.calls for n, m in models.items()} == {"start": 1, "left": 1, "right": 1, "final": 1, "blocked": 0}
    assert result.nodes["blocked"].status == "skipped"
    assert result.outputs == {"final": "final says hi"}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 80)


def test_an_agent_node_whose_model_fails_fails_the_run_naming_it_and_nothing_after_it_runs() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py::test_graph_execution_with_failures
    (a failing node fails the graph with its exception; the node after it never runs)."""
    after = answers("never")
    graph = Formation("graph").add_agent("fail_node", Agent("failing", provider=ScriptedProvider([RuntimeError("Simulated failure")])))
    graph.add_agent("success_node", Agent("success", provider=after)).connect("fail_node", "success_node")
    with pytest.raises(FormationRuntimeError, match="Simulated failure") as caught:
        graph.run("Test error handling")

    assert caught.value.node == "fail_node" and after.calls == 0
    assert caught.value.nodes["success_node"].status == "skipped"


def test_the_entry_agent_receives_the_task_as_its_user_message() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py::test_graph_edge_cases
    (the entry node is called with the original task)."""
    model = answers("Entry response")
    result = Formation("g").add_agent("entry_only", Agent("entry", provider=model)).run("Original task")

    assert result.output == "Entry response"
    assert [m.text for m in model.requests[0].messages] == ["Original task"]


def test_a_cycle_of_agents_ends_when_its_condition_says_so_and_each_revisit_is_a_fresh_session() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py::test_cyclic_graph_execution
    (a -> b -> c -> a with conditions; a runs twice, b and c once; with reset_on_revisit the revisited
    agent starts over). Ours differ by default: every visit of an agent node is a fresh session (as
    reset_on_revisit=True), where Strands' default keeps the node agent's messages across visits."""
    seen_by_a: list[list[str]] = []

    def a_answers(request: InferenceRequest) -> str:
        seen_by_a.append([m.text for m in request.messages])
        return f"a{len(seen_by_a)}"

    visits = {"a": 0}

    def count_a(text: str) -> str:
        visits["a"] += 1
        return text

    graph = Formation("cycle").add_function("entry", lambda task: task)
    graph.add_agent("a", Agent("a", provider=ScriptedProvider([a_answers], cycle=True)))
    graph.add_function("seen_a", count_a)
    graph.add_agent("b", Agent("b", provider=answers("b done")))
    graph.add_agent("c", Agent("c", provider=answers("c done")))
    graph.add_function("end", lambda text: text)
    graph.connect("entry", "a").connect("a", "seen_a")
    graph.connect("seen_a", "b", when=lambda _: visits["a"] == 1)
    graph.connect("seen_a", "end", when=lambda _: visits["a"] >= 2)
    graph.connect("b", "c").connect("c", "a")
    result = graph.run("Test cyclic graph execution")

    assert result.output == "a2"
    assert [result.nodes[n].visits for n in ("a", "b", "c")] == [2, 1, 1]
    assert seen_by_a == [["Test cyclic graph execution"], ["c done"]]


def test_a_cycle_that_never_ends_fails_at_the_visit_limit_naming_the_node() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py
    (test_graph_max_node_executions: a cycle past max_node_executions stops the graph as failed)."""
    model = answers("again")
    graph = Formation("loop").add_function("entry", lambda task: task)
    graph.add_agent("writer", Agent("writer", provider=model), max_visits=3)
    graph.add_function("critic", lambda text: text)
    graph.connect("entry", "writer").connect("writer", "critic")
    graph.connect("critic", "writer", when=lambda text: text == "again")
    graph.add_function("done", lambda text: text).connect("critic", "done", when=lambda text: text != "again")
    with pytest.raises(FormationRuntimeError, match="writer") as caught:
        graph.run("draft")

    assert "max_visits" in str(caught.value) and model.calls == 3


def test_a_run_timeout_fails_a_graph_stuck_in_an_agents_model_call_within_its_limit() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py
    (test_graph_execution_timeout: a graph past its execution_timeout fails at once)."""
    graph = Formation("slow").add_agent("slow", Agent("slow", provider=ScriptedProvider(["late"], latency_s=10)))
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match="timed out"):
        graph.run("go", timeout=0.3)

    assert time.monotonic() - started < 3


def test_a_nested_graph_of_agents_is_one_node_whose_output_and_usage_reach_the_outer_graph() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py (a MultiAgentBase as a
    graph node: its result is the node's, its usage counted in the outer graph's)."""
    inner = Formation("inner").add_agent("research", Agent("research", provider=answers("facts", 5, 5)))
    inner.add_agent("write", Agent("write", provider=answers("essay", 7, 3))).connect("research", "write")
    outer = Formation("outer").add_agent("plan", Agent("plan", provider=answers("plan", 1, 1)))
    outer.add_formation("team", inner).connect("plan", "team")
    events: list[FormationEvent] = []
    result = outer.run("Write an essay", on_event=events.append)

    assert result.output == "essay"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (13, 9)
    started = [e.node for e in events if e.type == "node_started"]
    assert started.index("plan") < started.index("team/research") < started.index("team/write")


def test_a_streamed_graph_reports_each_agent_nodes_text_under_its_name_in_order() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py (test_graph_streaming:
    node start, the node's stream events, node stop, node after node)."""
    graph = Formation("g").add_agent("first", Agent("first", provider=answers("one two three")))
    graph.add_agent("second", Agent("second", provider=answers("four five"))).connect("first", "second")
    events = list(graph.run_stream("go"))

    texts: dict[str, str] = {}
    for event in events:
        if event.type == "agent_text" and event.node is not None:
            texts[event.node] = texts.get(event.node, "") + event.data["text"]
    assert texts == {"first": "one two three", "second": "four five"}
    order = [(e.type.value, e.node) for e in events if e.type in ("node_started", "node_finished")]
    assert order == [("node_started", "first"), ("node_finished", "first"),
                     ("node_started", "second"), ("node_finished", "second")]


def test_a_graph_stopped_before_an_agent_node_resumes_there_without_calling_the_earlier_agents_again(
    store: RunStore,
) -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py (test_graph_interrupt on
    BeforeNodeCallEvent: the graph stops before the node with an interrupt; resumed, it runs that
    node and goes on)."""
    first, second = answers("draft"), answers("approved draft")

    def graph() -> Formation:
        g = Formation("review").add_agent("writer", Agent("writer", provider=first))
        return g.add_agent("editor", Agent("editor", provider=second)).connect("writer", "editor")

    waiting = graph().run("write", store=store, break_before=["editor"])
    assert (waiting.status, waiting.interrupt) == (
        "suspended", {"node": "editor", "payload": {"breakpoint": "before", "input": "draft"}})
    assert (first.calls, second.calls) == (1, 0)

    done = graph().resume(waiting.run_id, store=store)
    assert (done.status, done.output, first.calls, second.calls) == ("succeeded", "approved draft", 1, 1)


def test_a_graph_that_failed_at_its_second_agent_resumes_from_there(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py (test_graph_persisted_state
    with a session manager: a graph restored from its session continues from the node that had not
    finished, not from the start)."""
    first = answers("outline")
    flaky = ScriptedProvider([RuntimeError("model down"), "chapter from outline"])

    def graph() -> Formation:
        g = Formation("book").add_agent("outliner", Agent("outliner", provider=first))
        return g.add_agent("writer", Agent("writer", provider=flaky)).connect("outliner", "writer")

    with pytest.raises(FormationRuntimeError) as caught:
        graph().run("a book", store=store)
    run_id = caught.value.run_id
    assert run_id is not None

    done = graph().resume(run_id, store=store)
    assert (done.output, first.calls, flaky.calls) == ("chapter from outline", 1, 2)
    assert [m.text for m in flaky.requests[1].messages] == ["outline"]


def test_two_entry_agents_both_get_the_task_and_the_agent_after_them_gets_both_answers_in_edge_order() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py (several entry points run
    on the task; a node with several dependencies runs once all are done, on their results)."""
    judge = answers("verdict")
    graph = Formation("g").add_agent("pro", Agent("pro", provider=answers("yes because")))
    graph.add_agent("con", Agent("con", provider=answers("no because")))
    graph.add_agent("judge", Agent("judge", provider=judge)).connect("con", "judge").connect("pro", "judge")
    result = graph.run("Is it good?")

    assert result.output == "verdict" and judge.calls == 1
    assert json.loads(judge.requests[0].messages[-1].text) == {"con": "no because", "pro": "yes because"}
    assert list(json.loads(judge.requests[0].messages[-1].text)) == ["con", "pro"]


# -- swarms: delegation ---------------------------------------------------------------------------


@tool
def ask_city(question: str) -> str:
    """Ask the user."""
    return str(interrupt({"question": question}))


def swarm(member_script: list[Any], lead_script: list[Any]) -> tuple[Agent, ScriptedProvider, ScriptedProvider]:
    """A lead that hands a task to a booker who may ask the user; their two models."""
    member_model, lead_model = ScriptedProvider(member_script), ScriptedProvider(lead_script)
    team = AgentRegistry()
    team.register(Agent("booker", provider=member_model, tools=[ask_city]), description="books trips")
    return Agent("lead", provider=lead_model, delegates=team), member_model, lead_model


HANDOFF = calls(("d1", "delegate", {"tasks": [{"agent": "booker", "task": "book a trip"}]}))
ASK = calls(("a1", "ask_city", {"question": "Which city?"}))


def test_a_swarm_member_that_asks_the_user_suspends_the_leads_session_and_resumes_without_repeating_calls(
    store: RunStore,
) -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_swarm.py (test_swarm_interrupt: a
    node's interrupt stops the swarm; resumed with the responses, the node continues and the swarm
    completes)."""
    lead, _, _ = swarm([ASK], [HANDOFF])
    session = Session(lead, store=store)
    waiting = session.run("Plan my holiday")
    assert (waiting.status, waiting.interrupt) == ("suspended", {"question": "Which city?"})

    lead2, member2, lead_model2 = swarm(["Booked Lima."], ["All set: Lima."])
    done = Session(lead2).resume(session.id, store=store, answer="Lima")
    assert (done.status, done.response) == ("succeeded", "All set: Lima.")
    assert json.loads(done.tool_calls[0].output) == [{"agent": "booker", "result": "Booked Lima."}]
    assert (member2.calls, lead_model2.calls) == (1, 1)  # each made only the call after the interrupt


def test_a_swarm_inside_an_agent_node_suspends_the_run_and_resumes_it(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py with test_swarm.py (a swarm
    as a graph node: its interrupt suspends the graph, and the resumed graph finishes the swarm)."""
    lead, _, _ = swarm([ASK], [HANDOFF])
    waiting = Formation("trip").add_agent("lead", lead).run("Plan my holiday", store=store)
    assert (waiting.status, waiting.interrupt) == ("suspended", {"node": "lead", "payload": {"question": "Which city?"}})

    lead2, member2, lead_model2 = swarm(["Booked Lima."], ["All set: Lima."])
    done = Formation("trip").add_agent("lead", lead2).resume(waiting.run_id, store=store, answer="Lima")
    assert (done.status, done.output, member2.calls, lead_model2.calls) == ("succeeded", "All set: Lima.", 1, 1)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_graph_of_agents_with_an_async_generator_tool_gives_the_same_answers_on_ray() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py::test_graph_execution with
    tests/strands/tools/test_decorator.py::test_tool_async_generator, on backend="ray": the same graph,
    node results and usage as on threads."""

    def build() -> Formation:
        counter = ScriptedProvider([calls(("c1", "count_async", {"n": 2})),
                                    lambda r: f"counted {r.messages[-1].content[0].content}"])
        graph = Formation("g").add_agent("counter", Agent("counter", provider=counter, tools=[count_async]))
        return graph.add_agent("editor", Agent("editor", provider=answers("edited", 3, 4))).connect("counter", "editor")

    threads = build().run("count")
    on_ray = build().run("count", backend="ray", timeout=120)
    assert on_ray.outputs == threads.outputs == {"editor": "edited"}
    assert on_ray.nodes["counter"].output == threads.nodes["counter"].output == 'counted [0, 1, {"done": true}]'
    assert on_ray.usage == threads.usage
