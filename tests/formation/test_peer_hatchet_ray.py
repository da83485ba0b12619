"""The Hatchet port's DAG, non-retryable errors, fan-out to children and durable waits on
``backend="ray"`` (hatchet-dev/hatchet, ``sdks/python/examples/dag``, ``conditions``,
``non_retryable``, ``fanout``, ``durable``): every node replica is a Ray actor in a worker
process, so outputs, errors and the marks on them cross a process boundary; the outcome
must be the threads backend's (see ``test_peer_hatchet.py`` for the module map)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def step3(step1: int, step2: int) -> int:
    return step1 + step2


def total(step3: int, left_branch: int = 0, right_branch: int = 0) -> int:
    return step3 + left_branch + right_branch


def above_50(n: int) -> bool:
    return n > 50


def at_most_50(n: int) -> bool:
    return n <= 50


def test_a_dag_with_a_skipped_branch_gives_the_same_result_on_ray() -> None:
    """From hatchet examples/dag/worker.py and conditions/worker.py (step3 joins step1 and
    step2; one of two branches is skipped by a condition on its parent; ``sum`` counts it
    as 0) on backend="ray"."""
    f = (Formation("DAGWorkflow").add_function("step1", lambda _: 30).add_function("step2", lambda _: 40)
         .add_function("step3", step3).add_function("left_branch", lambda n: 1000)
         .add_function("right_branch", lambda n: 2000).add_function("sum", total)
         .connect("step1", "step3").connect("step2", "step3")
         .connect("step3", "left_branch", when=at_most_50).connect("step3", "right_branch", when=above_50)
         .connect("step3", "sum").connect("left_branch", "sum").connect("right_branch", "sum"))
    result = f.run(None, backend="ray", timeout=120)
    assert result.output == 70 + 2000 and result.nodes["left_branch"].status == "skipped"


def should_not_retry(_: Any) -> None:
    err = ValueError("This error should not retry because the match clause matches the exception.")
    err.retryable = False  # type: ignore[attr-defined]
    raise err


def test_an_error_marked_not_retryable_in_a_ray_worker_is_not_retried() -> None:
    """From hatchet examples/non_retryable/worker.py should_not_retry on backend="ray" (the
    mark is on the exception instance, which crosses the process boundary)."""
    f = Formation("NonRetryableWorkflow").add_function("should_not_retry", should_not_retry, retries=2, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(None, backend="ray", timeout=120)
    assert caught.value.attempts == 1 and isinstance(caught.value.__cause__, ValueError)


def process(a: str) -> dict[str, str]:
    if a == "2":
        raise ValueError(f"child {a} failed")
    return {"status": a}


def test_a_fan_out_to_child_workflows_on_ray_reports_the_failing_child_by_index() -> None:
    """From hatchet examples/fanout/worker.py (children of FanoutParent; one fails) on
    backend="ray"."""
    child = (Formation("FanoutChild").add_function("process", process)
             .add_function("process2", lambda out: {"status2": out["status"] + "2"}).connect("process", "process2"))
    parent = Formation("FanoutParent").add_map("spawn", formation=child, max_workers=2)
    with pytest.raises(FormationRuntimeError) as caught:
        parent.run(["0", "1", "2"], backend="ray", timeout=120)
    assert isinstance(caught.value.__cause__, MapItemsError) and list(caught.value.__cause__.errors) == [2]


def sleep_marked(path: str) -> Any:
    def sleep(x: Any) -> Any:
        with open(path, "a") as marks:  # a Ray worker's count, seen by the test through a file
            marks.write("slept\n")
        return x

    return sleep


def wait_for_event(x: Any) -> dict[str, str]:
    return {"status": "success", "event": interrupt("durable-example:event")}


def test_a_durable_task_on_ray_waits_for_its_event_and_does_not_sleep_again(tmp_path: Path) -> None:
    """From hatchet examples/durable/test_durable.py test_durable on backend="ray"."""
    marks = tmp_path / "marks.txt"
    f = (Formation("DurableWorkflow").add_function("sleep", sleep_marked(str(marks)))
         .add_function("durable_task", wait_for_event).connect("sleep", "durable_task"))
    with RunStore(tmp_path / "runs.sqlite") as store:
        first = f.run(None, store=store, backend="ray", timeout=120)
        assert first.interrupt == {"node": "durable_task", "payload": "durable-example:event"}
        done = f.resume(first.run_id, store=store, answer="pushed", backend="ray", timeout=120)
    assert done.output == {"status": "success", "event": "pushed"}
    assert marks.read_text().splitlines() == ["slept"]
