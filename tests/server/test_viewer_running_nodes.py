"""The viewer over a run going on elsewhere (another process, seen through its journal only)
draws the node at work as ``running``: the node whose predecessors have all delivered to it
and whose own visit is not journalled yet."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from wingman_actors.formation import Formation
from wingman_actors.server._viewer_store import create_store_viewer

GATE = threading.Event()


def held(text: str) -> str:
    GATE.wait(10)
    return text


@pytest.fixture
def gate() -> Iterator[None]:
    GATE.clear()
    try:
        yield
    finally:
        GATE.set()


def statuses(viewer: TestClient, run_id: str, node: str, status: str) -> dict[str, str]:
    """The nodes' statuses once ``node`` has ``status`` (10 s at most)."""
    deadline = time.monotonic() + 10
    while True:
        doc: dict[str, Any] = viewer.get(f"/ui/api/runs/{run_id}").json()
        found = {name: str(n["status"]) for name, n in doc["nodes"].items()}
        if found.get(node) == status:
            return found
        assert time.monotonic() < deadline, f"{node} is {found.get(node)}, not {status}"
        time.sleep(0.02)


def test_the_node_at_work_in_a_run_seen_through_its_journal_is_running(tmp_path: Path, gate: None) -> None:
    store = tmp_path / "runs.sqlite"
    formation = (Formation("held").add_function("clean", str.strip).add_function("held", held)
                 .add_function("shout", str.upper).connect("clean", "held").connect("held", "shout"))
    with formation.start(store=store) as running:
        future = running.submit(" hi ")
        with TestClient(create_store_viewer(store), base_url="http://127.0.0.1") as viewer:
            seen = statuses(viewer, future.run_id, "clean", "succeeded")
            assert (seen["held"], seen["shout"]) == ("running", "pending")
            GATE.set()
            assert future.result(10) is not None
            seen = statuses(viewer, future.run_id, "shout", "succeeded")
            assert seen["held"] == "succeeded"


def test_the_first_node_of_a_run_seen_through_its_journal_is_running_from_the_start(tmp_path: Path,
                                                                                    gate: None) -> None:
    store = tmp_path / "runs.sqlite"
    formation = Formation("first").add_function("held", held).add_function("shout", str.upper).connect("held", "shout")
    with formation.start(store=store) as running:
        future = running.submit("hi")
        with TestClient(create_store_viewer(store), base_url="http://127.0.0.1") as viewer:
            seen = statuses(viewer, future.run_id, "held", "running")
            assert seen["shout"] == "pending"
            GATE.set()
            future.result(10)
