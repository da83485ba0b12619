"""Behaviours ported from AWS's durable execution SDK for Python's own test suite
(aws/aws-durable-execution-sdk-python, ``tests/operation/step_test.py``,
``tests/retries_test.py``, ``tests/serdes_test.py``, ``tests/execution_test.py``): a durable
execution is our journalled run, a ``context.step`` is a node visit (its checkpoint is the
journalled visit), the re-invocation that replays checkpoints is ``resume``, a step's
``RetryStrategyConfig`` is a node's ``retries``, ``backoff``, ``max_backoff``, ``jitter`` and
``retry_on``, and ``FatalError`` is an error with ``retryable = False``. Map, parallel, child
contexts and callbacks are in ``test_peer_awsdurable_more.py``.

Deliberately different (DESIGN.md documents ours):
- AWS checkpoints a step that failed after its retries as FAILED and raises that error again
  on every replay without calling the step; a failed run's failed node runs again on
  ``resume`` (a resume is the user's decision to try again).
- AWS's retry strategy may match an error's message (``retryable_errors=["timeout"]``, a
  regex); ``retry_on`` matches types only.
- AWS's retry delays are whole seconds (at least 1 s, rounded up); ours are the exact
  ``backoff * 2**(attempt-1)`` seconds (with ``jitter=False``), capped by ``max_backoff``.
- AWS's ``AT_MOST_ONCE_PER_RETRY`` step semantics (a step started but not checkpointed is not
  run again) has no counterpart: what was in flight runs again on resume (at-least-once).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import itertools
import math
import os
import threading
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.support.durable_peers import Final, failed_run, fails_first
from tests.support.peers import Counter, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.store import RunStore, SerializationError


class Colour(enum.Enum):
    """An enum step result (AWS's serdes of extended types)."""

    RED = "red"
    BLUE = "blue"


class Point(NamedTuple):
    """A NamedTuple step result."""

    x: int
    y: int


@dataclasses.dataclass
class Order:
    """A dataclass step result."""

    id: int
    lines: list[str]


def then_fails_once(counter: Counter, name: str = "use") -> Any:
    """A node that records what it got and fails its first call (so the run can be resumed)."""
    seen: list[Any] = []

    def use(value: Any) -> Any:
        seen.append(value)
        if counter.hit(name) == 1:
            raise ConnectionError("downstream is down once")
        return value

    use.seen = seen  # type: ignore[attr-defined]
    return use


# --- steps: a checkpointed step is not run again -----------------------------------------


def test_a_step_that_succeeded_is_not_called_again_and_its_result_is_given_back_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_already_succeeded)."""
    counter = Counter()

    def step(x: str) -> str:
        counter.hit("step")
        return f"{x} result"

    use = then_fails_once(counter)
    f = Formation("steps").add_function("step", step).add_function("use", use).connect("step", "use")
    run_id = failed_run(f, "test", store)
    assert f.resume(run_id, store=store).output == "test result"
    assert counter.count("step") == 1 and use.seen == ["test result", "test result"]


def test_a_step_whose_result_was_none_is_not_called_again_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_already_succeeded_none_result): a None result is a result."""
    counter = Counter()

    def step(x: str) -> None:
        counter.hit("step")

    use = then_fails_once(counter)
    f = Formation("none").add_function("step", step).add_function("use", use).connect("step", "use")
    run_id = failed_run(f, "x", store)
    assert store.load(run_id).visits == {"step": {1: None}}
    result = f.resume(run_id, store=store)
    assert (result.status, result.output) == ("succeeded", None)
    assert counter.count("step") == 1 and use.seen == [None, None]


def test_a_step_that_failed_after_its_retries_runs_again_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_already_failed). AWS raises the checkpointed error again without calling
    the step; ours runs a failed run's failed node again on resume (see the module docstring)."""
    counter = Counter()

    def step(x: int) -> int:
        if counter.hit("step") <= 2:
            raise ConnectionError("Test error")
        return x + 1

    f = Formation("failed").add_function("step", step, retries=1, backoff=0)
    run_id = failed_run(f, 1, store)
    assert counter.count("step") == 2 and "Test error" in (store.get(run_id).error or "")
    assert f.resume(run_id, store=store).output == 2
    assert counter.count("step") == 3


def test_a_step_in_flight_when_the_run_stopped_runs_again_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_started_at_least_once): a step started but not checkpointed runs again.
    Here the run is cancelled while the step is in flight."""
    counter = Counter()
    started, release = threading.Event(), threading.Event()

    def step(x: str) -> str:
        if counter.hit("step") == 1:
            started.set()
            release.wait(10)
        return f"{x} done"

    f = Formation("inflight").add_function("first", lambda x: x).add_function("step", step).connect("first", "step")
    try:
        with f.start(store=store) as running:
            future = running.submit("job")
            assert started.wait(10)
            assert future.cancel()
            assert until(lambda: store.get(future.run_id).status == "cancelled", within=10)
    finally:
        release.set()
    assert store.load(future.run_id).visits == {"first": {1: "job"}}
    result = f.resume(future.run_id, store=store)
    assert (result.status, result.output) == ("succeeded", "job done")
    assert counter.count("step") == 2


def test_a_fatal_error_is_not_retried_whatever_the_retries(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_fatal_error)."""
    counter = Counter()

    def step(x: str) -> str:
        counter.hit("step")
        raise Final("Fatal error")

    f = Formation("fatal").add_function("step", step, retries=3, backoff=0)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    assert counter.count("step") == 1 and caught.value.attempts == 1
    assert isinstance(caught.value.__cause__, Final) and "Fatal error" in str(caught.value)


def test_a_step_that_fails_then_succeeds_on_a_retry_journals_only_its_success(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_retry_success)."""
    counter = Counter()

    def step(x: int) -> int:
        if counter.hit("step") == 1:
            raise RuntimeError("Test error")
        return x * 2

    result = Formation("retry").add_function("step", step, retries=2, backoff=0).run(4, store=store)
    assert (result.output, result.nodes["step"].attempts) == (8, 2)
    assert [(v.node, v.output, v.status) for v in store.history(result.run_id)] == [("step", 8, "succeeded")]


def test_a_step_whose_retries_are_spent_fails_the_run_naming_the_step_attempts_and_cause(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_retry_exhausted)."""
    counter = Counter()

    def charge(x: int) -> int:
        counter.hit("charge")
        raise RuntimeError("card declined")

    f = Formation("exhausted").add_function("charge", charge, retries=2, backoff=0)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store)
    error = caught.value
    assert (error.node, error.attempts, counter.count("charge")) == ("charge", 3, 3)
    assert "charge" in str(error) and "RuntimeError" in str(error) and "card declined" in str(error)
    assert store.get(error.run_id).status == "failed"


def test_attempts_made_before_the_run_stopped_are_not_counted_again_by_a_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_retry_with_existing_attempts): a resumed run gives the step its retries
    afresh (AWS goes on counting its checkpointed attempts; ours starts the node's attempts
    again, so a resume after spent retries can succeed)."""
    counter = Counter()

    def step(x: int) -> int:
        if counter.hit("step") <= 3:
            raise ConnectionError("down")
        return x

    f = Formation("afresh").add_function("step", step, retries=1, backoff=0)
    run_id = failed_run(f, 5, store)
    assert counter.count("step") == 2
    result = f.resume(run_id, store=store)
    assert (result.output, result.nodes["step"].attempts, counter.count("step")) == (5, 2, 4)


# --- retry strategies: which errors, how long -------------------------------------------


def test_retry_on_a_type_retries_that_type(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (test_retryable_error_type)."""
    counter = Counter()

    def step(x: int) -> int:
        if counter.hit("step") == 1:
            raise ValueError("invalid value")
        return x

    f = Formation("typed").add_function("step", step, retries=2, backoff=0, retry_on=ValueError)
    assert f.run(3, store=store).output == 3 and counter.count("step") == 2


def test_retry_on_only_some_types_does_not_retry_any_other_error(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py
    (test_only_retryable_error_types_specified)."""
    counter = Counter()

    class Timeout(Exception):
        pass

    def step(x: int) -> int:
        counter.hit("step")
        raise Exception("Some random error")

    f = Formation("only").add_function("step", step, retries=3, backoff=0, retry_on=Timeout)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store)
    assert counter.count("step") == 1 and caught.value.attempts == 1


def test_retry_on_a_tuple_retries_each_of_its_types(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py
    (test_mixed_error_types_and_patterns, test_multiple_error_patterns)."""
    counter = Counter()
    errors = [ValueError("bad"), TimeoutError("slow")]

    def step(x: int) -> int:
        n = counter.hit("step")
        if n <= len(errors):
            raise errors[n - 1]
        return x

    f = Formation("tuple").add_function("step", step, retries=2, backoff=0, retry_on=(ValueError, TimeoutError))
    assert f.run(9, store=store).output == 9 and counter.count("step") == 3


def test_retry_on_an_empty_tuple_retries_nothing(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py
    (test_empty_retryable_errors_list: an empty list retries nothing)."""
    counter = Counter()

    def step(x: int) -> int:
        counter.hit("step")
        raise ValueError("nope")

    f = Formation("empty").add_function("step", step, retries=2, backoff=0, retry_on=())
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store)
    assert counter.count("step") == 1 and caught.value.attempts == 1


def test_retries_zero_never_retries(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (test_none_preset)."""
    counter = Counter()

    def step(x: int) -> int:
        counter.hit("step")
        raise ConnectionError("down")

    with pytest.raises(FormationRuntimeError) as caught:
        Formation("none").add_function("step", step, retries=0).run(1, store=store)
    assert counter.count("step") == 1 and caught.value.attempts == 1


def test_without_jitter_the_delays_grow_exponentially_from_the_backoff(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py
    (test_exponential_backoff_calculation, test_none_jitter_integration): delays 0.2 s then 0.4 s."""
    times: list[float] = []
    f = Formation("exp").add_function("step", fails_first(times, failures=2), retries=2, backoff=0.2, jitter=False)
    assert f.run("x", store=store).output == "x"
    first, second = times[1] - times[0], times[2] - times[1]
    assert 0.2 <= first < 2.2 and 0.4 <= second < 2.4
    assert second > first


def test_max_backoff_caps_every_later_delay_too(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (test_max_delay_cap: a delay
    that would be 200 s is 50 s)."""
    times: list[float] = []
    f = Formation("cap").add_function("step", fails_first(times, failures=3), retries=3, backoff=0.1,
                                      max_backoff=0.15, jitter=False)
    assert f.run("x", store=store).output == "x"
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[0] >= 0.1 and all(0.15 <= g < 2.15 for g in gaps[1:])


def test_a_zero_backoff_retries_at_once(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (test_zero_backoff_rate,
    test_minimum_delay_one_second: AWS waits at least 1 s; ours waits the backoff given)."""
    times: list[float] = []
    f = Formation("now").add_function("step", fails_first(times), retries=1, backoff=0)
    assert f.run("x", store=store).output == "x"
    assert times[1] - times[0] < 2.0


def test_a_negative_backoff_is_a_setup_error_naming_the_node() -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (invalid configurations are
    refused)."""
    with pytest.raises(FormationSetupError) as caught:
        Formation("bad").add_function("step", lambda x: x, retries=1, backoff=-1).validate()
    assert "step" in str(caught.value) and "backoff" in str(caught.value)


def test_a_negative_retries_is_a_setup_error_naming_the_node() -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (max_attempts must be sane)."""
    with pytest.raises(FormationSetupError) as caught:
        Formation("bad").add_function("step", lambda x: x, retries=-1).validate()
    assert "step" in str(caught.value) and "retries" in str(caught.value)


# --- serialization of step results ---------------------------------------------------------


@pytest.mark.parametrize("value", [
    pytest.param({"a": [1, 2, {"b": None}], "c": True, "d": 1.5}, id="nested-json"),
    pytest.param((1, ("two", 3.0)), id="tuple"),
    pytest.param({3, 4}, id="set"),
    pytest.param(b"\x00\xffbytes", id="bytes"),
    pytest.param({1: "one", (2, 3): "pair"}, id="dict-with-non-str-keys"),
    pytest.param(datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC), id="datetime"),
    pytest.param(datetime.date(2025, 1, 2), id="date"),
    pytest.param(decimal.Decimal("12.345"), id="decimal"),
    pytest.param(uuid.UUID("12345678-1234-5678-1234-567812345678"), id="uuid"),
    pytest.param(Colour.BLUE, id="enum"),
    pytest.param(Order(id=7, lines=["a"]), id="dataclass"),
    pytest.param(Path("/tmp/x.txt"), id="path"),
    pytest.param(2**70, id="big-int"),
    pytest.param("caf\u00e9 \u2603 \U0001f600", id="unicode"),
])
def test_a_step_result_read_back_from_the_journal_is_equal_and_of_the_same_type(store: RunStore, value: Any) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (round trips of every
    supported type through the checkpoint)."""
    counter = Counter()
    use = then_fails_once(counter)
    f = Formation("serdes").add_function("make", lambda _: value).add_function("use", use).connect("make", "use")
    run_id = failed_run(f, None, store)
    assert f.resume(run_id, store=store).output == value
    assert use.seen[1] == value and type(use.seen[1]) is type(value)


def test_a_step_result_with_a_lone_surrogate_is_journalled_and_read_back_on_both_stores(location: str) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (any ``str`` round-trips). A
    file name that ``os.listdir`` decoded with ``surrogateescape`` is such a string: it used to
    fail the journal write after the run had gone on (``StoreWriteError`` from ``run()``, the
    run ``succeeded`` in the store without the visit)."""
    counter = Counter()
    use = then_fails_once(counter)
    name = os.fsdecode(b"report-\xff.txt")
    f = Formation("names").add_function("list", lambda _: [name]).add_function("use", use).connect("list", "use")
    with RunStore(location) as store:
        run_id = failed_run(f, None, store)
        assert store.load(run_id).visits == {"list": {1: [name]}}
        assert f.resume(run_id, store=store).output == [name]
    assert use.seen == [[name], [name]]


def surrogate_error(_: Any) -> str:
    name = os.fsdecode(b"report-\xff.txt")
    raise ValueError(f"cannot read {name}")


def test_a_run_whose_error_text_has_a_lone_surrogate_is_journalled_failed_on_both_stores(location: str) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_retry_exhausted: the failure is checkpointed with its error). An error
    naming a file that ``os.listdir`` decoded with ``surrogateescape`` used to fail the write of
    the run's status: the run stayed ``running`` in the store, with no error."""
    f = Formation("errors").add_function("read", surrogate_error)
    with RunStore(location) as store:
        run_id = failed_run(f, None, store)
        record = store.get(run_id)
        assert record.error is not None and "cannot read report-" in record.error and ".txt" in record.error


@pytest.mark.parametrize("value", [math.inf, -math.inf], ids=["inf", "-inf"])
def test_an_infinite_float_result_reads_back_as_itself(store: RunStore, value: float) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (floats round-trip)."""
    counter = Counter()
    use = then_fails_once(counter)
    f = Formation("inf").add_function("make", lambda _: value).add_function("use", use).connect("make", "use")
    run_id = failed_run(f, None, store)
    assert f.resume(run_id, store=store).output == value


def test_a_nan_result_reads_back_as_nan(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (floats round-trip)."""
    counter = Counter()
    use = then_fails_once(counter)
    f = Formation("nan").add_function("make", lambda _: math.nan).add_function("use", use).connect("make", "use")
    run_id = failed_run(f, None, store)
    assert math.isnan(f.resume(run_id, store=store).output)


def test_a_result_that_cannot_be_serialized_fails_the_run_naming_the_node_and_type(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (an unserializable value is a
    SerDes error saying what could not be serialized)."""

    class Handle:
        pass

    f = Formation("opaque").add_function("open", lambda _: Handle())
    with pytest.raises((SerializationError, FormationRuntimeError)) as caught:
        f.run(None, store=store)
    text = str(caught.value) + str(caught.value.__cause__)
    assert "open" in text and "Handle" in text


def test_a_named_tuple_result_is_refused_saying_it_is_a_tuple_subclass_and_how_to_journal_it(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (an unsupported type is a
    SerDes error saying what to do). A NamedTuple is a tuple, and the refusal used to tell the
    user to return a tuple, which they had done; it now says that a subclass is not journalled
    as its base and how to journal it. (Journalling NamedTuples as their class: an open
    question.)"""
    f = Formation("named").add_function("point", lambda _: Point(1, 2))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(None, store=store)
    text = str(caught.value)
    assert "Point" in text and "subclass of tuple" in text and "tuple(value)" in text


def test_an_unserializable_result_is_kept_when_the_store_allows_pickle(path: Path) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (a custom SerDes handles what
    the default cannot): ours is ``allow_pickle=True``."""
    counter = Counter()
    use = then_fails_once(counter)
    f = (Formation("pickled").add_function("make", lambda _: frozenset({1, 2})).add_function("use", use)
         .connect("make", "use"))
    with RunStore(path, allow_pickle=True) as store:
        run_id = failed_run(f, None, store)
        assert f.resume(run_id, store=store).output == frozenset({1, 2})
    assert type(use.seen[1]) is frozenset


# --- replay determinism ------------------------------------------------------------------


def test_a_non_deterministic_step_result_is_the_same_on_every_replay(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/context_replay_property_test.py (a replayed
    step gives the checkpointed value, not a new one)."""
    counter = Counter()
    use = then_fails_once(counter)
    f = (Formation("random").add_function("mint", lambda _: str(uuid.uuid4())).add_function("use", use)
         .connect("mint", "use"))
    run_id = failed_run(f, None, store)
    minted = store.load(run_id).visits["mint"][1]
    assert f.resume(run_id, store=store).output == minted
    assert use.seen == [minted, minted]


def test_a_resume_by_a_formation_of_another_shape_is_refused_naming_the_difference(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/execution_test.py (a replay whose operations
    do not match the checkpoints is an error, not a silent rerun)."""
    counter = Counter()
    f = Formation("shape").add_function("a", lambda x: x).add_function("b", then_fails_once(counter)).connect("a", "b")
    run_id = failed_run(f, 1, store)
    other = Formation("shape").add_function("a", lambda x: x).add_function("c", lambda x: x).connect("a", "c")
    with pytest.raises(Exception) as caught:
        other.resume(run_id, store=store)
    assert "b" in str(caught.value) and "c" in str(caught.value)
    assert store.get(run_id).status == "failed"


def test_resuming_an_unknown_run_says_the_run_is_unknown(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/execution_test.py (an execution that is not
    found is a clear error)."""
    with pytest.raises(Exception) as caught:
        Formation("x").add_function("a", lambda x: x).resume("no-such-run", store=store)
    assert "no-such-run" in str(caught.value)
