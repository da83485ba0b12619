"""``@retry``, ``@catch``, ``@timeout`` and failed-task behaviours ported from Metaflow's own
test suite (Netflix/metaflow, ``test/core/tests/catch_retry.py``, ``tag_catch.py``,
``timeout_decorator.py``, ``task_exception.py``): ``@retry(times=n)`` is ``retries=n``,
``@catch(var=...)`` an error edge (``connect(step, handler, on_error=True)``) whose handler
receives a ``NodeFailure``, ``@timeout`` a node ``timeout``. (``test_peer_metaflow.py``'s
module docstring maps the rest of Metaflow onto formations.)

Deliberately different (DESIGN.md "Supervision", "Error edges", "Map nodes"):
- ``@catch`` stores the exception in an artifact and the step's successors run as if it had
  succeeded; an error edge sends the failure to a handler node and the failed node's other
  out-edges are skipped.
- Metaflow's ``@timeout`` on a foreach step times each task; a map node's ``timeout``
  bounds the whole visit (its items together).
- ``current.retry_count`` tells a step its attempt; a function node counts its own calls.
"""

from __future__ import annotations

import pickle
import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, MapItemsError, NodeTimeoutError
from wingman_actors.formation import NodeFailure


class TestRetry(Exception):
    """Metaflow's ``metaflow_test.TestRetry``: a soft failure a retry recovers from."""

    __test__ = False


class ExternalCommandFailed(Exception):
    """Like Metaflow's ``ExternalCommandFailed``: "a non-trivial derived exception on purpose,
    which is non-trivial to pickle correctly" (its ``__init__`` takes other arguments than
    ``args`` holds)."""

    def __init__(self, msg: str, code: int) -> None:
        super().__init__(f"{msg} (exit {code})")
        self.msg, self.code = msg, code


def fails_until(counter: Counter, name: str, good_attempt: int) -> Any:
    """A node that raises ``TestRetry`` until its ``good_attempt``-th call (1-based)."""

    def node(x: Any) -> Any:
        attempt = counter.hit(name)
        if attempt < good_attempt:
            raise TestRetry(f"{name} attempt {attempt}")
        return {"value": x, "test_attempt": attempt - 1}

    return node


def test_a_step_retried_three_times_succeeds_on_its_fourth_attempt_with_that_attempts_value() -> None:
    """From metaflow test/core/tests/catch_retry.py (``@retry(times=3)`` on start: attempts
    0..3, and ``test_attempt == 3`` is what later steps see)."""
    counter = Counter()
    f = (Formation("catch_retry").add_function("start", fails_until(counter, "start", 4), retries=3, backoff=0)
         .add_function("end", lambda s: s["test_attempt"]).connect("start", "end"))
    result = f.run("x")
    assert result.output == 3
    assert result.nodes["start"].attempts == 4 and counter.count("start") == 4


def test_what_a_failed_attempt_did_to_its_input_is_invisible_to_the_retry() -> None:
    """From metaflow test/core/tests/catch_retry.py (``self.invisible = True`` set by the
    attempts that failed is not in the task's data): the retry receives the input as it was
    delivered, not as the failed attempt left it."""
    seen: list[dict[str, Any]] = []

    def start(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(state))
        if len(seen) < 3:
            state["invisible"] = True
            raise TestRetry("soft death")
        return state

    f = (Formation("catch_retry").add_function("seed", lambda x: {"x": x})
         .add_function("start", start, retries=2, backoff=0).connect("seed", "start"))
    assert f.run(1).output == {"x": 1}
    assert seen == [{"x": 1}, {"x": 1}, {"x": 1}]


def test_a_step_that_fails_every_retry_is_caught_with_its_error_and_attempts() -> None:
    """From metaflow test/core/tests/catch_retry.py (``@catch(var="ex")`` with
    ``@retry(times=2)``: the step dies each time, ``retry_with_catch == 2``, and ``ex.type``
    is the error raised)."""
    counter = Counter()

    def step_all(x: int) -> int:
        counter.hit("a")
        raise TestRetry(f"attempt {counter.count('a') - 1}")

    def caught(failure: NodeFailure) -> dict[str, Any]:
        return {"type": type(failure.error).__name__, "message": str(failure.error),
                "attempts": failure.attempts, "node": failure.node, "input": failure.input}

    f = (Formation("catch").add_function("start", lambda x: x + 1).add_function("a", step_all, retries=2, backoff=0)
         .add_function("ex", caught).add_function("end", lambda x: x)
         .connect("start", "a", "end").connect("a", "ex", on_error=True))
    result = f.run(1)
    assert result.outputs == {"ex": {"type": "TestRetry", "message": "attempt 2", "attempts": 3, "node": "a",
                                     "input": 2}}
    assert result.nodes["a"].status == "failed" and result.nodes["end"].status == "skipped"
    assert counter.count("a") == 3


def test_a_caught_end_step_keeps_a_derived_exception_that_is_hard_to_pickle() -> None:
    """From metaflow test/core/tests/catch_retry.py (``@catch(var="end_ex")`` on end raising
    ``ExternalCommandFailed("catch me!", 2)``: the run does not fail, and the caught exception
    keeps its type and message)."""

    def end(x: Any) -> Any:
        raise ExternalCommandFailed("catch me!", 2)

    f = (Formation("catch_end").add_function("start", lambda x: x).add_function("end", end)
         .add_function("end_ex", lambda failure: failure.error)
         .connect("start", "end").connect("end", "end_ex", on_error=True))
    result = f.run(1)
    error = result.outputs["end_ex"]
    assert isinstance(error, ExternalCommandFailed)
    assert (error.msg, error.code, str(error)) == ("catch me!", 2, "catch me! (exit 2)")
    with pytest.raises(TypeError):  # why Metaflow picks it: pickling it back fails
        pickle.loads(pickle.dumps(ExternalCommandFailed("catch me!", 2)))


def test_a_foreach_split_and_its_join_are_retried_like_any_step() -> None:
    """From metaflow test/core/tests/catch_retry.py ("foreach splits don't support @catch but
    @retry should work": split and join succeed on their third attempt)."""
    counter = Counter()

    def split(n: int) -> list[int]:
        if counter.hit("split") < 3:
            raise TestRetry("split")
        return list(range(n))

    def join(items: list[int]) -> int:
        if counter.hit("join") < 3:
            raise TestRetry("join")
        return sum(items)

    f = (Formation("foreach_retry").add_function("split", split, retries=2, backoff=0)
         .add_map("inner", lambda i: i * 10).add_function("join", join, retries=2, backoff=0)
         .connect("split", "inner", "join"))
    result = f.run(4)
    assert result.output == 60
    assert (result.nodes["split"].attempts, result.nodes["join"].attempts) == (3, 3)


def test_a_join_retried_receives_the_same_branch_values_on_every_attempt() -> None:
    """From metaflow test/core/tests/catch_retry.py (``step_join``'s retries read
    ``inputs[0].test_attempt`` each time)."""
    seen: list[dict[str, int]] = []

    def join(a: int, b: int) -> int:
        seen.append({"a": a, "b": b})
        if len(seen) < 3:
            raise TestRetry("join")
        return a + b

    f = (Formation("join_retry").add_function("start", lambda x: x).add_function("a", lambda x: x + 1)
         .add_function("b", lambda x: x + 2).add_function("join", join, retries=2, backoff=0)
         .connect("start", "a", "join").connect("start", "b", "join"))
    assert f.run(10).output == 23
    assert seen == [{"a": 11, "b": 12}] * 3


def test_foreach_items_retry_on_their_own_and_the_ones_that_succeeded_run_once() -> None:
    """From metaflow test/core/tests/catch_retry.py (``@retry`` on a foreach's inner step
    retries each task on its own)."""
    counter = Counter()

    def inner(i: int) -> int:
        if counter.hit(i) < 3 and i % 2:
            raise TestRetry(f"item {i}")
        return i

    assert Formation("inner_retry").add_map("inner", inner, retries=2, backoff=0).run([0, 1, 2, 3]).output == [0, 1, 2, 3]
    assert counter.calls == {0: 1, 1: 3, 2: 1, 3: 3}


def test_a_foreach_item_that_fails_every_retry_is_caught_with_the_items_errors() -> None:
    """From metaflow test/core/tests/catch_retry.py (``@catch`` with ``@retry(times=2)`` on a
    foreach's inner step). Metaflow catches each task; an error edge receives the map's
    ``MapItemsError``, its ``errors`` by item index."""

    def inner(i: int) -> int:
        if i == 2:
            raise TestRetry("item 2 always fails")
        return i

    f = (Formation("inner_catch").add_map("inner", inner, retries=2, backoff=0)
         .add_function("ex", lambda failure: failure.error).connect("inner", "ex", on_error=True))
    error = f.run([0, 1, 2, 3]).outputs["ex"]
    assert isinstance(error, MapItemsError)
    assert list(error.errors) == [2] and isinstance(error.errors[2], TestRetry)


def test_a_step_past_its_timeout_is_caught_as_a_timeout() -> None:
    """From metaflow test/core/tests/timeout_decorator.py (``@timeout(seconds=1)`` and
    ``@catch(var="ex")`` on a step sleeping 5 s: ``ex.type`` is a timeout exception), with a
    shorter limit: the catch comes at the limit, not when the sleep ends."""
    release = threading.Event()

    def sleep(x: Any) -> Any:
        release.wait(5)
        return x

    f = (Formation("timeout").add_function("sleep", sleep, timeout=0.2)
         .add_function("ex", lambda failure: type(failure.error).__name__).connect("sleep", "ex", on_error=True))
    started = time.monotonic()
    try:
        result = f.run(1, timeout=10)
        took = time.monotonic() - started
    finally:
        release.set()
    assert result.outputs == {"ex": "NodeTimeoutError"}
    assert took < 2.5


def test_a_timed_out_step_is_retried_and_each_attempt_gets_the_full_limit() -> None:
    """From metaflow test/core/tests/timeout_decorator.py with ``@retry`` (a timeout is a
    failure like any other): the first attempts hang past the limit, the third returns."""
    counter, release = Counter(), threading.Event()

    def sleep(x: int) -> int:
        if counter.hit("sleep") < 3:
            release.wait(5)
        return x * 2

    try:
        result = Formation("timeout_retry").add_function("sleep", sleep, timeout=0.2, retries=2, backoff=0).run(4)
    finally:
        release.set()
    assert result.output == 8 and result.nodes["sleep"].attempts == 3


def test_a_step_that_times_out_on_every_retry_is_caught_with_the_last_attempts_timeout() -> None:
    """From metaflow test/core/tests/timeout_decorator.py with catch_retry.py's decorators
    stacked (``@catch``, ``@retry(times=2)``, ``@timeout``): each attempt gets the limit,
    and the catch receives the third attempt's timeout."""
    release = threading.Event()

    def hang(x: int) -> int:
        release.wait(5)
        return x

    f = (Formation("timeout_retry_catch").add_function("a", hang, timeout=0.2, retries=2, backoff=0)
         .add_function("ex", lambda failure: (failure.attempts, type(failure.error).__name__, failure.error.attempt))
         .connect("a", "ex", on_error=True))
    try:
        result = f.run(1, timeout=20)
    finally:
        release.set()
    assert result.outputs == {"ex": (3, "NodeTimeoutError", 3)} and result.nodes["a"].attempts == 3


def test_a_foreach_timeout_bounds_the_whole_visit_not_each_item() -> None:
    """From metaflow test/core/tests/timeout_decorator.py (``@timeout`` on ``foreach-inner``).
    Deliberately different: Metaflow times each foreach task; a map's ``timeout`` bounds the
    visit, so items one at a time that each fit the limit still time out together."""

    def inner(i: int) -> int:
        time.sleep(0.15)
        return i

    f = Formation("foreach_timeout").add_map("inner", inner, max_workers=1, timeout=0.4)
    with pytest.raises(FormationRuntimeError) as info:
        f.run([1, 2, 3, 4, 5, 6])
    assert isinstance(info.value.__cause__, NodeTimeoutError) and info.value.node == "inner"


def test_a_failed_step_keeps_its_exception_type_and_message_on_the_run() -> None:
    """From metaflow test/core/tests/task_exception.py (``raise KeyError("Something has gone
    wrong")``: the task's exception says KeyError and carries the message)."""

    def start(x: Any) -> Any:
        raise KeyError("Something has gone wrong")

    f = (Formation("task_exception").add_function("start", start).add_function("end", lambda x: x)
         .connect("start", "end"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.__cause__.args == ("Something has gone wrong",)
    trace = info.value.nodes["start"]
    assert trace.status == "failed" and trace.error is not None and "KeyError" in trace.error
    assert "Something has gone wrong" in trace.error
    assert info.value.nodes["end"].status != "succeeded"


def test_a_catch_after_a_failure_lets_the_rest_of_the_flow_run_from_the_handler() -> None:
    """From metaflow test/core/tests/tag_catch.py (steps after a caught step still run and the
    flow succeeds): the handler's successors run."""
    f = (Formation("tag_catch").add_function("start", lambda x: x)
         .add_function("a", lambda x: 1 / 0).add_function("fallback", lambda failure: f"fallback for {failure.input}")
         .add_function("end", str.upper)
         .connect("start", "a").connect("a", "fallback", on_error=True).connect("fallback", "end"))
    result = f.run("x")
    assert result.outputs == {"end": "FALLBACK FOR X"} and result.status == "succeeded"
    # a node whose only out-edges are error edges is a sink (DESIGN "Sinks" counts forward
    # edges), and the end of its handler's branch its alternative: the one output is either's
    assert result.output == "FALLBACK FOR X"
    f.graph.nodes["a"]["fn"] = lambda x: f"{x} ok"
    assert (f.run("x").outputs, f.run("x").output) == ({"a": "x ok"}, "x ok")


def die(x: Any) -> Any:
    """Dies an ugly death: the process it runs in exits at once, as ``os.kill(pid, SIGKILL)``."""
    import os

    os._exit(9)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_a_step_whose_process_dies_is_retried_and_then_caught() -> None:
    """From metaflow test/core/tests/tag_catch.py (``os.kill(os.getpid(), SIGKILL)`` under
    ``@retry(times=2)`` and ``@catch``: every attempt dies, the catch handles it). On Ray a
    node process that dies is a failed attempt (DESIGN "Backends")."""
    f = (Formation("tag_catch_ray").add_function("start", lambda x: x).add_function("a", die, retries=2, backoff=0)
         .add_function("ex", lambda failure: failure.attempts).connect("start", "a").connect("a", "ex", on_error=True))
    result = f.run(1, backend="ray", timeout=50)
    assert result.outputs == {"ex": 3} and result.nodes["a"].status == "failed"


def end_raises_hard_to_pickle(x: Any) -> Any:
    raise ExternalCommandFailed("catch me!", 2)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_a_caught_exception_that_is_hard_to_pickle_keeps_its_message() -> None:
    """From metaflow test/core/tests/catch_retry.py (the end step's ``ExternalCommandFailed``
    is "non-trivial to pickle correctly"): crossing from a Ray actor to the handler, the
    failure still names the type and says "catch me!"."""
    f = (Formation("catch_end_ray").add_function("end", end_raises_hard_to_pickle)
         .add_function("end_ex", lambda failure: f"{type(failure.error).__name__}: {failure.error}")
         .connect("end", "end_ex", on_error=True))
    result = f.run(1, backend="ray", timeout=50)
    assert result.outputs == {"end_ex": "ExternalCommandFailed: catch me! (exit 2)"}


def test_a_steps_retry_timeout_and_catch_options_spelt_as_metaflows_are_refused_naming_ours() -> None:
    """From metaflow test/core/tests/catch_retry.py and timeout_decorator.py
    (``@retry(times=3, minutes_between_retries=0)``, ``@timeout(seconds=1)``,
    ``@catch(var="ex")``): the same words given as node options are a setup error naming
    our keyword with the value converted; ``times=3`` is not taken for a timeout."""
    with pytest.raises(FormationSetupError) as info:
        Formation("options").add_function("step", lambda x: x, times=3, minutes_between_retries=2)
    text = str(info.value)
    assert "times=3 is retries=3" in text and "did you mean 'timeout'" not in text
    assert "minutes_between_retries=2 is backoff=120" in text
    with pytest.raises(FormationSetupError) as info:
        Formation("options").add_function("step", lambda x: x, seconds=30, minutes=1)
    text = str(info.value)
    assert "seconds=30 is timeout=30" in text and "minutes=1 is timeout=60" in text
    with pytest.raises(FormationSetupError, match=r"var='ex': catching a node's failure is an error edge here, connect\(node, handler, on_error=True\)"):
        Formation("options").add_function("step", lambda x: x, var="ex")
