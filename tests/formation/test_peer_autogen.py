"""Behaviours ported from Microsoft AutoGen's own test suite (microsoft/autogen,
``python/packages/autogen-agentchat/tests/test_group_chat_graph.py`` and the older
``test_digraph_group_chat.py``): GraphFlow runs of a DiGraph built with DiGraphBuilder,
translated to formations. This file takes the runs: chains, fan-out, fan-in with "all"
and "any" activation, conditional edges, loops with exit conditions (an agent deciding),
termination, and a formation run again. ``test_peer_autogen_graphs.py`` takes the graph
checks (start and leaf nodes, cycles, validation) and saved state.

GraphFlow's participants are chat agents that see a shared message thread; here a
participant is a function node (AutoGen's ``_EchoAgent`` echoes its input, so does ours)
or an agent node with the testkit's ``ScriptedProvider`` (AutoGen's
``ReplayChatCompletionClient``). A node receives its predecessor's output, not the thread,
and a string condition (``DiGraphEdge(condition="yes")``: the word is in the message
text) becomes ``when=`` a predicate on that output. The order AutoGen's messages come in
is our ``node_started`` order (:class:`tests.support.peers.Order`).

Deliberately different, or without a counterpart (each test that touches one says so):
- AutoGen ends a run when no edge fires (the graph is "complete"); a node whose
  conditional edges all stay shut fails ours with ``NoRouteError`` (DESIGN: "Conditional
  edges route by predicate").
- ``activation="any"`` in AutoGen lets every parent run and ignores the later ones; our
  ``join="any"`` cancels the other branches that feed only the join (DESIGN: "the other
  branches that feed only this node are cancelled, and their late values are dropped").
- ``MaxMessageTermination`` ends a looping chat with a stop reason; our loops are bounded
  per node by ``max_visits`` and a run that passes it fails naming the node.
- ``default_start_node``/``set_entry_point``: our sources are the nodes with no incoming
  edge; a loop back to the first node needs an entry node before it (the setup error says
  so), which plays the part of AutoGen's "user" message.
- AutoGen refuses a graph without a leaf node; a formation without a sink validates, and
  its runs end in NoRouteError or at max_visits (test_peer_autogen_graphs.py).
- MessageFilterAgent (what part of the thread a participant sees), the chat thread's
  message types and the stop agent's message have no counterpart: nodes get values.
- ``team.reset()``: a formation holds no state between runs, so there is nothing to reset.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import Counter, Order, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


def echo(counter: Counter | None = None, name: str = "") -> Any:
    """AutoGen's ``_EchoAgent``: answers with what it received (counting its calls)."""

    def run(message: Any) -> Any:
        if counter is not None:
            counter.hit(name)
        return message

    return run


def says(word: str) -> Any:
    """AutoGen's string condition: the word is in the message text."""

    def condition(message: Any) -> bool:
        return word in str(message)

    condition.__name__ = word
    return condition


def chain(counter: Counter | None = None) -> Formation:
    f = Formation("chain")
    for name in "ABC":
        f.add_function(name, echo(counter, name))
    return f.connect("A", "B", "C")


def test_a_chain_runs_each_node_once_in_order_and_ends_at_its_leaf() -> None:
    """autogen test_group_chat_graph.py::test_digraph_group_chat_sequential_execution and
    test_graph_builder_sequential_execution: A → B → C, each once, in that order."""
    order = Order()
    result = chain().run("Hello from User", on_event=order)
    assert order.nodes == ["A", "B", "C"]
    assert (result.status, result.output) == ("succeeded", "Hello from User")
    assert [result.nodes[n].visits for n in "ABC"] == [1, 1, 1]


def test_a_fan_out_runs_both_branches_at_once_and_each_leaf_is_an_output() -> None:
    """autogen test_digraph_group_chat_parallel_fanout and test_graph_builder_fan_out: A → B,
    A → C; B and C run in parallel (a barrier both must reach proves it) after A."""
    both = threading.Barrier(2, timeout=5)

    def branch(message: str) -> str:
        both.wait()
        return message

    order = Order()
    f = (Formation("fanout").add_function("A", echo()).add_function("B", branch).add_function("C", branch)
         .connect("A", "B").connect("A", "C"))
    result = f.run("Start", on_event=order)
    assert result.outputs == {"B": "Start", "C": "Start"}
    assert order.nodes[0] == "A" and sorted(order.nodes[1:]) == ["B", "C"]


def test_an_all_join_runs_once_after_both_of_its_sources() -> None:
    """autogen test_digraph_group_chat_parallel_join_all (and test_is_node_ready_all_and_any's
    "all" cases): A and B are start nodes, C (activation "all") runs once, after both."""
    order = Order()
    f = (Formation("join_all").add_function("A", lambda m: f"A:{m}").add_function("B", lambda m: f"B:{m}")
         .add_function("C", lambda d: d).connect("A", "C").connect("B", "C"))
    result = f.run("Go", on_event=order)
    assert result.output == {"A": "A:Go", "B": "B:Go"}
    assert sorted(order.nodes[:2]) == ["A", "B"] and order.nodes[2:] == ["C"]


def test_an_any_join_of_two_sources_runs_once_with_the_first_and_cancels_the_other() -> None:
    """autogen test_digraph_group_chat_parallel_join_any: C (activation "any") runs once,
    after one of A and B. DESIGN differs on purpose: AutoGen lets the other parent finish
    too; our join="any" cancels the branch that feeds only the join (B, held here)."""
    release = threading.Event()

    def slow(message: str) -> str:
        release.wait(5)
        return f"B:{message}"

    f = (Formation("join_any").add_function("A", lambda m: f"A:{m}").add_function("B", slow)
         .add_function("C", lambda d: d, join="any").connect("A", "C").connect("B", "C"))
    try:
        result = f.run("Start", timeout=10)
    finally:
        release.set()
    assert result.output == {"A": "A:Start"}
    assert result.nodes["C"].visits == 1
    assert result.nodes["B"].status == "cancelled"


def test_an_all_join_after_a_fan_out_runs_once_after_both_branches() -> None:
    """autogen test_digraph_group_chat_parallel_join_any_1: A → B, A → C, B → D, C → D in one
    activation group (default condition "all"): D runs once, after both B and C."""
    counter, order = Counter(), Order()
    f = Formation("diamond")
    for name in "ABC":
        f.add_function(name, echo(counter, name))
    f.add_function("D", lambda B, C: counter.hit("D") and [B, C])
    result = f.connect("A", "B", "D").connect("A", "C", "D").run("Run parallel join", on_event=order)
    assert result.output == ["Run parallel join", "Run parallel join"]
    assert counter.count("D") == 1 and order.nodes[-1] == "D"


def test_chained_any_joins_each_run_once() -> None:
    """autogen test_digraph_group_chat_chained_parallel_join_any: A → (B, C) → D (any) → E
    (any): D runs once after one of B and C, E once after D. (The older
    test_digraph_group_chat.py expected D and E twice; GraphFlow, as ours, runs them once.)
    The branch that lost the race is cancelled (DESIGN; AutoGen lets it finish)."""
    release = threading.Event()

    def slow(message: str) -> str:
        release.wait(5)
        return message

    counter, order = Counter(), Order()
    f = (Formation("chained_any").add_function("A", echo()).add_function("B", echo()).add_function("C", slow)
         .add_function("D", lambda d: counter.hit("D") and d, join="any")
         .add_function("E", lambda d: counter.hit("E") and d, join="any")
         .connect("A", "B", "D", "E").connect("A", "C", "D"))
    try:
        result = f.run("Run chained parallel join-any", timeout=10, on_event=order)
    finally:
        release.set()
    assert result.output == {"B": "Run chained parallel join-any"}
    assert (counter.count("D"), counter.count("E")) == (1, 1)
    assert order.nodes.index("E") > order.nodes.index("D") > order.nodes.index("B")
    assert result.nodes["C"].status == "cancelled"


def test_unconnected_start_nodes_each_get_the_task_and_each_is_an_output() -> None:
    """autogen test_digraph_group_chat_multiple_start_nodes and test_select_speakers_from_start_nodes."""
    f = Formation("two_starts").add_function("A", lambda m: f"A:{m}").add_function("B", lambda m: f"B:{m}")
    assert f.run("Start").outputs == {"A": "A:Start", "B": "B:Start"}


def test_a_disconnected_graph_runs_both_chains_and_each_leaf_is_an_output() -> None:
    """autogen test_digraph_group_chat_disconnected_graph: A → B and C → D, both from the task;
    A and C run before B and D."""
    order = Order()
    f = Formation("disconnected")
    for name in "ABCD":
        f.add_function(name, lambda m, name=name: f"{m}>{name}")
    result = f.connect("A", "B").connect("C", "D").run("Go", on_event=order)
    assert result.outputs == {"B": "Go>A>B", "D": "Go>C>D"}
    assert order.nodes.index("B") > order.nodes.index("A") and order.nodes.index("D") > order.nodes.index("C")


def branches(*words: str) -> Formation:
    """A with one conditional edge per word (AutoGen's ``add_conditional_edges(a, {...})``)
    to a node named after it; the untaken ones are skipped."""
    f = Formation("branches").add_function("A", echo())
    for word in words:
        f.add_function(word, lambda m, word=word: f"{word} got {m}").connect("A", word, when=says(word))
    return f


def test_a_conditional_edge_is_taken_only_when_its_word_is_in_the_message() -> None:
    """autogen test_digraph_group_chat_conditional_branch, test_graph_builder_conditional_execution
    and test_select_speakers_conditional(_all_activation, _any_activation): "yes" → B, "no" → C."""
    f = branches("yes", "no")
    yes = f.run("Trigger yes")
    assert yes.outputs == {"yes": "yes got Trigger yes"}
    assert yes.nodes["no"].status == "skipped"
    assert f.run("Trigger no").outputs == {"no": "no got Trigger no"}


def test_one_of_three_conditional_edges_is_taken_by_the_word_it_names() -> None:
    """autogen test_digraph_group_chat_multiple_conditional (string and lambda conditions)."""
    f = branches("apple", "banana", "cherry")
    banana = f.run("banana")
    assert banana.outputs == {"banana": "banana got banana"}
    assert [banana.nodes[n].status for n in ("apple", "cherry")] == ["skipped", "skipped"]
    assert f.run("cherry").outputs == {"cherry": "cherry got cherry"}


def test_a_message_no_condition_matches_fails_the_run_naming_the_node() -> None:
    """autogen test_digraph_group_chat.py::test_get_valid_target ("unknown path" raises).
    DESIGN: NoRouteError naming the node and a preview of its output (GraphFlow itself
    would end the run there, as complete)."""
    with pytest.raises(NoRouteError, match=r"unknown path") as info:
        branches("approve", "reject").run("unknown path")
    assert info.value.node == "A"


def test_a_node_with_conditional_and_plain_edges_always_takes_the_plain_one() -> None:
    """autogen test_validate_graph_mixed_conditions ("Node 'A' has a mix of conditional and
    unconditional edges" is refused). DESIGN differs on purpose: our edges are
    independent routes, so the plain edge always fires and the conditional one when it
    holds (LangGraph and Haystack allow the same)."""
    f = branches("cond").add_function("C", lambda m: f"C got {m}").connect("A", "C")
    assert f.run("no match").outputs == {"C": "C got no match"}
    assert f.run("cond holds").outputs == {"cond": "cond got cond holds", "C": "C got cond holds"}


def decision_loop(script: list[str]) -> tuple[Formation, ScriptedProvider]:
    """autogen's loop: A → B, B → A when B says "loop", B → C when it says "exit"; B is an
    assistant agent answering from ``script``. ``user`` is the entry node (AutoGen's task
    message; its ``default_start_node="A"`` has no counterpart, see the module docstring)."""
    provider = ScriptedProvider(script)
    f = (Formation("loop").add_function("user", echo()).add_function("A", echo())
         .add_agent("B", Agent("B", provider=provider)).add_function("C", echo())
         .connect("user", "A", "B").connect("B", "A", when=says("loop")).connect("B", "C", when=says("exit")))
    return f, provider


def test_an_agent_decides_to_loop_twice_then_to_exit() -> None:
    """autogen test_digraph_group_chat_loop_with_exit_condition: B's replies "loop", "loop",
    "exit" send the run round A → B twice more, then to C."""
    f, provider = decision_loop(["loop", "loop", "exit"])
    order = Order()
    result = f.run("Start", on_event=order)
    assert order.nodes == ["user", "A", "B", "A", "B", "A", "B", "C"]
    assert result.output == "exit"
    assert result.nodes["B"].outputs == ["loop", "loop", "exit"]
    assert provider.calls == 3
    assert [r.messages[-1].text for r in provider.requests] == ["Start", "loop", "loop"]


def test_each_visit_in_the_loop_sees_the_message_that_sent_it() -> None:
    """autogen test_message_filter_agent_loop_graph_visibility (A sees the user's task and B's
    two "loop"s, C the user's task and B's "exit"; B its own history). DESIGN differs on
    purpose: a node gets its predecessor's output, not a filtered thread, so A's visits get
    the task then each "loop", C gets "exit", and each session of B starts afresh with A's
    message (the node_started events carry each visit's input)."""
    f, provider = decision_loop(["loop", "loop", "exit"])
    inputs: dict[str, list[Any]] = {}

    def seen(event: FormationEvent) -> None:
        if event.type == "node_started" and event.node is not None:
            inputs.setdefault(event.node, []).append(event.data["input"])

    f.run("Start", on_event=seen)
    assert inputs == {"user": ["Start"], "A": ["Start", "loop", "loop"], "B": ["Start", "loop", "loop"],
                      "C": ["exit"]}
    assert [len(r.messages) for r in provider.requests] == [1, 1, 1]


def test_an_agent_looping_on_itself_runs_again_until_it_exits() -> None:
    """autogen test_digraph_group_chat_loop_with_self_cycle: B → B when "loop", B → C when
    "exit"; each visit of B is a new session given its own last answer."""
    provider = ScriptedProvider(["loop", "loop", "exit"])
    order = Order()
    f = (Formation("self_loop").add_function("A", echo()).add_agent("B", Agent("B", provider=provider))
         .add_function("C", echo()).connect("A", "B").connect("B", "B", when=says("loop"))
         .connect("B", "C", when=says("exit")))
    result = f.run("Start", on_event=order)
    assert order.nodes == ["A", "B", "B", "B", "C"]
    assert result.output == "exit"
    assert [r.messages[-1].text for r in provider.requests] == ["Start", "loop", "loop"]


def two_cycles(provider_for: Any) -> Formation:
    """autogen test_digraph_group_chat_loop_with_two_cycles: A → (B, C) → O; O → X, Y or E by
    its answer; X and Y answer "to_o" and go back to O, each through its own activation
    group (ours: a back edge triggers a visit of its own, without waiting for B and C)."""
    f = Formation("two_cycles")
    for name in "ABCE":
        f.add_function(name, echo())
    for name in "OXY":
        f.add_agent(name, Agent(name, provider=provider_for(name)))
    return (f.connect("A", "B", "O").connect("A", "C", "O")
            .connect("O", "X", when=says("to_x")).connect("O", "Y", when=says("to_y"))
            .connect("O", "E", when=says("exit"))
            .connect("X", "O", when=says("to_o")).connect("Y", "O", when=says("to_o")))


def test_a_loop_streamed_on_an_event_loop_yields_each_answer_in_order_then_the_result() -> None:
    """autogen's GraphFlow is async (``await team.run(...)``, ``team.run_stream(...)``
    yielding each message, then the TaskResult): the loop of
    test_digraph_group_chat_loop_with_exit_condition with ``async def`` echo nodes, through
    ``astream``: each node's output in order, then ``run_finished`` with the result."""
    async def echo_async(message: str) -> str:
        await asyncio.sleep(0)
        return message

    provider = ScriptedProvider(["loop", "loop", "exit"])
    f = (Formation("async_loop").add_function("user", echo_async).add_function("A", echo_async)
         .add_agent("B", Agent("B", provider=provider)).add_function("C", echo_async)
         .connect("user", "A", "B").connect("B", "A", when=says("loop")).connect("B", "C", when=says("exit")))

    async def main() -> list[FormationEvent]:
        return [event async for event in f.astream("Start")]

    events = asyncio.run(main())
    finished = [(e.node, e.data["output"]) for e in events if e.type == "node_finished"]
    assert finished == [("user", "Start"), ("A", "Start"), ("B", "loop"), ("A", "loop"), ("B", "loop"),
                        ("A", "loop"), ("B", "exit"), ("C", "exit")]
    assert events[-1].type == "run_finished"
    assert events[-1].data["result"].output == "exit"


def test_a_node_in_two_cycles_goes_round_each_then_exits() -> None:
    """autogen test_digraph_group_chat_loop_with_two_cycles: one replay client shared by O, X
    and Y answers "to_x", "to_o", "to_y", "to_o", "exit" in turn."""
    shared = ScriptedProvider(["to_x", "to_o", "to_y", "to_o", "exit"])
    order = Order()
    result = two_cycles(lambda _: shared).run("Start", on_event=order)
    assert order.nodes[0] == "A" and sorted(order.nodes[1:3]) == ["B", "C"]
    assert order.nodes[3:] == ["O", "X", "O", "Y", "O", "E"]
    assert result.output == "exit"
    assert result.nodes["O"].outputs == ["to_x", "to_y", "exit"]


def test_a_loop_that_never_exits_fails_at_its_visit_limit_naming_the_node() -> None:
    """autogen's MaxMessageTermination ending a chat that loops (test_digraph_group_chat_loop_*
    with termination_condition=MaxMessageTermination(20)). DESIGN differs on purpose: a
    cycle is bounded per node by max_visits, and passing it fails the run naming the node,
    with the outputs so far kept on the error."""
    provider = ScriptedProvider(["loop"], cycle=True)
    f = (Formation("forever").add_function("user", echo()).add_function("A", echo(), max_visits=3)
         .add_agent("B", Agent("B", provider=provider)).add_function("C", echo())
         .connect("user", "A", "B").connect("B", "A", when=says("loop")).connect("B", "C", when=says("exit")))
    with pytest.raises(FormationRuntimeError, match=r"max_visits=3") as info:
        f.run("Start")
    assert info.value.node == "A"
    assert provider.calls == 3


def slow_loop() -> tuple[Formation, ScriptedProvider]:
    """The decision loop with a B that always says "loop", 0.2 s per answer."""
    provider = ScriptedProvider(["loop"], cycle=True, latency_s=0.2)
    f = (Formation("slow_loop").add_function("user", echo()).add_function("A", echo())
         .add_agent("B", Agent("B", provider=provider)).add_function("C", echo())
         .connect("user", "A", "B").connect("B", "A", when=says("loop")).connect("B", "C", when=says("exit")))
    return f, provider


def test_a_looping_run_cancelled_from_outside_stops_and_asks_the_model_no_more() -> None:
    """autogen's external stop of a running team (``team.run(cancellation_token=...)``, the
    token every participant's ``on_messages`` gets) on the loop of
    test_digraph_group_chat_loop_with_exit_condition: ours, ``future.cancel()``."""
    f, provider = slow_loop()
    with f.start() as running:
        future = running.submit("Start")
        deadline = time.monotonic() + 5
        while provider.calls < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(timeout=1)
        calls = provider.calls
        time.sleep(0.3)
    assert provider.calls == calls


def test_a_looping_run_past_its_time_limit_fails_naming_the_node_still_working() -> None:
    """autogen's time limit on a team (a TimeoutTermination on the loop of
    test_digraph_group_chat_loop_with_exit_condition); DESIGN: the run fails within the
    limit plus 0.1 s, naming what was unfinished."""
    f, _ = slow_loop()
    t0 = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.5s; unfinished: B"):
        f.run("Start", timeout=0.5)
    assert time.monotonic() - t0 < 1.5


def test_a_condition_written_for_another_message_shape_fails_the_run_naming_its_edge() -> None:
    """autogen test_builder_with_lambda_condition's ``lambda msg: "even" in msg.to_model_text()``
    given a plain output: the error names the edge and the condition's own error."""
    f = (Formation("shape").add_function("A", echo()).add_function("B", echo()).add_function("C", echo())
         .connect("A", "B", when=lambda msg: "even" in msg.to_model_text()).connect("A", "C", otherwise=True))
    with pytest.raises(FormationRuntimeError, match=r"edge 'A' → 'B' raised AttributeError") as info:
        f.run("even length")
    assert info.value.node == "A"
    assert isinstance(info.value.__cause__, AttributeError)


def test_a_started_formation_runs_a_second_task_from_the_start() -> None:
    """autogen test_digraph_group_chat_multiple_task_execution: a second run() without
    reset runs A → B → C again on the new task; each agent ran once per task."""
    counter = Counter()
    with chain(counter).start() as running:
        first = running.submit("First task").result(timeout=10)
        second = running.submit("Second task").result(timeout=10)
    assert (first.output, second.output) == ("First task", "Second task")
    assert [second.nodes[n].visits for n in "ABC"] == [1, 1, 1]
    assert counter.calls == {"A": 2, "B": 2, "C": 2}


def test_a_second_run_routes_by_its_own_message_not_the_firsts() -> None:
    """autogen test_digraph_group_chat_callable_condition and test_builder_with_lambda_condition:
    "long" → B, then (after team.reset(), which ours does not need) "short" → C."""
    f = (Formation("routes").add_function("A", echo()).add_function("B", echo()).add_function("C", echo())
         .connect("A", "B", when=lambda m: "long" in m).connect("A", "C", when=lambda m: "short" in m))
    with f.start() as running:
        long = running.submit("This is a long message").result(timeout=10)
        short = running.submit("This is a short message").result(timeout=10)
    assert long.outputs == {"B": "This is a long message"}
    assert short.outputs == {"C": "This is a short message"}


def test_an_agent_loop_run_again_starts_a_new_conversation() -> None:
    """autogen test_digraph_group_chat_multiple_task_execution with the loop of
    test_digraph_group_chat_loop_with_exit_condition: the second task's first request to B
    carries the second task, not the first run's history."""
    f, provider = decision_loop(["loop", "exit", "exit"])
    with f.start() as running:
        first = running.submit("First task").result(timeout=10)
        second = running.submit("Second task").result(timeout=10)
    assert (first.nodes["B"].outputs, second.nodes["B"].outputs) == (["loop", "exit"], ["exit"])
    assert [m.text for m in provider.requests[2].messages] == ["Second task"]


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_node_in_two_cycles_on_ray_goes_round_each_with_each_agents_own_script() -> None:
    """autogen test_digraph_group_chat_loop_with_two_cycles on backend="ray": each replica
    answers from its own copy of a provider's script (DESIGN's known trap: a live provider
    is copied into each actor's process), so the replay client AutoGen shares becomes one
    script per agent; their calls are counted on the driver's providers after stop."""
    scripts = {"O": ["to_x", "to_y", "exit"], "X": ["to_o"], "Y": ["to_o"]}
    providers = {name: ScriptedProvider(script) for name, script in scripts.items()}
    result = two_cycles(providers.__getitem__).run("Start", backend="ray", timeout=120)
    assert result.output == "exit"
    assert result.nodes["O"].outputs == ["to_x", "to_y", "exit"]
    assert {name: p.calls for name, p in providers.items()} == {"O": 3, "X": 1, "Y": 1}


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_agent_loop_started_on_ray_runs_a_second_task_and_its_calls_are_counted_after_stop() -> None:
    """autogen test_digraph_group_chat_multiple_task_execution on backend="ray": B's replica
    answers both tasks from its copy of the script, in order, and its calls (and requests)
    reach the driver's provider when the formation stops."""
    f, provider = decision_loop(["loop", "exit", "exit"])
    with f.start(backend="ray") as running:
        first = running.submit("First task", timeout=90).result(timeout=120)
        second = running.submit("Second task", timeout=90).result(timeout=120)
    assert (first.nodes["B"].outputs, second.nodes["B"].outputs) == (["loop", "exit"], ["exit"])
    assert provider.calls == 3
    assert [r.messages[-1].text for r in provider.requests] == ["First task", "loop", "Second task"]


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_any_join_on_ray_runs_once_and_cancels_the_slower_source() -> None:
    """autogen test_digraph_group_chat_parallel_join_any on backend="ray" (the slow source is
    in another process: its cancel must reach it there)."""
    def slow(message: str) -> str:
        time.sleep(30)
        return f"B:{message}"

    f = (Formation("join_any").add_function("A", lambda m: f"A:{m}").add_function("B", slow)
         .add_function("C", lambda d: d, join="any").connect("A", "C").connect("B", "C"))
    t0 = time.monotonic()
    result = f.run("Start", backend="ray", timeout=120)
    assert result.output == {"A": "A:Start"}
    assert result.nodes["B"].status == "cancelled"
    assert time.monotonic() - t0 < 25
