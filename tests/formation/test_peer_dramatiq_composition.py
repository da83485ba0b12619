"""Pipelines, groups and callbacks, ported from Dramatiq's own test suite (Bogdanp/dramatiq
``tests/test_composition.py``, ``tests/test_callbacks.py``): a Dramatiq ``pipeline``
(``a.message() | b.message()``) passes each result on to the next actor, which is a chain
of nodes (``connect(a, b, c)``); a ``group`` runs messages in parallel, which is a map node
(``add_map``) or parallel branches; ``on_success``/``on_failure`` callbacks are a node
downstream and an error edge (``connect(a, handler, on_error=True)``).

Deliberately different: Dramatiq's ``on_failure`` callback is sent on every failed attempt,
retried or not; an error edge is taken once, when the node's retries are spent. A
``group``'s completion callback needs a rate-limiter backend in Dramatiq; here the node
after a map simply waits for all of its items.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, FormationResult
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation import NodeFailure


def add(n: int) -> Any:
    """Dramatiq's ``add.message(n)`` in a pipeline: adds ``n`` to the result it is piped."""
    return lambda x: x + n


def test_a_pipeline_passes_each_result_on_and_keeps_every_steps_result() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_pipeline_results_can_be_retrieved
    (``add(1, 2) | add(3) | add(4)``: the result is 10, the steps' results 3, 6 and 10)."""
    f = (Formation("pipe").add_function("add_2", add(2)).add_function("add_3", add(3))
         .add_function("add_4", add(4)).connect("add_2", "add_3", "add_4"))
    result = f.run(1)
    assert result.output == 10
    assert [result.nodes[n].output for n in ("add_2", "add_3", "add_4")] == [3, 6, 10]


def test_a_pipeline_nested_in_a_pipeline_gives_what_the_flattened_pipeline_gives() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_pipelines_flatten_child_pipelines."""
    inner = Formation("inner").add_function("add_3", add(3)).add_function("add_4", add(4)).connect("add_3", "add_4")
    nested = (Formation("nested").add_function("add_2", add(2)).add_formation("child", inner)
              .add_function("add_5", add(5)).connect("add_2", "child", "add_5"))
    flat = (Formation("flat").add_function("add_2", add(2)).add_function("add_3", add(3))
            .add_function("add_4", add(4)).add_function("add_5", add(5)).connect("add_2", "add_3", "add_4", "add_5"))
    result = nested.run(1)
    assert result.output == flat.run(1).output == 15
    assert result.nodes["child"].output == 10


def test_a_pipeline_stops_at_the_step_that_failed_and_keeps_the_results_before_it() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_pipeline_does_not_continue_to_next_actor_when_message_is_marked_as_failed."""
    counter = Counter()

    def fail(_: int) -> int:
        raise ValueError("marked as failed")

    def last(x: int) -> int:
        counter.hit("last")
        return x

    f = (Formation("pipe").add_function("first", add(1)).add_function("fail", fail).add_function("last", last)
         .connect("first", "fail", "last"))
    with pytest.raises(FormationRuntimeError, match=r"node 'fail'.*ValueError: marked as failed") as info:
        f.run(1)
    assert info.value.outputs == {"first": 2}
    assert {n: t.status for n, t in info.value.nodes.items()} == {
        "first": "succeeded", "fail": "failed", "last": "skipped"}
    assert counter.count("last") == 0


def test_a_pipeline_run_past_its_time_limit_fails_and_says_which_steps_finished() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_pipeline_results_respect_timeouts (getting the
    results with a timeout shorter than the steps raises ``ResultTimeout``)."""
    release = threading.Event()

    def wait(n: float) -> float:
        if n > 0.1:
            release.wait(5)
        return n * 2

    f = (Formation("pipe").add_function("w1", wait).add_function("w2", wait).add_function("w3", wait)
         .connect("w1", "w2", "w3"))
    try:
        started = time.monotonic()
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.5s") as info:
            f.run(0.1, timeout=0.5)
        assert time.monotonic() - started < 2.5
    finally:
        release.set()
    assert info.value.outputs == {"w1": 0.2}
    assert (info.value.nodes["w2"].status, info.value.nodes["w3"].status) == ("cancelled", "skipped")


def test_a_pipelines_progress_is_one_finished_event_per_step_in_order() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_pipelines_expose_completion_stats (every time a
    step completes, ``completed_count`` goes up; then ``completed`` is true)."""
    f = (Formation("pipe").add_function("a", add(1)).add_function("b", add(1)).add_function("c", add(1))
         .connect("a", "b", "c"))
    finished: list[tuple[str | None, Any]] = []
    last = None
    for event in f.run_stream(0):
        if event.type == "node_finished":
            finished.append((event.node, event.data["output"]))
        last = event
    assert finished == [("a", 1), ("b", 2), ("c", 3)]
    assert last is not None and last.type == "run_finished"


def test_a_group_runs_its_items_in_parallel() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_execute_jobs_in_parallel (five 100 ms
    jobs take less than 500 ms); here the five items wait for one another, so they must be
    in flight together."""
    together = threading.Barrier(5, timeout=5)

    def wait(i: int) -> int:
        together.wait()
        return i

    result = Formation("group").add_map("wait", wait).run(list(range(5)))
    assert result.output == [0, 1, 2, 3, 4]


def test_a_group_of_groups_gives_one_list_of_results_per_inner_group() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_execute_inner_groups
    (``[[None, None]] * 3``)."""
    inner = Formation("inner").add_map("wait", lambda _: None)
    result = Formation("outer").add_map("groups", formation=inner).run([[1, 2]] * 3)
    assert result.output == [[None, None]] * 3


def test_waiting_on_a_group_with_a_timeout_raises_and_the_group_is_not_done(held: Any) -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_can_time_out (``g.wait(timeout=100)``
    raises ``ResultTimeout``; ``g.completed`` is false), then the group completes."""
    with Formation("group").add_map("wait", held).start() as running:
        future = running.submit([1, 2])
        assert held.reached.wait(5)
        with pytest.raises(FutureTimeout):
            future.result(timeout=0.1)
        assert not future.done()
        held.opened.set()
        assert future.result(5).output == [1, 2]


def test_a_groups_completion_callback_runs_once_after_every_item_with_all_their_results() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_can_have_completion_callbacks (the
    callback runs once, after the group's messages all ran)."""
    counter = Counter()

    def item(i: int) -> int:
        counter.hit("item")
        return i * 10

    def finalize(results: list[int]) -> int:
        counter.hit("finalize")
        assert counter.count("item") == 4
        return sum(results)

    f = Formation("group").add_map("items", item).add_function("finalize", finalize).connect("items", "finalize")
    assert f.run([1, 2, 3, 4]).output == 100
    assert counter.count("finalize") == 1


def test_a_group_of_pipelines_with_a_completion_callback_gets_each_pipelines_last_result() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_of_pipelines_can_have_completion_callbacks."""
    pipe = Formation("pipe").add_function("double", lambda x: x * 2).add_function("add_1", add(1)).connect(
        "double", "add_1")
    f = (Formation("group").add_map("pipes", formation=pipe, max_workers=2)
         .add_function("finalize", lambda results: results).connect("pipes", "finalize"))
    assert f.run([1, 2, 3]).output == [3, 5, 7]


def test_a_group_whose_items_finish_out_of_order_gives_results_in_item_order() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_expose_completion_stats (jobs of varying
    durations complete one by one); the results come back in the group's order."""
    finished: list[int] = []
    lock = threading.Lock()
    turn = {i: threading.Event() for i in range(3)}
    turn[2].set()

    def wait(i: int) -> int:
        assert turn[i].wait(5)
        with lock:
            finished.append(i)
        if i > 0:
            turn[i - 1].set()
        return i

    assert Formation("group").add_map("wait", wait).run([0, 1, 2]).output == [0, 1, 2]
    assert finished == [2, 1, 0]


def test_a_success_callback_on_the_future_receives_the_result_once() -> None:
    """Ported from Bogdanp/dramatiq tests/test_callbacks.py::test_actors_can_define_success_callbacks (``save`` gets
    the result of ``add``)."""
    db: list[int] = []
    called = threading.Event()

    def save(future: Future[FormationResult]) -> None:
        db.append(future.result().output)
        called.set()

    with Formation("cb").add_function("add", lambda p: p[0] + p[1]).start() as running:
        future = running.submit((1, 2))
        future.add_done_callback(save)
        assert called.wait(5)
        assert future.result(5).output == 3
    assert db == [3]


def test_a_failure_callback_gets_the_failed_nodes_name_error_and_input_and_the_run_goes_on() -> None:
    """Ported from Bogdanp/dramatiq tests/test_callbacks.py::test_actors_can_define_failure_callbacks
    (``report_exceptions(message_data, exception_data)``: the actor's name, the error's type and message)."""
    reports: list[tuple[str, str, Any, str]] = []

    def do_work(x: int) -> int:
        raise RuntimeError(f"cannot work on {x}")

    def report_exceptions(failure: NodeFailure) -> str:
        reports.append((failure.node, type(failure.error).__name__, failure.input, str(failure.error)))
        return "reported"

    f = (Formation("cb").add_function("prepare", add(1)).add_function("do_work", do_work)
         .add_function("report_exceptions", report_exceptions).connect("prepare", "do_work")
         .connect("do_work", "report_exceptions", on_error=True))
    result = f.run(1)
    assert result.outputs == {"report_exceptions": "reported"}  # do_work is a sink too (its error edge is not a way on)
    assert reports == [("do_work", "RuntimeError", 2, "cannot work on 2")]
    assert result.nodes["do_work"].status == "failed"


def test_a_failure_callback_is_called_once_after_the_retries_not_on_every_failed_attempt() -> None:
    """Ported from Bogdanp/dramatiq tests/test_callbacks.py::test_actors_can_define_failure_callbacks with retries.

    Deliberately different: Dramatiq's ``on_failure`` is sent for every failed attempt,
    even one that will be retried; an error edge is taken once, when the retries are spent,
    with the attempt count."""
    counter = Counter()

    def do_work(_: Any) -> None:
        counter.hit("attempt")
        raise RuntimeError("failure")

    def report(failure: NodeFailure) -> int:
        counter.hit("report")
        return failure.attempts

    f = (Formation("cb").add_function("do_work", do_work, retries=2, backoff=0).add_function("report", report)
         .connect("do_work", "report", on_error=True))
    assert f.run(None).outputs == {"report": 3}
    assert (counter.count("attempt"), counter.count("report")) == (3, 1)


def test_a_success_callback_node_is_not_called_when_its_node_fails_into_an_error_edge() -> None:
    """Ported from Bogdanp/dramatiq tests/test_callbacks.py (``on_success`` and ``on_failure`` on one message: only
    one of them is sent)."""
    counter = Counter()

    def do_work(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x

    def on_success(x: int) -> str:
        counter.hit("success")
        return f"ok {x}"

    def on_failure(failure: NodeFailure) -> str:
        counter.hit("failure")
        return f"failed {failure.input}"

    f = (Formation("cb").add_function("do_work", do_work).add_function("on_success", on_success)
         .add_function("on_failure", on_failure).connect("do_work", "on_success")
         .connect("do_work", "on_failure", on_error=True))
    ok, bad = f.run(1), f.run(-1)
    assert (ok.outputs, bad.outputs) == ({"on_success": "ok 1"}, {"on_failure": "failed -1"})
    assert (ok.nodes["on_failure"].status, bad.nodes["on_success"].status) == ("skipped", "skipped")
    assert (counter.count("success"), counter.count("failure")) == (1, 1)


def test_a_plain_callable_given_as_a_callback_is_refused_saying_to_declare_it_as_a_node() -> None:
    """Ported from Bogdanp/dramatiq tests/test_callbacks.py::test_actor_callbacks_raise_type_error_when_given_a_normal_callable."""

    def callback(_: Any) -> None:
        return None

    f = Formation("cb").add_function("do_work", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"connect takes node names, not a function; declare it as a node "
                       r"first, e.g. add_function\('callback', callback\), and connect its name 'callback'"):
        f.connect("do_work", callback, on_error=True)  # type: ignore[arg-type]
    with pytest.raises(FormationSetupError, match=r"e.g. add_function\('step', fn\), and connect its name 'step'"):
        f.connect("do_work", lambda _: None, on_error=True)  # type: ignore[arg-type]
    assert list(f.graph.edges) == []


def test_a_step_that_ignores_what_is_piped_to_it_still_runs_after_the_one_before() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_pipelines_can_be_incomplete
    (``message_with_options(pipe_ignore=True)``: the next message is not given the result).

    Deliberately different: every node receives its predecessor's output; a step that does
    not want it takes an unused parameter (a function of no parameters is a setup error
    that says so)."""
    order: list[str] = []

    def first(x: int) -> int:
        order.append("first")
        return x

    def ignore(_: Any) -> str:
        order.append("ignore")
        return "fresh"

    f = Formation("pipe").add_function("first", first).add_function("ignore", ignore).connect("first", "ignore")
    assert f.run(1).output == "fresh"
    assert order == ["first", "ignore"]
    with pytest.raises(FormationSetupError, match=r"cannot be called with one argument; add a positional parameter"):
        Formation("bad").add_function("a", add(1)).add_function("b", lambda: 5).connect("a", "b").validate()
