"""More ``resume`` behaviours ported from Metaflow's own test suite (Netflix/metaflow,
``test/core/tests/resume_*.py``, ``large_artifact.py``) over more graph shapes: a join
that takes the first branch, a loop around a foreach, a foreach that timed out or was
cancelled, a switch that found no case, a loop past its bound, and large values.
(``test_peer_metaflow.py`` beside this file says how Metaflow's ``resume`` maps onto ours.)
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray, until  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.store import RunNotResumableError, RunStore


class ResumeFromHere(Exception):
    """Metaflow's ``metaflow_test.ResumeFromHere``: raised by the first run's step only."""


def test_resuming_after_a_first_branch_join_runs_neither_branch_again(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_foreach_join.py on a join that takes the first
    branch (``join="any"``): the step after it failed; resumed, neither the winning branch
    nor the cancelled one runs again."""
    counter, broken = Counter(), [True]

    def fast(x: int) -> str:
        counter.hit("fast")
        return "fast"

    def slow(x: int) -> str:
        counter.hit("slow")
        time.sleep(0.3)
        return "slow"

    def after(v: dict[str, str]) -> dict[str, str]:
        counter.hit("after")
        if broken[0]:
            raise ResumeFromHere("after")
        return v

    f = (Formation("first_branch").add_function("start", lambda x: x).add_function("fast", fast)
         .add_function("slow", slow).add_function("first", lambda d: d, join="any").add_function("after", after)
         .connect("start", "fast", "first").connect("start", "slow", "first").connect("first", "after"))
    with pytest.raises(FormationRuntimeError, match=r"node 'after'") as info:
        f.run(1, store=store)
    broken[0] = False
    result = f.resume(info.value.run_id, store=store)
    assert result.output == {"fast": "fast"} and result.nodes["slow"].status == "cancelled"
    assert (counter.count("fast"), counter.count("after")) == (1, 2)
    assert counter.count("slow") <= 1  # cancelled once the first branch won, before or after it started


def test_resuming_a_loop_around_a_foreach_reruns_only_the_failed_rounds_failed_item(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_recursive_switch.py with a foreach in the loop
    (``recursive_switch`` around ``foreach-split``): earlier rounds and the failed round's
    other items are not run again."""
    counter, broken = Counter(), [True]

    def item(pair: tuple[int, int]) -> int:
        round_, _ = pair
        counter.hit(pair)
        if broken[0] and pair == (2, 1):
            raise ResumeFromHere("item")
        return round_

    f = (Formation("loop_foreach").add_function("start", lambda x: 0)
         .add_function("split", lambda n: [(n, i) for i in range(3)]).add_map("inner", item)
         .add_function("next", lambda xs: xs[0] + 1).add_function("end", lambda n: n)
         .connect("start", "split", "inner", "next")
         .connect("next", "split", when=lambda n: n < 4).connect("next", "end", when=lambda n: n >= 4))
    with pytest.raises(FormationRuntimeError, match=r"node 'inner'") as info:
        f.run(None, store=store)
    broken[0] = False
    assert f.resume(info.value.run_id, store=store).output == 4
    assert {k: n for k, n in counter.calls.items() if n != 1} == {(2, 1): 2}
    assert len(counter.calls) == 12  # 4 rounds of 3 items


def test_resuming_a_foreach_that_timed_out_keeps_the_items_that_had_finished(store: RunStore) -> None:
    """From metaflow test/core/tests/timeout_decorator.py with resume (a foreach whose task
    timed out is resumed): the items journalled before the timeout are not run again."""
    counter, release = Counter(), threading.Event()

    def inner(i: int) -> int:
        if counter.hit(i) == 1 and i == 3:
            release.wait(5)
        return i * 2

    f = Formation("foreach_timeout").add_map("inner", inner, max_workers=4, timeout=0.3)
    try:
        with pytest.raises(FormationRuntimeError, match=r"node 'inner'") as info:
            f.run([0, 1, 2, 3], store=store)
        assert f.resume(info.value.run_id, store=store).output == [0, 2, 4, 6]
    finally:
        release.set()
    assert counter.calls == {0: 1, 1: 1, 2: 1, 3: 2}


def test_resuming_a_cancelled_foreach_reruns_only_the_items_that_were_in_flight(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_foreach_inner.py with the run stopped by hand
    (Metaflow's resume after the run was killed): the items journalled before the cancel
    are kept, those in flight run again."""
    counter, release = Counter(), threading.Event()

    def inner(i: int) -> int:
        if counter.hit(i) == 1 and i >= 2:
            release.wait(5)
        return i

    f = Formation("foreach_cancel").add_map("inner", inner, max_workers=4)
    try:
        with f.start(store=store) as running:
            future = running.submit([0, 1, 2, 3])
            assert until(lambda: counter.count(2) == 1 and counter.count(3) == 1, within=10)
            assert until(lambda: len(store.load(future.run_id).entries) == 2, within=10)  # items 0 and 1
            assert future.cancel()
        assert f.resume(future.run_id, store=store).output == [0, 1, 2, 3]
    finally:
        release.set()
    assert counter.calls == {0: 1, 1: 1, 2: 2, 3: 2}


def test_a_run_that_found_no_case_resumes_with_the_fixed_condition_without_running_the_switch_again(
        store: RunStore) -> None:
    """From metaflow test/core/tests/switch_basic.py with resume (a switch whose value was not
    among its cases, the flow fixed and resumed): the switch's output is journalled, so the
    resume routes it again with the condition as it is now."""
    counter, accepts = Counter(), [False]

    def start(x: str) -> str:
        counter.hit("start")
        return x

    def build() -> Formation:
        return (Formation("no_case").add_function("start", start).add_function("a", lambda c: f"took {c}")
                .connect("start", "a", when=lambda c: accepts[0] or c == "a"))

    with pytest.raises(NoRouteError) as info:
        build().run("zebra", store=store)
    accepts[0] = True
    assert build().resume(info.value.run_id, store=store).outputs == {"a": "took zebra"}
    assert counter.calls == {"start": 1}


def test_a_loop_stopped_by_its_visit_limit_resumes_with_a_higher_limit_from_where_it_stopped(
        store: RunStore) -> None:
    """From metaflow test/core/tests/resume_recursive_switch.py (a loop resumed part-way). Ours
    bounds loops (``max_visits``): a run that hit the bound resumes, with the bound raised,
    without repeating the rounds it had journalled."""
    counter = Counter()

    def loop(n: int) -> int:
        counter.hit(n)
        return n + 1

    def build(max_visits: int) -> Formation:
        return (Formation("bounded").add_function("start", lambda n: n)
                .add_function("loop", loop, max_visits=max_visits).add_function("end", lambda n: n)
                .connect("start", "loop")
                .connect("loop", "loop", when=lambda n: n < 12).connect("loop", "end", when=lambda n: n >= 12))

    with pytest.raises(FormationRuntimeError, match=r"max_visits=10") as info:
        build(10).run(0, store=store)
    assert build(20).resume(info.value.run_id, store=store).output == 12
    assert set(counter.calls.values()) == {1} and len(counter.calls) == 12


def test_forking_a_recursive_switch_at_one_round_continues_the_loop_from_its_new_value(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_recursive_switch.py (resume from a given loop
    iteration): a fork at ``("loop", 3)`` replaces that round's value and loops on from it;
    the rounds before are not run again."""
    counter = Counter()

    def loop(n: int) -> int:
        counter.hit(n)
        return n + 1

    f = (Formation("fork_loop").add_function("start", lambda _: 0).add_function("loop", loop)
         .add_function("end", lambda n: n)
         .connect("start", "loop").connect("loop", "loop", when=lambda n: n < 5)
         .connect("loop", "end", when=lambda n: n >= 5))
    run_id = f.run(None, store=store).run_id
    forked = f.fork(run_id, store=store, at=("loop", 3), output=4)
    journal = store.load(forked)
    assert journal.visits["loop"] == {1: 1, 2: 2, 3: 4, 4: 5} and journal.visits["end"] == {1: 5}
    assert counter.calls == {0: 1, 1: 1, 2: 1, 3: 1, 4: 2}  # the first run's five rounds, then the fork's fourth
    assert store.load(run_id).visits["end"] == {1: 5} and store.load(run_id).visits["loop"][3] == 3


def test_a_large_artifact_is_journalled_and_read_back_on_resume(store: RunStore) -> None:
    """From metaflow test/core/tests/large_artifact.py (an artifact of hundreds of megabytes
    saved and read back intact), with 20 MB: the next step, resumed, receives it whole."""
    big = "x" * (20 * 1024 * 1024) + "end"
    broken = [True]

    def use(s: str) -> tuple[int, str]:
        if broken[0]:
            raise ResumeFromHere("use")
        return len(s), s[-3:]

    f = Formation("large").add_function("make", lambda _: big).add_function("use", use).connect("make", "use")
    with pytest.raises(FormationRuntimeError) as info:
        f.run(None, store=store)
    broken[0] = False
    assert f.resume(info.value.run_id, store=store).output == (len(big), "end")


def record(path: Path, line: str) -> None:
    with path.open("a") as fh:
        fh.write(line + "\n")


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_resuming_a_foreach_reruns_only_the_item_that_failed(tmp_path: Path) -> None:
    """From metaflow test/core/tests/resume_foreach_inner.py on Ray (DESIGN "Beyond one
    machine": journalled runs and resume work on ``backend="ray"``): the calls, written to a
    file by the Ray actors, show the journalled items ran once."""
    calls, flag = tmp_path / "calls.txt", tmp_path / "resumed"

    def inner(i: int) -> int:
        record(calls, str(i))
        if i == 2 and not flag.exists():
            raise ResumeFromHere("inner")
        return i * 10

    f = Formation("ray_foreach").add_map("inner", inner, max_workers=2)
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'inner'") as info:
            f.run([0, 1, 2, 3], store=store, backend="ray", timeout=50)
        flag.touch()
        assert f.resume(info.value.run_id, store=store, backend="ray", timeout=50).output == [0, 10, 20, 30]
    assert sorted(calls.read_text().split()) == ["0", "1", "2", "2", "3"]


def test_an_item_left_running_by_a_timed_out_foreach_is_not_journalled_after_its_run_ended(path: Path) -> None:
    """From metaflow test/core/tests/timeout_decorator.py on ``foreach-inner`` with resume: the
    task past its limit is abandoned, and what it returns later is dropped (DESIGN "Runs":
    an abandoned attempt's late result is dropped). It used to be journalled into the ended
    run: after ``prune`` that write failed, and the store's next ``flush()`` (or ``close()``)
    raised a ``StoreWriteError`` about a run the user had already deleted."""
    release, returned = threading.Event(), threading.Event()

    def inner(i: int) -> int:
        if i == 3:
            release.wait(5)
            returned.set()
        return i

    f = Formation("abandoned").add_map("inner", inner, max_workers=4, timeout=0.3)
    with RunStore(path) as store:
        try:
            with pytest.raises(FormationRuntimeError, match=r"node 'inner'") as info:
                f.run([0, 1, 2, 3], store=store)
            run_id = info.value.run_id
            assert store.get(run_id).status == "failed"
            entries = store.load(run_id).entries
        finally:
            release.set()
        assert returned.wait(5)
        # nothing written after the run ended (before the fix, the late item showed up within a few ms)
        assert not until(lambda: store.load(run_id).entries != entries, within=1)
        assert store.prune(older_than=0) == 1
        store.flush()  # nothing left to fail


def test_resuming_a_timed_out_foreach_of_several_steps_reruns_only_the_unfinished_task(store: RunStore) -> None:
    """From metaflow test/core/tests/timeout_decorator.py on ``foreach-inner`` with resume, the
    foreach body being several steps (a map over a formation): the tasks that finished
    are not run again, the one cut by the timeout runs from its step in flight."""
    counter, release = Counter(), threading.Event()

    def work(i: int) -> int:
        if counter.hit(("work", i)) == 1 and i == 3:
            release.wait(5)
        return i

    def after(i: int) -> int:
        counter.hit(("after", i))
        return i + 100

    inner = Formation("inner").add_function("work", work).add_function("after", after).connect("work", "after")
    f = Formation("foreach_body").add_map("m", formation=inner, max_workers=4, timeout=0.3)
    try:
        with pytest.raises(FormationRuntimeError, match=r"node 'm'") as info:
            f.run([0, 1, 2, 3], store=store)
        assert f.resume(info.value.run_id, store=store).output == [100, 101, 102, 103]
    finally:
        release.set()
    assert {k: n for k, n in counter.calls.items() if n != 1} == {("work", 3): 2}
    assert len(counter.calls) == 8


def test_resuming_a_timed_out_async_foreach_reruns_only_the_cancelled_item(store: RunStore) -> None:
    """From metaflow test/core/tests/timeout_decorator.py with resume, for an ``async def``
    step: the timeout cancels the item's coroutine; the resume runs only that item."""
    counter, slow = Counter(), [True]

    async def inner(i: int) -> int:
        counter.hit(i)
        if i == 2 and slow[0]:
            await asyncio.sleep(5)
        return i

    f = Formation("async_foreach").add_map("inner", inner, timeout=0.3)
    with pytest.raises(FormationRuntimeError, match=r"node 'inner'") as info:
        f.run([0, 1, 2], store=store)
    slow[0] = False
    assert f.resume(info.value.run_id, store=store).output == [0, 1, 2]
    assert counter.calls == {0: 1, 1: 1, 2: 2}


def test_resuming_a_run_still_running_is_refused_and_the_run_finishes_untouched(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_originpath.py (a resume names its origin run).
    Ours continues the run itself, so a run still in flight is refused
    (``RunNotResumableError``, saying to wait for it or cancel it) and goes on unharmed."""
    release, started = threading.Event(), threading.Event()

    def block(x: int) -> int:
        started.set()
        release.wait(5)
        return x

    f = Formation("origin").add_function("a", block)
    try:
        with f.start(store=store) as running:
            future = running.submit(1)
            assert started.wait(10)
            with pytest.raises(RunNotResumableError, match=r"it is running .*; wait for it or cancel it first"):
                Formation("origin").add_function("a", block).resume(future.run_id, store=store, timeout=10)
            release.set()
            assert future.result(10).output == 1
    finally:
        release.set()


def test_a_foreach_item_the_store_cannot_journal_fails_naming_the_map_node_and_the_item(store: RunStore) -> None:
    """From metaflow test/core/tests/basic_artifact.py and large_artifact.py (an artifact is
    persisted when the task ends; one that cannot be fails the task): a map item's output
    the store cannot journal fails the item, and the error names the item and the map node
    as what it is (it said "fleet node" for a map's item)."""

    class Handle:
        """A plain class: not data the journal can store."""

    f = Formation("artifacts").add_map("inner", lambda i: Handle())
    with pytest.raises(FormationRuntimeError, match=r"node 'inner'") as info:
        f.run([1, 2], store=store)
    text = str(info.value)
    assert "the output of item 0 of node 'inner' (visit 1)" in text and "cannot journal" in text
    assert "fleet" not in text


def test_a_retried_foreach_item_with_a_loop_inside_reruns_from_its_failed_round_when_journalled(
        store: RunStore) -> None:
    """From metaflow test/core/tests/catch_retry.py on ``recursive_switch_inside_foreach`` (a
    retried task inside a foreach whose body loops): a map item's retry reruns only that
    item; in a journalled run it continues from the round that failed, without a store it
    runs the item's loop from its start."""

    def build(counter: Counter) -> Formation:
        def body(s: dict[str, Any]) -> dict[str, Any]:
            count = s["count"] + 1
            if counter.hit((s["id"], count)) == 1 and (s["id"], count) == ("B", 3):
                raise ValueError("flaky round")
            return {**s, "count": count}

        inner = (Formation("item_loop").add_function("loop_start", lambda it: {**it, "count": 0})
                 .add_function("body", body).add_function("exit", lambda s: f"{s['id']}:{s['count']}")
                 .connect("loop_start", "body")
                 .connect("body", "body", when=lambda s: s["count"] < s["max"])
                 .connect("body", "exit", when=lambda s: s["count"] >= s["max"]))
        return Formation("foreach_loop_retry").add_map("each", formation=inner, retries=1, backoff=0)

    items = [{"id": "A", "max": 2}, {"id": "B", "max": 4}]
    journalled, plain = Counter(), Counter()
    assert build(journalled).run(items, store=store).output == ["A:2", "B:4"]
    assert {k: n for k, n in journalled.calls.items() if n != 1} == {("B", 3): 2}
    assert build(plain).run(items).output == ["A:2", "B:4"]
    assert {k: n for k, n in plain.calls.items() if n != 1} == {("B", 1): 2, ("B", 2): 2, ("B", 3): 2}
