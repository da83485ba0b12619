"""Behaviours ported from Dask's own tests of its graphs and local schedulers (dask/dask
``dask/tests/test_delayed.py``, ``test_local.py``, ``test_threaded.py``, ``test_callbacks.py``,
``test_core.py``; dask/distributed ``distributed/tests/test_client.py``'s retries and
``test_worker.py``'s failing tasks), mapped onto formations: a Dask graph (``{"z": (inc,
"x")}`` or ``dask.delayed``) is a formation's ``networkx.DiGraph``, ``client.map`` a map node,
a task's ``retries`` a node's, and a worker that dies with its task a node that raises
something no ``Exception`` catches (``SystemExit``, ``KeyboardInterrupt``).

Deliberately different (each test that touches one says so):
- Dask lets a ``KeyboardInterrupt`` raised by a task out of ``get`` in the caller; a node runs
  on a thread of its own, so what it raises, ``SystemExit`` and ``KeyboardInterrupt``
  included, fails its run (``FormationRuntimeError`` with it as ``__cause__``), as a
  ``concurrent.futures`` executor sets it on the future. It is not retried unless
  ``retry_on`` names it.
"""

from __future__ import annotations

import dataclasses
import pickle
import threading
from concurrent.futures import wait
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from tests.support.peers import Counter, InFlight
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, MapItemsError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore


def inc(x: int) -> int:
    return x + 1


def double(x: int) -> int:
    return 2 * x


def exits(_: Any) -> None:
    raise SystemExit(3)


def interrupts(_: Any) -> None:
    raise KeyboardInterrupt


class Varying:
    """dask/distributed's ``varying``: each call takes the next item; an exception is raised,
    anything else returned (thread-safe)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = list(items)
        self.lock = threading.Lock()

    def __call__(self, _: Any) -> Any:
        with self.lock:
            item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


# -- supervision: a node that raises is restarted, the run gets the error ----------------


@pytest.mark.parametrize("fn", [exits, interrupts], ids=["SystemExit", "KeyboardInterrupt"])
def test_a_node_raising_what_no_exception_catches_fails_its_run_naming_the_node(fn: Any) -> None:
    """From dask/dask test_callbacks.py::test_finish_always_called (a task raising
    KeyboardInterrupt still ends ``get`` and calls ``_finish``). Deliberately different: the run
    fails with it as the cause instead of raising it in the caller (see the module docstring).
    It used to leave the run unresolved forever: the exception ended the node's actor."""
    events: list[FormationEvent] = []
    with Formation("f").add_function("a", fn).start(on_event=events.append) as running:
        future = running.submit(1)
        error = future.exception(timeout=10)
    assert isinstance(error, FormationRuntimeError)
    assert error.node == "a"
    assert isinstance(error.__cause__, (SystemExit, KeyboardInterrupt))
    assert events[-1].type.value == "run_failed"


def test_a_node_that_raised_keyboard_interrupt_takes_the_next_run_and_other_formations_go_on() -> None:
    """From dask/distributed test_worker.py::test_worker_task_data / test_client.py::test_restart (a
    worker that died with its task is replaced and the cluster goes on computing)."""
    def sometimes(x: int) -> int:
        if x < 0:
            raise KeyboardInterrupt
        return x + 1

    with Formation("f").add_function("a", sometimes).start() as running, \
            Formation("g").add_function("b", double).start() as other:
        assert isinstance(running.submit(-1).exception(timeout=10), FormationRuntimeError)
        assert running.submit(1).result(timeout=10).output == 2
        assert other.submit(4).result(timeout=10).output == 8


def test_replicas_that_raised_system_exit_are_replaced_and_no_queued_run_is_lost() -> None:
    """From dask/distributed test_client.py::test_errors_dont_block and test_restart (workers that
    died with their tasks are replaced; the other tasks all finish): three replicas, sixty runs
    queued, one in three of them raising ``SystemExit`` or ``KeyboardInterrupt``."""

    def f(x: int) -> int:
        if x % 5 == 0:
            raise SystemExit(x)
        if x % 7 == 0:
            raise KeyboardInterrupt
        return x

    formation = Formation("r").add_function("a", f, concurrency=3).add_function("b", double).connect("a", "b")
    with formation.start() as running:
        futures = [running.submit(i) for i in range(60)]
        _, not_done = wait(futures, timeout=30)
        assert not not_done
        failed = [i for i, fut in enumerate(futures) if fut.exception() is not None]
        assert failed == [i for i in range(60) if i % 5 == 0 or i % 7 == 0]
        assert [fut.result().output for fut in futures if fut.exception() is None] == [
            2 * i for i in range(60) if i % 5 and i % 7]


def test_system_exit_is_not_retried_unless_retry_on_names_it() -> None:
    """From dask/distributed test_client.py::test_retries_get (``retries=`` retries a task's
    errors). Deliberately different: like ``retry_on``'s default (every ``Exception``), retries
    leave ``SystemExit`` alone unless ``retry_on`` names it."""
    once = Counter()
    with pytest.raises(FormationRuntimeError) as info:
        Formation("f").add_function("a", lambda x: once.hit("a") and exits(x), retries=3, backoff=0.01).run(1)
    assert info.value.attempts == 1 and once.count("a") == 1

    flaky = Varying([SystemExit(1), SystemExit(2), 42])
    result = Formation("f").add_function("a", flaky, retries=3, backoff=0.01, retry_on=(SystemExit,)).run(1)
    assert result.output == 42 and result.nodes["a"].attempts == 3


def test_a_map_item_raising_keyboard_interrupt_fails_that_item_and_the_later_items_still_run() -> None:
    """From dask/distributed test_client.py::test_map_naming / test_gather_errors (a failing item of
    ``client.map`` is an error of that future alone). Before, the item's worker ended with it,
    and the items it would have taken next were reported "stopped" without having run."""
    ran = Counter()

    def item(x: int) -> int:
        ran.hit(x)
        if x == 1:
            raise KeyboardInterrupt
        return x

    with pytest.raises(FormationRuntimeError) as info:
        Formation("m").add_map("m", item, max_workers=1).run([0, 1, 2, 3])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError)
    assert list(cause.errors) == [1] and isinstance(cause.errors[1], KeyboardInterrupt)
    assert [ran.count(x) for x in range(4)] == [1, 1, 1, 1]


def test_a_condition_raising_system_exit_fails_the_run_naming_the_edge() -> None:
    """From dask/dask test_callbacks.py::test_finish_always_called (whatever user code raises ends
    the computation, and ``_finish`` is called): user code in an edge's ``when=``. It used to leave
    the run unresolved: the exception ended the actor that routed the output."""
    events: list[FormationEvent] = []
    f = Formation("w").add_function("a", inc).add_function("b", inc).connect("a", "b", when=exits)
    with f.start(on_event=events.append) as running:
        error = running.submit(1).exception(timeout=10)
        assert isinstance(error, FormationRuntimeError)
        assert "edge 'a' → 'b' raised SystemExit" in str(error)
        assert running.submit(2).exception(timeout=10) is not None  # the node took the next run
    assert [e.type.value for e in events].count("run_failed") == 2


def test_a_journalled_map_whose_item_raised_system_exit_resumes_running_only_that_item(tmp_path: Path) -> None:
    """From dask/distributed test_client.py::test_map_retries (only the failed items of a
    ``client.map`` run again), across a resume: the failed run is journalled, and ``resume``
    reruns the one item that raised."""
    ran = Counter()

    def item(x: int) -> int:
        if ran.hit(x) == 1 and x == 1:
            raise SystemExit(2)
        return x * 10

    store = RunStore(tmp_path / "runs.db")
    f = Formation("m").add_map("m", item)
    with pytest.raises(FormationRuntimeError, match="item 1: SystemExit: 2"):
        f.run([0, 1, 2], store=store, run_id="r1", timeout=30)
    record = store.get("r1")
    assert record is not None and record.status == "failed"
    assert f.resume("r1", store=store, timeout=30).output == [0, 10, 20]
    assert [ran.count(x) for x in range(3)] == [1, 2, 1]
    store.close()


def test_retries_run_a_failing_node_again_until_it_returns() -> None:
    """From dask/distributed test_client.py::test_retries_get (``varying([ZeroDivisionError("one"),
    ZeroDivisionError("two"), 42])`` with ``retries=2`` gives 42)."""
    node = Varying([ZeroDivisionError("one"), ZeroDivisionError("two"), 42])
    result = Formation("f").add_function("a", node, retries=2, backoff=0.01).run(None)
    assert result.output == 42
    assert result.nodes["a"].attempts == 3


def test_when_retries_run_out_the_run_fails_with_the_last_attempts_error() -> None:
    """From dask/distributed test_client.py::test_retries_get (with ``retries=1`` the result raises
    ``"two"``, the second attempt's error)."""
    node = Varying([ZeroDivisionError("one"), ZeroDivisionError("two"), 42])
    with pytest.raises(FormationRuntimeError, match="two") as info:
        Formation("f").add_function("a", node, retries=1, backoff=0.01).run(None)
    assert str(info.value.__cause__) == "two"
    assert info.value.attempts == 2


def test_map_retries_rerun_the_failed_items_and_keep_the_others_results() -> None:
    """From dask/distributed test_client.py::test_map_retries (``client.map(varying, ...,
    retries=2)``: each item retried on its own)."""
    calls = Counter()

    def flaky(x: int) -> int:
        if calls.hit(x) == 1 and x % 2:
            raise ZeroDivisionError(f"item {x}")
        return x * 10

    result = Formation("m").add_map("m", flaky, retries=2, backoff=0.01).run([0, 1, 2, 3])
    assert result.output == [0, 10, 20, 30]
    assert [calls.count(x) for x in range(4)] == [1, 2, 1, 2]


# -- graphs (test_delayed.py, test_threaded.py, test_local.py, test_core.py) ------------


def test_a_node_shared_by_two_branches_runs_once_per_run() -> None:
    """From dask/dask test_delayed.py::test_common_subexpressions (a shared sub-expression is one
    task)."""
    calls = Counter()

    def shared(x: int) -> int:
        calls.hit("shared")
        return x + 1

    f = Formation("diamond").add_function("shared", shared).add_function("left", double)
    f.add_function("right", inc).add_function("total", lambda left, right: left + right)
    f.connect("shared", "left").connect("shared", "right").connect("left", "total").connect("right", "total")
    assert f.run(1).output == 2 * 2 + 3
    assert calls.count("shared") == 1


def test_a_join_takes_its_predecessors_values_as_keyword_arguments() -> None:
    """From dask/dask test_threaded.py::test_get (``{"z": (inc, "x"), "w": (add, "z", "y")}``) and
    test_delayed.py::test_kwargs."""
    f = Formation("w").add_function("x", lambda _: 1).add_function("y", lambda _: 2)
    f.add_function("z", inc).add_function("w", lambda z, y: z + y)
    f.connect("x", "z").connect("z", "w").connect("y", "w")
    result = f.run(None)
    assert result.output == 4
    assert result.nodes["z"].output == 2


def test_a_callable_object_and_a_bound_method_are_function_nodes() -> None:
    """From dask/dask test_delayed.py::test_callable_obj and test_method_getattr."""

    class Shift:
        def __init__(self, by: int) -> None:
            self.by = by

        def __call__(self, x: int) -> int:
            return x + self.by

        def times(self, x: int) -> int:
            return x * self.by

    shift = Shift(3)
    f = Formation("obj").add_function("shift", shift).add_function("times", shift.times).connect("shift", "times")
    assert f.run(1).output == (1 + 3) * 3


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_a_dataclass_passes_between_nodes_and_a_receivers_change_stays_its_own() -> None:
    """From dask/dask test_delayed.py::test_delayed_with_dataclass (dataclass fields reach the
    task). A mutable dataclass whose fields were all immutable used to be shared, not copied, so
    ``move``'s change showed in ``keep``'s value (and the run's result)."""

    def move(p: Point) -> Point:
        p.x += 10  # in place: the sender's value must not change
        return p

    f = Formation("dc").add_function("start", lambda p: p).add_function("move", move)
    f.add_function("keep", lambda p: p).connect("start", "move").connect("start", "keep")
    result = f.run(Point(1, 2))
    assert result.outputs == {"move": Point(11, 2), "keep": Point(1, 2)}


def test_a_formation_of_module_functions_pickles_and_its_copy_runs() -> None:
    """From dask/dask test_delayed.py::test_delayed_picklable."""
    f = Formation("chain").add_function("inc", inc).add_function("double", double).connect("inc", "double")
    copy = pickle.loads(pickle.dumps(f))
    assert copy.run(1).output == f.run(1).output == 4


def test_a_formation_declared_as_a_digraph_by_hand_runs_as_the_builders_does() -> None:
    """From dask/dask test_local.py::test_start_state (a graph given as a plain mapping of tasks and
    their dependencies): here a ``networkx.DiGraph`` with the builder's node attributes."""
    g = nx.DiGraph()
    g.add_node("x", kind="function", fn=lambda _: 1)
    g.add_node("z", kind="function", fn=inc)
    g.add_node("w", kind="function", fn=double)
    g.add_edges_from([("x", "z"), ("z", "w")])
    built = Formation("b").add_function("x", lambda _: 1).add_function("z", inc).add_function("w", double)
    built.connect("x", "z").connect("z", "w")
    assert Formation("hand", g).run(None).output == built.run(None).output == 4
    assert sorted(Formation("hand", g).graph.edges) == sorted(built.graph.edges)


def test_a_cycle_without_a_condition_is_refused_naming_the_cycle() -> None:
    """From dask/dask test_core.py::test_getcycle and test_local.py (``get`` on a cyclic graph
    raises "Cycle detected")."""
    g = nx.DiGraph()
    g.add_node("start", kind="function", fn=inc)
    g.add_node("a", kind="function", fn=inc)
    g.add_node("b", kind="function", fn=inc)
    g.add_edges_from([("start", "a"), ("a", "b"), ("b", "a")])
    with pytest.raises(FormationSetupError, match=r"cycle a → b → a has no conditional edge; add when="):
        Formation("cyc", g).validate()


def test_a_loop_whose_condition_never_ends_it_fails_at_its_visit_limit() -> None:
    """From dask/dask test_core.py::test_getcycle (a graph that would never finish is an error,
    not a hang): a conditional cycle is bounded by ``max_visits``."""
    f = Formation("loop").add_function("a", inc, max_visits=3).connect("a", "a", when=lambda x: x < 100)
    with pytest.raises(FormationRuntimeError, match="max_visits=3") as info:
        f.run(0, timeout=10)
    assert info.value.node == "a"


def test_an_edge_to_an_undeclared_node_is_refused_naming_it() -> None:
    """From dask/dask test_local.py (GetFunctionTestMixin::test_badkey: ``get`` of a key not in the
    graph raises)."""
    g = nx.DiGraph()
    g.add_node("a", kind="function", fn=inc)
    g.add_edge("a", "missing")
    with pytest.raises(FormationSetupError, match="'missing' has no kind"):
        Formation("dangling", g).validate()


def test_a_graph_keyed_by_tuples_as_dasks_is_refused_asking_for_str_names() -> None:
    """From dask/dask test_local.py::test_sort_key (keys such as ``("x", 0)``). Deliberately
    different: a node's name is a str (it names events, traces and journal rows); every
    misnamed node is listed at once."""
    g = nx.DiGraph()
    g.add_node(("x", 0), kind="function", fn=inc)
    g.add_node(("x", 1), kind="function", fn=inc)
    g.add_edge(("x", 0), ("x", 1))
    with pytest.raises(FormationSetupError) as info:
        Formation("tuples", g).validate()
    assert "node ('x', 0) has a name of type tuple; name every node with a str" in str(info.value)
    assert "node ('x', 1) has a name of type tuple" in str(info.value)


def test_a_map_node_declared_on_a_digraph_by_hand_maps_as_add_maps_does() -> None:
    """From dask/distributed test_client.py::test_map (``client.map(inc, range(3))``), the map
    written as the graph attributes ``add_map`` writes."""
    g = nx.DiGraph()
    g.add_node("m", kind="map", fn=inc, max_workers=2)
    assert Formation("hand", g).run([1, 2, 3]).output == Formation("b").add_map("m", inc).run([1, 2, 3]).output


def test_drawing_attributes_on_a_digraphs_nodes_and_edges_are_left_alone() -> None:
    """From dask/dask test_dot.py::test_to_graphviz_attributes (a graph carries what is drawn
    beside what is computed): ``label``, ``color`` and an edge ``weight`` do not change the run."""
    g = nx.DiGraph()
    g.add_node("a", kind="function", fn=inc, label="A", color="red")
    g.add_node("b", kind="function", fn=double)
    g.add_edge("a", "b", weight=3)
    assert Formation("drawn", g).run(1).output == 4


def test_a_chain_of_five_hundred_nodes_runs_to_its_end() -> None:
    """From dask/dask test_local.py (GetFunctionTestMixin::test_get_stack_limit: a chain deeper than
    Python's recursion limit)."""
    f = Formation("deep").add_function("n0", inc)
    for i in range(1, 500):
        f.add_function(f"n{i}", inc).connect(f"n{i - 1}", f"n{i}")
    assert f.run(0, timeout=50).output == 500


def test_a_join_of_two_hundred_branches_sums_them_all() -> None:
    """From dask/dask test_threaded.py::test_dont_spawn_too_many_threads (``dsk["x"] = (sum,
    list(dsk))`` over many independent tasks)."""
    f = Formation("wide").add_function("total", lambda values: sum(values.values()))
    for i in range(200):
        f.add_function(f"x{i}", lambda _, i=i: i).connect(f"x{i}", "total")
    assert f.run(None, timeout=50).output == sum(range(200))


def test_values_that_cannot_be_hashed_pass_through_nodes() -> None:
    """From dask/dask test_local.py (GetFunctionTestMixin::test_get_works_with_unhashables_in_values)
    and test_threaded.py::test_nested_get (``(sum, ["x", "y"])``)."""
    f = Formation("u").add_function("a", lambda x: {"set": x["set"] | {3}, "list": x["list"] + [[4]]})
    f.add_function("b", lambda x: (sorted(x["set"]), sum(len(i) for i in x["list"]))).connect("a", "b")
    assert f.run({"set": {1, 2}, "list": [[1, 2], [3]]}).output == ([1, 2, 3], 4)


def test_a_formation_runs_twice_to_the_same_result() -> None:
    """From dask/dask test_delayed.py::test_compute (``compute`` twice gives the same value)."""
    f = Formation("c").add_function("inc", inc).add_function("double", double).connect("inc", "double")
    assert f.run(3).output == f.run(3).output == 8


# -- map nodes (client.map; test_local.py) ----------------------------------------------


def test_a_map_with_one_worker_runs_its_items_in_item_order() -> None:
    """From dask/dask test_local.py::test_ordering (independent tasks run in key order by
    ``get_sync``)."""
    order: list[int] = []
    result = Formation("m").add_map("m", lambda i: order.append(i) or i, max_workers=1).run(list(range(10)))
    assert result.output == order == list(range(10))


def test_a_map_keeps_item_order_and_at_most_max_workers_run_at_once() -> None:
    """From dask/distributed test_client.py::test_map (``gather(map(inc, range(10)))`` in order)
    and test_threaded.py's ``num_workers=4``."""
    flight = InFlight()

    def slow_inc(x: int) -> int:
        with flight:
            threading.Event().wait(0.01 * (10 - x))  # later items finish first
            return x + 1

    assert Formation("m").add_map("m", slow_inc, max_workers=4).run(list(range(10))).output == list(range(1, 11))
    assert 1 <= flight.peak <= 4


def test_each_failed_map_item_carries_its_own_exception_by_index() -> None:
    """From dask/distributed test_client.py::test_map_naming / test_gather_errors (each future of a
    ``client.map`` holds its own task's error)."""

    def picky(x: int) -> int:
        if x in (2, 5):
            raise ValueError(f"no {x}")
        return x

    with pytest.raises(FormationRuntimeError) as info:
        Formation("m").add_map("m", picky).run(list(range(7)))
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError)
    assert {i: str(e) for i, e in cause.errors.items()} == {2: "no 2", 5: "no 5"}
