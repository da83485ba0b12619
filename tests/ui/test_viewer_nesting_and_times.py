"""The server's viewer in a real browser: a formation node (nesting a stored formation) is
drawn as a cluster of its inner nodes, named by path and live, an inner visit its timeout cut
ending ``cancelled`` at once; a node's time and its visits' times come from one source,
labelled as wall time; and a node's own started and finished times follow its events during
the run, as the run's document read again gives them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.server.harness import RunningServer
from tests.ui import functions_ui
from tests.ui.conftest import create_formation, start_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("viewer-nesting"))
    try:
        yield running
    finally:
        functions_ui.GATE.set()
        running.stop()


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def nesting(client: httpx.Client, name: str) -> str:
    """A formation ``first → sub → last`` whose ``sub`` runs a stored ``gated → shout``; its id."""
    inner = create_formation(client, f"{name}-inner", "gated", "shout")
    nodes = [{"name": "first", "kind": "function", "function": "slow"},
             {"name": "sub", "kind": "formation", "formation_id": inner},
             {"name": "last", "kind": "function", "function": "shout"}]
    edges = [{"from": "first", "to": "sub"}, {"from": "sub", "to": "last"}]
    response = client.post("/formations", json={"name": name, "nodes": nodes, "edges": edges})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_a_formation_node_comes_with_its_inner_graph_for_the_page(client: httpx.Client) -> None:
    fid = nesting(client, "routed")
    found = next(f for f in client.get("/ui/api/formations").json() if f["id"] == fid)
    sub = next(n for n in found["graph"]["nodes"] if n["name"] == "sub")
    assert [n["name"] for n in sub["graph"]["nodes"]] == ["gated", "shout"]


def test_a_formation_node_is_drawn_as_a_cluster_whose_inner_nodes_go_live(page: Any, server: RunningServer,
                                                                         client: httpx.Client) -> None:
    functions_ui.GATE.clear()
    try:
        fid = nesting(client, "drawn-nested")
        page.goto(f"{server.url}/ui/#/formations/{fid}")
        page.wait_for_selector('[data-node="sub/gated"]')
        assert sorted(page.eval_on_selector_all("[data-node]", "els => els.map(e => e.dataset.node)")) == [
            "first", "last", "sub", "sub/gated", "sub/shout"]
        page.fill('textarea[name="input"]', "inside")
        page.click('[data-action="start"]')
        page.wait_for_selector('[data-node="sub/gated"][data-status="running"]')
        assert page.get_attribute('[data-node="sub"]', "data-status") == "running"
        assert page.get_attribute('[data-node="sub/shout"]', "data-status") == "pending"
        functions_ui.GATE.set()
        page.wait_for_selector('[data-node="sub/shout"][data-status="succeeded"]')
        page.wait_for_selector('[data-node="last"][data-status="succeeded"]')
        page.click('[data-node="sub/shout"]')
        page.locator(".details").get_by_text("INSIDE", exact=True).first.wait_for()
    finally:
        functions_ui.GATE.set()


def test_a_failed_node_s_time_is_its_visit_s_time_labelled_wall_time(page: Any, server: RunningServer,
                                                                     client: httpx.Client) -> None:
    fid = create_formation(client, "timed-failure", "slow", "explode")
    page.goto(f"{server.url}/ui/#/formations/{fid}")
    page.wait_for_selector("[data-node]")
    page.fill('textarea[name="input"]', "x")
    page.click('[data-action="start"]')
    page.wait_for_selector('[data-node="explode"][data-status="failed"]')
    page.click('[data-node="explode"]')
    visit = page.locator("[data-visit-wall-time]")
    visit.wait_for()
    node = page.locator("[data-node-wall-time]").inner_text()
    assert node == visit.inner_text().removesuffix(" wall"), (node, visit.inner_text())
    assert node.endswith("ms") and page.locator(".details dt", has_text="wall time").count() == 1


def test_a_succeeded_node_s_time_is_its_visit_s_time(page: Any, server: RunningServer,
                                                                client: httpx.Client) -> None:
    fid = create_formation(client, "timed-twice", "slow")
    page.goto(f"{server.url}/ui/#/formations/{fid}")
    page.wait_for_selector("[data-node]")
    page.fill('textarea[name="input"]', "once")
    page.click('[data-action="start"]')
    page.wait_for_selector('[data-node="slow"][data-status="succeeded"]')
    page.click('[data-node="slow"]')
    shown = page.locator("[data-visit-wall-time]").inner_text().removesuffix(" wall")
    assert page.locator("[data-node-wall-time]").inner_text() == shown and shown.endswith("ms")


def test_an_inner_visit_cut_by_its_formation_node_s_timeout_ends_cancelled_while_the_node_waits_to_retry(
        page: Any, server: RunningServer, client: httpx.Client) -> None:
    functions_ui.GATE.clear()
    try:
        inner = create_formation(client, "cut-inner", "gated", "shout")
        policies = {"timeout": 0.3, "retries": 1, "backoff": 30, "jitter": False}  # the retry waits 30 s
        nodes = [{"name": "sub", "kind": "formation", "formation_id": inner, "policies": policies}]
        response = client.post("/formations", json={"name": "cut-by-timeout", "nodes": nodes, "edges": []})
        assert response.status_code == 201, response.text
        page.goto(f"{server.url}/ui/#/formations/{response.json()['id']}")
        page.wait_for_selector('[data-node="sub/gated"]')
        page.fill('textarea[name="input"]', "late")
        page.click('[data-action="start"]')
        page.wait_for_url("**/ui/#/runs/*")
        run_id = page.url.rsplit("/", 1)[1]
        page.wait_for_selector('[data-node="sub/gated"][data-status="cancelled"]')  # its node_skipped is in
        page.click('[data-node="sub/gated"]')
        page.wait_for_selector('[data-selected-node="sub/gated"]')
        visit = page.locator(".details .visit")
        assert visit.count() == 1
        assert visit.locator("summary [data-run-status]").inner_text() == "cancelled"
        assert "cancelled: the inner run of 'sub'" in visit.locator(".error").inner_text()
        assert visit.locator("[data-visit-wall-time]").count() == 1  # ended: its wall time is known
        bar = page.locator('[data-timeline-node="sub/gated"] .bar')
        assert bar.get_attribute("class") == "bar cancelled"
        assert client.get(f"/runs/{run_id}").json()["status"] == "running"  # the run waits to retry `sub`
        assert client.post(f"/runs/{run_id}/cancel").status_code == 200
    finally:
        functions_ui.GATE.set()


def test_a_node_s_started_and_finished_follow_its_events_during_the_run_as_a_reload_shows_them(
        page: Any, server: RunningServer, client: httpx.Client) -> None:
    functions_ui.GATE.clear()
    functions_ui.LATER.clear()
    try:
        fid = create_formation(client, "live-times", "gated", "gated_later")
        page.goto(f"{server.url}/ui/#/formations/{fid}")
        page.wait_for_selector("[data-node]")
        page.fill('textarea[name="input"]', "x")
        page.click('[data-action="start"]')
        page.wait_for_url("**/ui/#/runs/*")
        run_id = page.url.rsplit("/", 1)[1]
        page.wait_for_selector('[data-node="gated"][data-status="running"]')
        page.click('[data-node="gated"]')
        page.wait_for_selector('[data-selected-node="gated"]')
        assert page.locator("[data-node-finished]").inner_text() == ""
        functions_ui.GATE.set()
        page.wait_for_selector('[data-node="gated_later"][data-status="running"]')  # drawn with gated's end
        reloaded = client.get(f"/ui/api/runs/{run_id}").json()
        assert reloaded["status"] == "running"  # the page has not read the run's document again
        gated = reloaded["nodes"]["gated"]
        assert page.locator("[data-node-started]").inner_text() == gated["started_at"]
        assert page.locator("[data-node-finished]").inner_text() == gated["finished_at"]
    finally:
        functions_ui.GATE.set()
        functions_ui.LATER.set()


def test_a_looped_node_on_its_next_visit_shows_that_visit_s_start_and_no_finish_as_a_reload_does(
        page: Any, server: RunningServer, client: httpx.Client) -> None:
    functions_ui.GATE.clear()
    functions_ui.LATER.clear()
    try:
        nodes = [{"name": "lap", "kind": "function", "function": "lap"},
                 {"name": "shout", "kind": "function", "function": "shout"}]
        edges = [{"from": "lap", "to": "lap", "condition": "one_lap"}, {"from": "lap", "to": "shout", "otherwise": True}]
        response = client.post("/formations", json={"name": "live-laps", "nodes": nodes, "edges": edges})
        assert response.status_code == 201, response.text
        page.goto(f"{server.url}/ui/#/formations/{response.json()['id']}")
        page.wait_for_selector("[data-node]")
        page.fill('textarea[name="input"]', "x")
        page.click('[data-action="start"]')
        page.wait_for_url("**/ui/#/runs/*")
        run_id = page.url.rsplit("/", 1)[1]
        page.wait_for_selector('[data-node="lap"][data-status="running"]')  # the page has the run's document
        page.click('[data-node="lap"]')
        functions_ui.GATE.set()
        page.locator(".details .visit").nth(1).wait_for()  # the second visit has started
        reloaded = client.get(f"/ui/api/runs/{run_id}").json()
        assert reloaded["status"] == "running"
        lap = reloaded["nodes"]["lap"]
        assert (lap["status"], lap["finished_at"]) == ("running", None)
        assert page.locator("[data-node-started]").inner_text() == lap["started_at"]
        assert page.locator("[data-node-finished]").inner_text() == ""
    finally:
        functions_ui.GATE.set()
        functions_ui.LATER.set()
