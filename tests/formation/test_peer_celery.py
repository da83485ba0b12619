"""Canvas behaviours ported from Celery's own test suite (celery/celery,
``t/integration/test_canvas.py`` and ``t/unit/tasks/test_canvas.py``): what a user
switching from Celery's canvas expects of a formation.

How Celery's primitives map onto ours:
- ``chain(a, b, c)`` (``a | b | c``) is a chain of nodes: ``connect("a", "b", "c")``.
- ``group(a, b)`` is a fan-out to parallel nodes; its ``GroupResult`` is the join node's
  input: a dict keyed by the predecessors' names (or keyword arguments), in the order
  the edges were declared, whatever order the branches finish in.
- ``chord(header, body)`` is a fan-out, a join and the body after it.
- ``group(task.s(i) for i in items)`` / ``task.map`` / ``task.starmap`` is a map node
  (``add_map``): its results in item order.
- Nested canvases (a chain in a group, a chord in a chain) are nested formations
  (``add_formation``) and maps over formations (``add_map(formation=...)``).

Deliberately different (DESIGN.md "The formation language" documents ours):
- Celery unrolls a group nested in a group into one flat list (``[11, 101, 1001, 2001]``);
  a nested formation keeps its shape: a formation with several sinks outputs the dict of
  its sink outputs, so nesting gives nested dicts.
- ``.si()`` (an immutable signature that ignores its parent's result) has no spelling of
  its own: a node that ignores its input is a function that ignores its argument.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation


def add(x: Any, y: Any) -> Any:
    return x + y


def tsum(values: dict[str, int] | list[int]) -> int:
    return sum(values.values() if isinstance(values, dict) else values)


def const(value: Any) -> Any:
    """Celery's ``.si(value)``: a node that ignores what it receives."""
    return lambda _: value


def group_of(f: Formation, src: str | None, branches: dict[str, Any], join: str, body: Any) -> Formation:
    """Fan out from ``src`` (or the run's input) to ``branches``, join them in ``join``."""
    f.add_function(join, body)
    for name, fn in branches.items():
        f.add_function(name, fn)
        if src is not None:
            f.connect(src, name)
        f.connect(name, join)
    return f


# --- chains ---------------------------------------------------------------------------


def test_a_chain_passes_each_result_on_to_the_next_node() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_simple_chain."""
    f = (Formation("c").add_function("a", lambda x: add(x, 4)).add_function("b", lambda x: add(x, 8))
         .add_function("c", lambda x: add(x, 16)).connect("a", "b", "c"))
    assert f.run(4).output == 32


def test_a_chain_runs_its_nodes_one_after_the_other_in_order() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_parent_ids (each link's parent is
    the link before it)."""
    seen: list[int] = []
    f = Formation("c")
    for i in range(10):
        f.add_function(f"ids{i}", lambda x, i=i: seen.append(i) or i)
    f.connect(*[f"ids{i}" for i in range(10)])
    assert f.run(None).output == 9
    assert seen == list(range(10))


# --- groups and their results -----------------------------------------------------------


def test_a_group_joins_its_results_in_declared_order_whatever_order_they_finish_in() -> None:
    """Ported from celery/celery t/unit/tasks/test_result.py::test_GroupResult::test_join_native and
    t/integration/test_canvas.py::test_group::test_group_lone (results in the group's order)."""
    seen: list[list[str]] = []

    def slow(delay: float, value: int) -> Any:
        return lambda _: time.sleep(delay) or value

    branches = {"first": slow(0.06, 1), "second": slow(0.03, 2), "third": slow(0.0, 3)}
    f = group_of(Formation("g").add_function("src", lambda x: x), "src", branches, "join",
                 lambda v: seen.append(list(v)) or list(v.values()))
    assert f.run(None).output == [1, 2, 3]
    assert seen == [["first", "second", "third"]]


def test_a_group_without_a_source_node_gives_every_branch_the_runs_input() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_nested_chain_group_lone
    (``group(identity.s(42), identity.s(42))``)."""
    f = group_of(Formation("g"), None, {"i1": lambda x: x, "i2": lambda x: x}, "join", lambda v: list(v.values()))
    assert f.run(42).output == [42, 42]


def test_a_join_may_take_its_branches_as_keyword_arguments() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_nested_chain_group_mid
    (``identity.s(42) | group(identity.s(), identity.s()) | identity.s()``)."""

    def identity(left: int, right: int) -> list[int]:
        return [left, right]

    f = group_of(Formation("g").add_function("src", lambda x: x), "src",
                 {"left": lambda x: x, "right": lambda x: x}, "identity", identity)
    assert f.run(42).output == [42, 42]


def test_a_chain_then_a_group_then_a_body_is_a_chord_in_a_chain() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_group_chain
    (``add.s(2, 2) | group(add.s(i) for i in range(4)) | add_to_all.s(8)``)."""
    branches = {f"add{i}": (lambda x, i=i: x + i) for i in range(4)}
    f = group_of(Formation("g").add_function("add", lambda x: add(*x)), "add", branches, "add_to_all",
                 lambda v: [n + 8 for n in v.values()])
    assert f.run((2, 2)).output == [12, 13, 14, 15]


def test_a_chain_inside_a_group_receives_the_groups_input() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_chain_inside_group_receives_arguments
    (``add.s(5, 6) | group((add.s(1) | add.s(2), add.s(3)))``)."""
    f = (Formation("g").add_function("add", lambda x: add(*x)).add_function("add1", lambda x: x + 1)
         .add_function("add2", lambda x: x + 2).add_function("add3", lambda x: x + 3)
         .add_function("join", lambda v: list(v.values()))
         .connect("add", "add1", "add2", "join").connect("add", "add3", "join"))
    assert f.run((5, 6)).output == [14, 14]


def test_groups_chained_through_one_node_run_the_whole_first_group_before_it() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_group_chord_group_chain
    (``before | connect | after``: all of ``before`` runs, then ``connect``, then ``after``)."""
    log: list[str] = []
    f = Formation("g")
    for i in range(3):
        f.add_function(f"before{i}", lambda x, i=i: log.append(f"before {i}"))
    f.add_function("connect", lambda v: log.append("connect"))
    for i in range(2):
        f.add_function(f"after{i}", lambda x, i=i: log.append(f"after {i}")).connect("connect", f"after{i}")
    for i in range(3):
        f.connect(f"before{i}", "connect")
    f.run(None)
    assert sorted(log[:3]) == ["before 0", "before 1", "before 2"]
    assert log[3] == "connect" and sorted(log[4:]) == ["after 0", "after 1"]


def test_a_chain_of_a_task_a_group_and_a_chord_sums_through_every_stage() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_chain_of_task_a_group_and_a_chord
    (``add.si(1, 0) | group(add.s(1), add.s(1)) | group(tsum.s(), tsum.s()) | tsum.s()`` == 8)."""
    f = group_of(Formation("g").add_function("start", const(1)), "start",
                 {"a": lambda x: x + 1, "b": lambda x: x + 1}, "sum1", tsum)
    f.add_function("sum2", tsum).connect("a", "sum2").connect("b", "sum2")
    f.add_function("total", tsum).connect("sum1", "total").connect("sum2", "total")
    assert f.run(None).output == 8


# --- maps: group(task.s(i) for i in items), task.map, task.starmap, chunks -------------------


def test_a_map_over_a_thousand_items_gives_them_all_back_in_order() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_group::test_large_group."""
    assert Formation("g").add_map("identity", lambda i: i).run(list(range(1000))).output == list(range(1000))


def test_a_chord_with_a_large_header_sums_every_item() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_large_header and
    ::test_chain_to_a_chord_with_large_header."""
    f = (Formation("c").add_map("identity", lambda i: i).add_function("tsum", tsum).connect("identity", "tsum"))
    assert f.run(list(range(1000))).output == 499500


def test_a_chord_with_one_header_item_gives_a_one_item_list_to_its_body() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_single_task_header."""
    f = (Formation("c").add_map("add", lambda p: add(*p))
         .add_function("add_to_all", lambda v: [n + 9 for n in v]).connect("add", "add_to_all"))
    assert f.run([(2, 5)]).output == [16]


def test_a_chord_with_an_empty_header_calls_its_body_with_an_empty_list() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_empty_header_chord
    (``chord([], body=add_to_all.s(9))`` == [])."""
    counter = Counter()
    f = (Formation("c").add_map("add", lambda p: counter.hit("item") and add(*p))
         .add_function("add_to_all", lambda v: counter.hit("body") and [n + 9 for n in v]).connect("add", "add_to_all"))
    result = f.run([])
    assert result.output == [] and result.nodes["add"].output == []
    assert (counter.count("item"), counter.count("body")) == (0, 1)


def test_an_empty_list_from_an_upstream_node_maps_to_an_empty_list() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_group::test_empty_group_result."""
    f = (Formation("c").add_function("nothing", lambda _: []).add_map("identity", lambda i: i)
         .connect("nothing", "identity"))
    result = f.run(None)
    assert (result.output, result.nodes["identity"].status) == ([], "succeeded")


def test_a_starmap_is_a_map_whose_function_unpacks_each_tuple() -> None:
    """Ported from celery/celery t/unit/tasks/test_canvas.py::test_xstarmap (``add.starmap([(1, 1), (2, 2)])``):
    ours maps a function of one item."""
    assert Formation("g").add_map("add", lambda p: add(*p)).run([(1, 1), (2, 2), (3, 4)]).output == [2, 4, 7]


def test_chunks_are_a_map_over_the_chunked_list_keeping_chunk_and_item_order() -> None:
    """Ported from celery/celery t/unit/tasks/test_canvas.py::test_chunks::test_chunks (``add.chunks(zip(...), 2)``):
    ours has no chunks(): a node cuts the list, a map applies the function to each chunk."""
    f = (Formation("g").add_function("chunk", lambda v: [v[i:i + 2] for i in range(0, len(v), 2)])
         .add_map("add", lambda chunk: [add(*p) for p in chunk]).connect("chunk", "add"))
    assert f.run([(i, i) for i in range(5)]).output == [[0, 2], [4, 6], [8]]


def test_a_map_with_fewer_workers_than_items_keeps_item_order() -> None:
    """Ported from celery/celery t/unit/tasks/test_canvas.py::test_group::test_apply_async_with_parent
    (results in the group's order, however many workers run them)."""

    def later_first(i: int) -> int:
        time.sleep(0.002 * (6 - i))
        return i * i

    assert Formation("g").add_map("sq", later_first, max_workers=2).run(list(range(6))).output == [0, 1, 4, 9, 16, 25]


# --- nested canvases ----------------------------------------------------------------------


def test_a_group_nested_in_a_group_keeps_its_shape() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_group::test_nested_group. Celery unrolls
    nested groups into ``[11, 101, 1001, 2001]``; a nested formation outputs the dict of its sinks."""
    innermost = Formation("g3").add_function("a1000", lambda x: x + 1000).add_function("a2000", lambda x: x + 2000)
    inner = Formation("g2").add_function("a100", lambda x: x + 100).add_formation("g3", innermost)
    outer = Formation("g1").add_function("a10", lambda x: x + 10).add_formation("g2", inner)
    assert outer.run(1).outputs == {"a10": 11, "g2": {"a100": 101, "g3": {"a1000": 1001, "a2000": 2001}}}


def test_a_group_holding_a_chain_that_ends_in_a_group_gives_that_groups_results() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_group_result_not_has_cache
    (``group(t1, t2, chain(identity.si(5), group(3, 4)))`` == ``[1, 2, [3, 4]]``)."""
    tail = Formation("tail").add_function("i5", const(5)).add_function("i3", const(3)).add_function("i4", const(4))
    tail.connect("i5", "i3").connect("i5", "i4")
    f = (Formation("g").add_function("t1", const(1)).add_function("t2", const(2)).add_formation("ct", tail)
         .add_function("join", lambda v: [v["t1"], v["t2"], list(v["ct"].values())])
         .connect("t1", "join").connect("t2", "join").connect("ct", "join"))
    assert f.run(None).output == [1, 2, [3, 4]]


def chord_formation(name: str, header: dict[str, Any], body: Any) -> Formation:
    return group_of(Formation(name), None, header, "body", body)


def test_chords_nested_in_a_chord_give_the_outer_body_each_inner_bodys_result() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_nested_chord
    (== ``[[3, 7, 5, 'A'], [13, 10, 'A']]``). Celery gives a one-task header's body a one-item list;
    a node with one predecessor receives its value as it is (DESIGN "Data flow")."""
    c1 = chord_formation("c1", {"h1": const(add(1, 2)), "h2": const(add(3, 4))}, lambda v: [*v.values(), 5])
    c2 = chord_formation("c2", {"h": const(add(6, 7))}, lambda v: [v, 10])
    f = (Formation("outer").add_formation("c1", c1).add_formation("c2", c2)
         .add_function("add_to_all", lambda v: [[*r, "A"] for r in v.values()])
         .connect("c1", "add_to_all").connect("c2", "add_to_all"))
    assert f.run(None).output == [[3, 7, 5, "A"], [13, 10, "A"]]


def test_a_map_over_a_chord_formation_gives_each_items_body_result_in_order() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_parallel_chords
    (``group(chord(...), chord(...))`` == [10, 10]): a map over a formation."""
    chord = chord_formation("c", {"a": lambda p: add(*p[0]), "b": lambda p: add(*p[1])}, tsum)
    f = Formation("g").add_map("chords", formation=chord)
    assert f.run([[(1, 2), (3, 4)], [(1, 2), (3, 4)], [(0, 0), (0, 1)]]).output == [10, 10, 1]


def test_a_chord_inside_a_chain_inside_a_chord_gives_the_outer_bodys_result() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_chain_chord_chain_chord (== 7)."""
    innermost = chord_formation("c3", {"i4": const(4), "i5": const(5)}, const(6))
    chain = Formation("ch").add_function("i3", const(3)).add_formation("c3", innermost).connect("i3", "c3")
    f = (Formation("outer").add_function("i1", const(1)).add_function("i2", const(2)).add_formation("chain", chain)
         .add_function("i7", const(7)).connect("i1", "i2", "i7").connect("i1", "chain", "i7"))
    result = f.run(None)
    assert result.output == 7
    assert result.nodes["chain/c3/body"].output == 6


def test_a_chord_over_a_chain_ending_in_a_group_gives_that_groups_results_to_its_body() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_nested_chord_group_chain_group_tail
    (== ``[[42, 42]]``)."""
    tail = (Formation("tail").add_function("i", lambda x: x).add_function("a", lambda x: x)
            .add_function("b", lambda x: x).connect("i", "a").connect("i", "b"))
    f = (Formation("c").add_formation("chain", tail).add_function("identity", lambda v: [list(v.values())])
         .connect("chain", "identity"))
    assert f.run(42).output == [[42, 42]]


def test_a_chain_of_chords_and_groups_carries_the_sum_through() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_chain_of_chords_with_two_tasks
    (``add.si(1, 0) | group(add.s(1), add.s(1)) | tsum.s() | add.s(1) | chord(group(add.s(1), add.s(1)), tsum.s())``
    == 12)."""
    chord = chord_formation("chord", {"a": lambda x: x + 1, "b": lambda x: x + 1}, tsum)
    f = group_of(Formation("g").add_function("start", const(1)), "start",
                 {"a": lambda x: x + 1, "b": lambda x: x + 1}, "tsum", tsum)
    f.add_function("add1", lambda x: x + 1).add_formation("chord", chord).connect("tsum", "add1", "chord")
    assert f.run(None).output == 12


# --- backend="ray" --------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_group_on_ray_joins_its_results_in_declared_order() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_group_chain on backend="ray"."""
    branches = {f"add{i}": (lambda x, i=i: x + i) for i in range(4)}
    f = group_of(Formation("g").add_function("add", lambda x: add(*x)), "add", branches, "add_to_all",
                 lambda v: [(k, n + 8) for k, n in v.items()])
    assert f.run((2, 2), backend="ray", timeout=120).output == [("add0", 12), ("add1", 13), ("add2", 14), ("add3", 15)]


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_map_over_a_chord_formation_on_ray_keeps_item_order() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_parallel_chords on backend="ray".
    ``max_workers=2``: the default (0) starts 100 replicas of each inner node, each a Ray process."""
    chord = chord_formation("c", {"a": lambda p: add(*p[0]), "b": lambda p: add(*p[1])}, tsum)
    f = Formation("g").add_map("chords", formation=chord, max_workers=2)
    assert f.run([[(1, 2), (3, 4)], [(0, 0), (0, 1)]], backend="ray", timeout=120).output == [10, 1]
