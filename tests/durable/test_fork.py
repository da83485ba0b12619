"""Time travel on both stores: a run's history, and forks (``Formation.fork``) that reuse
the journal before a node's visit, replace its output or input, and leave the original
run unchanged."""

from __future__ import annotations

import collections
import datetime
import itertools
from collections.abc import Callable

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

calls: collections.Counter[str] = collections.Counter()


def _step(name: str, add: int) -> Callable[[int], int]:
    def fn(x: int) -> int:
        calls[name] += 1
        return x + add
    fn.__name__ = name
    return fn


def chain() -> Formation:
    """a (+1) → b (+10) → c (+100) → d (+1000)."""
    f = Formation("chain")
    for name, add in (("a", 1), ("b", 10), ("c", 100), ("d", 1000)):
        f.add_function(name, _step(name, add))
    return f.connect("a", "b").connect("b", "c").connect("c", "d")


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    calls.clear()


def test_history_lists_each_visit_in_order_with_its_output_status_and_times(location: str) -> None:
    before = datetime.datetime.now(datetime.UTC)
    with RunStore(location) as store:
        result = chain().run(0, store=store)
        history = store.history(result.run_id)
    assert [(v.node, v.visit, v.output, v.status) for v in history] == [
        ("a", 1, 1, "succeeded"), ("b", 1, 11, "succeeded"), ("c", 1, 111, "succeeded"), ("d", 1, 1111, "succeeded")]
    for earlier, later in itertools.pairwise(history):
        assert earlier.finished is not None and later.started is not None and later.finished is not None
        assert earlier.finished <= later.finished and later.started == earlier.finished
    assert history[0].started is not None and before - datetime.timedelta(seconds=1) <= history[0].started


def test_a_fork_with_a_new_output_reruns_only_what_follows_and_leaves_the_original_unchanged(location: str) -> None:
    f = chain()
    with RunStore(location) as store:
        original = f.run(0, store=store).run_id
        calls.clear()
        forked = f.fork(original, store=store, at="b", output=50)
        assert forked != original
        assert store.get(forked).status == "succeeded"
        assert store.load(forked).visits == {"a": {1: 1}, "b": {1: 50}, "c": {1: 150}, "d": {1: 1150}}
        assert calls == {"c": 1, "d": 1}  # a was journalled before b's visit: not run again
        assert store.load(original).visits == {"a": {1: 1}, "b": {1: 11}, "c": {1: 111}, "d": {1: 1111}}
        assert store.get(original).status == "succeeded"


def test_a_fork_with_a_new_input_reruns_the_visit_with_it(location: str) -> None:
    f = chain()
    with RunStore(location) as store:
        original = f.run(0, store=store).run_id
        calls.clear()
        forked = f.fork(original, store=store, at="c", input=5)  # b's output, which feeds c alone
        assert store.load(forked).visits["d"] == {1: 1105}
        assert calls == {"c": 1, "d": 1}
        from_source = f.fork(original, store=store, at="a", input=7)
        assert store.get(from_source).input == 7 and store.load(from_source).visits["d"] == {1: 1118}


def test_a_fork_is_journalled_and_can_be_forked_again(location: str) -> None:
    f = chain()
    with RunStore(location) as store:
        first = f.fork(f.run(0, store=store).run_id, store=store, at="d", output=-1)
        second = f.fork(first, store=store, at="c", output=0)
        assert [(v.node, v.output) for v in store.history(second)] == [("a", 1), ("b", 11), ("c", 0), ("d", 1000)]


def test_bad_forks_are_refused_naming_the_fix(path: str) -> None:
    f = chain()
    with RunStore(path) as store:
        run_id = f.run(0, store=store).run_id
        with pytest.raises(ValueError, match=r"exactly one of output= .* or input="):
            f.fork(run_id, store=store, at="b")
        with pytest.raises(ValueError, match="no node 'z' to fork at; its nodes are 'a', 'b', 'c', 'd'"):
            f.fork(run_id, store=store, at="z", output=1)
        with pytest.raises(ValueError, match=r"at must be a node name, or \(node, visit\)"):
            f.fork(run_id, store=store, at=("b", 0), output=1)
        assert [r.id for r in store.runs()] == [run_id]


def test_a_fork_at_a_visit_the_run_never_made_is_refused_naming_the_visits_it_made(path: str) -> None:
    f = chain()
    with RunStore(path) as store:
        run_id = f.run(0, store=store).run_id
        with pytest.raises(ValueError, match=r"run .* never made visit 2 of node 'b' \(it made 1\)"):
            f.fork(run_id, store=store, at=("b", 2), output=1)
        with pytest.raises(ValueError, match=r"never made visit 5 of node 'c'"):
            f.fork(run_id, store=store, at=("c", 5), input=1)
        assert [r.id for r in store.runs()] == [run_id]


def test_a_fork_at_a_node_a_finished_run_never_reached_is_refused(path: str) -> None:
    f = (Formation("route").add_function("s", lambda x: x).add_function("i", lambda x: ("int", x))
         .add_function("o", lambda x: ("other", x)).connect("s", "i", when=int).connect("s", "o", otherwise=True))
    with RunStore(path) as store:
        run_id = f.run(1, store=store).run_id
        with pytest.raises(ValueError, match=r"never made visit 1 of node 'o' \(it made none\)"):
            f.fork(run_id, store=store, at="o", output="x")
        assert [r.id for r in store.runs()] == [run_id]


def test_a_fork_of_a_failed_run_at_the_node_that_failed_gives_it_an_output(path: str) -> None:
    def broken(x: int) -> int:
        raise RuntimeError("down")

    f = (Formation("mend").add_function("a", lambda x: x + 1).add_function("b", broken)
         .add_function("c", lambda x: x * 2).connect("a", "b").connect("b", "c"))
    with RunStore(path) as store:
        with pytest.raises(FormationRuntimeError):
            f.run(1, store=store)
        (failed,) = store.runs()
        forked = f.fork(failed.id, store=store, at="b", output=10)
        assert store.get(forked).status == "succeeded" and store.load(forked).visits["c"] == {1: 20}


def test_history_shows_a_visit_waiting_at_an_interrupt_as_suspended(location: str) -> None:
    from wingman_actors import interrupt

    f = Formation("ask").add_function("a", lambda x: x + 1).add_function("ask", lambda x: interrupt({"ok?": x}))
    with RunStore(location) as store:
        result = f.connect("a", "ask").run(1, store=store)
        assert result.status == "suspended"
        history = store.history(result.run_id)
    assert [(v.node, v.status, v.output) for v in history] == [("a", "succeeded", 2), ("ask", "suspended", {"ok?": 2})]


def test_history_shows_a_visit_skipped_after_its_retries_as_skipped(location: str) -> None:
    def broken(x: int) -> int:
        raise RuntimeError("down")

    f = Formation("skip").add_function("a", lambda x: x + 1).add_function("gone", broken, retries=0, on_error="skip")
    with RunStore(location) as store:
        result = f.connect("a", "gone").run(1, store=store)
        history = store.history(result.run_id)
    assert [(v.node, v.status) for v in history] == [("a", "succeeded"), ("gone", "skipped")]
    assert "down" in str(history[1].output)


def test_a_forks_reused_visits_keep_the_times_of_the_original_run(location: str) -> None:
    f = chain()
    with RunStore(location) as store:
        original = f.run(0, store=store).run_id
        forked = f.fork(original, store=store, at="c", output=0)
        before, after = store.history(original), store.history(forked)
    assert [(v.node, v.started, v.finished) for v in after[1:2]] == [(v.node, v.started, v.finished)
                                                                     for v in before[1:2]]  # b: reused
    assert (after[0].node, after[0].finished, after[0].started) == ("a", before[0].finished, None)  # a: reused source
    assert after[2].finished is not None and before[3].finished is not None and after[2].finished > before[3].finished
