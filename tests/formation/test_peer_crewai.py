"""Behaviours ported from CrewAI's own test suite (crewAIInc/crewAI,
``lib/crewai/tests/test_flow.py`` and ``test_flow_persistence.py``): Flows of ``@start``
methods, ``@listen`` chains, ``or_``/``and_`` conditions, ``@router`` labels, cycles a
router drives, async steps, exceptions, a flow kicked off again, events.
``test_peer_crewai_durable.py`` takes persistence, human feedback and ``backend="ray"``.

A CrewAI Flow is a class whose methods are steps sharing ``self.state``; here a step is a
function node and what it passes on is its output (CrewAI's "state passed between
steps" is the payload). ``@start()`` is a source (a node with no incoming edge: it gets
the run's input, as a start method gets ``crewai_trigger_payload``); ``@listen(a)`` is
``connect(a, b)``; ``and_(a, b)`` is the default ``join="all"``; ``or_(a, b)`` is
``join="any"``; a ``@router`` returning a label is a node whose out-edges carry
``when=`` a predicate on its output (:func:`label`). The order CrewAI's
``execution_order`` records is our ``node_started`` order
(:class:`tests.support.peers.Order`).

Deliberately different, or without a counterpart (each test that touches one says so):
- A router label nobody listens to ends a CrewAI flow quietly; a node whose conditional
  edges all stay shut fails ours with ``NoRouteError`` unless it has an ``otherwise``
  edge (DESIGN: "Routes").
- ``or_`` in CrewAI lets every other method run too; our ``join="any"`` cancels the
  branches that feed only the join (DESIGN: "Joins").
- Sibling listeners of one method run one after another in CrewAI, sharing and mutating
  one state; ours run in parallel, each on its own copy of the payload (DESIGN:
  "Payloads are isolated").
- A step that raises fails a CrewAI kickoff with that exception; ours fails the run with
  a ``FormationRuntimeError`` naming the node, the exception chained as its cause.
- CrewAI cycles are unbounded; ours are bounded per node by ``max_visits``.
- Nested conditions (``or_(and_(a, b), and_(c, d))``) have no single attribute: they are
  spelt with intermediate join nodes.
- ``kickoff(inputs={"id": ...})`` restoring a finished flow's state has no counterpart:
  ``resume`` continues an unfinished run and refuses a finished one
  (test_peer_langgraph_resume.py). The event bus's Flow*/MethodExecution* events are
  our formation events; ``flow.plot()``, ``flow.name`` attributes and verbose
  persistence logging have no counterpart.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent, FormationEventType


def label(name: str) -> Callable[[Any], bool]:
    """A CrewAI router label as a condition: the router's output is that label."""

    def is_label(output: Any) -> bool:
        return bool(output == name)

    is_label.__name__ = name
    return is_label


def step(name: str, counter: Counter | None = None) -> Callable[[Any], Any]:
    """A step that passes on what it received (counting its calls)."""

    def run(value: Any) -> Any:
        if counter is not None:
            counter.hit(name)
        return value

    run.__name__ = name
    return run


# --- @start and @listen -------------------------------------------------------------


def test_a_listener_runs_after_the_step_it_listens_to() -> None:
    """crewai test_flow.py::test_simple_sequential_flow."""
    order = Order()
    f = Formation("simple").add_function("step_1", step("step_1")).add_function("step_2", step("step_2"))
    result = f.connect("step_1", "step_2").run("go", on_event=order)
    assert order.nodes == ["step_1", "step_2"]
    assert (result.status, result.output) == ("succeeded", "go")


def test_several_starts_each_run_and_each_listener_follows_its_own_start() -> None:
    """crewai test_flow_with_multiple_starts: step_c after step_a, step_d after step_b."""
    order = Order()
    f = Formation("multi_start")
    for name in ("step_a", "step_b", "step_c", "step_d"):
        f.add_function(name, lambda v, name=name: f"{v}>{name}")
    result = f.connect("step_a", "step_c").connect("step_b", "step_d").run("in", on_event=order)
    assert sorted(order.nodes) == ["step_a", "step_b", "step_c", "step_d"]
    assert order.nodes.index("step_c") > order.nodes.index("step_a")
    assert order.nodes.index("step_d") > order.nodes.index("step_b")
    assert result.outputs == {"step_c": "in>step_a>step_c", "step_d": "in>step_b>step_d"}


def test_every_start_receives_the_runs_input() -> None:
    """crewai test_flow_trigger_payload_injection_multiple_starts: each start method gets
    ``crewai_trigger_payload``; each of our sources gets the run's input."""
    f = (Formation("payload").add_function("start_1", lambda p: ("start_1", p))
         .add_function("start_2", lambda p: ("start_2", p)))
    result = f.run("Multiple start trigger data")
    assert result.outputs == {"start_1": ("start_1", "Multiple start trigger data"),
                              "start_2": ("start_2", "Multiple start trigger data")}


def test_the_runs_output_is_the_last_steps_return_value() -> None:
    """crewai test_flow_start_method_without_trigger_parameter and
    test_flow_trigger_payload_with_structured_state: kickoff returns the last method's
    result; ours, the single sink's output."""
    f = (Formation("last").add_function("start", lambda p: "started")
         .add_function("second", lambda prev: f"finished after {prev}").connect("start", "second"))
    assert f.run("some data").output == "finished after started"


def test_a_value_returned_by_one_step_is_what_the_next_step_receives() -> None:
    """crewai test_flow_with_custom_state (counter += 1, then *= 2) and
    test_unstructured_flow_event_emission's ``finish_poem(first_sentence)``. DESIGN differs
    on purpose: no ``self.state`` shared by steps; the state travels as the payload."""
    f = (Formation("state").add_function("step_1", lambda s: {**s, "counter": s["counter"] + 1})
         .add_function("step_2", lambda s: {**s, "counter": s["counter"] * 2}).connect("step_1", "step_2"))
    assert f.run({"counter": 0}).output == {"counter": 2}


def test_a_step_that_takes_no_argument_is_refused_at_setup_saying_to_add_a_parameter() -> None:
    """crewai's listeners often take nothing but ``self`` (test_simple_sequential_flow's
    ``step_2(self)``). DESIGN differs on purpose: a node is called with its input, so a
    function with no parameter for it is a setup error naming the node, and the fix it
    gives is to add one (it was "give the other parameters defaults", with none to give)."""
    f = Formation("no_args").add_function("step_1", lambda: "one").add_function("step_2", lambda: "two")
    with pytest.raises(FormationSetupError) as info:
        f.connect("step_1", "step_2").validate()
    assert len(info.value.problems) == 2
    for node, problem in zip(("step_1", "step_2"), info.value.problems, strict=True):
        assert f"node {node!r}" in problem
        assert "add a positional parameter for it" in problem and "defaults" not in problem


# --- and_ / or_ ---------------------------------------------------------------------


def test_an_and_listener_runs_once_after_both_starts() -> None:
    """crewai test_flow_with_and_condition: step_3 (and_) is last, after step_1 and step_2."""
    order, counter = Order(), Counter()
    f = (Formation("and").add_function("step_1", lambda v: 1).add_function("step_2", lambda v: 2)
         .add_function("step_3", lambda step_1, step_2: counter.hit("step_3") and step_1 + step_2)
         .connect("step_1", "step_3").connect("step_2", "step_3"))
    result = f.run(None, on_event=order)
    assert order.nodes[-1] == "step_3" and sorted(order.nodes[:2]) == ["step_1", "step_2"]
    assert (result.output, counter.count("step_3")) == (3, 1)


def test_an_or_listener_runs_once_with_the_first_start_and_cancels_the_other() -> None:
    """crewai test_flow_with_or_condition: step_c runs after either start. DESIGN differs
    on purpose: CrewAI runs step_b too; our join="any" cancels the start that feeds only
    step_c (held here so step_a is surely first)."""
    release = threading.Event()

    def step_b(v: Any) -> str:  # the input is None: `str` would fail if step_b starts first
        release.wait(5)
        return "b"

    f = (Formation("or").add_function("step_a", lambda v: "a").add_function("step_b", step_b)
         .add_function("step_c", lambda d: d, join="any").connect("step_a", "step_c").connect("step_b", "step_c"))
    try:
        result = f.run(None, timeout=10)
    finally:
        release.set()
    assert result.output == {"step_a": "a"}
    assert result.nodes["step_c"].visits == 1
    assert result.nodes["step_b"].status == "cancelled"


def test_a_diamond_converges_once_after_both_paths() -> None:
    """crewai test_diamond_dependency_pattern: start → path_a, path_b → converge (and_)."""
    order = Order()
    f = (Formation("diamond").add_function("start", lambda v: "started")
         .add_function("path_a", lambda v: "a_done").add_function("path_b", lambda v: "b_done")
         .add_function("converge", lambda path_a, path_b: [path_a, path_b])
         .connect("start", "path_a", "converge").connect("start", "path_b", "converge"))
    result = f.run(None, on_event=order)
    assert order.nodes[0] == "start" and order.nodes[-1] == "converge"
    assert result.output == ["a_done", "b_done"]


def test_and_and_or_listeners_over_three_branches_each_run_once_then_the_final_one() -> None:
    """crewai test_complex_and_or_branching: init → 1a, 1b, 1c; 2a = and_(1a, 1b); 2b =
    or_(1a, 1b, 1c); final = and_(2a, 2b). 1a and 1b also feed 2a, so 2b's "any" does
    not cancel them. DESIGN differs on purpose: CrewAI runs branch_1c too; ours cancels
    it, as it feeds only 2b (held here so it loses the race)."""
    release, counter, order = threading.Event(), Counter(), Order()

    def slow(v: Any) -> str:
        release.wait(5)
        return "1c"

    f = (Formation("branching").add_function("init", lambda v: v)
         .add_function("branch_1a", lambda v: "1a").add_function("branch_1b", lambda v: "1b")
         .add_function("branch_1c", slow)
         .add_function("branch_2a", lambda d: counter.hit("2a") and sorted(d))
         .add_function("branch_2b", lambda d: counter.hit("2b") and list(d), join="any")
         .add_function("final", lambda branch_2a, branch_2b: (branch_2a, len(branch_2b)))
         .connect("init", "branch_1a", "branch_2a", "final").connect("init", "branch_1b", "branch_2a")
         .connect("init", "branch_1c", "branch_2b", "final")
         .connect("branch_1a", "branch_2b").connect("branch_1b", "branch_2b"))
    try:
        result = f.run(None, timeout=10, on_event=order)
    finally:
        release.set()
    assert result.output == (["branch_1a", "branch_1b"], 1)
    assert (counter.count("2a"), counter.count("2b")) == (1, 1)
    assert order.nodes[-1] == "final"
    assert result.nodes["branch_1c"].status == "cancelled"


def test_nested_and_inside_or_fires_after_the_first_complete_pair() -> None:
    """crewai test_deeply_nested_conditions (``or_(and_(a, b), and_(c, d))``), spelt with
    two "all" joins feeding an "any" join: result runs once, after a and b, with their
    pair; the c-and-d pair that lost (d held) is cancelled."""
    release = threading.Event()

    def d(v: Any) -> str:
        release.wait(5)
        return "d"

    f = Formation("nested")
    for name in "abc":
        f.add_function(name, lambda v, name=name: name)
    f.add_function("d", d).add_function("ab", lambda a, b: a + b).add_function("cd", lambda c, d: c + d)
    f.add_function("result", lambda pairs: pairs, join="any")
    f.connect("a", "ab", "result").connect("b", "ab").connect("c", "cd", "result").connect("d", "cd")
    try:
        result = f.run(None, timeout=10)
    finally:
        release.set()
    assert result.output == {"ab": "ab"}
    assert result.nodes["result"].visits == 1
    assert result.nodes["cd"].status in ("cancelled", "skipped")


def test_an_and_join_whose_other_branch_a_router_skipped_fires_with_the_branch_that_ran() -> None:
    """crewai test_nested_and_or_conditions: method_7 = or_(and_("a_condition", method_6),
    and_(method_6, method_4)); the router says "b_condition", so CrewAI's method_7 waits for
    method_6 and method_4. DESIGN differs on purpose: a join fires when each predecessor
    has delivered or been skipped, so and_(a_path, method_6) with a_path routed away fires
    on method_6 alone, method_7 takes it first, and the method_4 branch, feeding only
    method_7, is cancelled (held here so it surely loses)."""
    release = threading.Event()

    def method_4(v: Any) -> str:
        release.wait(5)
        return "m4"

    f = (Formation("nested_routes").add_function("method_1", lambda v: v)
         .add_function("method_3", lambda v: "b_condition").add_function("a_path", lambda v: "a")
         .add_function("method_5", lambda v: "m5").add_function("method_4", method_4)
         .add_function("method_6", lambda v: "m6").add_function("a_and_6", lambda d: d)
         .add_function("m6_and_m4", lambda d: d).add_function("method_7", lambda d: d, join="any")
         .add_function("method_8", lambda d: d)
         .connect("method_1", "method_3").connect("method_3", "a_path", when=label("a_condition"))
         .connect("method_3", "method_5", when=label("b_condition"))
         .connect("method_3", "method_6", when=lambda v: v in ("a_condition", "b_condition"))
         .connect("method_5", "method_4", "m6_and_m4", "method_7", "method_8")
         .connect("a_path", "a_and_6", "method_7").connect("method_6", "a_and_6").connect("method_6", "m6_and_m4"))
    try:
        result = f.run(None, timeout=10)
    finally:
        release.set()
    assert result.output == {"a_and_6": {"method_6": "m6"}}
    assert result.nodes["a_path"].status == "skipped"
    assert result.nodes["method_4"].status == "cancelled"


# --- @router ------------------------------------------------------------------------


def paths(chosen: str) -> Formation:
    """crewai's ConditionalRouterFlow: begin → decision_point → path_a | path_b | path_c."""
    f = Formation("router").add_function("begin", step("begin")).add_function("decision_point", lambda v: chosen)
    f.connect("begin", "decision_point")
    for name in ("path_a", "path_b", "path_c"):
        f.add_function(f"handle_{name}", lambda v, name=name: f"handled {name}")
        f.connect("decision_point", f"handle_{name}", when=label(name))
    return f


def test_a_router_runs_only_the_listeners_of_the_label_it_returns() -> None:
    """crewai test_flow_with_router and test_conditional_router_paths_exclusivity. CrewAI's
    kickoff returns the last method's value; ours has three sinks, so the one that ran is
    in ``outputs`` and ``output`` is None (FormationResult: "None when the formation has
    several sinks")."""
    order = Order()
    result = paths("path_b").run(None, on_event=order)
    assert order.nodes == ["begin", "decision_point", "handle_path_b"]
    assert (result.outputs, result.output) == ({"handle_path_b": "handled path_b"}, None)
    assert {n: result.nodes[n].status for n in ("handle_path_a", "handle_path_c")} == {
        "handle_path_a": "skipped", "handle_path_c": "skipped"}


def test_a_router_label_nobody_listens_to_fails_the_run_naming_the_router() -> None:
    """crewai test_multiple_routers_from_same_trigger's routers returning None (no listener
    runs, the flow ends). DESIGN differs on purpose: a node none of whose conditional edges
    fire, with no ``otherwise`` edge, fails the run with NoRouteError."""
    with pytest.raises(NoRouteError) as info:
        paths("path_z").run(None)
    assert info.value.node == "decision_point"


def test_an_otherwise_edge_takes_a_router_label_nobody_else_listens_to() -> None:
    """The same router with ``otherwise=True``: our spelling of "this label ends here"."""
    f = paths("path_z").add_function("nothing", lambda v: f"no path for {v}")
    result = f.connect("decision_point", "nothing", otherwise=True).run(None)
    assert result.outputs == {"nothing": "no path for path_z"}


def test_a_router_label_given_as_when_is_refused_showing_the_predicate_to_write() -> None:
    """crewai ``@listen("path_b")`` names a router label by its string. Ours routes by a
    predicate on the router's output, so ``when="path_b"`` is a setup error naming the
    edge; it shows the predicate that compares the label (it said only "got str")."""
    f = Formation("labels").add_function("decision_point", lambda v: "path_b").add_function("handle", lambda v: v)
    with pytest.raises(FormationSetupError) as info:
        f.connect("decision_point", "handle", when="path_b").validate()
    (problem,) = info.value.problems
    assert "'decision_point' → 'handle'" in problem
    assert "when=lambda output: output == 'path_b'" in problem


def test_three_routers_after_one_step_each_route_to_their_own_listener() -> None:
    """crewai test_multiple_routers_from_same_trigger: diagnose_conditions feeds three
    routers; each returns its label, so all three analyses run, each after its router."""
    order = Order()
    f = Formation("routers").add_function("scan_medical", lambda v: v).add_function("diagnose", lambda v: v)
    f.connect("scan_medical", "diagnose")
    for cond, letter in (("diabetes", "D"), ("hypertension", "H"), ("anemia", "A")):
        f.add_function(f"{cond}_router", lambda d, cond=cond, letter=letter: cond if letter in d else None)
        f.add_function(f"{cond}_analysis", lambda v, cond=cond: f"{cond}_analysis_complete")
        f.connect("diagnose", f"{cond}_router").connect(f"{cond}_router", f"{cond}_analysis", when=label(cond))
    result = f.run("DHA", on_event=order)
    assert set(result.outputs) == {"diabetes_analysis", "hypertension_analysis", "anemia_analysis"}
    for cond in ("diabetes", "hypertension", "anemia"):
        assert order.nodes.index(f"{cond}_analysis") > order.nodes.index(f"{cond}_router") > 1


def test_a_cascade_of_routers_runs_each_level_in_order() -> None:
    """crewai test_router_cascade_chain: begin → router_1 → process_1 → router_2 →
    process_2 → router_3 → finalize; the state's level is 3 at the end."""
    order = Order()
    f = (Formation("cascade").add_function("begin", lambda s: s)
         .add_function("router_level_1", lambda s: ("level_1_path", s))
         .add_function("process_level_1", lambda r: {**r[1], "level": 2})
         .add_function("router_level_2", lambda s: ("level_2_path", s))
         .add_function("process_level_2", lambda r: {**r[1], "level": 3})
         .add_function("router_level_3", lambda s: ("final_path", s))
         .add_function("finalize", lambda r: r[1])
         .connect("begin", "router_level_1"))
    f.connect("router_level_1", "process_level_1", when=lambda r: r[0] == "level_1_path")
    f.connect("process_level_1", "router_level_2")
    f.connect("router_level_2", "process_level_2", when=lambda r: r[0] == "level_2_path")
    f.connect("process_level_2", "router_level_3")
    f.connect("router_level_3", "finalize", when=lambda r: r[0] == "final_path")
    result = f.run({"level": 1}, on_event=order)
    assert order.nodes == ["begin", "router_level_1", "process_level_1", "router_level_2",
                           "process_level_2", "router_level_3", "finalize"]
    assert result.output == {"level": 3}


def test_an_or_router_then_an_and_router_each_fire_after_their_steps() -> None:
    """crewai test_router_with_multiple_conditions: router_or = or_(step_a, step_b) routes
    to handle; branch_2 listens to handle; router_and = and_(handle, branch_2) routes to
    log_final_step. (router_or's "any" cancels the start that lost: DESIGN, see above.)"""
    order = Order()
    f = (Formation("or_and").add_function("step_a", lambda v: "a").add_function("step_b", lambda v: "b")
         .add_function("router_or", lambda d: "next_step_or", join="any")
         .add_function("handle", lambda v: "handled").add_function("branch_2_step", lambda v: "branched")
         .add_function("router_and", lambda handle, branch_2_step: "final_step")
         .add_function("log_final_step", lambda v: "logged")
         .connect("step_a", "router_or").connect("step_b", "router_or")
         .connect("router_or", "handle", when=label("next_step_or"))
         .connect("handle", "branch_2_step", "router_and").connect("handle", "router_and")
         .connect("router_and", "log_final_step", when=label("final_step")))
    result = f.run(None, on_event=order)
    assert result.output == "logged"
    assert order.nodes.index("router_and") > order.nodes.index("branch_2_step") > order.nodes.index("handle")
    assert order.nodes[-1] == "log_final_step"
    assert result.nodes["router_or"].visits == 1


# --- cycles -------------------------------------------------------------------------


def cyclic(max_iterations: int, **policies: Any) -> Formation:
    """crewai's CyclicFlow: step_1 (a start that also listens to "loop") → step_2 → step_3,
    a router counting iterations that sends the run back to step_1 or out to "exit".
    ``kickoff`` is the entry node: a cycle with no way in is a setup error (the error
    says to add one), where CrewAI's start method is also a listener of "loop"."""
    return (Formation("cyclic").add_function("kickoff", lambda i: i).add_function("step_1", lambda i: i, **policies).add_function("step_2", lambda i: i)
            .add_function("step_3", lambda i: i + 1).add_function("exit", lambda i: f"done after {i}")
            .connect("kickoff", "step_1", "step_2", "step_3").connect("step_3", "step_1", when=lambda i: i < max_iterations)
            .connect("step_3", "exit", otherwise=True))


def test_a_router_drives_a_cycle_a_set_number_of_times() -> None:
    """crewai test_cyclic_flow: step_1, step_2, step_3 three times in order, then out. The
    "exit" label has a listener here: one nobody listens to fails ours (see above)."""
    order = Order()
    result = cyclic(3).run(0, on_event=order)
    assert order.nodes == ["kickoff"] + ["step_1", "step_2", "step_3"] * 3 + ["exit"]
    assert result.output == "done after 3"
    assert result.nodes["step_1"].outputs == [0, 1, 2]


def test_a_cycle_that_never_exits_fails_at_its_visit_limit_naming_the_node() -> None:
    """crewai's cycles have no bound. DESIGN differs on purpose: a cycle is bounded per node
    by max_visits, and passing it fails the run naming the node."""
    with pytest.raises(FormationRuntimeError, match=r"max_visits=4") as info:
        cyclic(100, max_visits=4).run(0)
    assert info.value.node == "step_1"


# --- async steps --------------------------------------------------------------------


def test_async_steps_run_in_order_and_each_gets_the_previous_result() -> None:
    """crewai test_async_flow and test_async_flow_with_trigger_payload."""
    seen: list[Any] = []

    async def async_start(payload: str) -> str:
        seen.append(payload)
        await asyncio.sleep(0.01)
        return "async_started"

    async def async_second(result: str) -> str:
        seen.append(result)
        await asyncio.sleep(0.01)
        return "async_finished"

    f = (Formation("async").add_function("async_start", async_start).add_function("async_second", async_second)
         .connect("async_start", "async_second"))
    assert f.run("Async trigger data").output == "async_finished"
    assert seen == ["Async trigger data", "async_started"]


def test_sync_and_async_steps_mixed_keep_their_order_under_arun() -> None:
    """crewai test_mixed_sync_async_execution_order (``kickoff_async``): ours, ``arun``."""
    order = Order()

    async def async_step_1(v: list[str]) -> list[str]:
        await asyncio.sleep(0.01)
        return [*v, "async_step_1"]

    async def async_step_3(v: list[str]) -> list[str]:
        await asyncio.sleep(0.01)
        return [*v, "async_step_3"]

    f = (Formation("mixed").add_function("sync_start", lambda v: ["sync_start"])
         .add_function("async_step_1", async_step_1).add_function("sync_step_2", lambda v: [*v, "sync_step_2"])
         .add_function("async_step_3", async_step_3).add_function("sync_final", lambda v: [*v, "sync_final"]))
    f.connect("sync_start", "async_step_1", "sync_step_2", "async_step_3", "sync_final")
    expected = ["sync_start", "async_step_1", "sync_step_2", "async_step_3", "sync_final"]
    assert asyncio.run(f.arun(None, on_event=order)).output == expected
    assert order.nodes == expected


# --- exceptions ---------------------------------------------------------------------


def test_a_step_that_raises_fails_the_run_and_its_listener_never_runs() -> None:
    """crewai test_flow_with_exceptions (kickoff raises the ValueError; step_2 not run).
    DESIGN differs on purpose: a FormationRuntimeError naming the node, the ValueError its
    cause, the listener's trace never run."""
    counter = Counter()

    def step_1(v: Any) -> None:
        counter.hit("step_1")
        raise ValueError("An error occurred in step_1")

    f = Formation("boom").add_function("step_1", step_1).add_function("step_2", step("step_2", counter))
    with pytest.raises(FormationRuntimeError, match=r"step_1") as info:
        f.connect("step_1", "step_2").run(None)
    assert info.value.node == "step_1"
    assert isinstance(info.value.__cause__, ValueError)
    assert counter.calls == {"step_1": 1}
    assert info.value.nodes["step_2"].attempts == 0


def test_an_error_edge_catches_a_failing_step_and_the_run_goes_on() -> None:
    """crewai test_flow_with_exceptions, with the handler CrewAI leaves to a try/except
    inside the step: our error edge hands the failure to a node and the run succeeds."""
    def step_1(v: Any) -> None:
        raise ValueError("An error occurred in step_1")

    f = (Formation("caught").add_function("step_1", step_1).add_function("step_2", step("step_2"))
         .add_function("recover", lambda failure: (failure.node, type(failure.error).__name__, failure.input))
         .connect("step_1", "step_2").connect("step_1", "recover", on_error=True))
    result = f.run("payload")
    assert result.outputs == {"recover": ("step_1", "ValueError", "payload")}
    assert isinstance(result.nodes["recover"].output, tuple)
    assert result.nodes["step_1"].status == "failed"
    assert result.nodes["step_2"].status == "skipped"


def test_a_handler_receives_a_node_failure_and_its_output_is_a_run_output() -> None:
    """The value an error edge carries is a NodeFailure (DESIGN: "Error edges"). A node
    whose only out-edge is an error edge is still a sink (had it succeeded, its value
    would be a run output); it and its handler exclude each other, so the handler's value
    is the run's one ``output``."""
    got: list[NodeFailure] = []

    def step_1(v: Any) -> None:
        raise KeyError("missing")

    f = (Formation("handler").add_function("step_1", step_1).add_function("h", lambda x: got.append(x) or "ok")
         .connect("step_1", "h", on_error=True))
    result = f.run(1)
    assert (result.outputs, result.output) == ({"h": "ok"}, "ok")
    assert isinstance(got[0], NodeFailure) and got[0].attempts == 1


# --- kickoff again, ids, events -----------------------------------------------------


def test_a_started_formation_run_again_runs_every_step_again_with_fresh_state() -> None:
    """crewai test_flow_restart: kickoff twice gives step_1, step_2, step_1, step_2."""
    order = Order()
    f = (Formation("restart").add_function("step_1", lambda s: [*s, "step_1"])
         .add_function("step_2", lambda s: [*s, "step_2"]).connect("step_1", "step_2"))
    with f.start(on_event=order) as running:
        first = running.submit([]).result(timeout=10)
        second = running.submit([]).result(timeout=10)
    assert order.nodes == ["step_1", "step_2", "step_1", "step_2"]
    assert first.output == second.output == ["step_1", "step_2"]
    assert second.nodes["step_1"].visits == 1


def test_each_run_has_its_own_id_kept_by_every_step_event() -> None:
    """crewai test_flow_uuid_unstructured and test_flow_uuid_structured: the state's id is a
    uuid that stays through the steps; ours, the run id on every event of the run."""
    events: list[FormationEvent] = []
    f = Formation("ids").add_function("first", lambda v: v).add_function("second", lambda v: v)
    f.connect("first", "second")
    one, two = f.run(1, on_event=events.append), f.run(2)
    assert isinstance(one.run_id, str) and one.run_id != two.run_id
    assert {e.run_id for e in events} == {one.run_id}


def test_events_report_the_run_then_each_step_with_its_input_then_the_result() -> None:
    """crewai test_unstructured_flow_event_emission and test_structured_flow_event_emission:
    FlowStarted, MethodExecutionStarted/Finished per method (with params and result), then
    FlowFinished with the result; ours, run_started, node_started (``input``),
    node_finished (``output``), run_finished (``result``)."""
    events: list[FormationEvent] = []
    f = (Formation("poem").add_function("prepare_color", lambda s: {**s, "color": "red"})
         .add_function("write_first_sentence", lambda s: f"roses are {s['color']}")
         .add_function("finish_poem", lambda first: ", ".join([first, "violets are blue"]))
         .connect("prepare_color", "write_first_sentence", "finish_poem"))
    f.run({"flower": "roses"}, on_event=events.append)
    kinds = [(e.type, e.node) for e in events]
    assert kinds[0] == (FormationEventType.RUN_STARTED, None)
    assert kinds[-1] == (FormationEventType.RUN_FINISHED, None)
    started = {e.node: e.data["input"] for e in events if e.type == FormationEventType.NODE_STARTED}
    finished = {e.node: e.data["output"] for e in events if e.type == FormationEventType.NODE_FINISHED}
    assert started["finish_poem"] == "roses are red"
    assert finished["finish_poem"] == "roses are red, violets are blue"
    assert events[-1].data["result"].output == "roses are red, violets are blue"
    for node in ("prepare_color", "write_first_sentence", "finish_poem"):
        assert kinds.index((FormationEventType.NODE_STARTED, node)) < kinds.index((FormationEventType.NODE_FINISHED, node))


def test_parallel_branches_each_get_their_own_copy_of_the_state() -> None:
    """crewai test_state_consistency_across_parallel_branches (sibling listeners run one
    after another on one state: 10, then 11, final 16). DESIGN differs on purpose: siblings
    run in parallel, each on its own copy, so both read 10 and the join sees both."""
    def branch_a(s: dict[str, int]) -> dict[str, int]:
        s["counter"] += 1
        return s

    def branch_b(s: dict[str, int]) -> dict[str, int]:
        s["counter"] += 5
        return s

    f = (Formation("branches").add_function("init", lambda s: {"counter": 10})
         .add_function("branch_a", branch_a).add_function("branch_b", branch_b)
         .add_function("verify", lambda branch_a, branch_b: (branch_a["counter"], branch_b["counter"]))
         .connect("init", "branch_a", "verify").connect("init", "branch_b", "verify"))
    result = f.run(None)
    assert result.output == (11, 15)
    assert result.nodes["init"].output == {"counter": 10}
