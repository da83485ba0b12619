"""A question whose branch loses a ``join="any"`` while the run waits to suspend is
withdrawn, and the run goes on (formation/_suspending.py's ``_withdrawn``): the pattern
"a person approves, or the automatic path decides first" (Inngest's and Hatchet's waits
that lose their race). Where the run cannot know the question is moot, it suspends as
before."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter, until
from wingman_actors import Formation, interrupt
from wingman_actors.store import NoPendingInterruptError, RunStore


def _asked(store: RunStore) -> bool:
    return any(store.load(r.id).interrupts for r in store.runs())


def _race(store: RunStore, auto: Any, **first: Any) -> Formation:
    def human(q: str) -> str:
        return f"human: {interrupt('approve?')}"

    return (Formation("approval").add_function("ask", str.strip).add_function("auto", auto)
            .add_function("human", human).add_function("first", lambda answers: answers, join="any", **first)
            .connect("ask", "auto", "first").connect("ask", "human", "first"))


def test_the_withdrawn_question_is_journalled_on_both_stores_and_takes_no_answer(location: str) -> None:
    with RunStore(location) as store:
        def auto(q: str) -> str:
            until(lambda: _asked(store), within=5)
            return f"auto: {q}"

        f = _race(store, auto)
        result = f.run(" q ", store=store)
        assert (result.status, result.output) == ("succeeded", {"auto": "auto: q"})
        record = store.load(result.run_id)
        (question,) = record.interrupts
        assert (question.node, question.payload, question.withdrawn, question.answered) == (
            "human", "approve?", True, False)
        assert record.pending_interrupt is None and store.get(result.run_id).interrupt is None
        withdrawn = [e for e in record.entries if e.kind == "withdrawn"]
        assert [(e.node, e.visit) for e in withdrawn] == [("human", 1)]
        assert "'first' (join='any') fired without it" in withdrawn[0].value
        with pytest.raises(NoPendingInterruptError):
            store.answer(result.run_id, "too late")


def test_a_condition_on_the_winning_edge_is_evaluated_once(store: RunStore) -> None:
    checks = Counter()

    def auto(q: str) -> str:
        until(lambda: _asked(store), within=5)
        return "auto"

    def human(q: str) -> str:
        return str(interrupt("approve?"))

    def decided(v: str) -> bool:
        checks.hit("decided")
        return True

    f = (Formation("approval").add_function("ask", str.strip).add_function("auto", auto)
         .add_function("human", human).add_function("first", lambda answers: answers, join="any")
         .add_function("audit", lambda v: v)
         .connect("ask", "auto").connect("auto", "first", when=decided).connect("auto", "audit", when=lambda v: False)
         .connect("ask", "human", "first"))
    result = f.run("q", store=store)
    assert (result.status, result.outputs["first"]) == ("succeeded", {"auto": "auto"})
    assert checks.count("decided") == 1 and result.nodes["audit"].status == "skipped"


def test_a_branch_that_fails_meanwhile_keeps_the_suspension_and_the_resume_goes_on(store: RunStore) -> None:
    """A visit that fails while the run waits runs again on resume, so the run cannot go on
    without it: it suspends at the question as before, and the resume settles the race."""
    calls = Counter()

    def auto(q: str) -> str:
        until(lambda: _asked(store), within=5)
        return "auto"

    def flaky(q: str) -> str:
        if calls.hit("flaky") == 1:
            until(lambda: _asked(store), within=5)
            raise ConnectionError("once")
        return "flaky"

    def human(q: str) -> str:
        return str(interrupt("approve?"))

    f = (Formation("approval").add_function("ask", str.strip).add_function("auto", auto)
         .add_function("human", human).add_function("flaky", flaky)
         .add_function("first", lambda answers: answers, join="any").add_function("log", lambda v: v)
         .connect("ask", "auto", "first").connect("ask", "human", "first").connect("ask", "flaky", "log"))
    paused = f.run("q", store=store)
    assert (paused.status, paused.interrupt) == ("suspended", {"node": "human", "payload": "approve?"})
    assert store.load(paused.run_id).pending_interrupt is not None
    done = f.resume(paused.run_id, store=store, answer="yes")
    assert done.status == "succeeded" and done.outputs["log"] == "flaky"
    assert done.outputs["first"] in ({"auto": "auto"}, {"human": "yes"})


def test_a_breakpoint_is_not_withdrawn(store: RunStore) -> None:
    """A breakpoint is the caller's own stop, not a question a race can make moot."""
    def auto(q: str) -> str:
        return "auto"

    f = _race(store, auto)
    paused = f.run("q", store=store, break_before=["human"])
    assert paused.status == "suspended" and paused.interrupt is not None
    assert paused.interrupt["node"] == "human"


def test_a_question_asked_inside_a_formation_node_still_suspends_the_run(store: RunStore) -> None:
    """The inner run holds the question (its own journal); withdrawing it is not done:
    the run suspends as before, and the resume settles the race."""
    def auto(q: str) -> str:
        until(lambda: _asked(store), within=5)
        return "auto"

    inner = Formation("person").add_function("human", lambda q: f"human: {interrupt('approve?')}")
    f = (Formation("approval").add_function("ask", str.strip).add_function("auto", auto)
         .add_formation("person", inner).add_function("first", lambda answers: answers, join="any")
         .connect("ask", "auto", "first").connect("ask", "person", "first"))
    paused = f.run("q", store=store)
    assert (paused.status, paused.interrupt) == ("suspended", {"node": "person/human", "payload": "approve?"})
    done = f.resume(paused.run_id, store=store, answer="yes")
    assert (done.status, done.output) == ("succeeded", {"auto": "auto"})


def test_a_run_that_fails_after_the_withdrawal_resumes_without_asking_again(store: RunStore) -> None:
    """The withdrawal is journalled before the winner's value goes on: a resume of the run
    (failed further on here, as a crash would leave it) replays the winner, and the
    question is not asked again."""
    calls = Counter()

    def auto(q: str) -> str:
        until(lambda: _asked(store), within=5)
        return "auto"

    def human(q: str) -> str:
        calls.hit("human")
        return str(interrupt("approve?"))

    def after(answers: dict[str, str]) -> dict[str, str]:
        if calls.hit("after") == 1:
            raise ConnectionError("once")
        return answers

    f = (Formation("approval").add_function("ask", str.strip).add_function("auto", auto)
         .add_function("human", human).add_function("first", lambda answers: answers, join="any")
         .add_function("after", after)
         .connect("ask", "auto", "first").connect("ask", "human", "first").connect("first", "after"))
    with pytest.raises(Exception, match="once") as failed:
        f.run("q", store=store)
    run_id = str(getattr(failed.value, "run_id", ""))
    assert store.load(run_id).pending_interrupt is None
    done = f.resume(run_id, store=store)
    assert (done.status, done.output) == ("succeeded", {"auto": "auto"})
    assert calls.count("human") == 1 and done.nodes["human"].status == "cancelled"


def test_a_race_won_before_anyone_asks_still_cancels_the_asker_without_a_question(store: RunStore) -> None:
    """The race decided before the question: nothing is journalled for it (unchanged)."""
    won = threading.Event()

    def human(q: str) -> str:
        won.wait(5)
        return str(interrupt("approve?"))

    def first(answers: dict[str, str]) -> dict[str, str]:
        won.set()
        return answers

    f = (Formation("approval").add_function("ask", str.strip).add_function("auto", lambda q: "auto")
         .add_function("human", human).add_function("first", first, join="any")
         .connect("ask", "auto", "first").connect("ask", "human", "first"))
    result = f.run("q", store=store)
    assert (result.status, result.output) == ("succeeded", {"auto": "auto"})
    assert store.load(result.run_id).interrupts == ()


def test_a_question_from_a_map_item_is_withdrawn_with_its_item(store: RunStore) -> None:
    def auto(q: list[int]) -> str:
        until(lambda: _asked(store), within=5)
        return "auto"

    def person(x: int) -> str:
        return f"{x}: {interrupt('ok?')}" if x == 2 else str(x)

    f = (Formation("approval").add_function("ask", lambda q: [1, 2, 3]).add_function("auto", auto)
         .add_map("people", person).add_function("first", lambda answers: answers, join="any")
         .connect("ask", "auto", "first").connect("ask", "people", "first"))
    result = f.run("q", store=store)
    assert (result.status, result.output, result.nodes["people"].status) == ("succeeded", {"auto": "auto"}, "cancelled")
    (question,) = store.load(result.run_id).interrupts
    assert (question.node, question.item, question.withdrawn) == ("people", 1, True)


def test_the_run_viewer_lists_the_withdrawn_visit_as_skipped_with_its_reason(store: RunStore) -> None:
    from wingman_actors.server._viewer import _visits

    def auto(q: str) -> str:
        until(lambda: _asked(store), within=5)
        return "auto"

    result = _race(store, auto).run("q", store=store)
    visits = {v["node"]: v for v in _visits(store.load(result.run_id), "q")}
    assert visits["human"]["status"] == "skipped" and "fired without it" in visits["human"]["error"]
    assert visits["first"]["status"] == "succeeded"
