"""The viewer's contract, sentence by sentence: the controls take JSON or text, every node
state DESIGN names is drawn as ``data-status``, and the runs list filters from its controls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.server.harness import RunningServer
from tests.ui import functions_ui
from tests.ui.conftest import create_formation, start_server, wait_for_status

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("viewer-contract"))
    try:
        yield running
    finally:
        functions_ui.GATE.set()
        running.stop()


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def start_run(page: Any, server: RunningServer, formation_id: str, text: str) -> str:
    page.goto(f"{server.url}/ui/#/formations/{formation_id}")
    page.wait_for_selector("[data-node]")
    page.fill('textarea[name="input"]', text)
    page.click('[data-action="start"]')
    page.wait_for_url("**/ui/#/runs/*")
    return str(page.url.rsplit("/", 1)[1])


def test_an_answer_typed_as_json_reaches_the_interrupt_as_that_value(page: Any, server: RunningServer,
                                                                   client: httpx.Client) -> None:
    fid = create_formation(client, "json-answer", "ask")
    run_id = start_run(page, server, fid, "draft")
    page.wait_for_selector('[data-node="ask"][data-status="suspended"]')
    page.fill('textarea[name="answer"]', '{"publish": true}')
    page.click('[data-action="answer"]')
    page.wait_for_selector('[data-node="ask"][data-status="succeeded"]')
    wait_for_status(client, run_id, "succeeded")
    assert client.get(f"/runs/{run_id}").json()["output"] == f"draft: {({'publish': True})}"


def test_an_input_typed_as_a_json_string_is_that_string(page: Any, server: RunningServer,
                                                        client: httpx.Client) -> None:
    fid = create_formation(client, "json-input", "shout")
    run_id = start_run(page, server, fid, json.dumps("quoted words"))
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    wait_for_status(client, run_id, "succeeded")
    assert client.get(f"/runs/{run_id}").json()["output"] == "QUOTED WORDS"


def test_a_node_skipped_after_failing_and_what_depends_on_it_show_skipped(page: Any, server: RunningServer,
                                                                        client: httpx.Client) -> None:
    nodes = [{"name": "explode", "kind": "function", "function": "explode", "on_error": "skip"},
             {"name": "shout", "kind": "function", "function": "shout"}]
    created = client.post("/formations", json={"name": "skipping", "nodes": nodes,
                                                "edges": [{"from": "explode", "to": "shout"}]})
    assert created.status_code == 201, created.text
    run_id = start_run(page, server, created.json()["id"], "x")
    page.wait_for_selector('[data-node="shout"][data-status="skipped"]')
    # explode failed, then was skipped: CI once read "failed" here, under load, right after shout
    # showed skipped (the page's first read of the run can come between the two); it must come
    # to "skipped", and does after the run's end at the latest (checked again after a reload)
    page.wait_for_selector('[data-node="explode"][data-status="skipped"]')
    wait_for_status(client, run_id, "succeeded")
    page.reload()
    page.wait_for_selector('[data-node="shout"][data-status="skipped"]')
    assert page.get_attribute('[data-node="explode"]', "data-status") == "skipped"


def test_the_formation_filter_of_the_runs_list_is_chosen_from_its_control(page: Any, server: RunningServer,
                                                                         client: httpx.Client) -> None:
    one = create_formation(client, "filtered-one", "shout")
    two = create_formation(client, "filtered-two", "shout")
    first = client.post(f"/formations/{one}/run", json={"input": "a"}).json()["id"]
    second = client.post(f"/formations/{two}/run", json={"input": "b"}).json()["id"]
    page.goto(f"{server.url}/ui/#/runs")
    page.wait_for_selector(f'[data-run-id="{second}"]')
    page.select_option('select[name="formation"]', one)
    page.wait_for_selector(f'[data-run-id="{second}"]', state="detached")
    assert page.locator(f'[data-run-id="{first}"]').count() == 1
    page.select_option('select[name="status"]', "failed")
    page.wait_for_selector(f'[data-run-id="{first}"]', state="detached")
    assert "formation=" in page.url and "status=failed" in page.url
