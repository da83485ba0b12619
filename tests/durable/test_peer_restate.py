"""Behaviours ported from Restate's Python SDK (restatedev/sdk-python: ``tests/``,
``examples/`` and the behaviour its docstrings document) and Restate's end-to-end suite
(restatedev/e2e: ``SideEffect``, ``Failing``, ``NonDeterministic``, ``KillTest``,
``CancelTest``, ``RandomNumberListGenerator``): a Restate invocation is our journalled run,
a ``ctx.run`` side effect is a node visit (its journalled result is the visit's output),
``RunOptions(max_attempts=...)`` is a node's ``retries``, a ``TerminalError`` is an error
with ``retryable = False`` (or one outside ``retry_on``), cancelling an invocation is
cancelling the run, and re-invoking after a crash is ``resume``. Awakeables, virtual
objects, workflows and sessions are in ``test_peer_restate_more.py``.

Deliberately different (DESIGN.md and docs/durable-runs.md document ours):
- Restate re-runs the handler from the top on each retry and replays its journal; we run
  only the nodes that were not journalled, so no journalled code runs again.
- Restate detects non-determinism entry by entry (a ``ctx.run`` named differently on
  replay fails the invocation); we compare the formation's shape (nodes, kinds, edges)
  when a run is resumed, and a node whose code changed under the same name is not seen:
  its journalled visits keep their outputs and its new code runs for what is left.
- ``RunOptions(max_duration=...)`` bounds a ``ctx.run``'s retries in time; ours are bounded
  by the run's ``timeout`` (and each attempt by the node's ``timeout``).
- A cancelled Restate invocation ends for good; a cancelled run is journalled
  ``cancelled`` and ``resume`` continues it.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import Any

import pytest

from tests.support.peers import Counter, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import FormationMismatchError, RunStore


class Terminal(Exception):
    """Restate's ``TerminalError``: no retry can help."""

    retryable = False


def rid(future: Future[Any]) -> str:
    """The run id a ``submit`` future carries."""
    return str(future.run_id)  # type: ignore[attr-defined]


def counted(counter: Counter, name: str, fn: Any) -> Any:
    """``fn`` that counts its calls under ``name``."""

    def node(x: Any) -> Any:
        counter.hit(name)
        return fn(x)

    return node


def failing(counter: Counter, name: str, fn: Any, failures: int, error: Exception) -> Any:
    """A node whose first ``failures`` calls raise ``error``; then ``fn(x)``."""

    def node(x: Any) -> Any:
        if counter.hit(name) <= failures:
            raise error
        return fn(x)

    return node


def three_steps(counter: Counter, last: Any) -> Formation:
    """``one`` -> ``two`` -> ``three`` (``last``), the first two counted."""
    return (Formation("steps").add_function("one", counted(counter, "one", lambda x: x + 1))
            .add_function("two", counted(counter, "two", lambda x: x * 2))
            .add_function("three", last).connect("one", "two").connect("two", "three"))


# --- side effects: journalled once, replayed on every re-invocation ---------------------


def test_a_side_effect_runs_once_across_several_failed_resumes(store: RunStore) -> None:
    """From restatedev/e2e SideEffect (side effect executed once across replays)."""
    counter = Counter()
    f = three_steps(counter, failing(counter, "three", lambda x: f"done {x}", 2, ConnectionError("down")))
    with pytest.raises(FormationRuntimeError) as first:
        f.run(1, store=store)
    run_id = first.value.run_id
    assert run_id is not None
    with pytest.raises(FormationRuntimeError):
        f.resume(run_id, store=store)
    result = f.resume(run_id, store=store)
    assert (result.status, result.output) == ("succeeded", "done 4")
    assert counter.calls == {"one": 1, "two": 1, "three": 3}


def test_a_random_value_drawn_in_a_journalled_step_is_the_same_after_a_resume(store: RunStore) -> None:
    """From restatedev/e2e RandomNumberListGenerator (ctx.random is replayed, not redrawn)."""
    rng = random.Random()
    state = {"down": True}

    def draw(n: int) -> list[int]:
        return [rng.randrange(1_000_000) for _ in range(n)]

    def publish(numbers: list[int]) -> list[int]:
        if state["down"]:
            raise ConnectionError("publisher down")
        return numbers

    f = Formation("rng").add_function("draw", draw).add_function("publish", publish).connect("draw", "publish")
    with pytest.raises(FormationRuntimeError) as failed:
        f.run(5, store=store)
    run_id = failed.value.run_id
    assert run_id is not None
    drawn = store.load(run_id).visits["draw"][1]
    state["down"] = False
    assert f.resume(run_id, store=store).output == drawn
    assert len(drawn) == 5


def test_a_side_effects_output_is_journalled_before_the_next_step_starts(store: RunStore) -> None:
    """From restate sdk-python docstring of Context.run (the result is persisted before the
    handler continues)."""
    seen: list[Any] = []
    holder: dict[str, str] = {}

    def after(x: int) -> int:
        seen.append(store.load(holder["id"]).visits.get("one"))
        return x

    f = Formation("order").add_function("one", lambda x: x + 1).add_function("after", after).connect("one", "after")
    with f.start(store=store) as running:
        future = running.submit(1, run_id="r-order")
        holder["id"] = rid(future)
        assert future.result(timeout=10).output == 2
    assert seen == [{1: 2}]


# --- retries: max attempts, terminal errors ----------------------------------------------


def test_a_step_that_always_fails_stops_after_its_max_attempts_and_names_them(store: RunStore) -> None:
    """From restate sdk-python tests/servercontext.py::test_sanity (RunOptions(max_attempts=3))."""
    counter = Counter()
    f = Formation("max").add_function("foo", failing(counter, "foo", str, 99, ConnectionError("still down")),
                                      retries=2, backoff=0.001, jitter=False)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("bob", store=store)
    assert counter.count("foo") == 3
    assert caught.value.node == "foo" and caught.value.attempts == 3
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert "still down" in str(caught.value) and "foo" in str(caught.value)
    assert store.get(caught.value.run_id or "").status == "failed"


def test_a_step_that_succeeds_on_its_last_allowed_attempt_succeeds(store: RunStore) -> None:
    """From restatedev/e2e Failing.failingCallWithEventualSuccess (succeeds on the 4th attempt)."""
    counter = Counter()
    f = Formation("eventual").add_function("call", failing(counter, "call", lambda x: f"ok {x}", 3,
                                                           ConnectionError("flaky")),
                                           retries=3, backoff=0.001, jitter=False)
    result = f.run("x", store=store)
    assert (result.output, result.nodes["call"].attempts) == ("ok x", 4)


def test_a_terminal_error_is_not_retried_whatever_the_max_attempts(store: RunStore) -> None:
    """From restate sdk-python tests/servercontext.py (ohoh raises TerminalError; not retried)."""
    counter = Counter()
    f = Formation("terminal").add_function("foo", failing(counter, "foo", str, 99, Terminal("Simulated terminal error")),
                                           retries=5, backoff=0.001)
    with pytest.raises(FormationRuntimeError, match="Simulated terminal error") as caught:
        f.run("bob", store=store)
    assert counter.count("foo") == 1 and caught.value.attempts == 1
    assert isinstance(caught.value.__cause__, Terminal)


def test_a_terminal_error_after_retryable_ones_ends_the_retries_at_once(store: RunStore) -> None:
    """From restatedev/e2e Failing.terminallyFailingSideEffect after transient failures."""
    calls = Counter()

    def step(x: str) -> str:
        if calls.hit("step") == 1:
            raise ConnectionError("transient")
        raise Terminal("card declined")

    f = Formation("mixed").add_function("step", step, retries=5, backoff=0.001, jitter=False)
    with pytest.raises(FormationRuntimeError, match="card declined") as caught:
        f.run("pay", store=store)
    assert calls.count("step") == 2 and caught.value.attempts == 2


def test_an_error_outside_retry_on_is_terminal_and_one_inside_it_is_retried(store: RunStore) -> None:
    """From restate sdk-python docstring of RunOptions / TerminalError (only non-terminal
    errors are retried), with our ``retry_on`` choosing what is transient."""
    counter = Counter()
    transient = Formation("t").add_function("s", failing(counter, "transient", str, 1, ConnectionRefusedError("refused")),
                                            retries=2, backoff=0.001, retry_on=ConnectionError)
    assert transient.run("a", store=store).output == "a"
    assert counter.count("transient") == 2
    final = Formation("f").add_function("s", failing(counter, "final", str, 1, KeyError("no such order")),
                                        retries=2, backoff=0.001, retry_on=ConnectionError)
    with pytest.raises(FormationRuntimeError, match="no such order"):
        final.run("a", store=store)
    assert counter.count("final") == 1


def test_a_handler_catches_a_terminal_failure_and_compensates(store: RunStore) -> None:
    """From restate sdk-python tests/servercontext.py::test_wrapped_terminal_exception and
    the saga example (catch the TerminalError, run the compensation, go on)."""
    counter = Counter()
    f = (Formation("saga").add_function("book", failing(counter, "book", str, 99, Terminal("no seats")), retries=3)
         .add_function("refund", lambda failure: f"refunded after {failure.node}: {failure.error}")
         .connect("book", "refund", on_error=True))
    result = f.run("flight", store=store)
    # ``book`` is a sink too (its only out-edge is an error edge; docs/formations.md), so
    # the handler's value is in ``outputs``
    assert (result.status, result.outputs) == ("succeeded", {"refund": "refunded after book: no seats"})
    assert counter.count("book") == 1
    assert result.nodes["book"].status == "failed"


def test_the_compensation_gets_the_failure_with_its_attempts_and_input(store: RunStore) -> None:
    """From restatedev/e2e Failing (the caller sees the terminal error of the callee) with our
    ``NodeFailure`` carrying what the handler needs to compensate."""
    got: list[NodeFailure] = []

    def compensate(failure: NodeFailure) -> str:
        got.append(failure)
        return "compensated"

    f = (Formation("saga2").add_function("charge", failing(Counter(), "c", str, 99, ConnectionError("gateway")),
                                         retries=1, backoff=0.001, jitter=False)
         .add_function("compensate", compensate).connect("charge", "compensate", on_error=True))
    result = f.run({"amount": 5}, store=store)
    assert result.outputs == {"compensate": "compensated"}
    (failure,) = got
    assert (failure.node, failure.attempts, failure.input, failure.run_id) == ("charge", 2, {"amount": 5}, result.run_id)
    assert isinstance(failure.error, ConnectionError)


def test_the_run_timeout_bounds_the_retries_of_a_step_as_max_duration_does(store: RunStore) -> None:
    """From restate sdk-python docstring of RunOptions.max_duration (retries stop once the
    duration is spent); ours is the run's ``timeout``."""
    counter = Counter()
    f = Formation("duration").add_function("s", failing(counter, "s", str, 10_000, ConnectionError("down")),
                                           retries=10_000, backoff=0.05, max_backoff=0.05, jitter=False)
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError):
        f.run("x", store=store, timeout=0.5)
    assert time.monotonic() - started < 0.5 + 1.0
    assert 2 <= counter.count("s") < 100


# --- non-determinism: a changed handler is refused on replay -----------------------------


def failed_at_three(store: RunStore, counter: Counter) -> str:
    """A run of :func:`three_steps` failed at ``three``; its id."""
    with pytest.raises(FormationRuntimeError) as caught:
        three_steps(counter, failing(counter, "three", str, 99, ConnectionError("down"))).run(1, store=store)
    assert caught.value.run_id is not None
    return caught.value.run_id


def test_a_resume_with_a_renamed_step_is_refused_naming_it_and_nothing_runs(store: RunStore) -> None:
    """From restatedev/e2e NonDeterministic (a journal entry that no longer matches fails the replay)."""
    counter = Counter()
    run_id = failed_at_three(store, counter)
    changed = (Formation("steps").add_function("one", counted(counter, "one2", lambda x: x + 1))
               .add_function("deux", counted(counter, "deux", lambda x: x * 2))
               .add_function("three", str).connect("one", "deux").connect("deux", "three"))
    with pytest.raises(FormationMismatchError, match=r"deux"):
        changed.resume(run_id, store=store)
    assert counter.count("one2") == 0 and counter.count("deux") == 0
    assert store.get(run_id).status == "failed"


def test_a_run_refused_for_a_changed_formation_still_resumes_with_the_right_one(store: RunStore) -> None:
    """From restatedev/e2e NonDeterministic (after the fix is deployed the invocation goes on)."""
    counter = Counter()
    run_id = failed_at_three(store, counter)
    with pytest.raises(FormationMismatchError):
        Formation("steps").add_function("one", str).resume(run_id, store=store)
    fixed = three_steps(counter, lambda x: f"done {x}")
    assert fixed.resume(run_id, store=store).output == "done 4"
    assert (counter.count("one"), counter.count("two")) == (1, 1)


def test_a_node_whose_code_changed_keeps_its_journalled_output_on_resume(store: RunStore) -> None:
    """From restatedev/e2e NonDeterministic; ours differs: code changes under the same node
    name are not detected, the journalled output stands (see the module docstring)."""
    counter = Counter()
    run_id = failed_at_three(store, counter)
    changed = three_steps(counter, lambda x: f"done {x}")
    changed.graph.nodes["two"]["fn"] = lambda x: x * 1000  # new code for a journalled node
    assert changed.resume(run_id, store=store).output == "done 4"


# --- cancellation ------------------------------------------------------------------------


def blocking(started: threading.Event, release: threading.Event, counter: Counter) -> Any:
    """A step that says it started, then waits for ``release``."""

    def node(x: Any) -> Any:
        counter.hit("block")
        started.set()
        release.wait(10)
        return f"{x} released"

    return node


def test_cancelling_an_invocation_blocked_in_a_step_ends_it_cancelled_and_journalled(store: RunStore) -> None:
    """From restatedev/e2e CancelTest (cancel an invocation blocked on a call)."""
    started, release, counter = threading.Event(), threading.Event(), Counter()
    f = (Formation("cancel").add_function("first", counted(counter, "first", str))
         .add_function("block", blocking(started, release, counter)).connect("first", "block"))
    try:
        with f.start(store=store) as running:
            future = running.submit("job")
            assert started.wait(10)
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(timeout=5)
            assert until(lambda: store.get(rid(future)).status == "cancelled", within=5)
    finally:
        release.set()
    assert store.load(rid(future)).visits == {"first": {1: "job"}}


def test_a_cancelled_run_resumes_without_rerunning_what_was_journalled(store: RunStore) -> None:
    """From restatedev/e2e CancelTest / KillTest (re-invoking after the kill); ours resumes a
    cancelled run, Restate ends it (see the module docstring)."""
    started, release, counter = threading.Event(), threading.Event(), Counter()
    f = (Formation("cancel").add_function("first", counted(counter, "first", str))
         .add_function("block", blocking(started, release, counter)).connect("first", "block"))
    try:
        with f.start(store=store) as running:
            future = running.submit("job")
            assert started.wait(10)
            assert running.cancel(rid(future))
            with pytest.raises(CancelledError):
                future.result(timeout=5)
    finally:
        release.set()
    result = f.resume(rid(future), store=store)
    assert (result.status, result.output) == ("succeeded", "job released")
    assert (counter.count("first"), counter.count("block")) == (1, 2)


def test_cancelling_a_finished_invocation_says_so_and_changes_nothing(store: RunStore) -> None:
    """From restatedev/e2e CancelTest (cancelling a completed invocation has no effect)."""
    f = Formation("done").add_function("a", str)
    with f.start(store=store) as running:
        future = running.submit(3)
        assert future.result(timeout=10).output == "3"
        assert not future.cancel() and not running.cancel(rid(future))
    assert store.get(rid(future)).status == "succeeded"


def test_cancelling_one_invocation_leaves_the_others_running(store: RunStore) -> None:
    """From restatedev/e2e CancelTest (only the cancelled invocation ends)."""
    started, release = threading.Event(), threading.Event()
    gate = {"n": 0}
    lock = threading.Lock()

    def step(x: str) -> str:
        with lock:
            gate["n"] += 1
        started.set()
        release.wait(10)
        return x.upper()

    f = Formation("many").add_function("step", step, concurrency=2)
    try:
        with f.start(store=store) as running:
            keep, drop = running.submit("keep"), running.submit("drop")
            assert until(lambda: gate["n"] == 2, within=10)
            assert drop.cancel()
            release.set()
            assert keep.result(timeout=10).output == "KEEP"
            with pytest.raises(CancelledError):
                drop.result(timeout=5)
    finally:
        release.set()
    assert store.get(rid(keep)).status == "succeeded"
    assert until(lambda: store.get(rid(drop)).status == "cancelled", within=5)


def test_cancelling_an_invocation_waiting_out_a_retry_backoff_ends_it_at_once(store: RunStore) -> None:
    """From restatedev/e2e CancelTest with a retried ctx.run (cancel while the retry timer runs)."""
    counter = Counter()
    f = Formation("backoff").add_function("s", failing(counter, "s", str, 99, ConnectionError("down")),
                                          retries=5, backoff=30, jitter=False)
    with f.start(store=store) as running:
        future = running.submit("x")
        assert until(lambda: counter.count("s") == 1, within=10)
        started = time.monotonic()
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(timeout=5)
        assert time.monotonic() - started < 2
        assert until(lambda: store.get(rid(future)).status == "cancelled", within=5)
    assert counter.count("s") == 1


def test_a_resumed_step_gets_its_full_retry_budget_again(store: RunStore) -> None:
    """From restate sdk-python docstring of RunOptions.max_attempts, across a re-invocation:
    the attempts of a resume are counted afresh (the trace shows the resume's)."""
    counter = Counter()
    f = Formation("budget").add_function("s", failing(counter, "s", lambda x: "ok", 3, ConnectionError("down")),
                                         retries=1, backoff=0.001, jitter=False)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    assert caught.value.attempts == 2
    result = f.resume(caught.value.run_id or "", store=store)
    assert (result.output, result.nodes["s"].attempts, counter.count("s")) == ("ok", 2, 4)
