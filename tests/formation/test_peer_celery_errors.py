"""Errors, error callbacks and revokes, ported from Celery's own test suite
(celery/celery ``t/integration/test_canvas.py``, ``t/unit/tasks/test_tasks.py``,
``t/unit/tasks/test_result.py``, ``t/unit/tasks/test_chord.py``).

How Celery's error handling maps onto ours:
- ``link_error=handler`` is an error edge, ``connect(node, handler, on_error=True)``: the
  handler receives a :class:`NodeFailure` (``node``, ``error``, ``input``, ``attempts``).
- ``result.get(propagate=True)`` is ``run()`` raising ``FormationRuntimeError`` (its
  ``__cause__`` the node's error, its ``nodes`` every node's trace: what succeeded, what
  failed, what never ran); ``propagate=False`` is ``on_error="skip"`` or an error edge.
- ``revoke`` is ``future.cancel()`` on a started formation; ``get(timeout=)`` a run ``timeout``.
- Retries are in ``test_peer_celery_retries.py``.

- ``fail.apply(link_error=cb).get(propagate=False)`` gives the callback's result: a node whose
  only out-edges are error edges is a sink too (its output is the run's when it succeeds), and it
  and its handler exclude each other, so ``result.output`` is the handler's value.

Deliberately different (DESIGN.md "Supervision" and "Error edges" document ours):
- A chord waits for its whole header before failing; a failing node fails the run at once,
  and branches still in flight are cancelled (their traces say ``cancelled``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.formation import NestedRunError, NodeFailure


class ExpectedError(Exception):
    """Celery's integration ``ExpectedException``."""


def fail(x: Any) -> Any:
    raise ExpectedError(f"Task expected to fail: {x}")


# --- link_error: error edges --------------------------------------------------------------


def test_an_error_callback_receives_the_failure_and_its_result_is_the_runs() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_link_error::test_link_error
    (``fail.apply(link_error=return_exception.s())``)."""
    f = (Formation("l").add_function("fail", fail).add_function("return_exception", lambda nf: nf.error)
         .connect("fail", "return_exception", on_error=True))
    result = f.run("test")
    [error] = result.outputs.values()
    assert isinstance(error, ExpectedError) and str(error) == "Task expected to fail: test"
    assert list(result.outputs) == ["return_exception"] and result.output is error  # the one alternative that produced
    assert (result.nodes["fail"].status, result.nodes["return_exception"].status) == ("failed", "succeeded")


def test_an_error_callback_that_fails_once_is_retried_and_still_sees_the_original_failure() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_link_error::test_link_error_callback_retries
    (``link_error=retry_once.s()``)."""
    seen: list[NodeFailure] = []
    counter = Counter()

    def retry_once(failure: NodeFailure) -> str:
        seen.append(failure)
        if counter.hit("calls") == 1:
            raise ConnectionError("retry me")
        return f"{failure.node}: {failure.error}"

    f = (Formation("l").add_function("fail", fail).add_function("retry_once", retry_once, retries=1, backoff=0)
         .connect("fail", "retry_once", on_error=True))
    assert f.run("test").outputs == {"retry_once": "fail: Task expected to fail: test"}
    assert [type(s.error) for s in seen] == [ExpectedError, ExpectedError]


def test_an_error_callback_in_a_chain_sees_the_failed_node_its_input_and_its_attempts() -> None:
    """Ported from celery/celery t/unit/tasks/test_tasks.py::test_task_retries::test_max_retries_exceeded_task_args
    (the error carries the task's args) and t/integration/test_canvas.py::test_chain::test_chain_on_error."""
    seen: list[NodeFailure] = []
    f = (Formation("c").add_function("add", lambda x: x + 2).add_function("fail", fail, retries=2, backoff=0)
         .add_function("after", lambda x: x + 4).add_function("handler", lambda nf: seen.append(nf) or "handled")
         .connect("add", "fail", "after").connect("fail", "handler", on_error=True))
    result = f.run(1)
    assert result.outputs == {"handler": "handled"}
    [failure] = seen
    assert (failure.node, failure.input, failure.attempts, failure.run_id) == ("fail", 3, 3, result.run_id)
    assert str(failure.error) == "Task expected to fail: 3"
    assert result.nodes["after"].status == "skipped" and result.nodes["after"].attempts == 0


def test_a_failing_chain_raises_its_error_and_keeps_what_ran_before_it() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_chain_on_error
    (``res.get(propagate=True)`` raises the chain's error; the parent's result is there)."""
    f = (Formation("c").add_function("add", lambda p: add_pair(p)).add_function("fail", fail)
         .add_function("add2", lambda x: x + 7).connect("add", "fail", "add2"))
    with pytest.raises(FormationRuntimeError, match=r"node 'fail' failed after 1 attempt") as info:
        f.run((1, 2))
    assert isinstance(info.value.__cause__, ExpectedError)
    assert info.value.outputs == {"add": 3}
    assert {n: t.status for n, t in info.value.nodes.items()} == {"add": "succeeded", "fail": "failed", "add2": "skipped"}


def add_pair(p: tuple[int, int]) -> int:
    return p[0] + p[1]


# --- errors inside a group or a chord -------------------------------------------------------


def chord_with_failing_header(**fail_policies: Any) -> tuple[Formation, Counter]:
    """``chord([add(1, 2), add(3, 4), fail()], body)``; ``fail`` raises once both adds are done
    (a failure fails the run at once, cancelling what is still in flight)."""
    body_calls = Counter()
    done = [threading.Event(), threading.Event()]

    def fail_after_the_adds(x: Any) -> Any:
        assert all(d.wait(5) for d in done)
        return fail(x)

    f = (Formation("c").add_function("add1", lambda _: done[0].set() or 3)
         .add_function("add2", lambda _: done[1].set() or 7)
         .add_function("fail", fail_after_the_adds, **fail_policies)
         .add_function("body", lambda v: body_calls.hit("body") and v))
    for n in ("add1", "add2", "fail"):
        f.connect(n, "body")
    return f, body_calls


def test_a_chord_whose_header_fails_raises_and_never_calls_its_body_but_keeps_the_other_results() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_chord_on_error (the successful
    header results ``[3, 7]`` are kept, one header task failed, the body never ran)."""
    f, body_calls = chord_with_failing_header()
    with pytest.raises(FormationRuntimeError, match=r"node 'fail'") as info:
        f.run("x")
    traces = info.value.nodes
    assert [traces[n].output for n in ("add1", "add2")] == [3, 7]
    assert [n for n, t in traces.items() if t.status == "failed"] == ["fail"]
    assert traces["body"].status == "skipped" and body_calls.count("body") == 0


def test_a_group_whose_branches_both_fail_reports_every_failure() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_result_set::test_result_set_error
    (``rs.results[0].failed()``, ``rs.results[1].successful()``: every task's state is known)."""
    gate = threading.Barrier(2, timeout=5)

    def fail_together(x: Any) -> Any:
        gate.wait()
        raise ExpectedError("both")

    f = (Formation("g").add_function("raise1", fail_together).add_function("raise2", fail_together)
         .add_function("ok", lambda x: x).add_function("join", lambda v: v)
         .connect("raise1", "join").connect("raise2", "join").connect("ok", "join"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    traces = info.value.nodes
    assert (traces["ok"].status, traces["ok"].output, traces["join"].status) == ("succeeded", 1, "skipped")
    assert info.value.node in ("raise1", "raise2") and traces[info.value.node].error == "ExpectedError: both"
    # the other one failed too, unless the run had already failed and cancelled it
    assert {traces["raise1"].status, traces["raise2"].status} <= {"failed", "cancelled"}


def test_a_group_branch_skipped_on_error_leaves_the_others_results_to_the_join() -> None:
    """Ported from celery/celery t/unit/tasks/test_result.py::test_GroupResult::test_get_propagate_false
    (``get(propagate=False)`` gives the successes beside the failure): ``on_error="skip"``."""
    f, _ = chord_with_failing_header(on_error="skip")
    result = f.run("x")
    assert result.output == {"add1": 3, "add2": 7}
    assert result.nodes["fail"].status == "skipped" and "ExpectedError" in (result.nodes["fail"].error or "")


def test_a_map_with_failing_items_reports_every_failed_item_by_index() -> None:
    """Ported from celery/celery t/unit/tasks/test_result.py::test_GroupResult::test_join_timeout / test_failed
    (a group with failures is ``failed()``; every task's error is there, nothing is lost)."""

    def div(p: tuple[int, int]) -> float:
        return p[0] / p[1]

    f = Formation("g").add_map("div", div)
    with pytest.raises(FormationRuntimeError, match=r"2 of 4 item\(s\) failed; first: item 1: ZeroDivisionError") as info:
        f.run([(1, 1), (1, 0), (2, 1), (3, 0)])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError)
    assert sorted(cause.errors) == [1, 3] and all(isinstance(e, ZeroDivisionError) for e in cause.errors.values())


def test_an_error_callback_of_a_map_receives_every_failed_items_error() -> None:
    """Ported from celery/celery t/unit/tasks/test_chord.py::test_unlock_chord_task::test_when_not_ready / test_callback_fails
    (a chord's errback sees which header task failed)."""
    seen: list[NodeFailure] = []
    f = (Formation("g").add_map("div", lambda p: p[0] / p[1])
         .add_function("errback", lambda nf: seen.append(nf) or sorted(nf.error.errors))
         .connect("div", "errback", on_error=True))
    assert f.run([(1, 0), (1, 1), (2, 0)]).outputs == {"errback": [0, 2]}
    assert seen[0].node == "div" and seen[0].input == [(1, 0), (1, 1), (2, 0)]


def test_a_chord_header_as_a_map_retries_only_its_failed_items() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_chord_header_task_retried and
    t/unit/tasks/test_tasks.py::test_task_retries::test_retry (each task retries on its own)."""
    counter = Counter()

    def flaky(i: int) -> int:
        if counter.hit(i) == 1 and i % 2:
            raise ConnectionError(f"item {i}")
        return i * 10

    f = (Formation("c").add_map("header", flaky, retries=1, backoff=0)
         .add_function("tsum", sum).connect("header", "tsum"))
    assert f.run([0, 1, 2, 3]).output == 60
    assert [counter.count(i) for i in range(4)] == [1, 2, 1, 2]


def test_an_error_inside_a_nested_chord_reaches_the_outer_error_callback_naming_the_inner_node() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chain::test_chain_replaced_with_a_chain_and_an_error_callback
    (an errback of the outer canvas sees an inner task's error)."""
    inner = (Formation("inner").add_function("ok", lambda x: x).add_function("boom", fail)
             .add_function("body", lambda v: v).connect("ok", "body").connect("boom", "body"))
    seen: list[NodeFailure] = []
    f = (Formation("outer").add_formation("chord", inner).add_function("errback", lambda nf: seen.append(nf) or "seen")
         .connect("chord", "errback", on_error=True))
    assert f.run("Hello").outputs == {"errback": "seen"}
    [failure] = seen
    assert failure.node == "chord" and isinstance(failure.error, NestedRunError)
    assert failure.error.inner.node == "boom" and isinstance(failure.error.inner.__cause__, ExpectedError)


def test_a_map_over_a_chord_formation_whose_item_fails_names_the_item_and_the_inner_node() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_chord::test_parallel_chords with a failing
    header (``group(chord, chord)``: which chord failed, and in which task)."""
    inner = (Formation("c").add_function("a", lambda x: x).add_function("b", lambda x: 1 / x)
             .add_function("body", lambda v: v["a"] + v["b"]).connect("a", "body").connect("b", "body"))
    f = Formation("g").add_map("chords", formation=inner)
    with pytest.raises(FormationRuntimeError) as info:
        f.run([1, 0, 2])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]
    item = cause.errors[1]
    assert isinstance(item, NestedRunError) and item.inner.node == "b"
    assert "ZeroDivisionError" in str(item)


# --- revoke, get(timeout=) ---------------------------------------------------------------


def test_revoking_a_chord_in_flight_cancels_it_and_never_calls_its_body() -> None:
    """Ported from celery/celery t/unit/tasks/test_result.py::test_GroupResult::test_revoke and
    t/unit/tasks/test_chord.py::test_chord::test_chord_revoke (``chord.revoke()``)."""
    started, release = threading.Event(), threading.Event()
    body_calls = Counter()

    def stuck(x: int) -> int:
        if x == 1:
            started.set()
            release.wait(5)
        return x

    f = (Formation("c").add_function("h1", stuck).add_function("h2", lambda x: x)
         .add_function("body", lambda v: body_calls.hit("body") and v).connect("h1", "body").connect("h2", "body"))
    try:
        with f.start() as running:
            future = running.submit(1)
            assert started.wait(5)
            assert future.cancel() is True
            with pytest.raises(CancelledError):
                future.result(timeout=5)
            assert running.submit(2).result(timeout=5).output == {"h1": 2, "h2": 2}  # other runs go on
    finally:
        release.set()
    assert body_calls.count("body") == 1  # only the second run's body


def test_get_with_a_timeout_fails_the_run_when_a_task_never_finishes() -> None:
    """Ported from celery/celery t/unit/tasks/test_result.py::test_AsyncResult::test_get_timeout
    (``TimeoutError`` from ``get(timeout=)``): a run ``timeout`` fails the run within it."""
    release = threading.Event()
    f = Formation("t").add_function("stuck", lambda x: release.wait(5))
    t0 = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError, match=r"timeout|timed out|time limit"):
            f.run(1, timeout=0.2)
    finally:
        release.set()
    assert time.monotonic() - t0 < 1.5


# --- backend="ray" --------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_error_callback_of_a_map_on_ray_receives_every_failed_item() -> None:
    """Ported from celery/celery t/integration/test_canvas.py::test_link_error::test_link_error on backend="ray",
    for a group."""
    f = (Formation("g").add_map("div", lambda p: p[0] / p[1], max_workers=2)
         .add_function("errback", lambda nf: (nf.node, sorted(nf.error.errors), nf.attempts))
         .connect("div", "errback", on_error=True))
    assert f.run([(1, 0), (1, 1), (2, 0)], backend="ray", timeout=120).outputs == {"errback": ("div", [0, 2], 1)}
