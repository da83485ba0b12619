"""More behaviours ported from Apache Burr's own test suite (apache/burr,
``tests/core/test_parallelism.py``, ``test_durable.py``, ``test_durable_persisters.py``
and ``test_persistence.py``): mapping actions and states, recursive sub-applications,
task-based parallelism, persisting, resuming and forking from a sequence id; and halts
(our breakpoints) around maps, nested formations and parallel branches. (Split from
``test_peer_burr.py``, whose module docstring maps Burr's application onto formations.)

Burr's ``MapStates`` runs one sub-graph per state and ``reduce`` folds the results; ours
is ``add_map`` (a function or a formation per item) whose output is the list of results
in item order. ``MapActions`` runs several actions over one state: ours is a fan-out to
several nodes and a join. ``MapActionsAndStates`` is a map over a formation with one sink
per action. A persister's ``sequence_id`` is our ``(node, visit)``; ``initialize_from(...,
fork_from_sequence_id=...)`` is ``Formation.fork(run_id, at=(node, visit), ...)``;
``load`` is ``RunStore.history``/``resume``.

Deliberately different, or without a counterpart:
- Burr's map reduces states through a user ``reduce``; ours outputs the list, and the
  next node is the reduce.
- Burr forks from a state snapshot; ours replaces a visit's output (or reruns it with a
  new input) and reuses the journal before it: the visits before are not run again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.formation.test_peer_burr import counter_app
from tests.support.peers import Counter, InFlight
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, MapItemsError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


def single_fn(identifying: int) -> Any:
    """Burr's ``simple_single_fn_subgraph``: input + number_to_add + 1 + identifying."""
    return lambda s: s["input_number"] + s["number_to_add"] + 1 + identifying


def full_subgraph(identifying: int) -> Formation:
    """Burr's ``create_full_subgraph``: entry → add number_to_add → add 1 + identifying → result."""
    return (Formation(f"full_{identifying}").add_function("entry", lambda s: (s["input_number"], s["number_to_add"]))
            .add_function("add_number", lambda p: p[0] + p[1])
            .add_function("add_additional", lambda n: n + 1 + identifying)
            .connect("entry", "add_number", "add_additional"))


def three_actions() -> Formation:
    """Burr's three action kinds (a function, a class-based action, a full sub-graph) as
    three sinks of one formation."""
    return (Formation("three").add_function("fn_1000", single_fn(1000)).add_function("class_2000", single_fn(2000))
            .add_formation("graph_3000", full_subgraph(3000)))


def as_state(n: int) -> dict[str, int]:
    return {"input_number": n, "number_to_add": 10}


# --- parallelism ---------------------------------------------------------------------


def test_mapping_one_action_over_states_gives_each_items_result_in_item_order() -> None:
    # burr test_parallelism.py::test_e2e_map_states_sync_subgraph
    f = (Formation("map_states").add_function("states", lambda ns: [as_state(n) for n in ns])
         .add_map("each", formation=full_subgraph(3000)).connect("states", "each"))
    assert f.run([100, 200, 300]).output == [3111, 3211, 3311]


def test_mapping_several_actions_over_one_state_gives_every_actions_result() -> None:
    # burr test_parallelism.py::test_e2e_map_actions_sync_subgraph ([1111, 2111, 3111])
    f = (Formation("map_actions").add_function("state", as_state).add_function("fn_1000", single_fn(1000))
         .add_function("class_2000", single_fn(2000)).add_formation("graph_3000", full_subgraph(3000))
         .add_function("reduce", lambda fn_1000, class_2000, graph_3000: [fn_1000, class_2000, graph_3000]))
    for action in ("fn_1000", "class_2000", "graph_3000"):
        f.connect("state", action, "reduce")
    assert f.run(100).output == [1111, 2111, 3111]


def test_mapping_actions_and_states_gives_every_pair_in_order() -> None:
    # burr test_parallelism.py::test_e2e_map_actions_and_states_sync (the 3 x 3 product)
    f = (Formation("product").add_function("states", lambda ns: [as_state(n) for n in ns])
         .add_map("each", formation=three_actions())
         .add_function("reduce", lambda rows: [row[a] for a in ("fn_1000", "class_2000", "graph_3000")
                                               for row in rows])
         .connect("states", "each", "reduce"))
    assert f.run([100, 200, 300]).output == [1111, 1211, 1311, 2111, 2211, 2311, 3111, 3211, 3311]


def test_an_async_map_awaits_every_item_and_keeps_item_order() -> None:
    # burr test_parallelism.py::test_e2e_map_states_async

    async def add(s: dict[str, int]) -> int:
        await asyncio.sleep(0.001 * (3 - s["input_number"] // 100))  # later items finish first
        return s["input_number"] + s["number_to_add"] + 1 + 1000

    f = Formation("amap").add_function("states", lambda ns: [as_state(n) for n in ns]).add_map("each", add)
    assert f.connect("states", "each").run([100, 200, 300]).output == [1111, 1211, 1311]


def test_task_based_parallelism_runs_at_most_max_workers_tasks_at_once() -> None:
    # burr test_parallelism.py::test_task_level_API_e2e_sync (tasks on an executor)
    flight = InFlight()

    def task(n: int) -> int:
        with flight:
            time.sleep(0.02)
        return n * 2

    result = Formation("tasks").add_map("each", task, max_workers=2).run(list(range(6)))
    assert result.output == [0, 2, 4, 6, 8, 10]
    assert flight.peak == 2


def test_a_recursive_sub_application_maps_a_formation_that_maps_in_turn() -> None:
    # burr test_parallelism.py::test_recursive_action (sub-applications spawning their own)
    inner = Formation("inner").add_map("square", lambda n: n * n).add_function("total", sum).connect("square", "total")
    outer = Formation("outer").add_map("rows", formation=inner).add_function("grand", sum).connect("rows", "grand")
    result = outer.run([[1, 2], [3], []])
    assert (result.nodes["rows"].output, result.output) == ([5, 9, 0], 14)


def test_a_mapped_sub_applications_steps_are_reported_under_the_item_they_belong_to() -> None:
    # burr test_parallelism.py::test_e2e_map_actions_sync_subgraph (one app id per sub-graph)
    nodes: set[str] = set()
    f = Formation("paths").add_map("each", formation=full_subgraph(3000))
    f.run([as_state(1), as_state(2)], on_event=lambda e: nodes.add(e.node) if e.type == "node_finished" and e.node else None)
    assert {"each/0/add_additional", "each/1/add_additional", "each"} <= nodes


def test_a_failing_item_fails_the_map_naming_its_index_and_a_retry_reruns_only_it() -> None:
    # burr test_parallelism.py (an exception in a sub-graph propagates); ours, retries per item
    calls = Counter()

    def half(n: int) -> float:
        if calls.hit(n) == 1 and n == 2:
            raise ZeroDivisionError("first try")
        return n / 2

    assert Formation("retried").add_map("each", half, retries=1, backoff=0.001).run([1, 2, 3]).output == [0.5, 1, 1.5]
    assert calls.calls == {1: 1, 2: 2, 3: 1}
    with pytest.raises(FormationRuntimeError) as info:
        Formation("failing").add_map("each", lambda n: 1 / n).run([1, 0])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]


def test_mapping_over_no_states_gives_an_empty_list() -> None:
    # burr test_parallelism.py::test_map_states_empty (reduce over no states)
    assert Formation("empty").add_map("each", formation=full_subgraph(1)).run([]).output == []


# --- persistence, resume, fork -------------------------------------------------------


def test_each_steps_result_is_persisted_in_sequence(store: RunStore) -> None:
    # burr test_persistence.py::test_persistence_saves_and_loads_state (one row per sequence id)
    result = counter_app(2).run(0, store=store)
    assert [(v.node, v.visit, v.output) for v in store.history(result.run_id)] == [
        ("start", 1, 0), ("counter", 1, 1), ("counter", 2, 2), ("result", 1, "counted to 2")]
    assert [(r.id, r.formation) for r in store.runs(status="succeeded")] == [(result.run_id, "counter_app")]


def test_a_failed_run_resumes_from_its_last_persisted_step_without_running_it_again(store: RunStore) -> None:
    # burr test_durable.py (an application rebuilt from the persister continues where it stopped)
    counter, broken = Counter(), [True]

    def result_step(n: int) -> str:
        if broken[0]:
            raise ConnectionError("down")
        return f"counted to {n}"

    f = counter_app(3, counter)
    f.graph.nodes["result"]["fn"] = result_step
    with pytest.raises(FormationRuntimeError):
        f.run(0, store=store, run_id="app-1")
    broken[0] = False
    assert f.resume("app-1", store=store).output == "counted to 3"
    assert counter.calls == {0: 1, 1: 1, 2: 1}


def test_forking_from_a_loops_later_visit_reuses_the_steps_before_it(store: RunStore) -> None:
    # burr test_persistence.py / test_application.py::test_application_builder_initialize_fork_...
    # (initialize_from(fork_from_sequence_id=...)): ours forks at (node, visit).
    counter = Counter()
    first = counter_app(4, counter).run(0, store=store)
    new_id = counter_app(4, counter).fork(first.run_id, store=store, at=("counter", 2), output=3)
    assert [(v.node, v.visit, v.output) for v in store.history(new_id)] == [
        ("start", 1, 0), ("counter", 1, 1), ("counter", 2, 3), ("counter", 3, 4), ("result", 1, "counted to 4")]
    assert counter.calls == {0: 1, 1: 1, 2: 1, 3: 2}  # only the visit after the fork point ran again
    assert store.history(first.run_id)[-1].output == "counted to 4" and store.get(new_id).status == "succeeded"


def test_forking_with_a_new_input_reruns_that_visit_and_everything_after_it(store: RunStore) -> None:
    # burr test_application.py::test_application_builder_initialize_fork_app_id_happy_pth
    counter = Counter()
    first = counter_app(3, counter).run(0, store=store)
    new_id = counter_app(3, counter).fork(first.run_id, store=store, at=("counter", 3), input=0)
    assert [v.output for v in store.history(new_id) if v.node == "counter"] == [1, 2, 1, 2, 3]
    assert counter.calls == {0: 2, 1: 2, 2: 2}  # the original run once each, the fork from its visit 3 on


def test_a_nested_formation_that_failed_resumes_without_rerunning_its_journalled_inner_steps(store: RunStore) -> None:
    # burr test_durable.py (a sub-application persisted with its parent resumes with it)
    calls, broken = Counter(), [True]

    def second(n: int) -> int:
        calls.hit("second")
        if broken[0]:
            raise ConnectionError("down")
        return n * 10

    inner = (Formation("inner").add_function("first", lambda n: (calls.hit("first"), n + 1)[1])
             .add_function("second", second).connect("first", "second"))
    outer = Formation("outer").add_formation("sub", inner).add_function("post", lambda n: n + 1).connect("sub", "post")
    with pytest.raises(FormationRuntimeError):
        outer.run(1, store=store, run_id="nested-1")
    broken[0] = False
    assert outer.resume("nested-1", store=store).output == 21
    assert calls.calls == {"first": 1, "second": 2}


# --- halts around maps, nested formations and parallel branches ----------------------


def test_halting_after_a_map_resumes_without_running_its_items_again(store: RunStore) -> None:
    # burr test_parallelism.py (a map action) with test_application.py::test_app_run_halt_after
    items = Counter()
    f = (Formation("halt_map").add_map("each", lambda n: (items.hit(n), n * n)[1]).add_function("total", sum)
         .connect("each", "total"))
    stopped = f.run([1, 2, 3], store=store, break_after=["each"])
    assert stopped.interrupt == {"node": "each", "payload": {"breakpoint": "after", "output": [1, 4, 9]}}
    assert f.resume(stopped.run_id, store=store).output == 14
    assert items.calls == {1: 1, 2: 1, 3: 1}


def test_halting_before_a_nested_formation_runs_its_inner_steps_once_on_resume(store: RunStore) -> None:
    # burr test_parallelism.py recursive sub-applications with halt_before
    calls = Counter()
    inner = Formation("inner").add_function("step", lambda n: (calls.hit("step"), n * 2)[1])
    outer = Formation("outer").add_function("pre", lambda n: n).add_formation("sub", inner).connect("pre", "sub")
    stopped = outer.run(4, store=store, break_before=["sub"])
    assert (stopped.interrupt, calls.calls) == ({"node": "sub", "payload": {"breakpoint": "before", "input": 4}}, {})
    assert outer.resume(stopped.run_id, store=store).output == 8
    assert calls.calls == {"step": 1}


def test_a_halt_after_a_nested_formation_streams_its_inner_steps_before_stopping(store: RunStore) -> None:
    # burr test_application.py::test_stream_result_halt_after, the halting action a sub-graph
    outer = (Formation("outer").add_formation("sub", full_subgraph(3000)).add_function("post", lambda n: n)
             .connect("sub", "post"))
    events = list(outer.run_stream(as_state(100), store=store, break_after=["sub"]))
    finished = [e.node for e in events if e.type == "node_finished"]
    assert finished == ["sub/entry", "sub/add_number", "sub/add_additional", "sub"]
    assert events[-1].data["suspended"] is True and not any(e.node == "post" for e in events)


def test_an_interrupt_inside_a_nested_formation_and_a_later_halt_each_stop_once(store: RunStore) -> None:
    # burr test_durable.py (a sub-application waiting on a human) with halt_after downstream
    inner = (Formation("inner").add_function("ask", lambda n: n + interrupt({"question": n}))
             .add_function("double", lambda n: n * 2).connect("ask", "double"))
    outer = Formation("outer").add_formation("sub", inner).add_function("post", lambda n: n + 1).connect("sub", "post")
    asked = outer.run(1, store=store, break_after=["sub"])
    assert asked.interrupt == {"node": "sub/ask", "payload": {"question": 1}}
    halted = outer.resume(asked.run_id, store=store, answer=10)
    assert halted.interrupt == {"node": "sub", "payload": {"breakpoint": "after", "output": 22}}
    assert outer.resume(asked.run_id, store=store).output == 23


def test_a_halt_on_a_step_inside_a_nested_formation_is_refused_saying_to_halt_at_the_formation_node(
        store: RunStore) -> None:
    # burr test_parallelism.py recursive sub-applications (a halt names the parent's own
    # action). Ours: breakpoints name the run's own nodes (DESIGN); the error says where
    # 'sub/add_number' lives and what to write instead, not only "no node named".
    outer = Formation("outer").add_formation("sub", full_subgraph(3000))
    with pytest.raises(FormationSetupError, match=r"inside the nested formation 'sub'.*break_before=\['sub'\]"):
        outer.run(as_state(1), store=store, break_before=["sub/add_number"])


def parallel_branches() -> Formation:
    f = Formation("branches").add_function("s", lambda v: v)
    for name in ("b", "c", "d"):
        f.add_function(name, lambda v, name=name: f"{v}{name}")
    f.add_function("join", lambda b, c, d: b + c + d)
    for name in ("b", "c", "d"):
        f.connect("s", name, "join")
    return f


@pytest.mark.parametrize("option", ["break_before", "break_after"])
def test_a_halt_on_each_of_several_parallel_branches_stops_once_at_every_one(store: RunStore, option: str) -> None:
    # burr test_application.py::test_app_run_halt_after with several halting actions
    # (parallel here): a branch that reaches its breakpoint while the run is already
    # stopping at another stops on the next resume; none is skipped, none repeated.
    result = parallel_branches().run("x", store=store, **{option: ["b", "c", "d"]})
    stops = []
    while result.status == "suspended":
        assert result.interrupt is not None
        stops.append(result.interrupt["node"])
        result = parallel_branches().resume(result.run_id, store=store)
    assert sorted(stops) == ["b", "c", "d"]
    assert result.output == "xbxcxd"


def test_a_halt_given_to_a_resume_does_not_stop_at_steps_journalled_before_it(store: RunStore) -> None:
    # burr test_application.py::test_app_run_halt_after, halts given when the app is run
    # again: the visits the journal already has are history, only later ones stop.
    calls, broken = Counter(), [True]

    def last(v: str) -> str:
        calls.hit("last")
        if broken[0]:
            raise ConnectionError("down")
        return v + "!"

    f = parallel_branches().add_function("last", last).connect("join", "last")
    with pytest.raises(FormationRuntimeError):
        f.run("x", store=store, run_id="halted-later")
    broken[0] = False
    result = f.resume("halted-later", store=store, break_after=["b", "last"])
    assert result.interrupt == {"node": "last", "payload": {"breakpoint": "after", "output": "xbxcxd!"}}


def test_halting_before_an_error_handler_stops_with_the_failure_and_the_resume_handles_it(store: RunStore) -> None:
    # burr test_application.py::test_app_run_halt_before, the halting action the one a
    # failing action's exception transition leads to. It used to fail the run: the
    # NodeFailure in the breakpoint's payload could not be journalled.

    def broken(v: Any) -> Any:
        raise KeyError("nope")

    handled = Counter()
    f = (Formation("halt_handler").add_function("a", broken).add_function("b", lambda v: v)
         .add_function("handler", lambda failure: (handled.hit("handler"), f"handled {failure.node}")[1])
         .connect("a", "b").connect("a", "handler", on_error=True))
    stopped = f.run(1, store=store, break_before=["handler"])
    assert stopped.status == "suspended" and stopped.interrupt is not None
    failure = stopped.interrupt["payload"]["input"]
    assert isinstance(failure, NodeFailure) and (failure.node, failure.input) == ("a", 1)
    journalled = store.get(stopped.run_id).interrupt
    assert journalled is not None and journalled.payload["input"]["node"] == "a"
    assert "KeyError" in journalled.payload["input"]["error"]
    assert handled.calls == {}
    assert f.resume(stopped.run_id, store=store).outputs == {"handler": "handled a"}
    assert handled.calls == {"handler": 1}


def test_a_fork_of_a_halted_run_runs_to_its_end_without_the_originals_halts(store: RunStore) -> None:
    # burr test_persistence.py (a forked app starts from the state, with its own halts)
    stopped = counter_app(3).run(0, store=store, break_after=["counter"])
    new_id = counter_app(3).fork(stopped.run_id, store=store, at=("counter", 1), output=2)
    assert store.get(new_id).status == "succeeded"
    assert store.history(new_id)[-1].output == "counted to 3"
    assert store.get(stopped.run_id).status == "suspended"


def test_a_resumed_stream_after_a_halt_in_a_loop_replays_the_journal_then_runs_the_next_round(store: RunStore) -> None:
    # burr test_application.py::test_stream_iterate with halt_after in the counter loop:
    # the journalled steps come back marked, then the next visit starts and finishes.
    first = list(counter_app(3).run_stream(0, store=store, break_after=["counter"]))
    assert [(e.type.value, e.node) for e in first][-2:] == [("node_finished", "counter"), ("run_finished", None)]
    events = list(counter_app(3).resume_stream(first[-1].run_id, store=store))
    assert [(e.type.value, e.node, e.data.get("journalled")) for e in events] == [
        ("run_started", None, None), ("node_finished", "start", True), ("node_finished", "counter", True),
        ("node_started", "counter", None), ("node_finished", "counter", None), ("run_finished", None, None)]
    assert events[-1].data["result"].interrupt["payload"] == {"breakpoint": "after", "output": 2}


def test_forking_at_the_step_a_run_halted_before_gives_it_an_output_and_ends(store: RunStore) -> None:
    # burr test_persistence.py (fork from the last persisted sequence id of a halted app)
    stopped = counter_app(3).run(0, store=store, break_before=["result"])
    new_id = counter_app(3).fork(stopped.run_id, store=store, at="result", output="forked")
    assert [(v.node, v.output) for v in store.history(new_id)][-2:] == [("counter", 3), ("result", "forked")]
    assert (store.get(new_id).status, store.get(stopped.run_id).status) == ("succeeded", "suspended")


def join_loop() -> Formation:
    """A loop whose every round fans out to b and c and joins them again in j."""
    return (Formation("join_loop").add_function("s", lambda x: x).add_function("entry", lambda x: x, max_visits=9)
            .add_function("b", lambda x: x + 1, max_visits=9).add_function("c", lambda x: x + 2, max_visits=9)
            .add_function("j", lambda b, c: b + c, max_visits=9).add_function("end", lambda x: x)
            .connect("s", "entry").connect("entry", "b", "j").connect("entry", "c", "j")
            .connect("j", "entry", when=lambda v: v < 20).connect("j", "end", otherwise=True))


def test_halts_on_both_branches_of_a_joining_loop_stop_at_each_in_every_round(store: RunStore) -> None:
    # burr test_application.py::test_app_run_halt_after in a loop, with the parallel actions
    # of test_parallelism.py: every round stops after b and after c, once each.
    result = join_loop().run(1, store=store, break_after=["b", "c"])
    stops = []
    while result.status == "suspended":
        assert result.interrupt is not None
        stops.append((result.interrupt["node"], result.interrupt["payload"]["output"]))
        result = join_loop().resume(result.run_id, store=store)
    assert sorted(stops) == [("b", 2), ("b", 6), ("b", 14), ("c", 3), ("c", 7), ("c", 15)]
    assert (result.output, result.nodes["j"].outputs) == (29, [5, 13, 29])


def test_forking_a_joining_loop_at_a_later_branch_visit_reruns_that_round_with_the_new_input(store: RunStore) -> None:
    # burr initialize_from(fork_from_sequence_id=...) inside a loop of parallel actions
    first = join_loop().run(1, store=store)
    new_id = join_loop().fork(first.run_id, store=store, at=("b", 2), input=0)
    assert [v.output for v in store.history(new_id) if v.node == "j"] == [5, 8, 19, 41]
    assert store.history(first.run_id)[-1].output == 29
