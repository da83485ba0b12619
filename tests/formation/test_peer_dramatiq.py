"""Actors and retries, ported from Dramatiq's own test suite (Bogdanp/dramatiq
``tests/test_actors.py``, ``tests/middleware/test_retries.py``,
``tests/middleware/test_asyncio.py``): a Dramatiq actor is a function that workers run for
each message sent to it, retried on failure with an exponential backoff; here a node of a
formation is the actor, a run's input the message, and the node's ``retries``, ``backoff``,
``max_backoff`` and ``retry_on`` its retry policy.

Deliberately different: Dramatiq's retry policy is set per actor and may be overridden per
message (``send_with_options(max_retries=...)``); a node's policy is part of the
formation's declaration and holds for every run. Dramatiq's ``retry_when`` is a predicate
``(retries_so_far, exception) -> bool``; ``retry_on`` takes exception classes only (the
count is ``retries``), and a predicate is refused when the node is declared.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation.events import FormationEvent


class Events:
    """The events of a run, kept in order (pass as ``on_event``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[FormationEvent] = []

    def __call__(self, event: FormationEvent) -> None:
        with self.lock:
            self.items.append(event)

    def of(self, kind: str) -> list[FormationEvent]:
        with self.lock:
            return [e for e in self.items if e.type == kind]


def test_a_node_that_fails_the_first_time_is_retried_and_its_second_attempt_gives_the_output() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actors_retry_on_failure."""
    counter = Counter()

    def do_work(x: int) -> int:
        if counter.hit("work") == 1:
            raise RuntimeError("First failure.")
        return x * 2

    events = Events()
    result = Formation("retry").add_function("do_work", do_work, retries=3, backoff=0).run(21, on_event=events)
    assert result.output == 42
    assert result.nodes["do_work"].attempts == 2
    [retry] = events.of("node_retry")
    assert (retry.data["attempt"], retry.data["error"]) == (1, "RuntimeError: First failure.")


def test_retries_three_runs_the_node_four_times_and_reports_each_retry_before_the_failure() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actors_retry_a_max_number_of_times_on_failure
    (four attempts; here each retry is also an event, and the failure comes once, after the last)."""
    counter = Counter()

    def do_work(_: Any) -> None:
        counter.hit("work")
        raise RuntimeError("failure")

    events = Events()
    with pytest.raises(FormationRuntimeError, match=r"node 'do_work' failed after 4 attempt\(s\)") as info:
        Formation("retry").add_function("do_work", do_work, retries=3, backoff=0).run(None, on_event=events)
    assert counter.count("work") == 4
    assert info.value.attempts == 4
    assert [e.data["attempt"] for e in events.of("node_retry")] == [1, 2, 3]
    [failed] = events.of("node_failed")
    assert failed.data["attempts"] == 4
    assert [e.type for e in events.items][-2:] == ["node_failed", "run_failed"]


def test_a_zero_backoff_retries_ten_times_without_waiting() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actors_can_be_assigned_zero_min_backoff."""
    stamps: list[float] = []

    def do_work(_: Any) -> None:
        stamps.append(time.monotonic())
        raise RuntimeError("failure")

    with pytest.raises(FormationRuntimeError, match=r"after 11 attempt"):
        Formation("zero").add_function("do_work", do_work, retries=10, backoff=0).run(None)
    assert len(stamps) == 11
    assert stamps[-1] - stamps[0] < 2.0  # ten waits of 0 s (generous for a loaded machine)


def test_a_zero_max_backoff_caps_a_large_backoff_so_retries_do_not_wait() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actors_can_be_assigned_zero_max_backoff
    (and ``test_actor_messages_can_be_assigned_zero_max_backoff``: a 10 s backoff capped at 0)."""
    stamps: list[float] = []

    def do_work(_: Any) -> None:
        stamps.append(time.monotonic())
        raise RuntimeError("failure")

    node = Formation("cap").add_function("do_work", do_work, retries=10, backoff=10, max_backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"after 11 attempt"):
        node.run(None)
    assert len(stamps) == 11
    assert stamps[-1] - stamps[0] < 2.0


def test_retry_on_retries_the_errors_it_names_and_not_the_others_in_one_started_formation() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_conditionally_retry (a ValueError is
    not retried, a RuntimeError is, three times)."""
    counter = Counter()

    def raises_errors(runtime: bool) -> None:
        counter.hit(runtime)
        if runtime:
            raise RuntimeError("Runtime error")
        raise ValueError("Value error")

    f = Formation("cond").add_function("raises_errors", raises_errors, retries=3, backoff=0, retry_on=RuntimeError)
    with f.start() as running:
        value_error, runtime_error = running.submit(False), running.submit(True)
        with pytest.raises(FormationRuntimeError, match=r"after 1 attempt\(s\).*ValueError: Value error"):
            value_error.result(10)
        with pytest.raises(FormationRuntimeError, match=r"after 4 attempt\(s\).*RuntimeError: Runtime error"):
            runtime_error.result(10)
    assert (counter.count(False), counter.count(True)) == (1, 4)


def test_a_retry_predicate_in_place_of_exception_types_is_refused_saying_what_retry_on_takes() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_conditionally_retry (``retry_when``).

    Deliberately different: Dramatiq takes a predicate ``(retries, exception) -> bool``;
    ``retry_on`` names exception classes, and a callable is a setup error that says so."""

    def should_retry(error: BaseException) -> bool:
        return isinstance(error, RuntimeError)

    with pytest.raises(FormationSetupError, match=r"node 'n': retry_on must be an exception class or a tuple"):
        Formation("pred").add_function("n", lambda x: x, retries=3, retry_on=should_retry)  # type: ignore[arg-type]


class CustomException(Exception):
    pass


def test_an_expected_error_marked_not_retryable_fails_at_once_whatever_retries_says() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actor_with_throws_logs_info_and_does_not_retry
    (``throws=``: an expected exception is not retried); here the error says so itself,
    with ``retryable = False``."""
    counter = Counter()

    class Expected(CustomException):
        retryable = False

    def do_work(_: Any) -> str:
        if counter.hit("work") == 1:
            raise Expected("Expected Failure")
        return "done"

    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt\(s\).*Expected Failure") as info:
        Formation("throws").add_function("do_work", do_work, retries=5, backoff=0).run(None)
    assert counter.count("work") == 1
    assert isinstance(info.value.__cause__, CustomException)


def test_a_run_timeout_stops_the_retries_of_a_node_that_always_fails() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_retry_for_a_max_time (``max_age``: a message
    is retried only while it is younger than its age limit)."""
    counter = Counter()

    def do_work(_: Any) -> None:
        counter.hit("work")
        raise RuntimeError("failure")

    f = Formation("age").add_function("do_work", do_work, retries=1000, backoff=0.05, max_backoff=0.05, jitter=False)
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.5s"):
        f.run(None, timeout=0.5)
    assert time.monotonic() - started < 3.0
    seen = counter.count("work")
    assert 1 <= seen < 1000
    time.sleep(0.2)  # no retry goes on after the run ended
    assert counter.count("work") == seen


def test_a_retry_reruns_only_the_failing_node_not_the_one_before_it() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actors_retry_on_failure with an upstream
    actor (a retried message is the failed one; what was sent before it is not sent again)."""
    counter = Counter()

    def fetch(x: int) -> int:
        counter.hit("fetch")
        return x + 1

    def store(x: int) -> int:
        if counter.hit("store") < 3:
            raise ConnectionError("db down")
        return x * 10

    f = (Formation("chain").add_function("fetch", fetch).add_function("store", store, retries=3, backoff=0)
         .connect("fetch", "store"))
    result = f.run(1)
    assert result.output == 20
    assert (counter.count("fetch"), counter.count("store")) == (1, 3)
    assert (result.nodes["fetch"].attempts, result.nodes["store"].attempts) == (1, 3)


def test_a_retry_of_one_branch_does_not_rerun_its_sibling_or_call_the_join_twice() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actors_retry_on_failure in a group (one
    message of a group retried; the others' results stand)."""
    counter = Counter()

    def steady(x: int) -> int:
        counter.hit("steady")
        return x

    def flaky(x: int) -> int:
        if counter.hit("flaky") == 1:
            raise TimeoutError("slow backend")
        return x * 100

    def join(steady: int, flaky: int) -> int:
        counter.hit("join")
        return steady + flaky

    f = (Formation("group").add_function("steady", steady).add_function("flaky", flaky, retries=2, backoff=0)
         .add_function("join", join).connect("steady", "join").connect("flaky", "join"))
    assert f.run(3).output == 303
    assert {k: counter.count(k) for k in ("steady", "flaky", "join")} == {"steady": 1, "flaky": 2, "join": 1}


def test_an_async_node_that_fails_once_is_retried_on_the_runtimes_event_loop() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_asyncio.py (async actors are run on the worker's event
    loop and retried like any other actor)."""
    counter = Counter()

    async def do_work(x: int) -> int:
        if counter.hit("work") == 1:
            raise RuntimeError("first")
        return x + 1

    result = Formation("async").add_function("do_work", do_work, retries=1, backoff=0).run(41)
    assert (result.output, result.nodes["do_work"].attempts, counter.count("work")) == (42, 2, 2)


def test_an_unknown_option_is_refused_naming_it_and_the_policy_meant() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_cannot_be_assigned_arbitrary_options (a
    ``ValueError``: a ``FormationSetupError`` is one), with Dramatiq's own option name."""
    with pytest.raises(ValueError, match=r"unknown policy keyword\(s\) 'max_retries'; did you mean 'retries'"):
        Formation("opts").add_function("add", lambda x: x, max_retries=32)


def test_a_hundred_runs_submitted_to_a_node_with_replicas_are_all_performed() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_perform_work (a hundred messages sent,
    then the queue joined: every write is in the database)."""
    database: dict[str, int] = {}
    lock = threading.Lock()

    def put(i: int) -> int:
        with lock:
            database[f"key-{i}"] = i
        return i

    with Formation("put").add_function("put", put, concurrency=4).start() as running:
        futures = [running.submit(i) for i in range(100)]
        assert [f.result(20).output for f in futures] == list(range(100))
    assert database == {f"key-{i}": i for i in range(100)}
