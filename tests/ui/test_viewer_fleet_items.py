"""A fleet node's agent steps in the run viewer: each step says the item whose session
sent it, and text deltas of different items are never joined into one step (the items'
events interleave)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.harness import RunningServer, scripted_agent
from tests.ui.conftest import start_server, wait_for_status

pytestmark = pytest.mark.browser

REPLIES = ("alpha beta gamma delta epsilon", "one two three four five six")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("fleet-items"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def finished(server: RunningServer) -> str:
    """A run of a fleet over two items, once it succeeded."""
    with server.client() as client:
        agent = scripted_agent(client, *REPLIES, name="researcher")
        body = {"name": "research", "nodes": [{"name": "research", "kind": "fleet", "agent_id": agent}], "edges": []}
        formation = client.post("/formations", json=body).json()["id"]
        run_id = str(client.post(f"/formations/{formation}/run", json={"input": ["owls", "bats"]}).json()["id"])
        wait_for_status(client, run_id, "succeeded")
    return run_id


def test_a_fleet_nodes_text_steps_each_name_their_item_and_hold_one_items_whole_answer(
    page: Any, server: RunningServer, finished: str
) -> None:
    page.goto(f"{server.url}/ui/#/runs/{finished}")
    page.wait_for_selector('[data-node="research"][data-status="succeeded"]')
    page.click('[data-node="research"]')
    steps = page.locator("ol.steps li.text")
    steps.first.wait_for()

    told = {(li.get_attribute("data-item"), li.locator("pre").inner_text()) for li in steps.all()}
    assert {item for item, _ in told} == {"0", "1"}
    assert len(told) == 2 and {text for _, text in told} == set(REPLIES)
    assert all(li.locator("strong").inner_text().startswith("item ") for li in steps.all())
