"""A suspension waits for a sibling whose visit has ended but whose outcome is still being
reported: its actor stops counting as at work just before it hands the outcome to the
runtime, and a suspension that settled in that gap (a thread descheduled there, on a busy
machine) ended the run before the sibling's output was kept, so the resume ran it again.
The gap is widened here by holding the report."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.durable.test_suspension_waits import sibling_of_kind
from wingman_actors import Formation, interrupt
from wingman_actors.formation import _routing
from wingman_actors.store import RunStore


@pytest.mark.parametrize("kind", ["function", "async function"])
def test_a_suspension_waits_for_a_sibling_reporting_its_output(
        store: RunStore, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    run_id = f"reporting-{kind.replace(' ', '-')}"
    real = _routing.Router.completed

    def slow_report(self: Any, work: Any, *args: Any) -> None:
        if work.target == "sib":
            time.sleep(0.3)  # the suspension polls every 2 ms meanwhile
        real(self, work, *args)

    monkeypatch.setattr(_routing.Router, "completed", slow_report)

    f = (Formation("waits").add_function("src", int)
         .add_function("ask", lambda x: int(interrupt({"go?": x}))).connect("src", "ask"))
    f = sibling_of_kind(kind, store, run_id, calls)(f).add_function("after", lambda x: x).connect("sib", "after")
    first = f.run(1, store=store, run_id=run_id, timeout=30)
    assert first.status == "suspended"
    assert (first.nodes["sib"].status, first.nodes["after"].status) == ("succeeded", "pending")
    resumed = f.resume(run_id, store=store, answer=7)
    assert resumed.outputs == {"ask": 7, "after": 10} and calls == [1]
