"""The Restate port's awakeable and cancel behaviours on ``backend="ray"`` (restate
sdk-python ``examples/workflow.py``; restatedev/e2e ``CancelTest``): the nodes run in Ray
worker processes, so the interrupt and the cancel cross a process boundary; the outcome
must be the threads backend's (tests/durable/test_peer_restate_more.py, test_peer_restate.py)."""

from __future__ import annotations

import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import (
    local_ray,  # noqa: F401  (a fixture)
    until,
)
from wingman_actors import Formation, interrupt
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


class Logged:
    """A node that appends its name to a file at each call (calls made in Ray's worker
    processes, counted where the test reads them), then returns ``fn(x)``."""

    def __init__(self, log: Path, name: str, fn: Any) -> None:
        self.log, self.name, self.fn = log, name, fn

    def __call__(self, x: Any) -> Any:
        with self.log.open("a") as out:
            out.write(self.name + "\n")
        return self.fn(x)


def charge(amount: int) -> int:
    return amount


def verify(amount: int) -> dict[str, Any]:
    return {"verdict": interrupt({"verify": "payment", "amount": amount}), "amount": amount}


def finish(r: dict[str, Any]) -> str:
    return f"{r['verdict']} {r['amount']}"


def down(x: Any) -> Any:
    raise ConnectionError("down")


def test_a_workflow_waiting_on_its_promise_on_ray_resumes_with_the_answer_and_no_rerun(tmp_path: Path) -> None:
    """From restate sdk-python examples/workflow.py on backend="ray"."""
    log = tmp_path / "calls.txt"
    f = (Formation("payment").add_function("charge", Logged(log, "charge", charge))
         .add_function("verify", Logged(log, "verify", verify)).add_function("finish", finish)
         .connect("charge", "verify").connect("verify", "finish"))
    with RunStore(tmp_path / "runs.sqlite") as store:
        first = f.run(10, store=store, run_id="pay-ray", backend="ray", timeout=120)
        assert (first.status, first.interrupt) == ("suspended", {"node": "verify", "payload": {"verify": "payment",
                                                                                                "amount": 10}})
        done = f.resume("pay-ray", store=store, answer="approved", backend="ray", timeout=120)
    assert (done.status, done.output) == ("succeeded", "approved 10")
    assert log.read_text().split() == ["charge", "verify", "verify"]


def test_cancelling_a_run_on_ray_during_a_retry_backoff_ends_it_at_once(tmp_path: Path) -> None:
    """From restatedev/e2e CancelTest with a retried ctx.run, on backend="ray"."""
    log = tmp_path / "calls.txt"
    f = Formation("backoff").add_function("s", Logged(log, "s", down), retries=5, backoff=30, jitter=False)
    with RunStore(tmp_path / "runs.sqlite") as store, f.start(store=store, backend="ray") as running:
        future = running.submit("x")
        assert until(lambda: log.exists() and log.read_text().split() == ["s"], within=90)
        started = time.monotonic()
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(timeout=10)
        assert time.monotonic() - started < 3
        run_id = str(future.run_id)  # type: ignore[attr-defined]
        assert until(lambda: store.get(run_id).status == "cancelled", within=10)
    assert log.read_text().split() == ["s"]
