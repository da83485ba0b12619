"""More behaviours ported from Microsoft AutoGen's own test suite (microsoft/autogen,
``python/packages/autogen-agentchat/tests/test_group_chat_graph.py`` and
``test_digraph_group_chat.py``): the DiGraph's checks (parents, start and leaf nodes,
cycles with and without an exit, validation), DiGraphBuilder's edges, what a fan-in
gives an agent, and GraphFlow's saved state loaded into a new team (ours: a journalled
run resumed by a formation built again). The runs are in ``test_peer_autogen.py``, whose
docstring lists where DESIGN deliberately differs.

Without a counterpart, so not ported: ``DiGraph.model_dump_json``/``dump_component``
(a formation's nodes are Python callables and agents; the nearest thing, a graph built
by hand with networkx being the builder's graph, is ported), and activation groups with
conflicting conditions on one target (our ``join=`` is one attribute of the node, so no
two edges can disagree about it)."""

from __future__ import annotations

import threading
import time
from typing import Any

import networkx as nx  # type: ignore[import-untyped]
import pytest

from tests.support.peers import Order, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationSetupError, NoRouteError
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def echo(message: Any) -> Any:
    return message


def graph(*chains: str, **conditions: Any) -> Formation:
    """Echo nodes along each chain (``"ABC"``: A → B → C); ``conditions`` maps ``"CA"`` (the
    edge C → A) to its ``when=``."""
    f = Formation("digraph")
    for name in dict.fromkeys("".join(chains) + "".join(conditions)):
        f.add_function(name, echo)
    for nodes in chains:
        if len(nodes) > 1:
            f.connect(*nodes)
    for (u, v), when in conditions.items():
        f.connect(u, v, when=when)
    return f


def problems(f: Formation) -> list[str]:
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    return info.value.problems


def says(word: str) -> Any:
    return lambda message: word in str(message)


def test_a_chain_has_one_start_node_and_one_leaf() -> None:
    """autogen test_create_digraph, test_get_parents, test_get_start_nodes,
    test_get_leaf_nodes and test_build_graph_validation: the plan's sources and sinks, and
    each node's parents."""
    plan = graph("ABC").validate()
    assert (plan.sources, plan.sinks) == (("A",), ("C",))
    assert [plan.nodes[n].forward_preds for n in "ABC"] == [(), ("A",), ("B",)]


def test_a_diamond_has_one_start_node_one_leaf_and_a_node_with_two_parents() -> None:
    """autogen test_graph_with_multiple_paths."""
    plan = graph("ABD", "ACD").validate()
    assert (plan.sources, plan.sinks) == (("A",), ("D",))
    assert plan.nodes["D"].forward_preds == ("B", "C")


def test_a_fan_out_has_a_leaf_per_branch() -> None:
    """autogen test_build_fan_out."""
    assert graph("AB", "AC").validate().sinks == ("B", "C")


def test_a_node_joins_all_of_its_parents_unless_told_otherwise() -> None:
    """autogen test_add_node and test_build_parallel_join (``activation`` defaults to "all"):
    the default is applied by the plan; the builder writes no attribute for it."""
    f = graph("AC", "BC")
    assert "join" not in f.graph.nodes["C"]
    assert f.validate().nodes["C"].join == "all"
    f.graph.nodes["C"]["join"] = "any"
    assert f.validate().nodes["C"].join == "any"


def test_an_activation_condition_that_is_neither_all_nor_any_is_refused() -> None:
    """autogen test_different_activation_groups_detection (a conflicting activation condition
    is refused). Ours has one ``join`` per node, so no two edges can disagree; what can be
    wrong is its value."""
    with pytest.raises(FormationSetupError, match=r"join must be 'all' .* or 'any' .*got 'some'"):
        Formation("join").add_function("D", echo, join="some")


def test_the_builders_edges_carry_their_conditions_and_plain_edges_none() -> None:
    """autogen test_add_edge, test_add_conditional_edges and test_condition_edge_execution."""
    yes, no = says("yes"), says("no")
    f = graph("AD", AB=yes, AC=no)
    assert "when" not in f.graph.edges["A", "D"]
    assert (f.graph.edges["A", "B"]["when"], f.graph.edges["A", "C"]["when"]) == (yes, no)


def test_an_acyclic_graph_has_no_back_edge() -> None:
    """autogen test_cycle_detection_no_cycle and test_validate_graph_success."""
    assert not any(e.back for e in graph("ABC").validate().edges)


def test_a_cycle_closed_by_a_conditional_edge_is_valid_and_that_edge_goes_back() -> None:
    """autogen test_cycle_detection_with_exit_condition (string and lambda conditions) and
    test_build_conditional_loop: A → B, B → A when "loop", B → C when "exit". Ours has an
    entry node before A (AutoGen's default_start_node="A"; see test_peer_autogen.py)."""
    f = graph("SAB", BA=says("loop"), BC=says("exit"))
    plan = f.validate()
    assert [(e.source, e.target) for e in plan.edges if e.back] == [("B", "A")]
    assert plan.sinks == ("C",)


def test_a_cycle_without_an_exit_condition_is_refused_naming_its_path() -> None:
    """autogen test_cycle_detection_without_exit_condition ("Cycle detected without exit
    condition: A -> B -> C -> A"), beside a valid D → E: both the cycle and, since nothing
    enters it, its nodes are named (every problem at once)."""
    found = problems(graph("ABCA", "DE"))
    assert found[0] == "cycle A → B → C → A has no conditional edge; add when= to one of its edges so it can end"
    assert found[1].startswith("node(s) 'A', 'B', 'C' cannot be reached from the source(s) 'D'")


def test_a_graph_without_a_start_node_is_refused_with_the_fix() -> None:
    """autogen test_invalid_graph_no_start_node, test_validate_graph_missing_start_node and
    test_invalid_digraph_manager_cycle_without_termination ("Graph must have at least one
    start node"), with the cycle's exit made conditional so that only the start is missing.
    The fix ours gives is the entry node AutoGen's ``set_entry_point`` stands for."""
    found = problems(graph("AB", BA=says("loop")))
    assert any("no node is a source" in p and "add_function('start', fn).connect('start', 'A')" in p
               for p in found)


def test_a_graph_without_a_leaf_node_is_valid_and_its_run_ends_where_no_route_is_left() -> None:
    """autogen test_validate_graph_missing_leaf_node and test_invalid_graph_no_leaf_node
    ("Graph must have at least one leaf node"): A → B → C, C → B when told. Ours differs:
    a formation without a sink validates (the suite relies on endless loops bounded by
    max_visits, and a chat loop driven by interrupt() may never mean to end), and its run
    ends at the node whose conditions all stay shut, with NoRouteError (DESIGN: "a node
    none of whose outgoing conditional edges fire, with no other way on, fails the run")."""
    f = graph("ABC", CB=lambda n: n < 3)
    f.graph.nodes["B"]["fn"] = lambda n: n + 1
    assert f.validate().sinks == ()
    with pytest.raises(NoRouteError) as info:
        f.run(0)
    assert info.value.node == "C"
    assert info.value.outputs["C"] == 3


def test_a_graph_built_by_hand_with_networkx_runs_as_the_builders_does() -> None:
    """autogen test_graph_flow_serialize_deserialize (a team dumped and loaded runs as the
    original): ours has no dump of callables, but a networkx graph with the documented
    attributes is the same formation as the builder's, and so is a copy of its graph."""
    a, b = Agent("A", provider=ScriptedProvider(["0"])), Agent("B", provider=ScriptedProvider(["0"]))
    built = Formation("flow").add_agent("A", a).add_agent("B", b).connect("A", "B")
    g = nx.DiGraph()
    g.add_node("A", kind="agent", agent=Agent("A", provider=ScriptedProvider(["0"])))
    g.add_node("B", kind="agent", agent=Agent("B", provider=ScriptedProvider(["0"])))
    g.add_edge("A", "B")
    by_hand = Formation("flow", g)
    assert nx.utils.graphs_equal(built.graph, Formation("copy", built.graph.copy()).graph)
    one, two = built.run("Start"), by_hand.run("Start")
    assert (one.output, two.output) == ("0", "0")
    assert [one.nodes[n].outputs for n in "AB"] == [two.nodes[n].outputs for n in "AB"] == [["0"], ["0"]]


def test_an_agent_after_an_all_join_gets_its_parents_values_in_their_order() -> None:
    """autogen test_digraph_group_chat_parallel_join_all with C an assistant agent (it sees
    A's and B's messages): our fan-in is a dict keyed by predecessor, rendered as JSON.
    Its keys come in the predecessors' order, not in the order they finished (B first
    here), so the agent's prompt is the same on every run (a replayed cassette, keyed by
    the request, matches)."""
    b_done = threading.Event()

    def a(message: str) -> str:
        b_done.wait(5)
        time.sleep(0.05)  # B's value reaches the join first
        return f"A:{message}"

    def b(message: str) -> str:
        b_done.set()
        return f"B:{message}"

    provider = ScriptedProvider(["joined"])
    f = (Formation("join_all").add_function("A", a).add_function("B", b).add_agent("C", Agent("C", provider=provider))
         .connect("A", "C").connect("B", "C"))
    assert f.run("Go").output == "joined"
    assert provider.requests[0].messages[-1].text == '{\n  "A": "A:Go",\n  "B": "B:Go"\n}'


def test_a_function_after_an_all_join_gets_its_parents_values_in_their_order() -> None:
    """autogen test_digraph_group_chat_parallel_join_all, with C a function of the dict."""
    b_done = threading.Event()

    def a(message: str) -> str:
        b_done.wait(5)
        time.sleep(0.05)
        return "a"

    f = (Formation("join_all").add_function("A", a).add_function("B", lambda _: b_done.set() or "b")
         .add_function("C", lambda d: list(d.items())).connect("A", "C").connect("B", "C"))
    assert f.run("Go").output == [("A", "a"), ("B", "b")]


def shout(message: str) -> str:
    return f"{message}!"


def two_cycles_through(o: Any) -> Formation:
    """autogen test_digraph_group_chat_loop_with_two_cycles's O as a function node: A → (B,
    C) → O, O → X when it has not been there, X → O back (its own activation group in
    AutoGen; ours: the back edge's visit of its own, given X's output alone). B finishes
    after C."""
    return (Formation("two_cycles").add_function("A", echo).add_function("B", lambda _: time.sleep(0.05) or "b")
            .add_function("C", lambda _: "c").add_function("O", o).add_function("X", shout)
            .add_function("E", echo).connect("A", "B", "O").connect("A", "C", "O")
            .connect("O", "X", when=lambda m: "!" not in m).connect("X", "O").connect("O", "E", otherwise=True))


def test_a_join_taking_keyword_arguments_that_a_loop_comes_back_to_is_refused_naming_the_back_edge() -> None:
    """autogen test_digraph_group_chat_loop_with_two_cycles, O being a function of its two
    parents by name: a visit from the back edge X → O brings X's output alone, which no
    keyword fits; validation says so (the run failed with "dictionary update sequence
    element #0 has length 1")."""
    def o(B: str, C: str) -> str:
        return f"{B}+{C}"

    (problem,) = problems(two_cycles_through(o))
    assert "'O'" in problem and "back edge 'X' → 'O'" in problem and "keyword arguments" in problem


def test_a_join_whose_dict_parameter_a_back_edge_cannot_fill_is_refused_naming_the_edge() -> None:
    """The same with O taking the dict of its parents, annotated: the back edge from X
    brings a str where the parameter wants a dict; validation names the edge, as it does
    for a forward edge (the run failed with a PayloadError at O's second visit)."""
    def o(parents: dict[str, Any]) -> str:
        return "+".join(parents.values())

    (problem,) = problems(two_cycles_through(o))
    assert problem.startswith("back edge 'X' → 'O': 'X' outputs")
    assert "'parents'" in problem


def test_a_join_that_takes_whatever_comes_runs_both_its_forward_and_its_back_edge_visits() -> None:
    """The same with O unannotated: a forward visit gets the dict of B and C, the back edge's
    visit X's output."""
    seen: list[Any] = []

    def o(message):  # type: ignore[no-untyped-def]
        seen.append(message)
        return "+".join(message.values()) if isinstance(message, dict) else message

    assert two_cycles_through(o).run("Start").output == "b+c!"
    assert seen == [{"B": "b", "C": "c"}, "b+c!"]


def entered_twice(**join: str) -> Formation:
    """The shape AutoGen's activation groups exist for (a node reachable both from the entry
    and from inside a loop, e.g. a reviewer sending work back): ``start`` feeds A and B;
    A → B; B goes back to A until A has run three times, then to ``done``."""
    def value(v: Any) -> int:
        return v if isinstance(v, int) else next(iter(v.values()))

    return (Formation("entered_twice").add_function("start", lambda _: 0)
            .add_function("A", lambda v: value(v) + 1).add_function("B", echo, **join)
            .add_function("done", echo).connect("start", "A", "B").connect("start", "B")
            .connect("B", "A", when=lambda d: value(d) < 3).connect("B", "done", otherwise=True))


@pytest.mark.parametrize("join", ["all", "any"])
def test_a_join_inside_a_loop_fed_from_outside_it_is_refused_naming_both_and_the_fix(join: str) -> None:
    """autogen test_digraph_group_chat_loop_with_two_cycles's activation groups (each way
    into O its own group, so O does not wait for a parent that will not speak again), and
    its activation="any" that users give such a node: our B joins 'start', outside the loop,
    and 'A', inside it. 'start' delivers once, so B's visit in the loop's second round
    (with join="any", its third) could never fire: the run used to "succeed" with ``done``
    skipped and the loop's last values lost. Validation refuses it, saying what to do.
    (Ours has no activation groups: a way back into a node is a back edge to it, whose
    visit waits for no one, as test_a_node_in_two_cycles_goes_round_each_then_exits shows.)"""
    (problem,) = problems(entered_twice(join=join))
    assert problem.startswith("node 'B' joins 'A', inside the loop (cycle A → B → A), and 'start', outside it")
    assert "feed 'start' to the loop's entry 'A' only" in problem


def two_agents() -> tuple[Formation, ScriptedProvider, ScriptedProvider]:
    """autogen test_graph_flow_stateful_pause_and_resume_with_termination's team: A → B,
    assistant agents answering "A1", "A2" and "B1"."""
    a, b = ScriptedProvider(["A1", "A2"]), ScriptedProvider(["B1"])
    f = Formation("ab").add_agent("A", Agent("A", provider=a)).add_agent("B", Agent("B", provider=b)).connect("A", "B")
    return f, a, b


def test_a_run_stopped_after_a_node_resumes_in_a_new_formation_from_the_next_node(store: RunStore) -> None:
    """autogen test_graph_flow_stateful_pause_and_resume_with_termination: the run stops once A
    answered (SourceMatchTermination(["A"]); ours: break_after=["A"]); its state, loaded
    into a new team (ours: the run's journal, resumed by the formation built again), goes on
    with B only: A is not asked again."""
    f, a, b = two_agents()
    paused = f.run("Start", store=store, break_after=["A"])
    assert paused.status == "suspended"
    assert paused.interrupt == {"node": "A", "payload": {"breakpoint": "after", "output": "A1"}}
    assert (a.calls, b.calls) == (1, 0)
    again, a2, b2 = two_agents()
    order = Order()
    done = again.resume(paused.run_id, store=store, on_event=order)
    assert (done.status, done.output) == ("succeeded", "B1")
    assert order.nodes == ["B"]
    assert (a2.calls, b2.calls) == (0, 1)
    assert b2.requests[0].messages[-1].text == "A1"


def test_a_loop_paused_at_each_decision_resumes_where_it_stopped(store: RunStore) -> None:
    """autogen test_graph_flow_stateful_pause_and_resume_with_termination inside the loop of
    test_digraph_group_chat_loop_with_exit_condition: stopped after each answer of B (the
    breakpoint stays for the resumed run), each resume by a formation built again asks B
    once, for the answer still to come: its provider has that one answer only, so asking
    again for a journalled one would run out."""
    def build(answer: str) -> tuple[Formation, ScriptedProvider]:
        provider = ScriptedProvider([answer])
        f = (Formation("loop").add_function("user", echo).add_function("A", echo)
             .add_agent("B", Agent("B", provider=provider)).add_function("C", echo)
             .connect("user", "A", "B").connect("B", "A", when=says("loop")).connect("B", "C", when=says("exit")))
        return f, provider

    f, first = build("loop")
    paused = f.run("Start", store=store, break_after=["B"])
    assert paused.interrupt is not None and paused.interrupt["payload"]["output"] == "loop"
    again, second = build("loop")
    paused_again = again.resume(paused.run_id, store=store)
    assert paused_again.interrupt is not None and paused_again.interrupt["payload"]["output"] == "loop"
    last, third = build("exit")
    done = last.resume(paused.run_id, store=store)
    assert done.interrupt is not None and done.interrupt["payload"]["output"] == "exit"
    done = last.resume(paused.run_id, store=store)
    assert (done.status, done.output) == ("succeeded", "exit")
    assert done.nodes["B"].outputs == ["loop", "loop", "exit"]
    assert (first.calls, second.calls, third.calls) == (1, 1, 1)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_run_stopped_after_a_node_on_ray_resumes_from_the_next_node(store: RunStore) -> None:
    """autogen test_graph_flow_stateful_pause_and_resume_with_termination on backend="ray"."""
    f, a, _ = two_agents()
    paused = f.run("Start", store=store, break_after=["A"], backend="ray", timeout=120)
    assert paused.status == "suspended"
    again, a2, b2 = two_agents()
    done = again.resume(paused.run_id, store=store, backend="ray", timeout=120)
    assert (done.status, done.output) == ("succeeded", "B1")
    assert (a.calls, a2.calls, b2.calls) == (1, 0, 1)
