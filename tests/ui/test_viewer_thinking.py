"""An agent node's reasoning in the run viewer: among its steps, collapsed and labelled
"thinking", followed live and shown again for a finished run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.server.harness import RunningServer, scripted_agent
from tests.ui.conftest import start_server, wait_for_status

pytestmark = pytest.mark.browser

REASONING = "27 * 453: 27 * 400 = 10800, 27 * 53 = 1431, so 12231"
ANSWER = {"content": [{"type": "thinking", "text": REASONING, "signature": "sig"},
                      {"type": "text", "text": "The product is 12231."}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("thinking"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


@pytest.fixture(scope="module")
def formation(client: httpx.Client) -> str:
    agent = scripted_agent(client, ANSWER, name="calc")
    body = {"name": "reasoning", "nodes": [{"name": "calc", "kind": "agent", "agent_id": agent}], "edges": []}
    return str(client.post("/formations", json=body).json()["id"])


@pytest.fixture(scope="module")
def finished(client: httpx.Client, formation: str) -> str:
    """A run of the formation started over the API, once it succeeded."""
    run_id = str(client.post(f"/formations/{formation}/run", json={"input": "What is 27 * 453?"}).json()["id"])
    wait_for_status(client, run_id, "succeeded")
    return run_id


def _calc_steps(page: Any) -> Any:
    page.wait_for_selector('[data-node="calc"][data-status="succeeded"]')
    page.click('[data-node="calc"]')
    steps = page.locator("ol.steps")
    steps.get_by_text("The product is 12231.").wait_for()
    return steps


def test_a_run_followed_live_shows_the_agent_s_reasoning_collapsed_under_thinking(
    page: Any, server: RunningServer, formation: str
) -> None:
    page.goto(f"{server.url}/ui/#/formations/{formation}")
    page.fill('textarea[name="input"]', "What is 27 * 453?")
    page.click('[data-action="start"]')
    page.wait_for_url("**/ui/#/runs/*")

    thinking = _calc_steps(page).locator("details.thinking")

    assert thinking.locator("summary").inner_text() == "thinking"
    assert thinking.get_attribute("open") is None
    assert not thinking.get_by_text(REASONING).is_visible()


def test_the_reasoning_of_a_finished_run_opens_to_its_text(page: Any, server: RunningServer, finished: str) -> None:
    page.goto(f"{server.url}/ui/#/runs/{finished}")

    steps = _calc_steps(page)
    steps.locator("details.thinking summary").click()

    assert steps.get_by_text(REASONING).is_visible()
