"""Behaviours ported from the Inngest Python SDK's own test suite (inngest/inngest-py,
``tests/test_function/cases/*.py``): an Inngest function run is our journalled run, a
``step.run`` is a node visit (its memoized output is the journalled visit), the re-entry
that replays memoized steps is ``resume``, ``retries=`` and ``NonRetriableError`` are a
node's ``retries`` and an error with ``retryable = False``, and ``on_failure`` is an error
edge (``connect(node, handler, on_error=True)``). Waits, cancellation, ``step.invoke`` and
middleware order are in ``test_peer_inngest_more.py``.

Deliberately different (DESIGN.md documents ours):
- Inngest's ``on_failure`` handler is a second run, with its own run id, and the failed
  run stays failed; an error edge goes on inside the same run (``NodeFailure.run_id`` is
  the run's own id) and the run succeeds with the handler's output.
- Inngest re-runs a function from the top on every step and memoizes each step; we journal
  each node visit and, on ``resume``, run only what was not journalled: there is no
  re-entry of code that already finished.
- ``RetryAfterError`` lets a step choose its own delay; our retry delay is the node's
  policy (``backoff``, ``max_backoff``, ``jitter``), whatever the error says.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.durable_peers import Final, counted, failed_run, fails_first
from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.store import RunStore, SerializationError


class Flaky:
    """A node that fails its first ``failures`` calls with ``error``, then returns ``fn(x)``."""

    def __init__(self, counter: Counter, name: str, fn: Any, failures: int = 1,
                 error: type[Exception] = ConnectionError) -> None:
        self.counter, self.name, self.fn, self.failures, self.error = counter, name, fn, failures, error

    def __call__(self, x: Any) -> Any:
        if self.counter.hit(self.name) <= self.failures:
            raise self.error(f"{self.name} is down")
        return self.fn(x)


class Invoice(BaseModel):
    """A step output with a pydantic type (Inngest's ``pydantic_output`` case)."""

    number: int
    lines: list[str]


# --- step memoization: what was journalled is not run again -----------------------------


def test_a_step_that_succeeded_is_not_run_again_when_the_run_resumes_after_a_later_step_failed(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/two_steps.py."""
    counter = Counter()
    f = (Formation("two_steps").add_function("step_1", counted(counter, "step_1", lambda x: x + 1))
         .add_function("step_2", Flaky(counter, "step_2", lambda x: x * 10)).connect("step_1", "step_2"))
    run_id = failed_run(f, 1, store)
    result = f.resume(run_id, store=store)
    assert (result.status, result.output) == ("succeeded", 20)
    assert counter.calls == {"step_1": 1, "step_2": 2}
    # (the history lists the visit that failed the run, then the one the resume ran again)
    assert [(v.node, v.status, v.output if v.status == "succeeded" else v.error) for v in store.history(run_id)] == [
        ("step_1", "succeeded", 2), ("step_2", "failed", "ConnectionError: step_2 is down"),
        ("step_2", "succeeded", 20)]


def test_a_function_without_steps_journals_its_one_output_and_succeeds(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/no_steps.py."""
    result = Formation("no_steps").add_function("fn", lambda x: f"{x} done").run("job", store=store)
    assert (result.status, result.output) == ("succeeded", "job done")
    assert store.get(result.run_id).status == "succeeded"
    assert store.load(result.run_id).visits == {"fn": {1: "job done"}}


def test_parallel_steps_that_succeeded_are_not_run_again_and_only_the_failed_one_reruns(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/parallel_steps.py."""
    counter = Counter()
    f = Formation("parallel").add_function("start", counted(counter, "start", lambda x: x))
    for name in ("a", "c"):
        f.add_function(name, counted(counter, name, lambda x, name=name: f"{x}-{name}"))
    f.add_function("b", Flaky(counter, "b", lambda x: f"{x}-b"))
    f.add_function("gather", lambda a, b, c: [a, b, c])
    for name in ("a", "b", "c"):
        f.connect("start", name).connect(name, "gather")
    run_id = failed_run(f, "x", store)
    assert set(store.load(run_id).visits) == {"start", "a", "c"}
    result = f.resume(run_id, store=store)
    assert result.output == ["x-a", "x-b", "x-c"]
    assert counter.calls == {"start": 1, "a": 1, "b": 2, "c": 1}


def test_a_step_called_again_in_a_loop_journals_each_call_and_a_resume_reruns_only_the_failed_one(
        store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/dedupe_step_ids.py (one step id used in a
    loop is memoized per call: ours journals each visit of the node)."""
    counter = Counter()

    def step(x: int) -> int:
        n = counter.hit("step")
        if n == 3:
            raise ConnectionError("third call fails once")
        return x + 1

    f = (Formation("loop").add_function("step", step, max_visits=10).add_function("done", lambda x: f"done at {x}")
         .connect("step", "step", when=lambda x: x < 4).connect("step", "done", otherwise=True))
    run_id = failed_run(f, 0, store)
    assert store.load(run_id).visits["step"] == {1: 1, 2: 2}
    result = f.resume(run_id, store=store)
    assert result.output == "done at 4"
    assert counter.count("step") == 5  # 1, 2, the failed 3rd, then the 3rd and 4th again
    assert result.nodes["step"].outputs == [1, 2, 3, 4]


def test_a_tuple_output_read_back_from_the_journal_is_still_a_tuple(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/tuple_output.py."""
    counter = Counter()
    seen: list[Any] = []

    def use(pair: tuple[int, str]) -> str:
        seen.append(pair)
        if counter.hit("use") == 1:
            raise ConnectionError("once")
        return f"{pair[0]}:{pair[1]}"

    f = (Formation("tuple").add_function("pair", lambda x: (x, "one")).add_function("use", use)
         .connect("pair", "use"))
    run_id = failed_run(f, 1, store)
    assert f.resume(run_id, store=store).output == "1:one"
    assert seen == [(1, "one"), (1, "one")] and all(type(p) is tuple for p in seen)


def test_a_pydantic_output_read_back_from_the_journal_is_the_model(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/pydantic_output.py."""
    counter = Counter()
    seen: list[Any] = []

    def total(invoice: Invoice) -> str:
        seen.append(invoice)
        if counter.hit("total") == 1:
            raise ConnectionError("once")
        return f"#{invoice.number}: {len(invoice.lines)} lines"

    f = (Formation("invoice").add_function("make", lambda n: Invoice(number=n, lines=["a", "b"]))
         .add_function("total", total).connect("make", "total"))
    run_id = failed_run(f, 7, store)
    result = f.resume(run_id, store=store)
    assert result.output == "#7: 2 lines"
    assert seen[1] == Invoice(number=7, lines=["a", "b"]) and type(seen[1]) is Invoice
    assert result.nodes["make"].output == Invoice(number=7, lines=["a", "b"])


def test_a_pydantic_run_input_is_journalled_and_given_back_as_the_model_on_resume(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/pydantic_event.py (the triggering event's
    data as a pydantic model)."""
    counter = Counter()
    f = Formation("event").add_function("read", Flaky(counter, "read", lambda inv: inv.number * 2))
    run_id = failed_run(f, Invoice(number=21, lines=[]), store)
    assert store.get(run_id).input == Invoice(number=21, lines=[])
    assert f.resume(run_id, store=store).output == 42


def test_a_nested_dict_input_is_journalled_as_it_was_given(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/event_payload.py."""
    payload = {"user": {"id": 3, "tags": ["a", "b"]}, "ok": True, "score": 1.5, "none": None}
    result = Formation("payload").add_function("echo", lambda d: d["user"]["tags"]).run(payload, store=store)
    assert result.output == ["a", "b"]
    assert store.get(result.run_id).input == payload


def test_a_step_output_the_journal_cannot_store_fails_the_run_naming_the_node_and_the_type(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/unserializable_step_output.py."""

    class Foo:
        pass

    counter = Counter()
    f = Formation("unserializable").add_function("step_1", counted(counter, "step_1", lambda x: Foo()))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    err = caught.value
    assert err.node == "step_1"
    cause = err.__cause__
    assert isinstance(cause, SerializationError)
    assert "step_1" in str(cause) and "Foo" in str(cause)
    assert store.get(str(err.run_id)).status == "failed"


def test_a_step_output_the_journal_cannot_store_is_not_retried(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/unserializable_step_output.py (the run fails
    with ``output_unserializable`` at once: the same output would fail again)."""

    class Foo:
        pass

    counter = Counter()
    f = Formation("unserializable").add_function("step_1", counted(counter, "step_1", lambda x: Foo()),
                                                 retries=3, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    assert isinstance(caught.value.__cause__, SerializationError)
    assert counter.count("step_1") == 1 and caught.value.attempts == 1


# --- retries and errors that are not retried ----------------------------------------


def test_an_error_that_says_it_is_not_retryable_fails_at_once_whatever_retries_say(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/non_retriable_error.py."""
    counter = Counter()

    def step_1(x: str) -> str:
        counter.hit("step_1")
        raise Final("foo")

    f = Formation("non_retriable").add_function("step_1", step_1, retries=3, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    err = caught.value
    assert (err.node, err.attempts, counter.count("step_1")) == ("step_1", 1, 1)
    assert isinstance(err.__cause__, Final) and str(err.__cause__) == "foo"
    assert err.nodes["step_1"].error == "Final: foo"


def test_an_error_instance_marked_not_retryable_fails_at_once_too(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/non_retriable_error.py (raised as an
    instance flag instead of a class)."""
    counter = Counter()

    def step_1(x: str) -> str:
        counter.hit("step_1")
        error = ValueError("bad input")
        error.retryable = False  # type: ignore[attr-defined]
        raise error

    f = Formation("non_retriable").add_function("step_1", step_1, retries=2, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    assert (caught.value.attempts, counter.count("step_1")) == (1, 1)


def test_the_attempt_count_grows_with_each_retry_and_each_retry_is_reported(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/non_retriable_error.py and retry_after_error.py
    (``ctx.attempt`` counts the retries)."""
    counter = Counter()
    events: list[FormationEvent] = []
    f = Formation("retries").add_function("step", Flaky(counter, "step", lambda x: x, failures=2),
                                          retries=2, backoff=0.01)
    result = f.run("x", store=store, on_event=events.append)
    assert (result.output, result.nodes["step"].attempts) == ("x", 3)
    started = [e.data["attempt"] for e in events if e.type == FormationEventType.NODE_STARTED]
    retried = [e.data["attempt"] for e in events if e.type == FormationEventType.NODE_RETRY]
    assert (started, retried) == ([1, 2, 3], [1, 2])


def test_retries_spent_fail_the_run_with_every_attempt_counted(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (``retries=`` bounds the attempts)."""
    counter = Counter()
    f = Formation("spent").add_function("step", Flaky(counter, "step", lambda x: x, failures=9),
                                        retries=2, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    assert (caught.value.attempts, counter.count("step")) == (3, 3)
    assert "step" in str(caught.value) and "ConnectionError" in str(caught.value)


def test_a_retry_waits_the_nodes_backoff_and_not_much_longer(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/retry_after_error.py (the retry comes after
    the asked delay, and within 2 s of it); ours takes the delay from ``backoff``."""
    times: list[float] = []
    f = Formation("after").add_function("step", fails_first(times), retries=1, backoff=0.3, jitter=False)
    assert f.run("x", store=store).output == "x"
    assert 0.3 <= times[1] - times[0] < 2.3


def test_max_backoff_caps_the_wait_before_a_retry(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/retry_after_error.py (a retry's delay is
    bounded)."""
    times: list[float] = []
    f = Formation("capped").add_function("step", fails_first(times), retries=1, backoff=60, max_backoff=0.2,
                                         jitter=False)
    assert f.run("x", store=store).output == "x"
    assert 0.2 <= times[1] - times[0] < 2.2


def test_the_error_of_a_failed_run_keeps_the_users_frames_in_its_traceback(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (the stack shows user code)."""

    def parse_the_invoice(x: str) -> str:
        raise ValueError("intentional failure")

    f = Formation("stack").add_function("parse", parse_the_invoice)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    cause = caught.value.__cause__
    assert isinstance(cause, ValueError) and str(cause) == "intentional failure"
    assert "parse_the_invoice" in "".join(traceback.format_exception(cause))
    assert "intentional failure" in (store.get(str(caught.value.run_id)).error or "")


# --- on_failure: error edges ----------------------------------------------------------


def test_a_failure_handler_gets_the_node_the_error_the_input_the_attempts_and_the_run_id(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (differs: the handler runs in
    the same run, see the module docstring)."""
    failures: list[NodeFailure] = []

    def fn(data: dict[str, int]) -> str:
        raise RuntimeError("intentional failure")

    def on_failure(failure: NodeFailure) -> str:
        failures.append(failure)
        return "handled"

    f = (Formation("on_failure").add_function("fn", fn).add_function("on_failure", on_failure)
         .connect("fn", "on_failure", on_error=True))
    result = f.run({"foo": 1}, store=store)
    # fn (whose only out-edge is an error edge) and on_failure are both sinks: the run's
    # outputs are by sink, and only the handler's is there
    assert (result.status, result.outputs) == ("succeeded", {"on_failure": "handled"})
    [failure] = failures
    assert (failure.node, failure.input, failure.attempts, failure.run_id) == ("fn", {"foo": 1}, 1, result.run_id)
    assert isinstance(failure.error, RuntimeError) and str(failure.error) == "intentional failure"
    assert result.nodes["fn"].status == "failed"


def test_a_failure_handler_runs_once_after_the_last_retry(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (``on_failure`` follows the
    retries, not each attempt)."""
    counter = Counter()
    attempts: list[int] = []

    def handler(failure: NodeFailure) -> str:
        attempts.append(counter.count("fn"))
        return f"gave up after {failure.attempts}"

    f = (Formation("after_retries").add_function("fn", Flaky(counter, "fn", str, failures=9), retries=2, backoff=0.01)
         .add_function("handler", handler).connect("fn", "handler", on_error=True))
    assert f.run("x", store=store).outputs == {"handler": "gave up after 3"}
    assert attempts == [3]


def test_a_failure_handler_is_skipped_when_the_node_succeeds(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (no failure, no handler)."""
    counter = Counter()
    f = (Formation("ok").add_function("fn", str.upper).add_function("handler", counted(counter, "handler", str))
         .connect("fn", "handler", on_error=True))
    result = f.run("x", store=store)
    assert (result.outputs, counter.count("handler")) == ({"fn": "X"}, 0)
    assert result.nodes["handler"].status == "skipped"


def test_a_non_retryable_error_reaches_the_failure_handler_after_one_attempt(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/non_retriable_error.py with on_failure.py."""
    counter = Counter()

    def fn(x: str) -> str:
        counter.hit("fn")
        raise Final("no point retrying")

    f = (Formation("final").add_function("fn", fn, retries=3, backoff=0.01)
         .add_function("handler", lambda failure: (failure.attempts, str(failure.error)))
         .connect("fn", "handler", on_error=True))
    assert f.run("x", store=store).outputs == {"handler": (1, "no point retrying")}
    assert counter.count("fn") == 1


def test_a_handler_that_raises_a_new_error_fails_the_run_with_that_error(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/change_step_error.py (catch the step's
    error, raise your own)."""

    class MyError(Exception):
        pass

    def foo(x: str) -> str:
        raise ValueError("foo")

    def rethrow(failure: NodeFailure) -> str:
        raise MyError("I am new") from failure.error

    f = (Formation("change").add_function("foo", foo).add_function("rethrow", rethrow)
         .connect("foo", "rethrow", on_error=True))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    assert caught.value.node == "rethrow"
    assert isinstance(caught.value.__cause__, MyError) and str(caught.value.__cause__) == "I am new"
    assert "I am new" in (store.get(str(caught.value.run_id)).error or "")


def test_a_resumed_run_gives_the_handler_the_journalled_failure_without_running_the_node_again(
        store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (the failure event carries the
    error's name and message), across a resume."""
    counter = Counter()
    seen: list[NodeFailure] = []

    def fn(x: str) -> str:
        counter.hit("fn")
        raise RuntimeError("intentional failure")

    def handler(failure: NodeFailure) -> str:
        seen.append(failure)
        if counter.hit("handler") == 1:
            raise ConnectionError("handler down")
        return f"{failure.node}: {type(failure.error).__name__}: {failure.error}"

    f = (Formation("handled").add_function("fn", fn).add_function("handler", handler)
         .connect("fn", "handler", on_error=True))
    run_id = failed_run(f, "x", store)
    result = f.resume(run_id, store=store)
    assert result.outputs == {"handler": "fn: RuntimeError: intentional failure"}
    assert counter.calls == {"fn": 1, "handler": 2}
    assert (seen[1].input, seen[1].run_id) == ("x", run_id)


def test_a_failure_handler_fed_by_a_node_that_timed_out_is_told_so(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/on_failure.py (a step that never returns
    is a failure too)."""
    release = threading.Event()

    def stuck(x: str) -> str:
        release.wait(10)
        return x

    f = (Formation("stuck").add_function("stuck", stuck, timeout=0.2)
         .add_function("handler", lambda failure: type(failure.error).__name__)
         .connect("stuck", "handler", on_error=True))
    try:
        started = time.monotonic()
        assert f.run("x", store=store).outputs == {"handler": "NodeTimeoutError"}
        assert time.monotonic() - started < 5
    finally:
        release.set()
