"""Task retries, ported from Celery's own test suite (celery/celery ``t/unit/tasks/test_tasks.py``
``test_task_retries``): ``max_retries`` / ``autoretry_for`` / ``retry_backoff`` / ``retry_backoff_max`` /
``retry_jitter`` are a node's ``retries`` / ``retry_on`` / ``backoff`` / ``max_backoff`` / ``jitter``, and
the tasks of a group are the items of a map, each retried on its own.
(``test_peer_celery_errors.py``'s module docstring maps the rest of Celery's error handling.)

Deliberately different (DESIGN.md "Supervision" and "Retries" document ours):
- Celery's ``retry_backoff=True`` waits 1, 2, 4 … seconds; ours waits ``backoff * 2**(attempt-1)``
  (``backoff`` in seconds). Celery's jitter is "full jitter" (anywhere in ``[0, delay]``); ours
  keeps each wait in the upper half of the capped delay, ``[delay/2, delay]``.
- Celery raises ``MaxRetriesExceededError`` when a task retries without an exception; here a
  node only retries because it raised, so the error after the last attempt is that attempt's own.
- Celery has ``dont_autoretry_for``; ``retry_on`` names only what is retried (a tuple of types).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.formation.test_peer_celery_errors import ExpectedError
from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.errors import (
    AgentError,
    ErrorKind,
    FleetItemsError,
    FormationRuntimeError,
    MapItemsError,
    PayloadError,
)
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider


class Retrying:
    """A task that fails ``failures`` times with ``error``, then returns ``value``."""

    def __init__(self, failures: int, value: Any = 0xFF, error: type[Exception] = ExpectedError) -> None:
        self.failures, self.value, self.error = failures, value, error
        self.iterations = 0
        self.lock = threading.Lock()

    def __call__(self, _: Any) -> Any:
        with self.lock:
            self.iterations += 1
            n = self.iterations
        if n <= self.failures:
            raise self.error(f"iteration {n}")
        return self.value


def retry_delays(events: list[FormationEvent]) -> list[float]:
    return [e.data["delay_s"] for e in events if e.type == "node_retry"]


# --- each task of a group retries on its own ------------------------------------------------


def test_a_map_retries_its_transient_item_failures_even_when_another_item_cannot_succeed() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry (each task of a
    group retries on its own: one task's ``Reject`` does not stop another's ``autoretry_for``)."""
    counter = Counter()

    def item(i: int) -> int:
        if counter.hit(i) == 1 and i == 1:
            raise ConnectionError("transient")
        if i == 0:
            raise PayloadError("item 0 can never succeed")
        return i

    with pytest.raises(FormationRuntimeError) as info:
        Formation("m").add_map("m", item, retries=2, backoff=0).run([0, 1, 2])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError)
    assert list(cause.errors) == [0]  # item 1 succeeded on its retry
    assert (counter.count(0), counter.count(1), counter.count(2)) == (1, 2, 1)


def test_a_map_over_a_formation_retries_only_the_items_whose_errors_retry_on_names() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry_arith
    (``autoretry_for`` judged per task) for the chords of a group: the handler sees only the item that
    could not succeed."""
    counter = Counter()

    def b(x: int) -> int:
        n = counter.hit(x)
        if x == 0:
            raise KeyError("never retried")
        if x == 1 and n == 1:
            raise ConnectionError("transient")
        return x

    inner = (Formation("c").add_function("a", lambda x: x).add_function("b", b)
             .add_function("body", lambda v: v["a"] + v["b"]).connect("a", "body").connect("b", "body"))
    f = (Formation("g").add_map("chords", formation=inner, max_workers=2, retries=1, backoff=0, retry_on=ConnectionError)
         .add_function("errback", lambda nf: {i: type(e).__name__ for i, e in nf.error.errors.items()})
         .connect("chords", "errback", on_error=True))
    result = f.run([0, 1, 2])
    assert result.outputs == {"errback": {0: "NestedRunError"}}
    assert [counter.count(x) for x in (0, 1, 2)] == [1, 2, 1]


def test_a_fleet_retries_an_items_transient_error_beside_an_item_the_model_refused() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry for a group of
    agent sessions: a refused request (kind ``invalid``, never retried) does not keep the other item's
    connection error from being retried."""
    provider = ScriptedProvider([AgentError("bad request", kind=ErrorKind.INVALID), ConnectionError("down"), "ok"])
    f = Formation("fl").add_fleet("fleet", Agent("w", provider=provider), max_workers=1, retries=2, backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"1 of 2 item\(s\) failed; first: item 0: bad request") as info:
        f.run(["a", "b"])
    cause = info.value.__cause__
    assert isinstance(cause, FleetItemsError) and list(cause.errors) == [0]
    assert info.value.attempts == 2


# --- retries: max_retries, autoretry_for, backoff, jitter ------------------------------------


def test_max_retries_three_runs_the_task_four_times_then_fails_with_its_last_error() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_retry and ::test_max_retries_exceeded."""
    task = Retrying(failures=10)
    f = Formation("r").add_function("retry_task", task, retries=3, backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"'retry_task' failed after 4 attempt\(s\).*iteration 4") as info:
        f.run(None)
    assert (task.iterations, info.value.attempts, info.value.node) == (4, 4, "retry_task")


def test_a_task_that_succeeds_on_its_last_retry_returns_its_value() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_retry_eager_should_return_value."""
    task = Retrying(failures=3)
    result = Formation("r").add_function("retry_task", task, retries=3, backoff=0).run(None)
    assert (result.output, task.iterations, result.nodes["retry_task"].attempts) == (0xFF, 4, 4)


def test_max_retries_zero_runs_the_task_once() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_retry_task_explicit_exception."""
    task = Retrying(failures=1)
    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt\(s\)"):
        Formation("r").add_function("t", task, retries=0).run(None)
    assert task.iterations == 1


def test_retry_on_a_base_class_retries_its_subclasses() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry
    (``autoretry_for=(ZeroDivisionError,)``, max_retries 5: six iterations)."""
    task = Retrying(failures=10, error=ZeroDivisionError)
    with pytest.raises(FormationRuntimeError):
        Formation("r").add_function("t", task, retries=5, backoff=0, retry_on=ArithmeticError).run(None)
    assert task.iterations == 6


def test_an_error_retry_on_does_not_name_fails_at_once() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry_arith
    (``dont_autoretry_for``: ours names only what is retried)."""
    task = Retrying(failures=10, error=ZeroDivisionError)
    with pytest.raises(FormationRuntimeError, match=r"ZeroDivisionError") as info:
        Formation("r").add_function("t", task, retries=5, retry_on=(ConnectionError, KeyError)).run(None)
    assert (task.iterations, info.value.attempts) == (1, 1)


def test_a_rejected_task_is_never_retried() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_tasks::test_reject (``Reject(requeue=False)``):
    a ``PayloadError`` (bad input) is not worth another attempt."""
    counter = Counter()

    def reject(x: Any) -> Any:
        counter.hit("calls")
        raise PayloadError(f"cannot use {x!r}")

    with pytest.raises(FormationRuntimeError, match=r"PayloadError: cannot use 'bad'"):
        Formation("r").add_function("t", reject, retries=5, backoff=0).run("bad")
    assert counter.count("calls") == 1


def test_retry_backoff_doubles_each_wait() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry_backoff
    (countdowns ``[1, 2, 4, 8]``; ours in units of ``backoff``)."""
    events: list[FormationEvent] = []
    task = Retrying(failures=10)
    with pytest.raises(FormationRuntimeError):
        Formation("r").add_function("t", task, retries=4, backoff=0.001, jitter=False).run(None, on_event=events.append)
    assert retry_delays(events) == [0.001, 0.002, 0.004, 0.008]


def test_retry_backoff_max_caps_every_later_wait() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_override_retry_backoff_max_from_base
    (countdowns ``[1, 2, 4, 8, 16, 16]``)."""
    events: list[FormationEvent] = []
    task = Retrying(failures=10)
    f = Formation("r").add_function("t", task, retries=6, backoff=0.001, max_backoff=0.016, jitter=False)
    with pytest.raises(FormationRuntimeError):
        f.run(None, on_event=events.append)
    assert retry_delays(events) == [0.001, 0.002, 0.004, 0.008, 0.016, 0.016]


def test_retry_jitter_keeps_each_wait_within_its_capped_delay() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry_backoff_jitter
    (each countdown at most the backoff). Celery's jitter goes down to 0; ours stays in the upper half."""
    events: list[FormationEvent] = []
    task = Retrying(failures=10)
    f = Formation("r").add_function("t", task, retries=5, backoff=0.001, max_backoff=0.004)
    with pytest.raises(FormationRuntimeError):
        f.run(None, on_event=events.append)
    caps = [0.001, 0.002, 0.004, 0.004, 0.004]
    delays = retry_delays(events)
    assert len(delays) == 5 and all(cap / 2 <= d <= cap for d, cap in zip(delays, caps, strict=True))


def test_the_retries_of_a_map_item_wait_their_backoff_too() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_retry_backoff_from_base
    for the tasks of a group (``group(task.s(i) ...)``: each retries with backoff)."""
    events: list[FormationEvent] = []
    counter = Counter()

    def flaky(i: int) -> int:
        if counter.hit(i) <= 2:
            raise ConnectionError("down")
        return i

    f = Formation("r").add_map("m", flaky, retries=2, backoff=0.001, jitter=False)
    assert f.run([7], on_event=events.append).output == [7]
    assert retry_delays(events) == [0.001, 0.002]


# --- backend="ray" --------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_max_retries_on_ray_counts_every_attempt() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_max_retries_exceeded on
    backend="ray" (a Ray actor's calls are counted by the attempts it reports)."""

    def always(x: int) -> int:
        raise ExpectedError(f"iteration for {x}")

    f = Formation("r").add_function("retry_task", always, retries=2, backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"'retry_task' failed after 3 attempt\(s\)") as info:
        f.run(1, backend="ray", timeout=120)
    assert isinstance(info.value.__cause__, ExpectedError) and info.value.attempts == 3


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_map_on_ray_retries_its_transient_item_failures_beside_one_that_cannot_succeed(tmp_path: Any) -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_autoretry on backend="ray"
    (the held item's error travels with the retried call; the calls are counted in files, shared with the
    Ray workers)."""

    def item(i: int) -> int:
        mark = tmp_path / f"item{i}"
        first = not mark.exists()
        mark.write_text("ran")
        if i == 0:
            raise PayloadError("item 0 can never succeed")
        if i == 1 and first:
            raise ConnectionError("transient")
        return i

    f = Formation("m").add_map("m", item, max_workers=2, retries=2, backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"1 of 3 item\(s\) failed; first: item 0: PayloadError") as info:
        f.run([0, 1, 2], backend="ray", timeout=120)
    assert info.value.attempts == 2
