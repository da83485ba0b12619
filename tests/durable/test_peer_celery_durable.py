"""Results backends, ported from Celery's own test suite (celery/celery
``t/integration/test_canvas.py``, ``t/unit/tasks/test_result.py``, ``t/unit/tasks/test_chord.py``):
Celery keeps each task's result in a results backend, so a chord's body is called with the
header's stored results; here a run store journals each node visit and each map item, so
a failed canvas resumes without running again what already finished.

Deliberately different: Celery stores results per task id and a chord's body runs once
its header's results are all stored; a journal is per run, and ``resume`` continues the
run from what it holds (SQLite, and PostgreSQL where the store decides, ``location``).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


class Switch:
    """Fails while ``on`` (an outage), counting calls by key."""

    def __init__(self) -> None:
        self.on = True
        self.calls = Counter()


def test_a_chord_whose_body_failed_resumes_without_running_its_header_again(location: str) -> None:
    """Ported from celery/celery t/unit/tasks/test_chord.py::test_unlock_chord_task::test_unlock_ready
    (the body is called with the header results the backend holds)."""
    switch = Switch()

    def add(p: tuple[int, int]) -> int:
        switch.calls.hit(p)
        return p[0] + p[1]

    def tsum(values: list[int]) -> int:
        switch.calls.hit("tsum")
        if switch.on:
            raise ConnectionError("backend down")
        return sum(values)

    f = Formation("chord").add_map("header", add).add_function("tsum", tsum).connect("header", "tsum")
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'tsum'") as info:
            f.run([(1, 2), (3, 4)], store=store, run_id="chord-1")
        switch.on = False
        assert f.resume("chord-1", store=store).output == 10
        assert store.load("chord-1").items[("header", 1)] == {0: 3, 1: 7}
    assert info.value.run_id == "chord-1"
    assert [switch.calls.count(k) for k in ((1, 2), (3, 4), "tsum")] == [1, 1, 2]


def test_a_group_whose_item_failed_resumes_running_only_that_item(location: str) -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_result_set::test_result_set_error
    (the successful task's stored result stands; the failed one is run again)."""
    switch = Switch()

    def div(p: tuple[int, int]) -> float:
        switch.calls.hit(p)
        if switch.on and p[1] == 0:
            raise ZeroDivisionError("division by zero")
        return p[0] / (p[1] or 1)

    f = Formation("group").add_map("div", div)
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError, match=r"1 of 3 item\(s\) failed; first: item 1"):
            f.run([(4, 2), (5, 0), (9, 3)], store=store, run_id="group-1")
        switch.on = False
        assert f.resume("group-1", store=store).output == [2.0, 5.0, 3.0]
    assert [switch.calls.count(p) for p in ((4, 2), (5, 0), (9, 3))] == [1, 2, 1]


def test_each_branch_of_a_group_is_kept_in_the_store_under_its_node(store: RunStore) -> None:
    """Ported from celery/celery t/unit/tasks/test_result.py::test_GroupResult::test_save_restore
    (``GroupResult.save()`` then ``GroupResult.restore(id)`` gives each task's result)."""
    f = (Formation("g").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2)
         .add_function("join", lambda v: [v["a"], v["b"]]).connect("a", "join").connect("b", "join"))
    assert f.run(5, store=store, run_id="saved").output == [6, 10]
    visits = store.load("saved").visits
    assert {n: visits[n] for n in ("a", "b", "join")} == {"a": {1: 6}, "b": {1: 10}, "join": {1: [6, 10]}}
    assert store.get("saved").status == "succeeded"


def test_an_empty_group_is_journalled_and_a_resume_gives_its_body_an_empty_list(store: RunStore) -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_group::test_empty_group_result
    (an empty group's result is saved and restored as ``[]``)."""
    counter = Counter()
    switch = Switch()

    def body(values: list[int]) -> list[int]:
        counter.hit("body")
        if switch.on:
            raise ConnectionError("down")
        return [v + 9 for v in values]

    f = (Formation("c").add_map("header", lambda i: counter.hit("item") and i).add_function("body", body)
         .connect("header", "body"))
    with pytest.raises(FormationRuntimeError):
        f.run([], store=store, run_id="empty")
    assert store.load("empty").visits["header"] == {1: []}
    switch.on = False
    assert f.resume("empty", store=store).output == []
    assert (counter.count("item"), counter.count("body")) == (0, 2)


def test_a_chord_nested_in_a_chain_resumes_without_running_its_inner_nodes_again(store: RunStore) -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_chain_chord_chain_chord with a
    failing last link (the chord's stored result feeds the retried tail)."""
    counter = Counter()
    switch = Switch()

    def node(name: str, value: Any) -> Any:
        def fn(_: Any) -> Any:
            counter.hit(name)
            return value
        return fn

    inner = (Formation("chord").add_function("i4", node("i4", 4)).add_function("i5", node("i5", 5))
             .add_function("body", lambda v: counter.hit("body") and v["i4"] + v["i5"])
             .connect("i4", "body").connect("i5", "body"))

    def tail(x: int) -> int:
        counter.hit("tail")
        if switch.on:
            raise ConnectionError("down")
        return x * 10

    f = (Formation("chain").add_function("i1", node("i1", 1)).add_formation("chord", inner)
         .add_function("tail", tail).connect("i1", "chord", "tail"))
    with pytest.raises(FormationRuntimeError, match=r"node 'tail'"):
        f.run(None, store=store, run_id="nested")
    switch.on = False
    result = f.resume("nested", store=store)
    assert result.output == 90
    assert {k: counter.count(k) for k in ("i1", "i4", "i5", "body", "tail")} == {
        "i1": 1, "i4": 1, "i5": 1, "body": 1, "tail": 2}


def test_a_resumed_run_does_not_call_an_error_callback_that_already_ran(store: RunStore) -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_link_error::test_link_error_callback_retries
    (the errback's result is stored once; the failed task is not run again)."""
    counter = Counter()
    switch = Switch()

    def fail(x: Any) -> Any:
        counter.hit("fail")
        raise ValueError(f"bad {x}")

    def errback(nf: NodeFailure) -> str:
        counter.hit("errback")
        return f"{nf.node}: {nf.error}"

    def notify(msg: str) -> str:
        counter.hit("notify")
        if switch.on:
            raise ConnectionError("down")
        return msg.upper()

    f = (Formation("l").add_function("fail", fail).add_function("errback", errback).add_function("notify", notify)
         .connect("fail", "errback", on_error=True).connect("errback", "notify"))
    with pytest.raises(FormationRuntimeError, match=r"node 'notify'"):
        f.run("x", store=store, run_id="eb")
    switch.on = False
    assert f.resume("eb", store=store).outputs == {"notify": "FAIL: BAD X"}
    assert {k: counter.count(k) for k in ("fail", "errback", "notify")} == {"fail": 1, "errback": 1, "notify": 2}


def test_a_map_over_chords_resumes_only_the_chord_that_failed(store: RunStore) -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_parallel_chords with one chord
    failing (``group(chord, chord)``: the finished chord's stored result stands)."""
    counter = Counter()
    broken = threading.Event()
    broken.set()

    def b(x: int) -> int:
        counter.hit(("b", x))
        if broken.is_set() and x == 2:
            raise ConnectionError("down")
        return x * 100

    inner = (Formation("c").add_function("a", lambda x: x).add_function("b", b)
             .add_function("body", lambda v: v["a"] + v["b"]).connect("a", "body").connect("b", "body"))
    f = Formation("g").add_map("chords", formation=inner, max_workers=2)
    with pytest.raises(FormationRuntimeError, match=r"1 of 2 item\(s\) failed"):
        f.run([1, 2], store=store, run_id="chords")
    broken.clear()
    assert f.resume("chords", store=store).output == [101, 202]
    assert (counter.count(("b", 1)), counter.count(("b", 2))) == (1, 2)
