"""More behaviours ported from pydantic-graph's own test suite (pydantic/pydantic-ai,
``tests/graph``: the beta GraphBuilder's first-value joins, sequential joins, maps,
decisions, nested maps, iteration and early termination, and the persistence tests),
translated to formations. The first batch is ``test_peer_pydantic_graph.py``; this one
takes what it left out, mostly in loops, in maps and nested formations, async, durable
and on Ray.

pydantic-graph's steps are ``async def``; so are many nodes here, awaited on the loop the
runtime owns. Its reducers see the values of a fork; ours are per-visit fan-ins and map
nodes (item order kept), so assertions are exact."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


def add(n: int) -> Any:
    return lambda x: x + n


def test_a_first_value_join_cancels_the_coroutines_of_the_async_branches_it_did_not_take() -> None:
    # pydantic-graph beta test_graph_execution.py::test_reduce_first_value_task_cancellation
    finished: list[int] = []
    cancelled: list[int] = []

    def branch(i: int) -> Any:
        async def slow_process(_: Any) -> str:
            try:
                await asyncio.sleep(0.01 if i == 1 else 10)
            except asyncio.CancelledError:
                cancelled.append(i)
                raise
            finished.append(i)
            return f"result-{i}"

        return slow_process

    f = Formation("first").add_function("generate", lambda _: None).add_function("first", lambda d: d, join="any")
    for i in range(1, 6):
        f.add_function(f"p{i}", branch(i)).connect("generate", f"p{i}", "first")
    started = time.monotonic()
    result = f.run(None)
    assert result.output == {"p1": "result-1"}
    assert time.monotonic() - started < 8  # the 10 s sleeps did not hold the run
    assert finished == [1]
    # their coroutines were cancelled, not left sleeping; run() does not wait for a cancelled
    # coroutine's cleanup (its except block runs on its loop thread, soon after)
    deadline = time.monotonic() + 2
    while len(cancelled) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(cancelled) == [2, 3, 4, 5]


def test_sequential_joins_inside_a_loop_pair_each_iterations_values() -> None:
    # pydantic-graph beta test_graph_execution.py::test_multiple_sequential_joins, inside a loop (joins are per visit)
    seen: list[dict[str, Any]] = []

    def collect(mediator: list[int], add_three: int) -> int:
        seen.append({"mediator": mediator, "add_three": add_three})
        return max(*mediator, add_three)

    def slow_add_one(x: int) -> int:
        time.sleep(0.1 if x % 2 else 0)  # the iterations' branches finish in varying orders
        return x + 1

    f = (Formation("joins").add_function("entry", lambda x: x).add_function("source", lambda x: x)
         .add_function("add_one", slow_add_one).add_function("add_two", add(2)).add_function("add_three", add(3))
         .add_function("mediator", lambda add_one, add_two: [add_one, add_two]).add_function("collect", collect)
         .add_function("done", lambda x: x)
         .connect("entry", "source").connect("source", "add_one", "mediator").connect("source", "add_two", "mediator")
         .connect("mediator", "collect").connect("source", "add_three", "collect")
         .connect("collect", "source", when=lambda x: x < 12).connect("collect", "done", otherwise=True))
    assert f.run(0).output == 12
    assert seen == [{"mediator": [1 + 3 * k, 2 + 3 * k], "add_three": 3 + 3 * k} for k in range(4)]


def test_a_map_inside_a_loop_maps_each_visits_own_list() -> None:
    # pydantic-graph beta test_graph_execution.py::test_mixed_sequential_and_parallel_execution, gone round a loop
    f = (Formation("loop_map").add_function("start", lambda n: [n]).add_map("double_each", lambda x: x * 2)
         .add_function("grow", lambda xs: [*xs, xs[-1] + 1]).add_function("done", lambda xs: xs)
         .connect("start", "double_each", "grow").connect("grow", "double_each", when=lambda xs: len(xs) < 4)
         .connect("grow", "done", otherwise=True))
    result = f.run(1)
    assert result.output == [8, 12, 14, 15]
    assert result.nodes["double_each"].outputs == [[2], [4, 6], [8, 12, 14]]


def test_a_map_retry_inside_a_loop_reruns_only_that_visits_failed_items() -> None:
    # pydantic-graph beta map steps with retries (only failed items rerun), on every iteration of a loop
    calls = Counter()

    def flaky(x: int) -> int:
        if calls.hit(x) == 1 and x % 2:
            raise RuntimeError(f"item {x} failed once")
        return x

    f = (Formation("loop_retry").add_function("start", lambda n: [n, n + 1, n + 2])
         .add_map("items", flaky, retries=1, backoff=0.01).add_function("next", lambda xs: [x + 10 for x in xs])
         .add_function("done", lambda xs: xs)
         .connect("start", "items", "next").connect("next", "items", when=lambda xs: xs[0] < 30)
         .connect("next", "done", otherwise=True))
    result = f.run(0)
    assert result.output == [30, 31, 32]
    assert result.nodes["items"].outputs == [[0, 1, 2], [10, 11, 12], [20, 21, 22]]
    assert calls.calls == {x: (2 if x % 2 else 1) for k in (0, 10, 20) for x in (k, k + 1, k + 2)}


def test_a_map_of_a_formation_with_retries_reruns_only_the_items_whose_inner_run_failed() -> None:
    # pydantic-graph beta test_broadcast_and_spread.py (a map of a sub-path), with retries per item (DESIGN: maps)
    calls = Counter()

    def fetch(x: int) -> int:
        if calls.hit(("fetch", x)) == 1 and x in (2, 4):
            raise RuntimeError(f"fetch {x} failed once")
        return x * 10

    def parse(v: int) -> int:
        calls.hit(("parse", v // 10))
        return v + 1

    inner = Formation("item").add_function("fetch", fetch).add_function("parse", parse).connect("fetch", "parse")
    f = Formation("map_retry").add_map("each", formation=inner, retries=2, backoff=0.01, max_workers=2)
    assert f.run([1, 2, 3, 4]).output == [11, 21, 31, 41]
    assert calls.calls == {("fetch", 1): 1, ("fetch", 2): 2, ("fetch", 3): 1, ("fetch", 4): 2,
                           ("parse", 1): 1, ("parse", 2): 1, ("parse", 3): 1, ("parse", 4): 1}


def test_a_first_value_join_inside_each_mapped_item_takes_that_items_fastest_branch() -> None:
    # pydantic-graph beta test_joins_and_reducers.py::test_reduce_first_value, once per item of a map
    def branch(name: str, slow_when: int) -> Any:
        def run(x: int) -> str:
            time.sleep(0.3 if x % 2 == slow_when else 0.01)
            return f"{name}:{x}"

        return run

    race = (Formation("race").add_function("fork", lambda x: x)
            .add_function("a", branch("a", 1)).add_function("b", branch("b", 0))
            .add_function("first", lambda d: next(iter(d.values())), join="any")
            .connect("fork", "a", "first").connect("fork", "b", "first"))
    f = Formation("map_race").add_map("each", formation=race, max_workers=4)
    assert f.run([1, 2, 3, 4]).output == ["b:1", "a:2", "b:3", "a:4"]


def test_a_nested_formation_inside_a_loop_runs_once_per_visit_with_that_visits_value() -> None:
    # pydantic-graph test_graph.py::test_graph (a loop) with a sub-graph as one of its steps
    inner = Formation("inner").add_function("inc", add(1)).add_function("double", lambda x: 2 * x).connect("inc", "double")
    f = (Formation("loop_nested").add_function("start", lambda x: x).add_formation("sub", inner)
         .add_function("done", lambda x: x)
         .connect("start", "sub").connect("sub", "sub", when=lambda n: n < 20).connect("sub", "done", otherwise=True))
    result = f.run(0)
    assert result.output == 30
    assert result.nodes["sub"].outputs == [2, 6, 14, 30]
    assert result.nodes["sub/inc"].outputs == [1, 3, 7, 15]


def test_a_decision_by_a_union_of_types_takes_the_branch_whose_types_match() -> None:
    # pydantic-graph beta test_decisions.py::test_decision_with_union_type (ours: when=int | str)
    f = (Formation("union").add_function("value", lambda x: x)
         .add_function("scalar", lambda x: f"scalar {x!r}").add_function("other", lambda x: f"other {x!r}")
         .connect("value", "scalar", when=int | str).connect("value", "other", otherwise=True))
    assert [f.run(v).outputs for v in (3, "a", 2.5, None)] == [
        {"scalar": "scalar 3"}, {"scalar": "scalar 'a'"}, {"other": "other 2.5"}, {"other": "other None"}]


def test_a_literal_condition_is_refused_when_connected_naming_the_edge_and_a_predicate_to_use() -> None:
    # pydantic-graph beta test_graph_edge_cases.py::test_literal_branch_matching: it matches Literal values;
    # DESIGN takes types for when= (isinstance checks), so a Literal is a declaration error, not a run-time one
    f = Formation("literal").add_function("choose", lambda _: "b").add_function("handle_b", lambda _: "Chose B")
    with pytest.raises(FormationSetupError, match=r"edge 'choose' → 'handle_b': when=typing.Literal\['b'\].*predicate"):
        f.connect("choose", "handle_b", when=Literal["b"])  # type: ignore[arg-type]


@pytest.mark.parametrize("when", [list[int], dict[str, int], Any, (int, Any)], ids=["list[int]", "dict", "Any", "tuple"])
def test_a_condition_isinstance_cannot_check_is_a_setup_error_not_a_silent_route(when: Any) -> None:
    # pydantic-graph beta test_decisions.py (g.match(T) is checked when the graph is built); list[int]([]) is
    # falsy and list[int](5) raises: such a when= must not reach routing
    f = Formation("generic").add_function("a", lambda x: x).add_function("b", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"edge 'a' → 'b': when=.*isinstance"):
        f.connect("a", "b", when=when)


def test_an_async_predicate_is_refused_as_a_condition_instead_of_always_firing() -> None:
    # pydantic-graph beta test_decisions.py::test_decision_with_custom_matcher (a matcher is a plain function, in
    # an async graph); ours would call it and take the coroutine it returns for True, never awaiting it
    async def is_positive(x: int) -> bool:
        return x > 0

    f = Formation("async_when").add_function("a", lambda x: x).add_function("b", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"edge 'a' → 'b': when=is_positive is an async function"):
        f.connect("a", "b", when=is_positive)


def test_leaving_an_async_stream_early_cancels_the_run_and_stops_its_nodes() -> None:
    # pydantic-graph beta test_graph_execution.py::test_early_termination_from_nested_generator
    reached: list[int] = []

    async def later(x: int) -> int:
        await asyncio.sleep(0.5)
        reached.append(x)
        return x

    f = Formation("early").add_function("first", add(1)).add_function("later", later).connect("first", "later")

    async def main() -> list[str]:
        types: list[str] = []
        stream = f.astream(1)
        async for event in stream:  # pragma: no branch
            types.append(event.type)
            if event.type == "node_finished":
                break
        await stream.aclose()  # type: ignore[attr-defined]
        await asyncio.sleep(0.8)  # later's sleep would have ended by now
        return types

    types = asyncio.run(main())
    assert types[0] == "run_started" and types[-1] == "node_finished"
    assert reached == []  # its coroutine was cancelled with the run


def test_iterating_a_run_gives_each_nodes_input_and_output_nested_ones_by_path() -> None:
    # pydantic-graph beta test_graph_iteration.py (iterating a run node by node, seeing what each got and gave)
    inner = Formation("inner").add_function("double", lambda x: 2 * x)
    f = (Formation("iterate").add_function("inc", add(1)).add_formation("sub", inner).add_map("each", str)
         .add_function("spread", lambda x: [x, x + 1])
         .connect("inc", "sub", "spread", "each"))

    async def main() -> list[tuple[str, str, Any]]:
        seen: list[tuple[str, str, Any]] = []
        async for event in f.astream(1):
            if event.type in ("node_started", "node_finished") and event.node is not None:
                key = "input" if event.type == "node_started" else "output"
                seen.append((event.type, event.node, event.data[key]))
        return seen

    seen = asyncio.run(main())
    assert [s for s in seen if s[0] == "node_finished"] == [
        ("node_finished", "inc", 2), ("node_finished", "sub/double", 4), ("node_finished", "sub", 4),
        ("node_finished", "spread", [4, 5]), ("node_finished", "each", ["4", "5"])]
    assert ("node_started", "sub/double", 2) in seen and ("node_started", "each", [4, 5]) in seen


def test_a_resumed_run_reruns_only_the_map_item_that_failed(store: RunStore) -> None:
    # pydantic-graph test_persistence.py (a run restored from its persisted state goes on from there), for a map
    calls = Counter()
    broken = {3}

    def square(x: int) -> int:
        calls.hit(x)
        if x in broken:
            raise RuntimeError(f"item {x} is down")
        return x * x

    f = (Formation("durable_map").add_function("generate", lambda n: list(range(n))).add_map("square", square)
         .add_function("total", sum).connect("generate", "square", "total"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(5, store=store, run_id="map-run")
    assert info.value.node == "square"
    broken.clear()
    result = f.resume("map-run", store=store)
    assert (result.status, result.output) == ("succeeded", 30)
    assert calls.calls == {0: 1, 1: 1, 2: 1, 3: 2, 4: 1}


def test_an_error_edge_after_a_map_gets_the_failed_items_by_index_and_the_run_goes_on() -> None:
    # pydantic-graph beta test_graph_edge_cases.py (a failing mapped step fails the graph); DESIGN: error edges
    def item(x: int) -> int:
        if x % 2 == 0:
            raise ValueError(f"even {x}")
        return x

    def handler(failure: NodeFailure) -> dict[str, Any]:
        return {"node": failure.node, "input": failure.input,
                "failed": {i: str(e) for i, e in getattr(failure.error, "errors", {}).items()}}

    f = (Formation("map_errors").add_map("items", item).add_function("handler", handler)
         .add_function("after", lambda xs: xs)
         .connect("items", "handler", on_error=True).connect("items", "after"))
    result = f.run([1, 2, 3, 4])
    assert result.outputs == {"handler": {"node": "items", "input": [1, 2, 3, 4], "failed": {1: "even 2", 3: "even 4"}}}
    assert (result.nodes["items"].status, result.nodes["after"].status) == ("failed", "skipped")


def test_the_sync_api_works_inside_a_running_event_loop_with_async_nodes() -> None:
    # pydantic-graph test_graph.py (Graph.run_sync beside Graph.run); DESIGN: the sync API works inside a running loop
    async def inc(x: int) -> int:
        await asyncio.sleep(0.01)
        return x + 1

    f = (Formation("sync_in_loop").add_function("inc", inc).add_function("pair", lambda x: [x, x])
         .add_map("each", inc).connect("inc", "pair", "each"))

    async def main() -> tuple[Any, Any]:
        first = f.run(1)
        with f.start() as running:
            second = running.submit(2).result(timeout=30)
        return first.output, second.output

    assert asyncio.run(main()) == ([3, 3], [4, 4])


def _flaky_fetch(calls_dir: Path) -> Any:
    """An inner node that fails the first call for items 2 and 4, counting its calls per
    item in files (Ray runs it in other processes)."""

    def fetch(x: int) -> int:
        marks = calls_dir / f"fetch-{x}"
        with marks.open("a") as fh:
            fh.write(".")
        if x in (2, 4) and marks.stat().st_size == 1:
            raise RuntimeError(f"fetch {x} failed once")
        return x * 10

    return fetch


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_map_of_a_formation_on_ray_retries_only_the_items_that_failed(tmp_path: Path) -> None:
    # pydantic-graph beta map steps (test_broadcast_and_spread.py), with retries per item, on backend="ray"
    inner = (Formation("item").add_function("fetch", _flaky_fetch(tmp_path)).add_function("parse", add(1))
             .connect("fetch", "parse"))
    f = Formation("map_retry").add_map("each", formation=inner, retries=2, backoff=0.01, max_workers=2)
    assert f.run([1, 2, 3, 4], backend="ray", timeout=120).output == [11, 21, 31, 41]
    assert {p.name: p.stat().st_size for p in tmp_path.iterdir()} == {
        "fetch-1": 1, "fetch-2": 2, "fetch-3": 1, "fetch-4": 2}
