"""Forks with a new input (``Formation.fork(..., input=...)``) at any node visit, on both
stores: a node whose predecessor feeds others too, a join, a later visit of a loop, a
visit that suspends. The visit runs once with the given input instead of what its
predecessors deliver, the visits journalled before it are not run again, and the
original run is unchanged."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.store import RunStore

calls: collections.Counter[str] = collections.Counter()
seen: list[tuple[str, Any]] = []


def _plus(name: str, add: int) -> Callable[[int], int]:
    def fn(x: int) -> int:
        calls[name] += 1
        seen.append((name, x))
        return x + add
    return fn


def _times(b: int, c: int) -> int:
    calls["d"] += 1
    seen.append(("d", {"b": b, "c": c}))
    return b * c


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    calls.clear()
    seen.clear()


def fan() -> Formation:
    """a (+1) → b (+10), a → c (+100), then the join d (b * c)."""
    f = Formation("fan").add_function("a", _plus("a", 1)).add_function("b", _plus("b", 10))
    f.add_function("c", _plus("c", 100)).add_function("d", _times)
    return f.connect("a", "b").connect("a", "c").connect("b", "d").connect("c", "d")


def test_a_fork_at_a_node_whose_predecessor_feeds_others_too_reruns_only_that_visit_with_the_input(
        location: str) -> None:
    f = fan()
    with RunStore(location) as store:
        original = f.run(0, store=store).run_id
        before = store.load(original).visits
        calls.clear()
        seen.clear()
        forked = f.fork(original, store=store, at="b", input=5)
        assert store.get(forked).status == "succeeded"
        visits = store.load(forked).visits
        assert visits["a"] == {1: 1} and visits["b"] == {1: 15} and visits["c"] == {1: 101}
        assert visits["d"] == {1: 15 * 101}
        assert calls["a"] == 0 and calls["b"] == 1 and calls["d"] == 1  # (c: again if it was journalled after b)
        assert ("b", 5) in seen
        assert store.load(original).visits == before and store.get(original).status == "succeeded"


def test_a_fork_at_a_join_runs_it_once_with_the_given_inputs_of_its_predecessors(location: str) -> None:
    f = fan()
    with RunStore(location) as store:
        original = f.run(0, store=store).run_id
        calls.clear()
        seen.clear()
        forked = f.fork(original, store=store, at="d", input={"b": 2, "c": 3})
        assert store.load(forked).visits["d"] == {1: 6}
        assert calls == {"d": 1} and seen == [("d", {"b": 2, "c": 3})]
        assert store.load(original).visits["d"] == {1: 11 * 101}


def test_a_fork_at_a_later_visit_of_a_loop_runs_that_visit_with_the_input(location: str) -> None:
    f = (Formation("loop").add_function("inc", _plus("inc", 1)).add_function("out", _plus("out", 0))
         .connect("inc", "inc", when=lambda x: x < 5).connect("inc", "out", when=lambda x: x >= 5))
    with RunStore(location) as store:
        original = f.run(0, store=store).run_id
        calls.clear()
        forked = f.fork(original, store=store, at=("inc", 3), input=10)
        assert store.load(forked).visits == {"inc": {1: 1, 2: 2, 3: 11}, "out": {1: 11}}
        assert calls == {"inc": 1, "out": 1}
        assert store.get(forked).input == 0  # the run's input is the original's: visit 1 took it
        assert store.load(original).visits["out"] == {1: 5}


def test_a_fork_whose_visit_suspends_keeps_its_input_when_resumed(location: str) -> None:
    def ask(x: int) -> int:
        calls["ask"] += 1
        return x + int(interrupt({"add?": x}))

    f = (Formation("ask").add_function("a", _plus("a", 1)).add_function("other", _plus("other", 2))
         .add_function("ask", ask).connect("a", "ask").connect("a", "other"))
    with RunStore(location) as store:
        first = f.run(0, store=store)
        original = f.resume(first.run_id, store=store, answer=1).run_id
        forked = f.fork(original, store=store, at="ask", input=100)
        assert store.get(forked).status == "suspended"
        assert store.get(forked).interrupt is not None and store.get(forked).interrupt.payload == {"add?": 100}
        assert f.resume(forked, store=store, answer=5).outputs["ask"] == 105
        assert store.load(original).visits["ask"] == {1: 2}


def test_a_fork_with_an_input_that_does_not_fit_the_nodes_parameter_is_refused_naming_both(path: str) -> None:
    f = fan()
    with RunStore(path) as store:
        run_id = f.run(0, store=store).run_id
        with pytest.raises(ValueError, match=r"input= for node 'b' does not fit its parameter 'x' of type int"):
            f.fork(run_id, store=store, at="b", input="ten")
        with pytest.raises(ValueError, match=r"input= for node 'd' does not fit its parameter 'c' of type int"):
            f.fork(run_id, store=store, at="d", input={"b": 1, "c": "three"})
        with pytest.raises(ValueError, match=r"node 'd' takes its predecessors' outputs as keyword arguments: give "
                                             r"input= as a dict \{'b': \.\.\., 'c': \.\.\.\}, got int"):
            f.fork(run_id, store=store, at="d", input=3)
        with pytest.raises(ValueError, match=r"input= for node 'd' gives no value for its parameter\(s\) 'c'"):
            f.fork(run_id, store=store, at="d", input={"b": 1})
        assert [r.id for r in store.runs()] == [run_id]


def test_a_fork_of_a_fork_keeps_the_input_given_before_its_fork_point(location: str) -> None:
    f = fan()
    with RunStore(location) as store:
        first = f.fork(f.run(0, store=store).run_id, store=store, at="b", input=5)
        calls.clear()
        second = f.fork(first, store=store, at="d", output=0)
        assert store.load(second).inputs == {("b", 1): 5} and store.load(second).visits["b"] == {1: 15}
        assert calls["b"] == 0 and calls["d"] == 0
        third = f.fork(first, store=store, at="b", input=7)
        assert store.load(third).inputs == {("b", 1): 7} and store.load(third).visits["d"] == {1: 17 * 101}
