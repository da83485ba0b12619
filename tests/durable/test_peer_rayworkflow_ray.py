"""The Ray Workflows port's recovery and error-handling behaviours on ``backend="ray"``
(ray-project/ray ``python/ray/workflow/tests/``: ``test_recovery.py``,
``test_error_handling.py``): the nodes run in Ray worker processes, so failures, crashes and
the journal cross a process boundary; the outcome must be the threads backend's
(tests/durable/test_peer_rayworkflow.py, test_peer_rayworkflow_more.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


class Logged:
    """A node that appends its name to a file at each call (calls made in Ray's worker
    processes, counted where the test reads them), then returns ``fn(x)``."""

    def __init__(self, log: Path, name: str, fn: Any) -> None:
        self.log, self.name, self.fn = log, name, fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.log.open("a") as out:
            out.write(self.name + "\n")
        return self.fn(*args, **kwargs)


class FailedStep:
    """Ray's ``the_failed_step``: fails until the mark file exists."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __call__(self, x: str) -> str:
        if not self.mark.exists():
            raise ConnectionError("worker crashed")
        return f"foo({x})"


class CrashOnce:
    """Ray's ``unstable_task_crash``: the worker process dies (``os._exit``) at the first
    call, found by the count file; later calls return the number of calls before."""

    def __init__(self, count: Path) -> None:
        self.count = count

    def __call__(self, _: Any) -> int:
        v = int(self.count.read_text()) if self.count.exists() else 0
        self.count.write_text(str(v + 1))
        if v < 1:
            os._exit(1)
        return v


def always_invalid(_: Any) -> int:
    raise ValueError("Invalid")


def report(failure: NodeFailure) -> str:
    return f"{failure.node}: {type(failure.error).__name__} {failure.error} after {failure.attempts}"


def join(x: str, y: str) -> str:
    return f"join({x}, {y})"


def complex_dag(log: Path, mark: Path) -> Formation:
    """test_recovery.py::test_recovery_complex's DAG: x1 -> append1 -> the_failed_step -> u;
    source1 -> append2 -> u; (x1, source1) -> v; (u, v) -> out."""
    return (Formation("complex").add_function("x1", Logged(log, "x1", str))
            .add_function("source1", Logged(log, "source1", lambda _: "[source1]"))
            .add_function("append1", Logged(log, "append1", lambda x: x + "[append1]"))
            .add_function("the_failed_step", Logged(log, "the_failed_step", FailedStep(mark)))
            .add_function("append2", Logged(log, "append2", lambda x: x + "[append2]"))
            .add_function("u", lambda the_failed_step, append2: join(the_failed_step, append2))
            .add_function("v", lambda x1, source1: join(x1, source1))
            .add_function("out", lambda u, v: join(u, v))
            .connect("x1", "source1").connect("x1", "append1").connect("append1", "the_failed_step")
            .connect("source1", "append2").connect("the_failed_step", "u").connect("append2", "u")
            .connect("x1", "v").connect("source1", "v").connect("u", "out").connect("v", "out"))


def test_a_complex_workflow_failed_on_ray_resumes_there_running_only_what_failed(tmp_path: Path) -> None:
    """From test_recovery.py::test_recovery_complex on backend="ray"."""
    log, mark = tmp_path / "calls.txt", tmp_path / "mark"
    f = complex_dag(log, mark)
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError, match="the_failed_step") as failed:
            f.run("x", store=store, backend="ray", timeout=120)
        mark.touch()
        result = f.resume(str(failed.value.run_id), store=store, backend="ray", timeout=120)
    assert result.output == "join(join(foo(x[append1]), [source1][append2]), join(x, [source1]))"
    assert sorted(log.read_text().split()) == sorted(
        ["x1", "source1", "append1", "the_failed_step", "append2", "the_failed_step"])


def test_a_run_failed_on_ray_resumes_on_threads_from_the_same_journal(tmp_path: Path) -> None:
    """From test_recovery.py::test_resume_different_storage and ::test_recovery_simple_3
    (resumed by another driver): the journal is the backend's neither."""
    log, mark = tmp_path / "calls.txt", tmp_path / "mark"
    f = (Formation("simple").add_function("append1", Logged(log, "append1", lambda x: x + "[append1]"))
         .add_function("the_failed_step", FailedStep(mark)).add_function("append2", lambda x: x + "[append2]")
         .connect("append1", "the_failed_step").connect("the_failed_step", "append2"))
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError) as failed:
            f.run("x", store=store, backend="ray", timeout=120)
    mark.touch()
    with RunStore(tmp_path / "runs.sqlite") as other:
        result = f.resume(str(failed.value.run_id), store=other)
    assert result.output == "foo(x[append1])[append2]"
    assert log.read_text().split() == ["append1"]


def test_a_worker_process_that_dies_on_ray_is_a_failed_attempt_that_a_retry_recovers(tmp_path: Path) -> None:
    """From test_error_handling.py::test_task_failure (unstable_task_crash with max_retries)."""
    count = tmp_path / "count"
    f = Formation("crash").add_function("step", CrashOnce(count), retries=2, backoff=0.01, jitter=False)
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = f.run(None, store=store, backend="ray", timeout=120)
        assert store.load(result.run_id).visits["step"] == {1: 1}
    assert result.output == 1
    assert result.nodes["step"].attempts == 2


def test_a_caught_failure_on_ray_reaches_the_handler_with_its_error_and_attempts(tmp_path: Path) -> None:
    """From test_error_handling.py::test_task_failure (catch_exceptions=True: ``ret is None``,
    ``err`` not None) on backend="ray"."""
    f = (Formation("catch").add_function("step", always_invalid, retries=1, backoff=0.01, jitter=False)
         .add_function("handler", report).connect("step", "handler", on_error=True))
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = f.run(None, store=store, backend="ray", timeout=120)
    assert result.outputs == {"handler": "step: ValueError Invalid after 2"}
    assert result.nodes["step"].status == "failed"
