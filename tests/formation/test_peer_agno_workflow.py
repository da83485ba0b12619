"""Behaviours of agno's workflow tests (libs/agno/tests/unit/workflow/), ported to
formations: a Workflow's steps are nodes (a function executor is a function node, an agent
step an agent node), Steps a chain of edges, Parallel a fan-out and fan-in, Condition a
``when=`` edge (its else steps the ``otherwise=True`` edge), Loop a back edge with ``when=``,
Router conditional edges picking one branch. Journalled runs and human-in-the-loop steps
are in tests/durable/test_peer_agno_durable.py.

Deliberately different (each test that touches one says so):
- agno's Loop stops quietly after ``max_iterations``; ours ends through the back edge's
  condition, and a loop that passes ``max_visits`` fails naming the node.
- agno's Router with no matching choice runs nothing; ours fails with ``NoRouteError``.
- agno's empty ``Parallel`` answers "No parallel steps executed"; an empty fan-out is not a
  graph we can declare, and its counterpart, a map over an empty list, gives ``[]``."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import CancelledError
from typing import Any

import pytest
from pydantic import BaseModel

from tests.agents.test_peer_agno import calls, get_weather, text
from tests.support.peers import Counter, Order, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.core import Usage
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


def increment(x: int) -> int:
    """agno's increment_executor: the previous step's content plus 10."""
    return x + 10


def loop_until(limit: int, *, max_visits: int = 10) -> Formation:
    """``start -> increment`` with ``increment`` looping on itself while its output is below ``limit``."""
    return (Formation("loop").add_function("start", lambda x: x).add_function("increment", increment, max_visits=max_visits)
            .add_function("done", lambda x: x)
            .connect("start", "increment").connect("increment", "increment", when=lambda v: v < limit)
            .connect("increment", "done", when=lambda v: v >= limit))


# -- steps in sequence --------------------------------------------------------------------


def test_steps_run_in_order_and_an_agent_step_is_given_the_previous_steps_content() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_step_input_last_content.py (a step
    receives the content of the step before it)."""
    provider = ScriptedProvider(["A short summary."])
    order = Order()
    f = (Formation("wf").add_function("fetch", lambda topic: f"Articles about {topic}")
         .add_agent("summarise", Agent("summariser", provider=provider))
         .add_function("publish", lambda summary: f"Published: {summary}")
         .connect("fetch", "summarise", "publish"))
    result = f.run("llamas", on_event=order)

    assert order.nodes == ["fetch", "summarise", "publish"]
    assert result.output == "Published: A short summary."
    assert provider.requests[0].messages[-1].text == "Articles about llamas"


def test_an_agent_steps_tokens_are_on_its_trace_and_in_the_runs_usage() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_metrics_serialization.py (a workflow
    run's metrics gather its steps')."""
    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "Rome"}), usage=Usage(input_tokens=11, output_tokens=3)),
                                 text("Sunny.", 13, 5)])
    f = (Formation("wf").add_agent("weather", Agent("w", provider=provider, tools=[get_weather]))
         .add_function("shout", str.upper).connect("weather", "shout"))
    result = f.run("Rome?")

    assert result.output == "SUNNY."
    assert (result.nodes["weather"].usage.input_tokens, result.nodes["weather"].usage.output_tokens) == (24, 8)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (24, 8)


def test_an_agent_step_with_an_output_schema_hands_the_next_step_the_object() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_previous_content_values.py (a step's
    structured content reaches the next step as it is)."""

    class Verdict(BaseModel):
        approved: bool
        reason: str

    provider = ScriptedProvider(['{"approved": true, "reason": "fine"}'])
    f = (Formation("wf").add_agent("review", Agent("r", provider=provider, output_schema=Verdict))
         .add_function("act", lambda v: f"{type(v).__name__}:{v.approved}").connect("review", "act"))
    assert f.run("draft").output == "Verdict:True"


# -- parallel -----------------------------------------------------------------------------


def test_parallel_steps_run_at_once_and_the_step_after_them_gets_each_ones_content() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_parallel_serialization.py (a Parallel
    of steps, then a step that combines them)."""
    both = threading.Barrier(2, timeout=5)

    def research(name: str) -> Any:
        def step(topic: str) -> str:
            both.wait()  # both branches are in flight together
            return f"{name} on {topic}"
        return step

    f = (Formation("wf").add_function("plan", lambda t: t).add_function("web", research("web"))
         .add_function("papers", research("papers")).add_function("combine", lambda web, papers: f"{web} + {papers}")
         .connect("plan", "web", "combine").connect("plan", "papers", "combine"))
    assert f.run("ai", timeout=10).output == "web on ai + papers on ai"


def test_a_map_over_no_items_gives_an_empty_list_without_failing() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_parallel_empty.py::test_empty_parallel_sync_matches_async
    (agno's empty Parallel answers a placeholder text; ours maps over an empty list)."""
    f = Formation("wf").add_function("split", lambda _: []).add_map("each", str.upper).connect("split", "each")
    assert f.run("x").output == []
    assert asyncio.run(f.arun("x")).output == []


# -- condition and router -------------------------------------------------------------------


def test_a_condition_runs_its_steps_only_when_it_holds_and_skips_what_follows_them_otherwise() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_condition_serialization.py (Condition
    with an evaluator and steps)."""
    counter = Counter()

    def fact_check(x: str) -> str:
        counter.hit("fact_check")
        return f"checked {x}"

    f = (Formation("wf").add_function("draft", lambda x: x).add_function("fact_check", fact_check)
         .add_function("cite", lambda x: f"{x} [cited]").add_function("publish", lambda x: f"published {x}")
         .connect("draft", "fact_check", when=lambda x: "claim" in x).connect("fact_check", "cite")
         .connect("draft", "publish"))
    with_claim = f.run("a claim")
    assert with_claim.outputs == {"cite": "checked a claim [cited]", "publish": "published a claim"}

    plain = f.run("a poem")
    assert plain.outputs == {"publish": "published a poem"}
    assert (plain.nodes["fact_check"].status, plain.nodes["cite"].status) == ("skipped", "skipped")
    assert counter.count("fact_check") == 1


def test_a_conditions_else_steps_run_when_it_does_not_hold() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_condition_else_steps_deepcopy.py
    (Condition's else_steps)."""
    f = (Formation("wf").add_function("classify", len).add_function("long", lambda n: f"long ({n})")
         .add_function("short", lambda n: f"short ({n})")
         .connect("classify", "long", when=lambda n: n > 5).connect("classify", "short", otherwise=True))
    assert f.run("a long sentence").outputs == {"long": "long (15)"}
    assert f.run("hi").outputs == {"short": "short (2)"}


def test_a_router_sends_the_input_to_the_one_agent_its_selector_picks() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_router_serialization.py (a Router
    whose selector returns the step to run)."""
    tech, travel = ScriptedProvider(["tech answer"]), ScriptedProvider(["travel answer"])
    f = (Formation("wf").add_function("route", lambda q: q)
         .add_agent("tech", Agent("tech", provider=tech)).add_agent("travel", Agent("travel", provider=travel))
         .connect("route", "tech", when=lambda q: "python" in q.lower())
         .connect("route", "travel", when=lambda q: "flight" in q.lower()))
    assert f.run("Python decorators?").outputs == {"tech": "tech answer"}
    assert travel.calls == 0


def test_a_router_whose_selector_picks_nothing_fails_the_run_naming_the_step() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_router_serialization.py (agno's
    Router runs nothing when no choice matches; ours fails with NoRouteError)."""
    f = (Formation("wf").add_function("route", lambda q: q).add_function("tech", str.upper)
         .connect("route", "tech", when=lambda q: "python" in q))
    with pytest.raises(NoRouteError) as caught:
        f.run("cooking")
    assert caught.value.node == "route" and "cooking" in str(caught.value)


# -- loops ----------------------------------------------------------------------------------


def test_a_loop_carries_each_iterations_output_into_the_next() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_loop_carry_forward.py::test_execute_carries_forward_output
    (35 -> 45 -> 55 -> 65)."""
    result = loop_until(65).run(35)
    assert result.nodes["increment"].outputs == [45, 55, 65]
    assert result.output == 65


def test_a_loop_ends_as_soon_as_its_end_condition_holds() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_loop_carry_forward.py::test_execute_end_condition_with_carry_forward."""
    result = loop_until(50).run(35)
    assert result.nodes["increment"].outputs == [45, 55]
    assert result.nodes["increment"].visits == 2


def test_an_async_run_of_a_loop_carries_the_outputs_forward_too() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_loop_carry_forward.py::test_aexecute_carries_forward_output."""
    result = asyncio.run(loop_until(65).arun(35))
    assert result.nodes["increment"].outputs == [45, 55, 65]


def test_a_loop_that_passes_its_visit_limit_fails_naming_the_node() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_loop_serialization.py (max_iterations).
    agno stops quietly after max_iterations; ours fails the run, naming the node and its limit."""
    with pytest.raises(FormationRuntimeError, match=r"max_visits=3") as caught:
        loop_until(1_000, max_visits=3).run(0)
    assert caught.value.node == "increment"


# -- failures, events, cancellation ------------------------------------------------------------


def test_a_failing_step_fails_the_run_naming_it_and_keeps_the_earlier_steps_content() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_failure_reporting.py (the step that
    failed and its error are reported; the completed steps' outputs stay)."""

    def parse(x: str) -> int:
        return int(x)

    f = Formation("wf").add_function("fetch", lambda x: f"{x}!").add_function("parse", parse).connect("fetch", "parse")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("seven")

    error = caught.value
    assert error.node == "parse" and isinstance(error.__cause__, ValueError)
    assert "invalid literal for int()" in str(error)
    assert error.outputs == {"fetch": "seven!"} and error.attempts == 1


def test_a_workflows_events_say_each_step_started_and_finished_in_order() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_workflow_event_stream.py (workflow
    started, step started/completed per step, workflow completed)."""
    f = Formation("wf").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
    events = [(e.type.value, e.node) for e in f.run_stream(1)]

    assert events[0] == ("run_started", None) and events[-1] == ("run_finished", None)
    assert [e for e in events if e[1] is not None] == [
        ("node_started", "a"), ("node_finished", "a"), ("node_started", "b"), ("node_finished", "b")]


def test_cancelling_a_workflow_in_an_agent_step_stops_it_and_runs_no_later_step() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_cancellation_stage_workflow.py (a
    cancelled workflow stops at the running step; later steps never start)."""
    reached, release = threading.Event(), threading.Event()
    counter = Counter()

    def slow_model(_: Any) -> str:
        reached.set()
        release.wait(5)
        return "late"

    seen: list[FormationEvent] = []
    f = (Formation("wf").add_agent("think", Agent("t", provider=ScriptedProvider([slow_model])))
         .add_function("after", lambda x: counter.hit("after")).connect("think", "after"))
    try:
        with f.start(on_event=seen.append) as running:
            future = running.submit("go")
            assert reached.wait(5)
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(timeout=5)
    finally:
        release.set()
    assert counter.count("after") == 0
    assert "run_cancelled" in [e.type.value for e in seen]


# -- backend="ray" ---------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_loop_carries_its_outputs_forward_on_ray() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_loop_carry_forward.py::test_execute_carries_forward_output on backend="ray"."""
    result = loop_until(65).run(35, backend="ray", timeout=120)
    assert result.nodes["increment"].outputs == [45, 55, 65]


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_condition_with_else_steps_routes_the_same_on_ray() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_condition_else_steps_deepcopy.py on backend="ray"."""
    f = (Formation("wf").add_function("classify", len).add_function("long", str).add_function("short", str)
         .connect("classify", "long", when=lambda n: n > 5).connect("classify", "short", otherwise=True))
    assert f.run("hi", backend="ray", timeout=120).outputs == {"short": "2"}


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_agent_step_between_function_steps_runs_on_ray() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_step_input_last_content.py on backend="ray"."""
    f = (Formation("wf").add_function("fetch", lambda topic: f"Articles about {topic}")
         .add_agent("summarise", Agent("summariser", provider=ScriptedProvider(["A short summary."])))
         .add_function("publish", lambda s: f"Published: {s}").connect("fetch", "summarise", "publish"))
    result = f.run("llamas", backend="ray", timeout=120)
    assert result.output == "Published: A short summary."
