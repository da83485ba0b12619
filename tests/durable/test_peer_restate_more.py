"""Behaviours ported from Restate's Python SDK (restatedev/sdk-python: ``examples/``
``workflow.py``, ``virtual_object.py``, ``greeter.py`` and the docstrings of ``Context``,
``ObjectContext`` and ``WorkflowContext``) and Restate's end-to-end suite (restatedev/e2e:
``AwakeableHolder``, ``CancelTest``, ``Counter``, ``MapObject``, ``WorkflowAPIBlockAndWait``,
``UpgradeTest``): an awakeable (a durable promise another party resolves) is
``interrupt()`` answered by ``resume(..., answer=...)``, a workflow's ``run`` handler is a
journalled run keyed by its ``run_id``, its shared handlers are the store's reads, a
virtual object's exclusive handler is a node with ``concurrency=1`` over a ``Blackboard``,
and restarting an invocation from a prefix of its journal is ``fork``. Sessions that wait
(``Session(agent, store=...)``) are agents awaiting an awakeable.

Deliberately different (DESIGN.md and docs/ document ours):
- A virtual object is exclusive per key: calls for different keys run at once. A node's
  ``concurrency`` is per node, so ``concurrency=1`` serialises every call, whatever key.
- Virtual object state is journalled with the invocation; a ``Blackboard`` is not
  (docs/durable-runs.md): a resumed run needs the board it is given.
- A Restate awakeable may be rejected (the awaiting code gets a ``TerminalError``); an
  answer is a value, and the code that asked decides what a refusal means.
- A virtual object's next call waits for the exclusive call in progress, awakeable waits
  included; a session waiting for an answer is not running, so another message to it runs
  at once, and the waiting turn later resumes from the history it had when it suspended.
- Cancelling an invocation waiting on an awakeable fails it for good; a suspended run is
  ended with ``store.set_status(run_id, "cancelled")`` and ``resume`` still continues it.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

import pytest

from tests.support.peers import Counter, InFlight
from wingman_actors import Agent, Formation, Session, interrupt, tool
from wingman_actors.core import InferenceResponse, Usage
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunNotResumableError, RunStore, StoreError
from wingman_actors.testing import ScriptedProvider


def rid(future: Future[Any]) -> str:
    """The run id a ``submit`` future carries."""
    return str(future.run_id)  # type: ignore[attr-defined]


def payment(counter: Counter) -> Formation:
    """examples/workflow.py's payment: ``charge`` (a side effect), then ``verify`` waits for
    the provider's verdict (the promise ``verify.payment``), then ``finish``."""

    def charge(amount: int) -> int:
        counter.hit("charge")
        return amount

    def verify(amount: int) -> dict[str, Any]:
        counter.hit("verify")
        verdict = interrupt({"verify": "payment", "amount": amount})
        if verdict != "approved":
            raise Declined(f"Payment declined: {verdict}")
        return {"success": True, "amount": amount}

    return (Formation("payment").add_function("charge", charge).add_function("verify", verify)
            .add_function("finish", lambda r: f"paid {r['amount']}").connect("charge", "verify").connect("verify", "finish"))


class Declined(Exception):
    """The workflow's ``TerminalError(message="Payment declined", status_code=401)``."""

    retryable = False


# --- awakeables / workflow promises ---------------------------------------------------


def test_a_workflow_waiting_on_its_promise_suspends_and_the_resolved_value_completes_it(store: RunStore) -> None:
    """From restate sdk-python examples/workflow.py (pay waits on ctx.promise('verify.payment'))."""
    counter = Counter()
    f = payment(counter)
    first = f.run(100, store=store, run_id="pay-1")
    assert (first.status, first.interrupt) == ("suspended", {"node": "verify", "payload": {"verify": "payment", "amount": 100}})
    done = f.resume("pay-1", store=store, answer="approved")
    assert (done.status, done.output) == ("succeeded", "paid 100")
    assert counter.calls == {"charge": 1, "verify": 2}


def test_a_declined_promise_ends_the_workflow_with_its_terminal_error_not_retried(store: RunStore) -> None:
    """From restate sdk-python examples/workflow.py (declined: TerminalError('Payment declined'))."""
    counter = Counter()
    f = payment(counter)
    f.graph.nodes["verify"]["retries"] = 3
    assert f.run(7, store=store, run_id="pay-2").status == "suspended"
    with pytest.raises(FormationRuntimeError, match="Payment declined: declined") as caught:
        f.resume("pay-2", store=store, answer="declined")
    assert caught.value.node == "verify" and caught.value.attempts == 1
    assert store.get("pay-2").status == "failed"
    assert counter.calls == {"charge": 1, "verify": 2}


def test_a_workflows_status_is_readable_while_it_waits_on_its_promise(store: RunStore) -> None:
    """From restate sdk-python examples/workflow.py (a shared handler reads the status the
    run handler set) and e2e WorkflowAPIBlockAndWait; ours: the store's record of the run."""
    f = payment(Counter())
    f.run(3, store=store, run_id="pay-3")
    record = store.get("pay-3")
    assert record.status == "suspended"
    assert store.load("pay-3").visits == {"charge": {1: 3}}
    assert [(v.node, v.status) for v in store.history("pay-3")] == [("charge", "succeeded"), ("verify", "suspended")]


def test_a_workflow_key_runs_once_and_a_second_run_under_it_is_refused(store: RunStore) -> None:
    """From restate sdk-python docstring of Workflow (the run handler runs exactly once per key)."""
    counter = Counter()
    f = payment(counter)
    f.run(5, store=store, run_id="pay-4")
    with pytest.raises(StoreError, match="pay-4"):
        f.run(5, store=store, run_id="pay-4")
    assert counter.calls == {"charge": 1, "verify": 1}
    assert store.get("pay-4").status == "suspended"


def test_an_awakeable_resolved_from_another_store_handle_completes_the_run(location: str) -> None:
    """From restatedev/e2e AwakeableHolder (one invocation holds the awakeable, another
    resolves it); ours: a second formation and store on the same file (or PostgreSQL
    database) resume the run."""
    counter = Counter()
    with RunStore(location) as store:
        first = payment(counter).run(9, store=store, run_id="pay-5")
        assert first.status == "suspended"
        with RunStore(location) as other:
            done = payment(counter).resume("pay-5", store=other, answer="approved")
        assert done.output == "paid 9"
        assert store.get("pay-5").status == "succeeded"
    assert counter.calls == {"charge": 1, "verify": 2}


def test_an_awakeable_may_carry_any_journalled_value_back(store: RunStore) -> None:
    """From restatedev/e2e AwakeableHolder (the resolved payload reaches the awaiting code)."""

    def wait(x: str) -> Any:
        return interrupt({"need": x})

    f = Formation("holder").add_function("wait", wait)
    assert f.run("data", store=store, run_id="aw-1").status == "suspended"
    answer = {"items": [1, 2.5, None, "x"], "nested": {"ok": True}}
    assert f.resume("aw-1", store=store, answer=answer).output == answer


def test_two_awakeables_in_one_step_are_resolved_one_after_the_other(store: RunStore) -> None:
    """From restatedev/e2e AwakeableHolder / Combinators (awaiting several awakeables in turn)."""
    side_effects = Counter()

    def two(x: str) -> str:
        first = interrupt("first?")
        second = interrupt("second?")
        side_effects.hit("after")
        return f"{x}:{first}+{second}"

    f = Formation("two").add_function("two", two)
    assert f.run("x", store=store, run_id="aw-2").interrupt == {"node": "two", "payload": "first?"}
    again = f.resume("aw-2", store=store, answer="a")
    assert (again.status, again.interrupt) == ("suspended", {"node": "two", "payload": "second?"})
    assert f.resume("aw-2", store=store, answer="b").output == "x:a+b"
    assert side_effects.count("after") == 1


def test_cancelling_a_run_waiting_on_an_awakeable_goes_through_the_store(store: RunStore) -> None:
    """From restatedev/e2e CancelTest (cancel an invocation blocked on an awakeable): a
    suspended run is not running, so ``cancel`` says False; the store ends it."""
    f = payment(Counter())
    f.run(1, store=store, run_id="pay-6")
    with f.start(store=store) as running:
        assert running.cancel("pay-6") is False
    assert store.request_cancel("pay-6") is False
    store.set_status("pay-6", "cancelled")
    assert store.get("pay-6").status == "cancelled"


def test_a_cancelled_waiting_run_is_still_resumed_by_its_answer(store: RunStore) -> None:
    """From restatedev/e2e CancelTest; ours differs (see the module docstring): resume
    continues a cancelled run, and the answer reaches the interrupt that waited."""
    counter = Counter()
    f = payment(counter)
    f.run(2, store=store, run_id="pay-7")
    store.set_status("pay-7", "cancelled")
    done = f.resume("pay-7", store=store, answer="approved")
    assert (done.status, done.output) == ("succeeded", "paid 2")
    assert counter.count("charge") == 1


# --- restart from a journal prefix: fork ---------------------------------------------------


def test_a_waiting_run_forked_past_its_promise_completes_and_the_original_still_waits(store: RunStore) -> None:
    """From restate 'restart as new' (a new invocation reusing the journal prefix); ours is
    ``fork(at=..., output=...)``."""
    counter = Counter()
    f = payment(counter)
    f.run(4, store=store, run_id="pay-8")
    forked = f.fork("pay-8", store=store, at="verify", output={"success": True, "amount": 4})
    assert forked != "pay-8"
    assert store.get(forked).status == "succeeded"
    assert store.load(forked).visits["finish"] == {1: "paid 4"}
    assert store.get("pay-8").status == "suspended"
    assert counter.calls == {"charge": 1, "verify": 1}


def test_a_failed_run_forked_at_its_failed_step_with_an_output_continues_from_it(store: RunStore) -> None:
    """From restate 'restart as new from entry' (replace what failed, keep what came before)."""
    counter = Counter()

    def book(x: str) -> str:
        counter.hit("book")
        raise ConnectionError("provider down")

    f = (Formation("trip").add_function("plan", lambda x: f"plan {x}").add_function("book", book)
         .add_function("confirm", lambda x: f"confirmed {x}").connect("plan", "book").connect("book", "confirm"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("lisbon", store=store)
    failed = caught.value.run_id
    assert failed is not None
    forked = f.fork(failed, store=store, at="book", output="booked by hand")
    assert store.load(forked).visits == {"plan": {1: "plan lisbon"}, "book": {1: "booked by hand"},
                                         "confirm": {1: "confirmed booked by hand"}}
    assert store.get(failed).status == "failed" and counter.count("book") == 1


# --- virtual objects: keyed state, exclusive handlers -----------------------------------


def test_an_exclusive_handler_serialises_read_modify_write_on_object_state(store: RunStore) -> None:
    """From restatedev/e2e Counter (concurrent add calls on one key all count) and
    sdk-python examples/virtual_object.py (ctx.get / ctx.set in an exclusive handler)."""
    board, flight = Blackboard(), InFlight()

    def add(req: dict[str, Any], blackboard: Blackboard) -> dict[str, int]:
        with flight:
            key = f"counter/{req['key']}"
            old = blackboard.get(key) or 0
            threading.Event().wait(0.002)  # widen the window a racing handler would use
            blackboard.set(key, old + req["delta"])
            return {"old": old, "new": old + req["delta"]}

    f = Formation("counter").add_function("add", add, concurrency=1)
    with f.start(store=store, blackboard=board) as running:
        futures = [running.submit({"key": "k", "delta": 1}) for _ in range(8)]
        results = [fut.result(timeout=20).output for fut in futures]
    assert board.get("counter/k") == 8 and flight.peak == 1
    assert sorted(r["old"] for r in results) == list(range(8))


def test_object_state_that_was_never_set_reads_as_none(store: RunStore) -> None:
    """From restate sdk-python docstring of ObjectContext.get (None when the key has no value)
    and e2e MapObject (clear, then get)."""
    board = Blackboard()

    def handler(key: str, blackboard: Blackboard) -> list[Any]:
        before = blackboard.get(key)
        blackboard.set(key, "v")
        blackboard.delete(key)
        return [before, blackboard.get(key), sorted(blackboard.keys())]

    assert Formation("map").add_function("h", handler).run("missing", store=store, blackboard=board).output == [None, None, []]


def test_object_state_is_not_journalled_so_a_resume_sees_the_board_it_is_given(store: RunStore) -> None:
    """From restate sdk-python docstring of ObjectContext.set (state is durable with the
    invocation); ours differs (see the module docstring)."""
    state = {"down": True}

    def write(x: str, blackboard: Blackboard) -> str:
        blackboard.set("greeting", f"hello {x}")
        return x

    def read(x: str, blackboard: Blackboard) -> Any:
        if state["down"]:
            raise ConnectionError("down")
        return blackboard.get("greeting")

    f = Formation("obj").add_function("write", write).add_function("read", read).connect("write", "read")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("bob", store=store, blackboard=Blackboard())
    state["down"] = False
    run_id = caught.value.run_id or ""
    assert f.resume(run_id, store=store, blackboard=Blackboard()).output is None


# --- sessions awaiting awakeables ----------------------------------------------------------


@tool
def approve(what: str) -> str:
    """Ask a person to approve ``what``."""
    return f"{what}={interrupt({'approve': what})}"


def approvals_model() -> ScriptedProvider:
    """A model that asks for two approvals, one after the other, then answers."""
    return ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "approve", {"what": "a"})]).model_copy(
            update={"usage": Usage(input_tokens=10, output_tokens=1)}),
        InferenceResponse.of_tool_calls([("c2", "approve", {"what": "b"})]).model_copy(
            update={"usage": Usage(input_tokens=20, output_tokens=2)}),
        InferenceResponse.of_text("done", usage=Usage(input_tokens=30, output_tokens=3)),
    ])


def test_a_session_awaiting_two_awakeables_in_turn_makes_each_model_call_once(store: RunStore) -> None:
    """From restatedev/e2e AwakeableHolder with an agent (sdk-python's agent examples wait
    on an awakeable inside a tool)."""
    model = approvals_model()
    agent = Agent("approver", provider=model, tools=[approve])
    session = Session(agent, store=store)
    first = session.run("go")
    assert (first.status, first.interrupt) == ("suspended", {"approve": "a"})
    second = Session(agent, store=store).resume(session.id, answer="yes")
    assert (second.status, second.interrupt) == ("suspended", {"approve": "b"})
    done = Session(agent, store=store).resume(session.id, answer="no")
    assert (done.status, done.response) == ("succeeded", "done")
    assert [c.output for c in done.tool_calls] == ["a=yes", "b=no"]
    assert model.calls == 3
    assert (done.usage.input_tokens, done.usage.output_tokens) == (60, 6)


def test_a_finished_session_cannot_be_resumed_again(store: RunStore) -> None:
    """From restatedev/e2e AwakeableHolder (resolving an awakeable twice is refused)."""
    model = approvals_model()
    agent = Agent("approver", provider=model, tools=[approve])
    session = Session(agent, store=store)
    session.run("go")
    Session(agent, store=store).resume(session.id, answer="yes")
    Session(agent, store=store).resume(session.id, answer="no")
    with pytest.raises(RunNotResumableError, match="already succeeded"):
        Session(agent, store=store).resume(session.id, answer="again")
    assert model.calls == 3


def test_a_session_resumed_with_another_agent_is_refused_naming_the_agent_it_needs(location: str) -> None:
    """From restatedev/e2e UpgradeTest (an invocation goes on with the service it started
    with). The resume is refused before the answer is recorded, in the session's terms."""
    with RunStore(location) as store:
        agent = Agent("approver", provider=approvals_model(), tools=[approve])
        session = Session(agent, store=store)
        session.run("go")
        other = Agent("reviewer", provider=approvals_model(), tools=[approve])
        with pytest.raises(StoreError, match=r"session .* agent 'approver'.*not 'reviewer'.*Session\("):
            Session(other, store=store).resume(session.id, answer="yes")
        assert store.get(session.id).status == "suspended"
        assert Session(agent, store=store).resume(session.id, answer="yes").interrupt == {"approve": "b"}


def test_a_formation_runs_id_given_to_a_session_resume_is_refused_naming_formation_resume(store: RunStore) -> None:
    """From restatedev/e2e UpgradeTest (an invocation resumes only on its own service): the
    id of a waiting formation run is not a session's."""
    payment(Counter()).run(1, store=store, run_id="pay-9")
    agent = Agent("approver", provider=approvals_model(), tools=[approve])
    with pytest.raises(StoreError, match=r"formation 'payment', not a session.*Formation\.resume\('pay-9'"):
        Session(agent, store=store).resume("pay-9", answer="approved")
    assert store.get("pay-9").status == "suspended"


def test_a_message_to_a_session_that_waits_runs_beside_the_waiting_turn(store: RunStore) -> None:
    """From restate sdk-python examples/virtual_object.py (an exclusive handler's next call
    waits for the one in progress). Ours differs: a session waiting for an answer is not
    running, so another message runs at once, on its own; the waiting turn resumes later
    from the history it had when it suspended."""
    model = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "approve", {"what": "a"})]),
        InferenceResponse.of_text("meanwhile"),
        InferenceResponse.of_text("after the answer"),
    ])
    agent = Agent("approver", provider=model, tools=[approve])
    session = Session(agent, store=store)
    assert session.run("go").status == "suspended"
    other = session.run("something else")
    assert (other.status, other.response) == ("succeeded", "meanwhile")
    resumed = Session(agent, store=store)
    assert resumed.resume(session.id, answer="yes").response == "after the answer"
    assert [m.role.value for m in resumed.history] == ["user", "assistant", "user", "assistant"]
    assert resumed.history[0].text == "go" and model.calls == 3


def test_an_awaited_resume_with_another_agent_is_refused_the_same_way(store: RunStore) -> None:
    """From restatedev/e2e UpgradeTest, through ``Session.aresume``."""
    agent = Agent("approver", provider=approvals_model(), tools=[approve])
    session = Session(agent, store=store)
    session.run("go")
    other = Session(Agent("reviewer", provider=approvals_model(), tools=[approve]), store=store)
    with pytest.raises(RunNotResumableError, match=r"agent 'approver', not 'reviewer'"):
        asyncio.run(other.aresume(session.id, answer="yes"))
    assert store.get(session.id).status == "suspended"
