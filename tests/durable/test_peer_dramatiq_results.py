"""Results kept, and the runs a stopped worker leaves, ported from Dramatiq's own test suite
(Bogdanp/dramatiq ``tests/test_results.py``, ``tests/test_composition.py``,
``tests/middleware/test_shutdown.py``, ``tests/test_worker.py``): Dramatiq's ``Results``
middleware stores what an actor returned (or the exception it raised, once its retries are
spent) in a result backend, and a message a stopped worker had not finished goes back on
its queue; here a run store journals each node visit's output, the run's status and its
error, and ``resume`` finishes a run that was cut short without running again what the
journal holds.

Deliberately different: Dramatiq keeps one result per message, fetched by message id (and
``forget``-able one by one); a run store keeps a run's whole journal, read with ``get``,
``load`` or ``history``, and drops finished runs with ``prune``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter, Gate, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore, SerializationError


def test_a_runs_result_is_kept_in_the_store_and_read_back_from_another_handle(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_results.py::test_actors_can_store_results and
    ``test_messages_can_get_results_from_backend`` (``get_result(message)`` is 42)."""
    f = Formation("results").add_function("do_work", lambda _: 42)
    assert f.run(None, store=store, run_id="r-42").output == 42
    with RunStore(store.path) as other:
        assert other.get("r-42").status == "succeeded"
        assert other.load("r-42").visits["do_work"] == {1: 42}


def test_a_result_not_yet_there_is_missing_from_the_journal_while_the_run_is_in_flight(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_results.py::test_retrieving_a_result_can_raise_result_missing
    (asked without blocking while the actor still works: ``ResultMissing``)."""
    held = Gate()
    f = Formation("results").add_function("first", lambda x: x + 1).add_function("do_work", held).connect(
        "first", "do_work")
    with f.start(store=store) as running:
        future = running.submit(1, run_id="missing")
        try:
            assert held.reached.wait(5)
            assert store.get("missing").status == "running"
            assert until(lambda: store.load("missing").visits.get("first") == {1: 2})
            assert "do_work" not in store.load("missing").visits
        finally:
            held.opened.set()
        assert future.result(5).output == 2
    assert store.load("missing").visits["do_work"] == {1: 2}


def test_a_failed_runs_error_is_kept_naming_the_node_the_exception_type_and_message(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_results.py::test_actors_can_store_exceptions (``get_result`` raises
    ``ResultFailure`` carrying the original exception's type and message)."""

    def do_work(_: Any) -> None:
        raise RuntimeError("failed")

    with pytest.raises(FormationRuntimeError):
        Formation("results").add_function("do_work", do_work).run(None, store=store, run_id="boom")
    record = store.get("boom")
    assert record.status == "failed"
    assert record.error is not None and "do_work" in record.error and "RuntimeError: failed" in record.error


def test_an_error_is_kept_only_once_the_retries_are_spent(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_results.py::test_actors_can_store_exceptions with retries (the
    ``Results`` middleware stores the exception only when no retry follows)."""
    counter = Counter()
    second = threading.Event()
    release = threading.Event()

    def do_work(_: Any) -> str:
        if counter.hit("attempt") == 1:
            raise ConnectionError("transient")
        second.set()
        release.wait(5)
        return "done"

    f = Formation("results").add_function("do_work", do_work, retries=2, backoff=0)
    with f.start(store=store) as running:
        future = running.submit(None, run_id="retried")
        try:
            assert second.wait(5)
            record = store.get("retried")
            assert (record.status, record.error) == ("running", None)
        finally:
            release.set()
        assert future.result(5).output == "done"
    assert (store.get("retried").status, store.get("retried").error) == ("succeeded", None)


def test_a_pipelines_step_results_are_kept_in_order(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_pipeline_results_can_be_retrieved
    (``pipe.get_results()`` is ``[3, 6, 10]``)."""
    f = (Formation("pipe").add_function("add_2", lambda x: x + 2).add_function("add_3", lambda x: x + 3)
         .add_function("add_4", lambda x: x + 4).connect("add_2", "add_3", "add_4"))
    f.run(1, store=store, run_id="pipe")
    assert [(v.node, v.output, v.status) for v in store.history("pipe")] == [
        ("add_2", 3, "succeeded"), ("add_3", 6, "succeeded"), ("add_4", 10, "succeeded")]


def test_a_groups_finished_items_are_kept_one_by_one_while_the_others_still_work(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_expose_completion_stats
    (``completed_count`` goes up as each job of the group completes)."""
    release = threading.Event()
    entered = Counter()

    def item(i: int) -> int:
        if i > 0:
            entered.hit("held")
            release.wait(5)
        return i * 10

    with Formation("group").add_map("items", item).start(store=store) as running:
        future = running.submit([0, 1, 2], run_id="group")
        try:
            assert until(lambda: entered.count("held") == 2)
            assert until(lambda: store.load("group").items.get(("items", 1)) == {0: 0})
        finally:
            release.set()
        assert future.result(5).output == [0, 10, 20]


def test_a_run_cut_short_by_a_stop_is_resumed_without_running_its_finished_steps_again(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_shutdown.py::test_shutdown_notifications_are_received
    and tests/test_worker.py (a message a stopping worker did not finish is requeued and
    run again by the next worker; nothing is lost)."""
    counter = Counter()
    held = Gate()

    def first(x: int) -> int:
        counter.hit("first")
        return x + 1

    def second(x: int) -> int:
        counter.hit("second")
        return x * 10

    f = (Formation("stop").add_function("first", first).add_function("hold", held).add_function("second", second)
         .connect("first", "hold", "second"))
    running = f.start(store=store)
    try:
        future = running.submit(1, run_id="cut")
        assert held.reached.wait(5)
    finally:
        running.stop()
        held.opened.set()
    with pytest.raises(FormationRuntimeError, match=r"stopped before"):
        future.result(5)
    assert store.get("cut").status != "succeeded"
    result = f.resume("cut", store=store)
    assert result.output == 20
    assert (counter.count("first"), counter.count("second"), counter.count("wait")) == (1, 1, 0)
    assert store.get("cut").status == "succeeded"


def test_a_group_cut_short_by_a_stop_resumes_running_only_its_unfinished_items(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_shutdown.py::test_shutdown_notifications_dont_notify_completed_threads
    in a group (the finished messages' results stand; the interrupted one runs again)."""
    counter = Counter()
    release = threading.Event()

    def item(i: int) -> int:
        counter.hit(i)
        if i == 2 and counter.count(i) == 1:
            release.wait(5)
        return i * 10

    f = Formation("group").add_map("items", item, max_workers=3)
    running = f.start(store=store)
    try:
        future = running.submit([0, 1, 2], run_id="group-cut")
        assert until(lambda: store.load("group-cut").items.get(("items", 1), {}).keys() == {0, 1})
        assert counter.count(2) == 1
    finally:
        running.stop()
        release.set()
    with pytest.raises(FormationRuntimeError, match=r"stopped before"):
        future.result(5)
    assert f.resume("group-cut", store=store).output == [0, 10, 20]
    assert [counter.count(i) for i in range(3)] == [1, 1, 2]


def test_a_failed_run_resumed_after_the_cause_is_fixed_succeeds_and_its_error_is_cleared(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_results.py::test_actors_can_store_exceptions then a retry (a
    message re-sent once the cause is fixed stores its result in place of the failure)."""
    counter = Counter()
    broken = threading.Event()
    broken.set()

    def fetch(x: int) -> int:
        counter.hit("fetch")
        return x + 1

    def save(x: int) -> int:
        counter.hit("save")
        if broken.is_set():
            raise ConnectionError("database down")
        return x * 2

    f = Formation("fix").add_function("fetch", fetch).add_function("save", save).connect("fetch", "save")
    with pytest.raises(FormationRuntimeError, match=r"database down"):
        f.run(1, store=store, run_id="fix")
    assert store.get("fix").status == "failed"
    broken.clear()
    assert f.resume("fix", store=store).output == 4
    record = store.get("fix")
    assert (record.status, record.error) == ("succeeded", None)
    assert (counter.count("fetch"), counter.count("save")) == (1, 2)


def test_a_run_past_its_time_limit_is_kept_as_failed_and_resumes_to_its_result(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_results.py::test_retrieving_a_result_can_time_out with the
    message's time limit (the result of a message that ran out of time is a failure; the
    message can be sent again)."""
    counter = Counter()
    release = threading.Event()

    def slow(x: int) -> int:
        if counter.hit("slow") == 1:
            release.wait(5)
        return x * 3

    f = Formation("tl").add_function("first", lambda x: x + 1).add_function("slow", slow).connect("first", "slow")
    try:
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.3s"):
            f.run(1, store=store, run_id="late", timeout=0.3)
    finally:
        release.set()
    assert store.get("late").status == "failed"
    assert f.resume("late", store=store).output == 6
    assert counter.count("slow") == 2


def test_a_cancelled_run_is_kept_as_cancelled_and_can_be_resumed(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_abortable.py (an aborted message's result is a failure, and what
    it did before the abort stands)."""
    counter = Counter()
    held = Gate()

    def first(x: int) -> int:
        counter.hit("first")
        return x + 1

    f = (Formation("abort").add_function("first", first).add_function("hold", held).connect("first", "hold"))
    with f.start(store=store) as running:
        future = running.submit(1, run_id="aborted")
        assert held.reached.wait(5)
        assert future.cancel() is True
        held.opened.set()
        assert until(lambda: store.get("aborted").status == "cancelled")
        assert running.resume("aborted").result(5).output == 2
    assert counter.count("first") == 1


def test_pruning_forgets_finished_results_and_keeps_a_run_in_flight(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_results.py (``get_result(forget=True)``: a result read once is
    forgotten) as ``RunStore.prune``."""
    held = Gate()
    Formation("done").add_function("n", lambda x: x).run(1, store=store, run_id="done")
    f = Formation("busy").add_function("hold", held)
    with f.start(store=store) as running:
        future = running.submit(1, run_id="busy")
        try:
            assert held.reached.wait(5)
            assert store.prune(older_than=0) == 1
            assert [r.id for r in store.runs()] == ["busy"]
        finally:
            held.opened.set()
        assert future.result(5).output == 1
    with pytest.raises(KeyError):
        store.get("done")


def test_the_late_value_of_an_attempt_past_its_time_limit_is_never_kept_and_a_resume_runs_it_again(
        store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_be_assigned_time_limits with the
    ``Results`` middleware (a message stopped by its time limit stores no result). Here the
    abandoned function returns after the run failed: what it returns is not journalled."""
    counter = Counter()
    release, returned = threading.Event(), threading.Event()

    def slow(_: Any) -> str:
        if counter.hit("slow") == 1:
            release.wait(5)
            returned.set()
            return "late"
        return "fresh"

    f = Formation("tl").add_function("slow", slow, timeout=0.2).add_function("after", lambda x: f"{x}!").connect(
        "slow", "after")
    try:
        with pytest.raises(FormationRuntimeError, match=r"node 'slow'.*timed out"):
            f.run(None, store=store, run_id="late")
    finally:
        release.set()
    assert returned.wait(5)
    assert not until(lambda: "slow" in store.load("late").visits, within=0.5)
    assert f.resume("late", store=store).output == "fresh!"
    assert counter.count("slow") == 2


def test_runs_still_queued_when_a_journalled_formation_stops_are_kept_and_each_resumes(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_redis.py::test_redis_requeues_unhandled_messages_on_shutdown (the
    messages a stopping worker had not processed go back on the queue, none lost): a run is in
    the store from ``submit()`` on, queued or not, and each one resumes."""
    counter = Counter()
    entered, release = threading.Event(), threading.Event()

    def do_work(x: int) -> int:
        counter.hit(x)
        entered.set()
        release.wait(5)
        return x * 10

    f = Formation("queue").add_function("do_work", do_work)
    running = f.start(store=store)
    try:
        futures = [running.submit(i, run_id=f"q{i}") for i in range(3)]
        assert [store.get(f"q{i}").status for i in range(3)] == ["running"] * 3
        assert entered.wait(5)
    finally:
        running.stop()
        release.set()
    for future in futures:
        with pytest.raises(FormationRuntimeError, match=r"stopped before"):
            future.result(5)
    assert sorted((r.id, r.status) for r in store.runs()) == [(f"q{i}", "interrupted") for i in range(3)]
    assert [f.resume(f"q{i}", store=store).output for i in range(3)] == [0, 10, 20]
    assert [counter.count(i) for i in range(3)] == [2, 1, 1]


def test_a_run_whose_input_the_store_cannot_keep_is_refused_at_submit_saying_what_to_pass(store: RunStore) -> None:
    """Ported from Bogdanp/dramatiq tests/test_encoders.py (a message whose arguments the encoder cannot encode
    fails when it is sent, before any worker sees it): the refusal comes from ``submit()``,
    says what input the store keeps, and the formation serves on."""
    counter = Counter()
    f = Formation("enc").add_function("do_work", lambda x: counter.hit("work") and x)
    with f.start(store=store) as running:
        with pytest.raises(SerializationError, match=r"the input of run .* is a lock .*cannot journal\. Pass JSON data"):
            running.submit(threading.Lock())
        assert running.submit([1, 2]).result(5).output == [1, 2]
    assert counter.count("work") == 1
    assert [r.status for r in store.runs()] == ["succeeded"]
