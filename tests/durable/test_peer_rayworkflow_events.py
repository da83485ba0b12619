"""Behaviours ported from Ray Workflows' own tests (ray-project/ray,
``python/ray/workflow/tests/``: ``test_events.py``, ``test_wait_for_event.py``,
``test_event_resume_after_crash.py``, ``test_large_intermediate.py``,
``test_serialization.py``, ``test_dynamic_workflow_ref.py``, ``test_metadata.py``): a
``wait_for_event`` step is a node calling ``interrupt()``, the event is the ``answer`` of
``resume``, a checkpointed event is an answered interrupt.

Deliberately different (docs/durable-runs.md documents ours):
- A Ray workflow waiting for an event keeps running and polls an ``EventListener``; our
  run suspends at ``interrupt()`` (status ``suspended``) and the event is delivered by
  ``resume(run_id, answer=...)``, in any process.
- Ray re-polls an event whose checkpoint a crash cut short; our node's code before its
  ``interrupt()`` call runs again on resume (docs: put side effects after it), and an
  answered ``interrupt()`` returns its journalled answer without asking again.
- ``WorkflowRef`` re-runs (its TODO in ``test_dynamic_workflow_ref``) are our ``fork``.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore


def waits_for(name: str, counter: Counter) -> Any:
    """A node that waits for the event ``name`` (counting how often its code runs)."""

    def node(_: Any) -> Any:
        counter.hit(name)
        return interrupt({"event": name})

    return node


def test_an_event_as_the_whole_workflow_suspends_until_it_is_delivered(store: RunStore) -> None:
    """From test_events.py::test_event_as_workflow."""
    counter = Counter()
    f = Formation("event").add_function("wait", waits_for("e", counter))
    first = f.run(None, store=store, run_id="wf")
    assert (first.status, first.interrupt) == ("suspended", {"node": "wait", "payload": {"event": "e"}})
    assert [r.id for r in store.runs(status="suspended")] == ["wf"]
    done = f.resume("wf", store=store, answer="delivered")
    assert (done.status, done.output) == ("succeeded", "delivered")
    assert store.get("wf").status == "succeeded"


def test_a_step_waiting_for_two_events_gets_both_once_each_is_delivered(store: RunStore) -> None:
    """From test_events.py::test_wait_for_multiple_events."""
    counter = Counter()
    f = (Formation("two").add_function("event1", waits_for("event1", counter))
         .add_function("event2", waits_for("event2", counter))
         .add_function("trivial_step", lambda event1, event2: f"{event1} {event2}")
         .connect("event1", "trivial_step").connect("event2", "trivial_step"))
    first = f.run(None, store=store)
    assert first.status == "suspended" and first.interrupt is not None
    asked = first.interrupt["node"]
    second = f.resume(first.run_id, store=store, answer=asked)
    assert second.status == "suspended" and second.interrupt is not None
    other = second.interrupt["node"]
    assert {asked, other} == {"event1", "event2"}
    done = f.resume(first.run_id, store=store, answer=other)
    assert done.output == "event1 event2"
    assert counter.count(asked) == 2  # asked, then answered; never asked again after


def test_the_other_inputs_of_a_step_finish_while_it_waits_and_do_not_run_again(store: RunStore) -> None:
    """From test_events.py::test_event_after_arg_resolution and
    ::test_event_during_arg_resolution (gather(event, triggers_event) returns both)."""
    counter = Counter()

    def triggers_event(_: Any) -> str:
        counter.hit("triggers_event")
        return "triggered"

    f = (Formation("gather").add_function("event", waits_for("event", counter))
         .add_function("triggers_event", triggers_event)
         .add_function("gather", lambda event, triggers_event: (event, triggers_event))
         .connect("event", "gather").connect("triggers_event", "gather"))
    first = f.run(None, store=store)
    assert first.status == "suspended"
    assert store.load(first.run_id).visits["triggers_event"] == {1: "triggered"}
    done = f.resume(first.run_id, store=store, answer="event")
    assert done.output == ("event", "triggered")
    assert counter.count("triggers_event") == 1


def test_an_answer_of_none_is_no_answer_and_the_step_asks_again(store: RunStore) -> None:
    """From test_events.py::test_event_after_arg_resolution (the event's value is None).
    Ray delivers an event whose value is None; ``resume(answer=None)`` is a resume without
    an answer, so the node asks again (an open question in the report: an ``interrupt()``
    whose answer should be None needs another value, e.g. ``{"value": None}``)."""
    counter = Counter()
    f = Formation("none").add_function("event", waits_for("event", counter))
    first = f.run(None, store=store)
    again = f.resume(first.run_id, store=store, answer=None)
    assert (again.status, again.interrupt) == ("suspended", {"node": "event", "payload": {"event": "event"}})
    assert f.resume(first.run_id, store=store, answer={"value": None}).output == {"value": None}
    assert counter.count("event") == 3


def test_a_delivered_event_is_not_waited_for_again_when_a_later_step_fails(store: RunStore) -> None:
    """From test_events.py::test_crash_after_commit and
    test_event_resume_after_crash.py (the committed event is not polled again)."""
    counter = Counter()
    state = {"down": True}

    def wait_then_finish(event: str) -> str:
        if state["down"]:
            raise ConnectionError("lost the cluster")
        return f"finished with {event}"

    f = (Formation("commit").add_function("wait", waits_for("e", counter))
         .add_function("wait_then_finish", wait_then_finish).connect("wait", "wait_then_finish"))
    first = f.run(None, store=store)
    with pytest.raises(FormationRuntimeError, match="wait_then_finish"):
        f.resume(first.run_id, store=store, answer="ping")
    state["down"] = False
    done = f.resume(first.run_id, store=store)
    assert done.output == "finished with ping"
    assert counter.count("e") == 2  # the question, then its answer; not a third time


def test_code_before_the_wait_runs_again_on_resume_and_code_after_it_once(store: RunStore) -> None:
    """From test_events.py::test_crash_during_event_checkpointing (the listener polls again
    when the event was not checkpointed)."""
    counter = Counter()

    def listener(_: Any) -> str:
        counter.hit("poll")
        event = interrupt("ready?")
        counter.hit("after")
        return str(event)

    f = Formation("poll").add_function("listener", listener)
    first = f.run(None, store=store)
    assert counter.calls == {"poll": 1}
    assert f.resume(first.run_id, store=store, answer="event").output == "event"
    assert counter.calls == {"poll": 2, "after": 1}


def test_an_event_awaited_inside_a_nested_formation_suspends_the_outer_run(store: RunStore) -> None:
    """From test_events.py::test_sleep (an event step inside a continuation)."""
    counter = Counter()
    inner = (Formation("inner").add_function("wait", waits_for("inner", counter))
             .add_function("after_wait", lambda e: f"after {e}").connect("wait", "after_wait"))
    f = (Formation("outer").add_function("before", lambda x: x).add_formation("nested", inner)
         .connect("before", "nested"))
    first = f.run("x", store=store)
    assert first.status == "suspended"
    assert store.get(first.run_id).status == "suspended"
    assert f.resume(first.run_id, store=store, answer="woke").output == "after woke"
    assert counter.count("inner") == 2


def test_waiting_for_an_event_without_a_store_says_a_store_is_needed() -> None:
    """From test_events.py::test_types (a wrong use of wait_for_event is refused with a
    clear error)."""
    f = Formation("nostore").add_function("wait", waits_for("e", Counter()))
    with pytest.raises(FormationRuntimeError, match="store"):
        f.run(None)


# --- what the journal keeps ---------------------------------------------------------------


def test_a_large_intermediate_output_reaches_the_next_step_whole_after_a_resume(store: RunStore) -> None:
    """From test_large_intermediate.py::test_simple_large_intermediate."""
    state = {"down": True}
    big = "x" * 2_000_000

    def average(s: str) -> int:
        if state["down"]:
            raise ConnectionError("down")
        return len(s)

    f = Formation("large").add_function("large_input", lambda n: big[:n]).add_function("average", average)
    f.connect("large_input", "average")
    with pytest.raises(FormationRuntimeError) as failed:
        f.run(2_000_000, store=store)
    state["down"] = False
    assert f.resume(str(failed.value.run_id), store=store).output == 2_000_000


class Point(BaseModel):
    x: int
    tags: list[str]


def test_outputs_of_other_types_reach_the_next_step_as_themselves_after_a_resume(store: RunStore) -> None:
    """From test_serialization.py (step outputs round-trip through the checkpoint): the
    resumed run's result is the uninterrupted run's."""
    state = {"down": False}

    def make(_: Any) -> dict[str, Any]:
        return {"t": (1, "a"), "s": {1, 2}, "b": b"\x00raw", "p": Point(x=1, tags=["a"])}

    def check(v: dict[str, Any]) -> tuple[str, ...]:
        if state["down"]:
            raise ConnectionError("down")
        return (*(type(v[k]).__name__ for k in ("t", "s", "b", "p")), repr(v["p"]))

    f = Formation("types").add_function("make", make).add_function("check", check).connect("make", "check")
    plain = f.run(None, store=store).output
    state["down"] = True
    with pytest.raises(FormationRuntimeError) as failed:
        f.run(None, store=store)
    state["down"] = False
    assert f.resume(str(failed.value.run_id), store=store).output == plain == (
        "tuple", "set", "bytes", "Point", "Point(x=1, tags=['a'])")


def test_a_fork_reruns_a_finished_run_from_a_step_with_a_new_input(store: RunStore) -> None:
    """From test_dynamic_workflow_ref.py::test_dynamic_workflow_ref (its TODO: rerun a
    finished workflow to get 2 instead of the checkpointed 1)."""
    counter = Counter()

    def incr(x: int) -> int:
        counter.hit("incr")
        return x + 1

    f = Formation("ref").add_function("incr", incr).add_function("out", lambda x: x).connect("incr", "out")
    run_id = f.run(0, store=store).run_id
    forked = f.fork(run_id, store=store, at="incr", input=1)
    assert store.load(forked).visits["out"] == {1: 2}
    assert store.load(run_id).visits["out"] == {1: 1}
    assert counter.count("incr") == 2


def test_a_runs_record_and_its_visits_carry_times_in_order(store: RunStore) -> None:
    """From test_metadata.py::test_step_user_metadata / test_workflow_runtime_metadata
    (start and end times of the workflow and of each step)."""
    f = (Formation("meta").add_function("a", lambda x: x).add_function("b", lambda x: x)
         .connect("a", "b"))
    result = f.run(1, store=store, run_id="meta-run")
    record = store.get("meta-run")
    assert (record.formation, record.status) == ("meta", "succeeded")
    assert record.created <= record.updated
    visits = store.history(result.run_id)
    assert [v.node for v in visits] == ["a", "b"]
    for v in visits:
        assert v.started is not None and v.finished is not None
        assert record.created <= v.started <= v.finished <= record.updated
    assert visits[0].finished <= visits[1].started  # type: ignore[operator]
