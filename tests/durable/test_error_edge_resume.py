"""Journalled runs with error edges: a failure taken by an error edge is journalled (a
progress record and a skip), so a resume does not retry the failed node and the handler
gets the NodeFailure again when it has to run again."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


class QuotaError(Exception):
    """A module-level exception class that is not a built-in one."""


class Node:
    """A node function that counts its calls and raises ``error`` while it is set."""

    def __init__(self, fn: Any = None, error: BaseException | None = None) -> None:
        self.fn = fn
        self.error = error
        self.calls = 0
        self.seen: list[Any] = []

    def __call__(self, x: Any) -> Any:
        self.calls += 1
        self.seen.append(x)
        if self.error is not None:
            raise self.error
        return self.fn(x) if self.fn else x


def guarded(a: Node, handler: Node) -> Formation:
    return (Formation("guarded").add_function("a", a).add_function("handler", handler)
            .add_function("b", lambda x: x).connect("a", "b").connect("a", "handler", on_error=True))


def fail_then_resume(a: Node, handler: Node, store: RunStore, input: Any = 5) -> tuple[str, Any]:
    """Run with a broken handler (the run fails after ``a``'s failure was journalled), then
    mend the handler and resume. Returns the run id and the resumed result."""
    handler.error = RuntimeError("handler down")
    f = guarded(a, handler)
    with pytest.raises(FormationRuntimeError, match="handler down") as info:
        f.run(input, store=store)
    handler.error = None
    run_id = info.value.run_id or ""
    return run_id, f.resume(run_id, store=store)


def test_a_failure_taken_by_an_error_edge_is_journalled_as_a_skip_with_its_record(store: RunStore) -> None:
    result = guarded(Node(error=ValueError("bad")), Node(lambda e: "fixed")).run(5, store=store)
    journal = store.load(result.run_id)
    assert journal.run.status == "succeeded"
    assert list(journal.skipped) == [("a", 1)]
    assert "failed after 1 attempt(s) into its error edges: ValueError: bad" in journal.skipped[("a", 1)]
    [record] = journal.progress[("a", 1, None)]
    assert (record["node_failure"], record["message"], record["attempts"]) == ("builtins:ValueError", "bad", 1)
    assert journal.visits["handler"] == {1: "fixed"}


def test_a_resume_does_not_retry_the_failed_node(store: RunStore) -> None:
    a, handler = Node(error=ValueError("bad input")), Node(lambda e: "fixed")
    _, result = fail_then_resume(a, handler, store)
    assert (result.status, result.outputs) == ("succeeded", {"handler": "fixed"})
    assert (a.calls, handler.calls) == (1, 2)
    assert (result.nodes["a"].status, result.nodes["handler"].status) == ("failed", "succeeded")


def test_a_resumed_handler_gets_the_failure_with_a_builtin_error_rebuilt(store: RunStore) -> None:
    a, handler = Node(error=KeyError("missing")), Node(lambda e: "fixed")
    run_id, _ = fail_then_resume(a, handler, store, input={"x": (1, 2)})
    first, again = handler.seen
    assert isinstance(again, NodeFailure)
    assert (again.node, again.input, again.attempts, again.run_id) == ("a", {"x": (1, 2)}, 1, run_id)
    assert type(again.error) is KeyError and again.error.args == first.error.args == ("missing",)


def test_a_resumed_handler_gets_another_error_as_a_formation_runtime_error_naming_it(store: RunStore) -> None:
    handler = Node(lambda e: "fixed")
    fail_then_resume(Node(error=QuotaError("over quota")), handler, store)
    error = handler.seen[-1].error
    assert isinstance(error, FormationRuntimeError)
    assert (str(error), error.node, error.attempts) == ("QuotaError: over quota", "a", 1)


def test_a_store_that_pickles_gives_the_resumed_handler_the_exception_itself(path: Path) -> None:
    handler = Node(lambda e: "fixed")
    with RunStore(path, allow_pickle=True) as store:
        fail_then_resume(Node(error=QuotaError("over quota")), handler, store)
    error = handler.seen[-1].error
    assert type(error) is QuotaError and str(error) == "over quota"


def test_a_resumed_handler_gets_a_timeout_as_a_node_timeout_error(store: RunStore) -> None:
    gate = threading.Event()
    handler = Node(lambda e: "fixed")
    handler.error = RuntimeError("handler down")
    f = Formation("t").add_function("a", lambda x: gate.wait(5), timeout=0.1).add_function("handler", handler)
    f.connect("a", "handler", on_error=True)
    try:
        with pytest.raises(FormationRuntimeError) as info:
            f.run(1, store=store)
        handler.error = None
        f.resume(info.value.run_id or "", store=store)
    finally:
        gate.set()
    error = handler.seen[-1].error
    assert isinstance(error, NodeTimeoutError) and (error.node, error.attempt) == ("a", 1)


def test_a_resume_after_the_handler_finished_runs_neither_again(store: RunStore) -> None:
    a, handler, after = Node(error=ValueError("bad")), Node(lambda e: "fixed"), Node(error=RuntimeError("later"))
    f = guarded(a, handler).add_function("after", after).connect("handler", "after")
    with pytest.raises(FormationRuntimeError, match="later") as info:
        f.run(1, store=store)
    after.error = None
    result = f.resume(info.value.run_id or "", store=store)
    assert (result.outputs, a.calls, handler.calls, after.calls) == ({"after": "fixed"}, 1, 1, 2)
    assert result.nodes["a"].status == "failed"


def test_a_resumed_run_reports_the_journalled_failure_as_node_failed(store: RunStore) -> None:
    from wingman_actors.formation.events import FormationEvent

    events: list[FormationEvent] = []
    a, handler = Node(error=ValueError("bad")), Node(lambda e: "fixed")
    handler.error = RuntimeError("handler down")
    f = guarded(a, handler)
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    handler.error = None
    f.resume(info.value.run_id or "", store=store, on_event=events.append)
    [failed] = [e for e in events if e.type == "node_failed"]
    assert (failed.node, failed.data) == ("a", {"attempts": 1, "error": "ValueError: bad", "journalled": True})


class TwoPartError(Exception):
    """An exception whose ``__init__`` takes other arguments than its ``args``: a pickle of
    it cannot be loaded back."""

    def __init__(self, service: str, code: int) -> None:
        super().__init__(f"{service} answered {code}")


def test_a_pickling_store_rebuilds_an_exception_that_does_not_unpickle(path: Path) -> None:
    handler = Node(lambda e: "fixed")
    with RunStore(path, allow_pickle=True) as store:
        _, result = fail_then_resume(Node(error=TwoPartError("billing", 503)), handler, store)
    error = handler.seen[-1].error
    assert result.status == "succeeded"
    assert isinstance(error, FormationRuntimeError) and str(error) == "TwoPartError: billing answered 503"


def test_a_handler_that_interrupts_resumes_with_the_answer_and_the_failure(store: RunStore) -> None:
    from wingman_actors import interrupt

    def ask(failure: NodeFailure) -> str:
        return f"{interrupt({'failed': failure.node})} after {type(failure.error).__name__}"

    a = Node(error=ValueError("nope"))
    f = Formation("ask").add_function("a", a).add_function("ask", ask).connect("a", "ask", on_error=True)
    suspended = f.run(1, store=store)
    assert (suspended.status, suspended.interrupt) == ("suspended", {"node": "ask", "payload": {"failed": "a"}})
    result = f.resume(suspended.run_id, store=store, answer="retry later")
    assert (result.outputs, a.calls, result.nodes["a"].status) == ({"ask": "retry later after ValueError"}, 1, "failed")
