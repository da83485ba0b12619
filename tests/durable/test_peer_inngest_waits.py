"""Waits, their time limits and their answers, ported from the Inngest Python SDK's own test
suite (inngest/inngest-py, ``tests/test_function/cases/wait_for_event_*.py``, ``cancel.py``,
``parallel_steps.py``): ``step.wait_for_event`` is ``interrupt()``, the event that fulfils
it is ``resume(..., answer=)``; see ``test_peer_inngest_more.py`` for the rest.

Deliberately different (docs/durable-runs.md documents ours): a ``wait_for_event``
timeout makes the wait return None and the function go on; our run's ``timeout`` ends
the wait for what is in flight when a node asked, and the run suspends (it does not fail):
that in-flight work runs again on resume.
"""

from __future__ import annotations

import contextvars
import threading
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.peers import Counter, until
from wingman_actors import Agent, Formation, Session, interrupt, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.store import RunNotResumableError, RunStore
from wingman_actors.testing import ScriptedProvider


def waiting_beside(counter: Counter, release: threading.Event) -> Formation:
    """``start -> (slow, ask) -> join``: ``slow`` waits for ``release``, ``ask`` waits for an answer."""

    def slow(x: str) -> str:
        counter.hit("slow")
        release.wait(10)
        return f"{x} slow"

    return (Formation("beside").add_function("start", str).add_function("slow", slow)
            .add_function("ask", lambda x: f"{x} {interrupt('go?')}")
            .add_function("join", lambda slow, ask: [slow, ask])
            .connect("start", "slow", "join").connect("start", "ask", "join"))


def test_the_runs_timeout_ends_the_wait_for_work_in_flight_and_the_run_suspends(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_timeout.py (a wait bounded
    in time; differs: see the module docstring)."""
    counter, release = Counter(), threading.Event()
    f = waiting_beside(counter, release)
    try:
        started = time.monotonic()
        first = f.run("x", store=store, timeout=0.5)
        assert time.monotonic() - started < 3
    finally:
        release.set()
    assert (first.status, first.interrupt) == ("suspended", {"node": "ask", "payload": "go?"})
    assert store.get(first.run_id).status == "suspended" and first.nodes["slow"].status == "pending"
    done = f.resume(first.run_id, store=store, answer="yes")
    assert done.output == ["x slow", "x yes"]
    assert counter.count("slow") == 2  # it was in flight when the run suspended: it runs again


def test_a_run_cancelled_while_it_waits_to_suspend_ends_cancelled_and_resumes_with_the_answer(
        store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/cancel.py (a cancel reaches a run that waits)."""
    counter, release = Counter(), threading.Event()
    f = waiting_beside(counter, release)
    try:
        with f.start(store=store) as running:
            future = running.submit("x")
            assert until(lambda: counter.count("slow") == 1)
            assert until(lambda: any(i.node == "ask" for i in store.load(future.run_id).interrupts))
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(5)
    finally:
        release.set()
    assert until(lambda: store.get(future.run_id).status == "cancelled")
    done = f.resume(future.run_id, store=store, answer="yes")
    assert done.output == ["x slow", "x yes"]


def test_two_answers_sent_at_once_fulfil_the_wait_once(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_fulfill.py (one event fulfils
    one wait)."""
    answers: list[Any] = []

    def ask(x: str) -> str:
        answer = interrupt("which?")
        answers.append(answer)
        time.sleep(0.2)  # the other resume arrives meanwhile
        return f"{x}:{answer}"

    f = Formation("once").add_function("ask", ask)
    run_id = f.run("x", store=store).run_id
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(f.resume, run_id, store=store, answer=a) for a in ("A", "B")]
        outcomes = [fut.exception() or fut.result().output for fut in futures]
    won = [o for o in outcomes if isinstance(o, str)]
    refused = [o for o in outcomes if isinstance(o, RunNotResumableError)]
    assert len(won) == 1 and len(refused) == 1 and answers == [won[0][2:]]
    assert "running" in str(refused[0])
    assert store.get(run_id).status == "succeeded"


def test_a_fulfilled_wait_cannot_be_answered_again(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_fulfill.py (a second event
    finds no wait)."""
    f = Formation("done").add_function("ask", lambda x: f"{x}:{interrupt('q')}")
    run_id = f.run("x", store=store).run_id
    assert f.resume(run_id, store=store, answer="A").output == "x:A"
    with pytest.raises(RunNotResumableError, match="already succeeded"):
        f.resume(run_id, store=store, answer="B")
    assert store.load(run_id).visits["ask"] == {1: "x:A"}


@tool
def confirm(action: str) -> str:
    """Ask a person to confirm ``action``."""
    return f"{action}: {interrupt({'confirm': action})}"


def test_a_waiting_session_answered_once_cannot_be_answered_again(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_fulfill.py, on a session."""
    model = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "confirm", {"action": "pay"})]),
                              lambda request: f"done ({request.messages[-1].content[0].content})"])
    agent = Agent("payer", provider=model, tools=[confirm])
    session = Session(agent, store=store)
    assert session.run("pay the bill").status == "suspended"
    assert Session(agent, store=store).resume(session.id, answer="yes").response == "done (pay: yes)"
    with pytest.raises(RunNotResumableError, match="already succeeded"):
        Session(agent, store=store).resume(session.id, answer="no")
    assert model.calls == 2


def test_a_waiting_session_that_is_never_answered_expires(tmp_path: Any) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_timeout.py, on a session
    (differs: it expires, see ``test_peer_inngest_more.py``)."""
    model = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "confirm", {"action": "pay"})]), "never"])
    agent = Agent("payer", provider=model, tools=[confirm])
    with RunStore(tmp_path / "ttl.sqlite", suspend_ttl=0.3) as store:
        session = Session(agent, store=store)
        assert session.run("pay").status == "suspended"
        assert until(lambda: store.get(session.id).status == "expired", within=10)
        with pytest.raises(RunNotResumableError, match="expired"):
            Session(agent, store=store).resume(session.id, answer="yes")
    assert model.calls == 1


# --- asyncio.FIRST_COMPLETED: join="any" ------------------------------------------------


def test_a_race_won_before_a_failure_is_won_by_the_same_branch_on_resume(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/asyncio_first_completed.py (the first step
    to finish wins; a replay sees the same winner)."""
    counter, answered = Counter(), threading.Event()

    def slow(q: str) -> str:
        counter.hit("slow")
        answered.wait(10)
        return f"slow: {q}"

    def after(answers: dict[str, str]) -> dict[str, str]:
        if counter.hit("after") == 1:
            raise ConnectionError("once")
        return answers

    f = (Formation("race").add_function("ask", str.strip).add_function("fast", lambda q: f"fast: {q}")
         .add_function("slow", slow).add_function("first", lambda answers: answers, join="any")
         .add_function("after", after)
         .connect("ask", "fast", "first").connect("ask", "slow", "first").connect("first", "after"))
    try:
        with pytest.raises(Exception) as caught:
            f.run(" why? ", store=store)
    finally:
        answered.set()
    run_id = str(getattr(caught.value, "run_id", None))
    assert store.load(run_id).visits["first"] == {1: {"fast": "fast: why?"}}
    result = f.resume(run_id, store=store)
    assert result.output == {"fast": "fast: why?"}
    assert counter.count("after") == 2
    assert counter.count("slow") <= 1  # (cancelled when fast won, before or after it started; never again)
    assert result.nodes["slow"].status == "cancelled"


def test_a_step_that_finishes_while_a_racing_wait_suspends_the_run_wins_and_the_wait_is_withdrawn(
        store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/asyncio_first_completed.py with
    wait_for_event_fulfill.py: Inngest goes on with the step that finished first and drops
    the wait. Ours: the question starts the run's suspension, which waits for the step in
    flight; the step finishes and wins the ``join="any"``, so the question is withdrawn
    (journalled so: no longer pending, it takes no answer) and the run goes on."""
    calls = Counter()

    def auto(q: str) -> str:
        calls.hit("auto")
        until(lambda: any(store.load(r.id).interrupts for r in store.runs()), within=5)  # the question is asked
        return f"auto: {q}"

    def human(q: str) -> str:
        calls.hit("human")
        return f"human: {interrupt('approve?')}"

    f = (Formation("approval").add_function("ask", str.strip).add_function("auto", auto).add_function("human", human)
         .add_function("first", lambda answers: answers, join="any")
         .connect("ask", "auto", "first").connect("ask", "human", "first"))
    events: list[Any] = []
    done = f.run("q", store=store, on_event=events.append)
    assert (done.status, done.interrupt, done.output) == ("succeeded", None, {"auto": "auto: q"})
    assert done.nodes["human"].status == "cancelled" and calls.calls == {"auto": 1, "human": 1}
    assert any(e.type.value == "node_skipped" and e.node == "human" and e.data.get("cancelled") for e in events)
    record = store.load(done.run_id)
    assert record.run.status == "succeeded" and record.run.interrupt is None and record.pending_interrupt is None
    assert [e.kind for e in record.entries if e.node == "human"] == ["interrupt", "withdrawn"]
    visits = {(v.node, v.status) for v in store.history(done.run_id)}
    assert ("human", "skipped") in visits and ("first", "succeeded") in visits
    with pytest.raises(RunNotResumableError):
        f.resume(done.run_id, store=store, answer="approved")


# --- a wait called from a thread the step started -------------------------------------


def test_a_wait_called_in_a_thread_the_node_started_says_how_to_give_it_the_runs_context(store: RunStore) -> None:
    """Found while porting inngest-py tests/test_function/cases/wait_for_event_fulfill.py
    (a wait called where the run's context is not reached; not a case of Inngest's own):
    the error named only a missing store, though the run had one."""

    def threaded(x: str) -> str:
        with ThreadPoolExecutor(1) as pool:
            return f"{x}:{pool.submit(interrupt, 'which?').result()}"

    with pytest.raises(Exception, match=r"copy_context\(\) in the node, then ctx\.run\(fn, \.\.\.\) in the thread"):
        Formation("thread").add_function("n", threaded).run("x", store=store)


def test_a_wait_called_in_a_thread_run_in_the_nodes_context_suspends_and_resumes(store: RunStore) -> None:
    """Found while porting inngest-py tests/test_function/cases/wait_for_event_fulfill.py
    (the fix the error names works)."""

    def threaded(x: str) -> str:
        ctx = contextvars.copy_context()
        with ThreadPoolExecutor(1) as pool:
            return f"{x}:{pool.submit(ctx.run, interrupt, 'which?').result()}"

    f = Formation("thread").add_function("n", threaded)
    first = f.run("x", store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "n", "payload": "which?"})
    assert f.resume(first.run_id, store=store, answer="A").output == "x:A"
