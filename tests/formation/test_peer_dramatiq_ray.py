"""Dramatiq's retries, time limits and worker shutdown (Bogdanp/dramatiq
``tests/middleware/test_retries.py``, ``tests/test_actors.py``,
``tests/middleware/test_shutdown.py``) on ``backend="ray"``: Dramatiq's workers are processes
that take messages from a broker; here every node replica is a Ray actor. The thread
versions, and where we differ, are in ``test_peer_dramatiq*.py``. Node functions run in
other processes, so they count their calls in files."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cuts import wait_for_file
from tests.support.peers import local_ray, log_call, logged_calls  # noqa: F401  (local_ray: a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def test_a_retry_on_ray_reruns_only_the_failing_node_not_the_one_before_it(tmp_path: Path) -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_retries.py::test_actors_retry_on_failure (the failed
    message is retried; what was sent before it is not sent again)."""
    log = tmp_path / "log"

    def fetch(x: int) -> int:
        log_call(log, "fetch")
        return x + 1

    def store(x: int) -> int:
        log_call(log, "store")
        if logged_calls(log, "store") == 1:
            raise ConnectionError("db down")
        return x * 10

    f = (Formation("retry").add_function("fetch", fetch).add_function("store", store, retries=2, backoff=0)
         .connect("fetch", "store"))
    result = f.run(1, backend="ray", timeout=120)
    assert result.output == 20
    assert (logged_calls(log, "fetch"), logged_calls(log, "store")) == (1, 2)
    assert result.nodes["store"].attempts == 2


def test_a_time_limit_on_ray_fails_the_run_in_time_and_the_node_takes_the_next_run(tmp_path: Path) -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_be_assigned_time_limits (one attempt, no
    success; the worker goes on with the next message)."""
    log = tmp_path / "log"

    def do_work(x: int) -> int:
        log_call(log, f"start-{x}")
        if x == 0:
            time.sleep(30)  # never returns within the limit
        return x

    f = Formation("tl").add_function("do_work", do_work, timeout=1.0)
    with f.start(backend="ray") as running:
        warm = running.submit(1)
        assert warm.result(120).output == 1  # the actor is up: what follows measures the limit only
        started = time.monotonic()
        stuck = running.submit(0)
        with pytest.raises(FormationRuntimeError, match=r"node 'do_work' failed after 1 attempt") as info:
            stuck.result(60)
        assert time.monotonic() - started < 20
        assert isinstance(info.value.__cause__, NodeTimeoutError)
        assert running.submit(2).result(120).output == 2
    assert logged_calls(log, "start-0") == 1


def test_a_run_cut_short_by_a_stop_on_ray_resumes_without_running_its_finished_node_again(
        store: RunStore, tmp_path: Path) -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_shutdown.py::test_shutdown_notifications_are_received
    and tests/test_worker.py (a stopped worker's unfinished message is requeued and run by the
    next worker)."""
    log = tmp_path / "log"
    go = tmp_path / "go"

    def first(x: int) -> int:
        log_call(log, "first")
        return x + 1

    def wait(x: Any) -> Any:
        log_call(log, "wait")
        wait_for_file(go, 30)
        return x

    f = Formation("stop").add_function("first", first).add_function("wait", wait).connect("first", "wait")
    running = f.start(store=store, backend="ray")
    try:
        future = running.submit(1, run_id="cut")
        deadline = time.monotonic() + 120
        while logged_calls(log, "wait") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert logged_calls(log, "wait") == 1
    finally:
        running.stop()
    with pytest.raises(FormationRuntimeError, match=r"stopped before"):
        future.result(30)
    go.touch()
    assert f.resume("cut", store=store, backend="ray", timeout=120).output == 2
    assert (logged_calls(log, "first"), logged_calls(log, "wait")) == (1, 2)
