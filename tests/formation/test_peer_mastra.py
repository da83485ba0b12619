"""Behaviours of Mastra's workflow tests (mastra-ai/mastra, ``packages/core/src/workflows/workflow.test.ts``:
the "Basic Workflow Execution", "Simple Conditions", "Loops", "foreach", "Nested workflows" and
"if else branching" suites), ported to formations.

A Mastra workflow is a chain built with ``.then(step)``, ``.parallel([steps])`` (the next step gets
``{step_id: output}``), ``.branch([[condition, step], ...])``, ``.dountil(step, cond)`` /
``.dowhile(step, cond)`` and ``.foreach(step, {concurrency})``; a workflow is a step of another. Here:
``connect`` chains, fan-in joins, ``when=`` routes (with ``otherwise=``), a back edge with ``when=``
for the loops, ``add_map`` for ``foreach`` and ``add_formation`` for a nested workflow; what Mastra
keeps per step in ``result.steps[id]`` (``payload``, ``output``, ``status``, ``startedAt``,
``endedAt``) is our ``result.nodes[name]`` and the ``node_started``/``node_finished`` events.

Deliberately different (each test that touches one says so):
- a ``.branch`` none of whose conditions holds ends Mastra's workflow with success and nothing run
  after it; ours fails the run with ``NoRouteError`` unless an ``otherwise=True`` edge takes it;
- ``.foreach`` runs one item at a time by default; ``add_map`` runs every item at once unless
  ``max_workers`` says otherwise;
- Mastra's loops are unbounded; ours are bounded by ``max_visits`` (default 10), so the 12-round
  loops here raise it.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter, InFlight
from wingman_actors import Agent, Formation
from wingman_actors.errors import NoRouteError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


def add(n: int) -> Any:
    """A step that adds ``n`` to its input's ``value``."""

    def step(x: dict[str, int]) -> dict[str, int]:
        return {"value": x["value"] + n}

    return step


def test_each_step_of_a_then_chain_gets_the_previous_steps_output_and_both_are_kept() -> None:
    """From workflow.test.ts "should generate a stream" / "should execute steps sequentially": step2's
    payload is step1's output, and the result keeps each step's payload and output."""
    seen: list[tuple[str, str | None, Any]] = []

    def note(e: FormationEvent) -> None:
        if e.type in ("node_started", "node_finished"):
            seen.append((e.type.value, e.node, e.data.get("input", e.data.get("output"))))

    f = (Formation("chain").add_function("step1", lambda _: {"result": "success1"})
         .add_function("step2", lambda x: {"result": "success2", "got": x["result"]}).connect("step1", "step2"))
    result = f.run({}, on_event=note)
    assert result.output == {"result": "success2", "got": "success1"}
    assert seen == [("node_started", "step1", {}), ("node_finished", "step1", {"result": "success1"}),
                    ("node_started", "step2", {"result": "success1"}),
                    ("node_finished", "step2", {"result": "success2", "got": "success1"})]
    assert result.nodes["step1"].output == {"result": "success1"}


def test_parallel_steps_all_run_and_the_next_step_gets_their_outputs_keyed_by_step_name() -> None:
    """From workflow.test.ts "should execute multiple steps in parallel" and the ``last-step`` of
    "should be able to nest workflows" (its payload is ``{step_id: output}``)."""
    counter = Counter()

    def step(name: str) -> Any:
        def run(_: Any) -> dict[str, str]:
            counter.hit(name)
            return {"value": name}

        return run

    f = (Formation("parallel").add_function("start", lambda x: x).add_function("step1", step("step1"))
         .add_function("step2", step("step2")).add_function("last", lambda joined: joined)
         .connect("start", "step1", "last").connect("start", "step2", "last"))
    result = f.run({})
    assert result.output == {"step1": {"value": "step1"}, "step2": {"value": "step2"}}
    assert (counter.count("step1"), counter.count("step2")) == (1, 1)


def test_parallel_steps_run_at_once_and_the_step_after_them_starts_when_all_have_ended() -> None:
    """From workflow.test.ts "should properly update snapshot when executing multiple steps in
    parallel": the three parallel steps are all running at the same time, start after the initial
    step ended, and the final step starts after the last of them ended."""
    together = threading.Barrier(3, timeout=5)  # breaks (and fails the step) unless all three run at once

    def parallel(name: str) -> Any:
        def run(x: dict[str, str]) -> dict[str, str]:
            together.wait()
            return {"result": f"{name} done"}

        return run

    f = (Formation("snapshot").add_function("initial", lambda x: {"result": "initial step done"})
         .add_function("final", lambda p1, p2, p3: {"result": "All done!"}))
    for name in ("p1", "p2", "p3"):
        f.add_function(name, parallel(name)).connect("initial", name).connect(name, "final")
    result = f.run({"input": "test"})
    assert result.output == {"result": "All done!"}
    nodes = result.nodes
    for name in ("p1", "p2", "p3"):
        assert nodes[name].output == {"result": f"{name} done"}
        assert nodes[name].started_at >= nodes["initial"].finished_at  # type: ignore[operator]
    assert nodes["final"].started_at >= max(nodes[n].finished_at for n in ("p1", "p2", "p3"))  # type: ignore[operator,type-var]


def test_a_branch_runs_only_the_steps_whose_condition_holds_and_skips_the_others() -> None:
    """From workflow.test.ts "should support simple string conditions" and "should handle nested
    AND/OR conditions" (step3's condition fails: it is never called)."""
    counter = Counter()

    def step(name: str) -> Any:
        def run(x: dict[str, Any]) -> dict[str, str]:
            counter.hit(name)
            return {"result": name}

        return run

    def partial_but_good(x: dict[str, Any]) -> bool:
        return bool(x["status"] == "success" or (x["status"] == "partial" and x["score"] >= 70))

    f = (Formation("branch").add_function("step1", lambda _: {"status": "partial", "score": 75})
         .add_function("step2", step("step2")).add_function("step3", step("step3"))
         .connect("step1", "step2", when=partial_but_good)
         .connect("step1", "step3", when=lambda x: not partial_but_good(x)))
    result = f.run({})
    assert result.outputs == {"step2": {"result": "step2"}}
    assert (counter.count("step2"), counter.count("step3")) == (1, 0)
    assert result.nodes["step3"].status == "skipped"


def test_a_branch_whose_conditions_all_hold_runs_every_matching_step() -> None:
    """From workflow.test.ts "should maintain correct step status after resuming in branching
    workflows - #6419" (``.branch`` with two true conditions runs both steps, and the result has
    both outputs)."""
    f = (Formation("both").add_function("start", lambda x: x)
         .add_function("branch1", lambda x: {"result": x["value"] * 2})
         .add_function("branch2", lambda x: {"result": x["value"] * 3})
         .connect("start", "branch1", when=lambda _: True).connect("start", "branch2", when=lambda _: True))
    assert f.run({"value": 10}).outputs == {"branch1": {"result": 20}, "branch2": {"result": 30}}


def test_a_branch_none_of_whose_conditions_holds_fails_the_run_naming_the_node() -> None:
    """From workflow.test.ts "should support simple string conditions" (the second ``.branch``,
    whose only condition is false). Deliberately different: Mastra's workflow then succeeds with
    nothing run after the branch; ours fails with ``NoRouteError`` (the output found no way on),
    naming the node and showing the output, so a forgotten case does not pass silently."""
    f = (Formation("none").add_function("step2", lambda _: {"result": "step2"})
         .add_function("step3", lambda x: x).connect("step2", "step3", when=lambda x: x["result"] == "unexpected"))
    with pytest.raises(NoRouteError) as caught:
        f.run({})
    assert caught.value.node == "step2"
    assert "step2" in caught.value.preview


def test_an_otherwise_edge_takes_what_no_condition_of_the_branch_holds_for() -> None:
    """From workflow.test.ts "should execute else-branch" (``.branch`` over an if and an else), with
    ``otherwise=True`` as the else."""
    f = (Formation("else").add_function("first", lambda x: x).add_function("a", lambda x: "if")
         .add_function("b", lambda x: "else").connect("first", "a", when=lambda x: x > 0)
         .connect("first", "b", otherwise=True))
    assert (f.run(1).outputs, f.run(-1).outputs) == ({"a": "if"}, {"b": "else"})


def until_twelve(kind: str, checked: list[int]) -> Formation:
    """Mastra's counter workflow: ``increment`` (+1) loops while the condition says so, then ``final``
    gets its last output; ``checked`` collects the values the loop's condition saw."""

    def again(x: dict[str, int]) -> bool:
        checked.append(x["value"])
        return x["value"] < 12

    f = (Formation(kind).add_function("increment", add(1), max_visits=20)
         .add_function("final", lambda x: {"finalValue": x["value"]}))
    return f.connect("increment", "increment", when=again).connect("increment", "final", otherwise=True)


@pytest.mark.parametrize("kind", ["dountil", "dowhile"])
def test_a_do_loop_runs_its_step_until_the_condition_ends_it_then_goes_on_once(kind: str) -> None:
    """From workflow.test.ts "should run an until loop" and "should run a while loop": the step runs
    12 times, the condition sees each round in turn (``iterationCount`` 1, 2, ...), ``final`` runs
    once with the last value. (Our loop needs ``max_visits=20``: the default bound is 10.)"""
    checked: list[int] = []
    result = until_twelve(kind, checked).run({"value": 0, "target": 10})
    assert result.output == {"finalValue": 12}
    assert checked == list(range(1, 13))
    assert (result.nodes["increment"].visits, result.nodes["final"].visits) == (12, 1)
    assert result.nodes["increment"].output == {"value": 12}


def test_a_loop_over_a_nested_formation_runs_the_whole_inner_formation_every_round() -> None:
    """From workflow.test.ts "should handle basic suspend and resume in a dountil workflow" (without
    the suspension): ``.dountil`` over a nested workflow of two steps reruns both each round."""
    inner = (Formation("simple").add_function("increment", add(1)).add_function("double_step", add(2))
             .connect("increment", "double_step"))
    f = (Formation("dowhile").add_formation("simple", inner)
         .add_function("final", lambda x: x)
         .connect("simple", "simple", when=lambda x: x["value"] < 10)
         .connect("simple", "final", otherwise=True))
    result = f.run({"value": 0})
    assert result.output == {"value": 12}
    assert result.nodes["simple"].visits == 4
    assert result.nodes["simple/increment"].outputs == [{"value": 1}, {"value": 4}, {"value": 7}, {"value": 10}]


def mapper(flight: InFlight, order: list[int], hold: threading.Event | None = None) -> Any:
    """Mastra's ``map`` step (+11) for a foreach: counts the items in flight and notes their order."""

    def step(x: dict[str, int]) -> dict[str, int]:
        with flight:
            order.append(x["value"])
            if hold is not None:
                hold.wait(0.05)  # long enough for another item to start, were it allowed to
            return {"value": x["value"] + 11}

    return step


def total(items: list[dict[str, int]]) -> dict[str, int]:
    return {"finalValue": sum(item["value"] for item in items)}


def test_a_foreach_with_one_worker_runs_the_items_one_after_another_then_the_next_step() -> None:
    """From workflow.test.ts "should run a single item concurrency (default) for loop": one item at a
    time, in order; outputs in item order; the next step gets the list."""
    flight, order = InFlight(), list[int]()
    f = (Formation("foreach").add_map("map", mapper(flight, order, threading.Event()), max_workers=1)
         .add_function("final", total).connect("map", "final"))
    result = f.run([{"value": 1}, {"value": 22}, {"value": 333}])
    assert result.nodes["map"].output == [{"value": 12}, {"value": 33}, {"value": 344}]
    assert result.output == {"finalValue": 12 + 33 + 344}
    assert (flight.peak, order) == (1, [1, 22, 333])


def test_a_foreach_without_a_limit_runs_every_item_at_once() -> None:
    """From workflow.test.ts "should run a all item concurrency for loop" (``concurrency: 3`` over three
    items). Deliberately different: Mastra's default concurrency is 1; ``add_map``'s default
    (``max_workers=0``) is one worker per item."""
    together = threading.Barrier(3, timeout=5)

    def step(x: dict[str, int]) -> dict[str, int]:
        together.wait()  # all three items in flight at once, or the barrier breaks
        return {"value": x["value"] + 11}

    f = Formation("all").add_map("map", step).add_function("final", total).connect("map", "final")
    assert f.run([{"value": 1}, {"value": 22}, {"value": 333}]).output == {"finalValue": 389}


def test_a_foreach_with_a_concurrency_of_two_has_at_most_two_items_in_flight() -> None:
    """From workflow.test.ts "should run a partial item concurrency for loop"."""
    flight, order = InFlight(), list[int]()
    pairs = threading.Barrier(2, timeout=5)  # two items in flight at once, or it breaks (and fails the item)

    def step(x: dict[str, int]) -> dict[str, int]:
        with flight:
            order.append(x["value"])
            pairs.wait()
            return {"value": x["value"] + 11}

    f = Formation("partial").add_map("map", step, max_workers=2)
    result = f.run([{"value": v} for v in (1, 22, 333, 4444)])
    assert result.output == [{"value": v + 11} for v in (1, 22, 333, 4444)]
    assert flight.peak == 2
    assert sorted(order) == [1, 22, 333, 4444]


def test_a_nested_formations_inner_steps_are_reported_under_their_path_at_any_depth() -> None:
    """From workflow.test.ts "should return workflow run execution result with nested workflow steps
    information" (``nested-increment-workflow.nested-increment-workflow-again.increment``)."""
    again = Formation("again").add_function("increment", add(1))
    nested = Formation("nested").add_formation("again", again)
    f = Formation("outer").add_formation("nested", nested).add_function("final", lambda x: x).connect("nested", "final")
    result = f.run({"value": 0})
    assert list(result.nodes) == ["nested", "nested/again", "nested/again/increment", "final"]
    assert {name: trace.output for name, trace in result.nodes.items()} == {
        "nested": {"value": 1}, "nested/again": {"value": 1}, "nested/again/increment": {"value": 1},
        "final": {"value": 1}}
    assert all(trace.status == "succeeded" for trace in result.nodes.values())


def counter_workflows() -> tuple[Formation, Formation]:
    """Mastra's ``nested-workflow-a`` (start → other → final: 1 + 26) and ``nested-workflow-b``
    (start → a branch taking only ``final``: 1 + 0)."""
    a = (Formation("wfa").add_function("start", lambda x: {"newValue": x["startValue"] + 1})
         .add_function("other", lambda x: {**x, "other": 26})
         .add_function("final", lambda x: {"finalValue": x["newValue"] + x.get("other", 0)})
         .connect("start", "other", "final"))
    b = (Formation("wfb").add_function("start", lambda x: {"newValue": x["startValue"] + 1})
         .add_function("other", lambda x: {**x, "other": 26})
         .add_function("final", lambda x: {"finalValue": x["newValue"] + x.get("other", 0)})
         .connect("start", "other", when=lambda _: False).connect("start", "final", when=lambda _: True))
    return a, b


def test_nested_formations_run_in_parallel_and_the_step_after_gets_both_outputs() -> None:
    """From workflow.test.ts "should be able to nest workflows" and "should be able to nest workflows
    with conditions": a branch inside ``wfb`` skips ``other``, so ``wfb``'s output is the dict of its
    one sink that ran."""
    a, b = counter_workflows()
    f = (Formation("counter").add_function("begin", lambda x: x).add_formation("wfa", a).add_formation("wfb", b)
         .add_function("last", lambda joined: joined)
         .connect("begin", "wfa", "last").connect("begin", "wfb", "last"))
    result = f.run({"startValue": 0})
    assert result.output == {"wfa": {"finalValue": 27}, "wfb": {"final": {"finalValue": 1}}}
    assert result.nodes["wfb/other"].status == "skipped"
    assert result.nodes["wfa/other"].visits == 1


@pytest.mark.parametrize(("take_a", "ran", "skipped"), [(True, "wfa", "wfb"), (False, "wfb", "wfa")])
def test_an_if_else_between_nested_formations_runs_only_the_chosen_one_and_the_join_gets_none_for_the_other(
        take_a: bool, ran: str, skipped: str) -> None:
    """From workflow.test.ts "should execute if-branch" and "should execute else-branch": the last
    step's payload has the chosen workflow's output and ``undefined`` for the other (here ``None``,
    the default of its keyword)."""
    a, b = counter_workflows()
    counter = Counter()

    def last(wfa: dict[str, Any] | None = None, wfb: dict[str, Any] | None = None) -> dict[str, Any]:
        counter.hit("last")
        return {"wfa": wfa, "wfb": wfb}

    f = (Formation("ifelse").add_function("first", lambda x: x).add_formation("wfa", a).add_formation("wfb", b)
         .add_function("last", last).connect("first", "wfa", when=lambda _: take_a)
         .connect("first", "wfb", otherwise=True).connect("wfa", "last").connect("wfb", "last"))
    result = f.run({"startValue": 0})
    expected = {"wfa": {"finalValue": 27}, "wfb": {"final": {"finalValue": 1}}}
    assert result.output == {ran: expected[ran], skipped: None}
    assert counter.count("last") == 1
    assert result.nodes[skipped].status == "skipped"
    assert all(trace.visits == 0 for name, trace in result.nodes.items() if name.startswith(f"{skipped}/"))


def test_agents_are_steps_whose_prompts_take_fields_of_earlier_steps() -> None:
    """From workflow.test.ts "should be able to use an agent as a step": start → (map prompt1) →
    agent 1 → (map prompt2 from start) → agent 2, each agent's text streamed as step output."""
    paris = Agent("test-agent-1", provider=ScriptedProvider([lambda request: "Paris"], cycle=True))
    london = Agent("test-agent-2", provider=ScriptedProvider(
        [lambda request: "London (asked: " + request.messages[-1].text + ")"], cycle=True))
    texts: dict[str, str] = {}

    def note(e: FormationEvent) -> None:
        if e.type == "agent_text" and e.node is not None:
            texts[e.node] = texts.get(e.node, "") + e.data["text"]

    f = (Formation("agents").add_function("start", lambda x: x)
         .add_agent("agent1", paris, prompt="{prompt1}, just the name")
         .add_agent("agent2", london, prompt="{start[prompt2]}, just the name")
         .connect("start", "agent1", "agent2").connect("start", "agent2"))
    result = f.run({"prompt1": "Capital of France", "prompt2": "Capital of UK"}, on_event=note)
    assert result.nodes["agent1"].output == "Paris"
    assert result.output == "London (asked: Capital of UK, just the name)"
    assert texts == {"agent1": "Paris", "agent2": "London (asked: Capital of UK, just the name)"}
