"""A visit cut short when its run ends (cancelled, timed out, failed by another branch)
shows in the node's trace: counted among its visits, ``cancelled``, with its attempt and
the time it had run, the same whether or not anyone listens to the run's events."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent, FormationEventType


def waiting(entered: threading.Event, release: threading.Event) -> Formation:
    def wait(text: str) -> str:
        entered.set()
        release.wait(10)
        return text

    return Formation("cut").add_function("clean", str.strip).add_function("wait", wait).connect("clean", "wait")


def quiet(event: FormationEvent) -> None:
    del event


@pytest.mark.parametrize("listening", [False, True], ids=["without listeners", "with a listener"])
def test_a_node_cut_by_the_run_timeout_shows_its_visit_cancelled_with_its_time_so_far(
    gate: tuple[threading.Event, threading.Event], listening: bool
) -> None:
    entered, release = gate
    before = time.time()
    with pytest.raises(FormationRuntimeError) as caught:
        waiting(entered, release).run(" x ", timeout=0.3, on_event=quiet if listening else None)
    trace = caught.value.nodes["wait"]
    assert (trace.status, trace.visits, trace.attempts) == ("cancelled", 1, 1)
    assert trace.started_at is not None and trace.finished_at is not None
    assert before <= trace.started_at < trace.finished_at <= time.time()
    assert 0.2 <= trace.duration_s <= trace.finished_at - trace.started_at + 1e-3
    assert caught.value.nodes["clean"].status == "succeeded"


def test_a_cancelled_runs_event_has_the_cut_visit_with_its_attempt_and_time(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    events: list[FormationEvent] = []
    with waiting(entered, release).start(on_event=events.append) as running:
        future = running.submit(" x ")
        assert entered.wait(3)
        time.sleep(0.1)
        assert running.cancel(future.run_id) is True
    cancelled = next(e for e in events if e.type is FormationEventType.RUN_CANCELLED)
    trace = cancelled.data["nodes"]["wait"]
    assert (trace.status, trace.visits, trace.attempts) == ("cancelled", 1, 1)
    assert trace.started_at is not None and trace.duration_s >= 0.1


def test_runs_show_prints_the_visit_a_cancel_cut_without_any_listener(
    gate: tuple[threading.Event, threading.Event], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entered, release = gate
    store = tmp_path / "runs.sqlite"
    with waiting(entered, release).start(store=store) as running:
        future = running.submit(" x ")
        assert entered.wait(3)
        time.sleep(0.1)
        assert future.cancel()
    assert main(["runs", "show", future.run_id, "--store", str(store), "--json"]) == 0
    node: dict[str, Any] = json.loads(capsys.readouterr().out)["nodes"]["wait"]
    assert (node["status"], node["visits"], node["attempts"]) == ("cancelled", 1, 1)
    assert node["started_at"] is not None and node["duration_s"] >= 0.1
