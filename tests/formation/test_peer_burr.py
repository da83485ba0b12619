"""Behaviours ported from Apache Burr's own test suite (apache/burr,
``tests/core/test_application.py`` and ``tests/core/test_graph.py``): transitions with
conditions, default transitions, ``halt_before``/``halt_after``, streaming actions,
``step``/``iterate``/``run``, errors in actions, graph building.
``test_peer_burr_more.py`` takes parallelism (``test_parallelism.py``) and persistence,
resuming and forking (``test_durable.py``, ``test_persistence.py``).

A Burr application is a state machine: actions read and write one shared ``State`` and
transitions pick the next action. Here an action is a node and what it writes is its
output, which the next node receives. ``with_transitions((a, b, when(...)))`` is
``connect(a, b, when=...)``; ``default`` is ``otherwise=True``; ``halt_after=[n]`` and
``halt_before=[n]`` are ``break_after``/``break_before`` (they need a store: the run
suspends and ``resume`` continues it); ``iterate()`` is ``run_stream`` (one
``node_finished`` per step, its ``output`` the step's result); a streaming action is an
agent node whose text arrives as ``agent_text`` events.

Deliberately different, or without a counterpart (each test that touches one says so):
- Burr takes the first transition whose condition holds; every conditional edge of ours
  whose condition holds fires (DESIGN: "Conditional edges route by predicate").
- Burr halts quietly when no transition fires; ours fails with ``NoRouteError`` unless
  the node has an ``otherwise`` edge (DESIGN: "Routes").
- Burr's ``halt_after`` ends ``run()`` and the application may be stepped again from its
  state; ours suspends a journalled run, and ``resume`` continues it to its end.
- Burr loops are unbounded; ours are bounded per node by ``max_visits``.
- An exception in a Burr action propagates as it is; ours fails the run with a
  ``FormationRuntimeError`` naming the node, the exception chained as its cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def counter_app(count_up_to: int = 3, counter: Counter | None = None) -> Formation:
    """Burr's counter application: ``counter`` adds one and loops on itself until
    ``count_up_to``, then ``result`` reports the count."""

    def count(n: int) -> int:
        if counter is not None:
            counter.hit(n)
        return n + 1

    return (Formation("counter_app").add_function("start", lambda n: n)
            .add_function("counter", count, max_visits=20)
            .add_function("result", lambda n: f"counted to {n}")
            .connect("start", "counter")
            .connect("counter", "counter", when=lambda n: n < count_up_to)
            .connect("counter", "result", otherwise=True))


def is_(value: Any) -> Callable[[Any], bool]:
    """Burr's ``when(key=value)`` on the output."""
    return lambda output: bool(output == value)


# --- step, iterate, run --------------------------------------------------------------


def test_one_step_passes_the_actions_result_to_the_next_action() -> None:
    # burr test_application.py::test_app_step
    f = (Formation("step").add_function("counter", lambda n: n + 1).add_function("double", lambda n: n * 2)
         .connect("counter", "double"))
    result = f.run(0)
    assert (result.output, result.nodes["counter"].output) == (2, 1)


def test_the_runs_input_reaches_the_first_action() -> None:
    # burr test_application.py::test_app_step_with_inputs (inputs= reach the action)
    f = Formation("inputs").add_function("add", lambda v: v["a"] + v["b"])
    assert f.run({"a": 1, "b": 2}).output == 3


def test_an_action_that_needs_a_value_no_edge_gives_is_refused_naming_the_parameter() -> None:
    # burr test_application.py::test_app_step_with_inputs_missing: a required input not
    # given is an error naming it; ours is refused at validation, naming the fix.
    f = (Formation("missing").add_function("a", lambda v: v)
         .add_function("b", lambda a, extra: a + extra).connect("a", "b"))
    with pytest.raises(FormationSetupError, match=r"'b'.*give the other parameters defaults"):
        f.validate()


def test_run_loops_a_counter_until_its_condition_ends_the_loop() -> None:
    # burr test_application.py::test_app_run (counter to 10, then result)
    counter = Counter()
    result = counter_app(10, counter).run(0)
    assert result.output == "counted to 10"
    assert result.nodes["counter"].outputs == list(range(1, 11))
    assert counter.calls == {n: 1 for n in range(10)}


def test_iterate_yields_every_step_in_order_with_its_result() -> None:
    # burr test_application.py::test_iterate: one (action, result, state) per step;
    # ours, one node_finished per visit, in order, with its output.
    steps = [(e.node, e.data["output"]) for e in counter_app(3).run_stream(0) if e.type == "node_finished"]
    assert steps == [("start", 0), ("counter", 1), ("counter", 2), ("counter", 3), ("result", "counted to 3")]


def test_iterate_ends_with_the_runs_result() -> None:
    # burr test_application.py::test_iterate (the generator's return value is the final state)
    events = list(counter_app(2).run_stream(0))
    assert (events[0].type, events[-1].type) == ("run_started", "run_finished")
    assert events[-1].data["result"].output == "counted to 2"


def test_each_step_starts_before_it_finishes_and_after_the_step_before_it() -> None:
    # burr test_application.py::test_app_step_with_hooks (pre_run_step, then post_run_step)
    seen: list[tuple[str, str | None]] = []

    def listen(event: FormationEvent) -> None:
        seen.append((event.type.value, event.node))

    (Formation("hooks").add_function("a", lambda v: v).add_function("b", lambda v: v).connect("a", "b")
     .run(1, on_event=listen))
    assert seen == [("run_started", None), ("node_started", "a"), ("node_finished", "a"),
                    ("node_started", "b"), ("node_finished", "b"), ("run_finished", None)]


def test_an_async_application_steps_through_awaited_actions() -> None:
    # burr test_application.py::test_app_astep / test_app_arun

    async def counter(n: int) -> int:
        await asyncio.sleep(0)
        return n + 1

    f = Formation("async").add_function("counter", counter).add_function("result", lambda n: f"got {n}")
    result = asyncio.run(f.connect("counter", "result").arun(1))
    assert result.output == "got 2"


def test_aiterate_yields_each_steps_events_in_order() -> None:
    # burr test_application.py::test_app_aiterate

    async def main() -> list[str | None]:
        return [e.node async for e in counter_app(2).astream(0) if e.type == "node_finished"]

    assert asyncio.run(main()) == ["start", "counter", "counter", "result"]


# --- transitions ---------------------------------------------------------------------


def classify() -> Formation:
    return (Formation("classify").add_function("check", lambda n: "even" if n % 2 == 0 else "odd")
            .add_function("on_even", lambda label: f"{label}!").add_function("on_odd", lambda label: f"{label}?")
            .connect("check", "on_even", when=is_("even")).connect("check", "on_odd", when=is_("odd")))


@pytest.mark.parametrize(("number", "taken", "output"), [(2, "on_even", "even!"), (3, "on_odd", "odd?")])
def test_a_condition_on_the_result_picks_the_next_action(number: int, taken: str, output: str) -> None:
    # burr test_application.py::test_app_run_with_conditions (when(key=value) transitions)
    order = Order()
    result = classify().run(number, on_event=order)
    assert order.nodes == ["check", taken]
    assert result.outputs == {taken: output}


def test_the_default_transition_is_taken_when_no_condition_holds() -> None:
    # burr test_application.py::test_app_default_transition (default after conditions)
    f = (Formation("default").add_function("check", lambda n: n)
         .add_function("small", lambda n: "small").add_function("other", lambda n: "other")
         .connect("check", "small", when=lambda n: n < 10).connect("check", "other", otherwise=True))
    assert f.run(3).outputs == {"small": "small"}
    assert f.run(30).outputs == {"other": "other"}


def test_every_condition_that_holds_fires_not_only_the_first() -> None:
    # burr test_graph.py::test_get_next_node (the first matching transition wins): ours
    # fires every edge whose condition holds (DESIGN: conditional edges route by predicate).
    f = (Formation("all_fire").add_function("check", lambda n: n)
         .add_function("positive", lambda n: "positive").add_function("even", lambda n: "even")
         .connect("check", "positive", when=lambda n: n > 0).connect("check", "even", when=lambda n: n % 2 == 0))
    assert f.run(4).outputs == {"positive": "positive", "even": "even"}


def test_no_transition_firing_fails_the_run_naming_the_node_and_its_output() -> None:
    # burr test_graph.py::test_get_next_node_with_no_transitions (None: the app halts);
    # ours fails with NoRouteError unless there is an otherwise edge (DESIGN: "Routes").
    f = (Formation("no_route").add_function("check", lambda v: "maybe")
         .add_function("yes", lambda v: v).add_function("no", lambda v: v)
         .connect("check", "yes", when=is_("yes")).connect("check", "no", when=is_("no")))
    with pytest.raises(NoRouteError, match=r"check.*maybe|maybe.*check") as info:
        f.run(1)
    assert info.value.node == "check"


def test_a_condition_that_raises_fails_the_run_naming_the_edge() -> None:
    # burr test_application.py::test_app_step_broken (an error raised while choosing)
    f = (Formation("raising_cond").add_function("a", lambda v: v).add_function("b", lambda v: v)
         .connect("a", "b", when=lambda v: v["missing"] > 0))
    with pytest.raises(FormationRuntimeError, match=r"'a'.*'b'|'b'.*'a'"):
        f.run({})


def test_a_loop_that_never_ends_fails_at_its_visit_limit_naming_max_visits() -> None:
    # burr test_application.py::test_app_run (an unbounded counter): ours is bounded per node
    # by max_visits (DESIGN), and the error says how to fix it.
    f = (Formation("forever").add_function("start", lambda n: n)
         .add_function("counter", lambda n: n + 1, max_visits=5).add_function("done", lambda n: n)
         .connect("start", "counter").connect("counter", "counter", when=lambda n: n > 0)
         .connect("counter", "done", otherwise=True))
    with pytest.raises(FormationRuntimeError, match=r"max_visits=5") as info:
        f.run(1)
    assert info.value.node == "counter"


# --- graph building ------------------------------------------------------------------


def test_a_transition_to_an_unknown_action_is_refused_naming_it() -> None:
    # burr test_graph.py::test_graph_builder_with_unknown_action (and the application builder)
    with pytest.raises(FormationSetupError, match=r"'nope'"):
        Formation("unknown").add_function("a", lambda v: v).connect("a", "nope")


def test_the_same_transition_twice_is_refused() -> None:
    # burr test_graph.py::test_graph_builder_duplicate_transition
    f = Formation("dup").add_function("a", lambda v: v).add_function("b", lambda v: v).connect("a", "b")
    with pytest.raises(FormationSetupError, match=r"'a'.*'b'"):
        f.connect("a", "b")


def test_a_cycle_without_a_condition_is_refused_at_validation() -> None:
    # burr test_graph.py (cycles are legal there); ours needs a conditional edge to close
    # one (DESIGN: "A cycle is legal only through a conditional edge").
    f = (Formation("uncond_cycle").add_function("s", lambda v: v).add_function("a", lambda v: v)
         .add_function("b", lambda v: v).connect("s", "a", "b").connect("b", "a"))
    with pytest.raises(FormationSetupError, match=r"cycle a → b → a has no conditional edge; add when="):
        f.validate()


# --- halt_before / halt_after --------------------------------------------------------


def test_halt_after_stops_once_the_action_has_run_with_its_result(store: RunStore) -> None:
    # burr test_application.py::test_app_run_halt_after (returns the halting action's result)
    result = counter_app(2).run(0, store=store, break_after=["result"])
    assert (result.status, result.interrupt) == (
        "suspended", {"node": "result", "payload": {"breakpoint": "after", "output": "counted to 2"}})


def test_halt_before_stops_without_running_the_action(store: RunStore) -> None:
    # burr test_application.py::test_app_run_halt_before (the action has not run)
    ran = Counter()
    f = (Formation("halt_before").add_function("a", lambda v: v + 1)
         .add_function("b", lambda v: (ran.hit("b"), v)[1]).connect("a", "b"))
    result = f.run(1, store=store, break_before=["b"])
    assert result.interrupt == {"node": "b", "payload": {"breakpoint": "before", "input": 2}}
    assert ran.calls == {}
    assert f.resume(result.run_id, store=store).output == 2
    assert ran.calls == {"b": 1}


def test_halt_after_a_looping_action_stops_after_each_of_its_visits(store: RunStore) -> None:
    # burr test_application.py::test_app_run_halt_after (in the counter loop, run() again
    # continues from the state): ours stops after every visit, each resume goes one round on.
    counter = Counter()
    result = counter_app(3, counter).run(0, store=store, break_after=["counter"])
    outputs = []
    while result.status == "suspended":
        assert result.interrupt is not None
        outputs.append(result.interrupt["payload"]["output"])
        result = counter_app(3, counter).resume(result.run_id, store=store)
    assert outputs == [1, 2, 3]
    assert result.output == "counted to 3"
    assert counter.calls == {0: 1, 1: 1, 2: 1}  # no visit ran twice over the resumes


def test_halt_before_a_looping_action_stops_before_each_visit_with_its_input(store: RunStore) -> None:
    # burr test_application.py::test_app_run_halt_before in a loop
    result = counter_app(3).run(0, store=store, break_before=["counter"])
    inputs = []
    while result.status == "suspended":
        assert result.interrupt is not None
        inputs.append(result.interrupt["payload"]["input"])
        result = counter_app(3).resume(result.run_id, store=store)
    assert (inputs, result.output) == ([0, 1, 2], "counted to 3")


# --- streaming actions ---------------------------------------------------------------


def streaming(text: str = "hello streaming world") -> Formation:
    agent = Agent("writer", provider=ScriptedProvider([text], stream_chunk=4))
    return Formation("stream").add_function("prompt", lambda v: v).add_agent("writer", agent).connect("prompt", "writer")


def test_a_streaming_actions_chunks_arrive_in_order_and_join_into_its_result() -> None:
    # burr test_application.py::test_stream_result (the streamed items, then the result)
    events = list(streaming().run_stream("go"))
    chunks = [e.data["text"] for e in events if e.type == "agent_text"]
    assert len(chunks) > 1 and "".join(chunks) == "hello streaming world"
    finished = next(e for e in events if e.type == "node_finished" and e.node == "writer")
    assert events.index(finished) > max(i for i, e in enumerate(events) if e.type == "agent_text")
    assert events[-1].data["result"].output == "hello streaming world"


def test_halting_before_a_streaming_action_streams_nothing(store: RunStore) -> None:
    # burr test_application.py::test_stream_result_halt_before (no stream; the halt action)
    events = list(streaming().run_stream("go", store=store, break_before=["writer"]))
    assert [e for e in events if e.type == "agent_text" or e.node == "writer"] == []
    assert events[-1].type == "run_finished" and events[-1].data["suspended"] is True
    assert events[-1].data["result"].interrupt["node"] == "writer"


def test_halting_after_a_streaming_action_streams_it_all_then_stops(store: RunStore) -> None:
    # burr test_application.py::test_stream_result_halt_after
    events = list(streaming().run_stream("go", store=store, break_after=["writer"]))
    kinds = [e.type.value for e in events if e.node == "writer" or e.node is None]
    assert kinds[0] == "run_started" and kinds[-2:] == ["node_finished", "run_finished"]
    assert "".join(e.data["text"] for e in events if e.type == "agent_text") == "hello streaming world"
    assert events[-1].data["result"].interrupt["payload"] == {"breakpoint": "after", "output": "hello streaming world"}


def test_the_resumed_stream_replays_the_journalled_steps_then_runs_the_rest(store: RunStore) -> None:
    # burr test_application.py::test_stream_iterate (a halted stream, iterated again)
    first = list(streaming().run_stream("go", store=store, break_before=["writer"]))
    run_id = first[-1].run_id
    events = list(streaming().resume_stream(run_id, store=store))
    prompt = [e for e in events if e.node == "prompt"]
    assert [(e.type.value, e.data.get("journalled")) for e in prompt] == [("node_finished", True)]
    assert next(e.type.value for e in events if e.node == "writer") == "node_started"
    assert events[-1].data["result"].output == "hello streaming world"


def test_halting_after_an_agent_resumes_without_calling_its_model_again(store: RunStore) -> None:
    # burr test_application.py::test_stream_result_halt_after (the streamed result is kept)
    provider = ScriptedProvider(["first answer", "a second answer nobody should ask for"])

    def build() -> Formation:
        return (Formation("agent_halt").add_agent("writer", Agent("writer", provider=provider))
                .add_function("shout", lambda text: text.upper()).connect("writer", "shout"))

    stopped = build().run("go", store=store, break_after=["writer"])
    assert stopped.interrupt == {"node": "writer", "payload": {"breakpoint": "after", "output": "first answer"}}
    assert build().resume(stopped.run_id, store=store).output == "FIRST ANSWER"
    assert len(provider.requests) == 1


# --- errors in actions ---------------------------------------------------------------


def test_an_action_that_raises_fails_the_run_naming_it_and_nothing_after_it_runs() -> None:
    # burr test_application.py::test_app_step_broken (the exception propagates)

    def broken(v: Any) -> Any:
        raise ValueError("broken action")

    f = Formation("broken").add_function("a", broken).add_function("b", lambda v: v).connect("a", "b")
    with pytest.raises(FormationRuntimeError, match=r"'a'") as info:
        f.run(1)
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.nodes["b"].attempts == 0


def test_an_action_that_fails_then_succeeds_within_its_retries_finishes_the_run() -> None:
    # burr test_application.py::test_app_step_broken, with our retries (Burr has none)
    tries = Counter()

    def flaky(v: int) -> int:
        if tries.hit("flaky") < 3:
            raise ConnectionError("flaky")
        return v + 1

    result = Formation("retry").add_function("flaky", flaky, retries=2, backoff=0.001).run(1)
    assert (result.output, result.nodes["flaky"].attempts) == (2, 3)


def test_an_error_edge_takes_the_failure_on_and_the_run_succeeds() -> None:
    # burr test_application.py::test_app_step_broken (an exception transition): ours, on_error=True

    def broken(v: Any) -> Any:
        raise KeyError("nope")

    f = (Formation("recover").add_function("a", broken).add_function("b", lambda v: v)
         .add_function("handler", lambda failure: (isinstance(failure, NodeFailure), failure.node,
                                                   type(failure.error).__name__))
         .connect("a", "b").connect("a", "handler", on_error=True))
    result = f.run(1)
    assert result.outputs == {"handler": (True, "a", "KeyError")}
    assert (result.status, result.nodes["a"].status, result.nodes["b"].status) == ("succeeded", "failed", "skipped")
