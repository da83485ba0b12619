"""The run viewer at ``/ui/`` in a real browser: it loads offline, draws formations, follows
a run live, and starts, answers, cancels and resumes runs from the page."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.server.harness import RunningServer, scripted_agent
from tests.ui import functions_ui
from tests.ui.conftest import create_formation, start_server, wait_for_status

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("viewer"))
    try:
        yield running
    finally:
        functions_ui.GATE.set()  # a cancelled run's abandoned attempt ends now
        running.stop()


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


@pytest.fixture
def gate() -> Iterator[None]:
    """``gated`` nodes wait until the test opens the gate; it is opened after the test in any case,
    so an abandoned attempt's thread ends."""
    functions_ui.GATE.clear()
    try:
        yield
    finally:
        functions_ui.GATE.set()


def open_formation(page: Any, server: RunningServer, formation_id: str) -> None:
    page.goto(f"{server.url}/ui/#/formations/{formation_id}")
    page.wait_for_selector("[data-node]")


def start_run(page: Any, text: str) -> str:
    """Start a run from the page; the run's id, once its page shows."""
    page.fill('textarea[name="input"]', text)
    page.click('[data-action="start"]')
    page.wait_for_url("**/ui/#/runs/*")
    return str(page.url.rsplit("/", 1)[1])


def test_the_page_loads_with_no_request_leaving_the_server(page: Any, server: RunningServer,
                                                            client: httpx.Client) -> None:
    create_formation(client, "offline", "slow", "shout")
    origin = urlsplit(server.url).netloc
    seen: list[str] = []

    def check(route: Any) -> None:
        seen.append(route.request.url)
        if urlsplit(route.request.url).netloc == origin:
            route.continue_()
        else:
            route.abort()

    page.route("**/*", check)
    started = time.perf_counter()
    page.goto(f"{server.url}/ui/")
    page.wait_for_selector("[data-node]")
    load_ms = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
    print(f"\nviewer first load: {load_ms:.0f} ms to the load event, "
          f"{(time.perf_counter() - started) * 1000:.0f} ms to a drawn graph")
    assert seen and all(urlsplit(url).netloc == origin for url in seen), seen


def test_a_formation_is_drawn_with_one_element_per_node(page: Any, server: RunningServer,
                                                        client: httpx.Client) -> None:
    fid = create_formation(client, "drawn", "slow", "shout", "ask")
    open_formation(page, server, fid)
    assert sorted(page.eval_on_selector_all("[data-node]", "els => els.map(e => e.dataset.node)")) == [
        "ask", "shout", "slow"]
    assert page.eval_on_selector_all("[data-node]", "els => els.map(e => e.dataset.status)") == ["pending"] * 3
    assert page.locator("[data-edge]").count() == 2


def test_a_run_started_from_the_page_goes_from_running_to_succeeded_without_a_reload(
    page: Any, server: RunningServer, client: httpx.Client, gate: None
) -> None:
    fid = create_formation(client, "live", "gated", "shout")
    open_formation(page, server, fid)
    page.evaluate("window.sameDocument = true")
    start_run(page, "hello")
    page.wait_for_selector('[data-node="gated"][data-status="running"]')
    assert page.get_attribute('[data-node="shout"]', "data-status") == "pending"
    functions_ui.GATE.set()
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    assert page.get_attribute('[data-node="gated"]', "data-status") == "succeeded"
    assert page.evaluate("window.sameDocument") is True  # updated from the events, not reloaded


def test_a_node_shows_its_visit_input_and_output_when_selected(page: Any, server: RunningServer,
                                                               client: httpx.Client) -> None:
    fid = create_formation(client, "visits", "slow", "shout")
    open_formation(page, server, fid)
    start_run(page, "quiet words")
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    page.click('[data-node="shout"]')
    details = page.locator(".details")
    details.get_by_text("QUIET WORDS", exact=True).wait_for()
    assert "quiet words" in details.inner_text()
    assert page.locator('[data-timeline-node="shout"]').count() == 1


def test_a_failed_node_shows_failed(page: Any, server: RunningServer, client: httpx.Client) -> None:
    fid = create_formation(client, "failing", "slow", "explode")
    open_formation(page, server, fid)
    start_run(page, "x")
    page.wait_for_selector('[data-node="explode"][data-status="failed"]')
    page.get_by_text("cannot handle").first.wait_for()


def test_an_interrupt_answered_from_the_page_resumes_the_run(page: Any, server: RunningServer,
                                                             client: httpx.Client) -> None:
    fid = create_formation(client, "asking", "slow", "ask")
    open_formation(page, server, fid)
    run_id = start_run(page, "draft")
    page.wait_for_selector('[data-node="ask"][data-status="suspended"]')
    page.fill('textarea[name="answer"]', "yes")
    page.click('[data-action="answer"]')
    page.wait_for_selector('[data-node="ask"][data-status="succeeded"]')
    wait_for_status(client, run_id, "succeeded")
    assert client.get(f"/runs/{run_id}").json()["output"] == "draft: yes"


def test_cancel_from_the_page_cancels_a_run_in_flight(page: Any, server: RunningServer,
                                                      client: httpx.Client, gate: None) -> None:
    fid = create_formation(client, "cancelled", "gated", "shout")
    open_formation(page, server, fid)
    run_id = start_run(page, "stop me")
    page.wait_for_selector('[data-node="gated"][data-status="running"]')
    page.click('[data-action="cancel"]')
    page.wait_for_selector('[data-node="gated"][data-status="cancelled"]')
    wait_for_status(client, run_id, "cancelled")


def test_resume_from_the_page_continues_a_cancelled_run(page: Any, server: RunningServer,
                                                        client: httpx.Client, gate: None) -> None:
    fid = create_formation(client, "resumed", "gated", "shout")
    open_formation(page, server, fid)
    run_id = start_run(page, "again")
    page.wait_for_selector('[data-node="gated"][data-status="running"]')
    assert client.post(f"/runs/{run_id}/cancel").status_code == 200
    page.wait_for_selector('[data-action="resume"]')
    functions_ui.GATE.set()
    page.click('[data-action="resume"]')
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    wait_for_status(client, run_id, "succeeded")
    assert client.get(f"/runs/{run_id}").json()["output"] == "AGAIN"


def test_runs_are_listed_and_filtered_by_status_and_formation(page: Any, server: RunningServer,
                                                              client: httpx.Client) -> None:
    fid = create_formation(client, "listed", "shout")
    good = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    asks = create_formation(client, "listed-asks", "ask")
    waiting = client.post(f"/formations/{asks}/run", json={"input": "b"}).json()["id"]
    page.goto(f"{server.url}/ui/#/runs")
    page.wait_for_selector(f'[data-run-id="{good}"]')
    assert page.locator(f'[data-run-id="{waiting}"]').count() == 1
    page.select_option('select[name="status"]', "suspended")
    page.wait_for_selector(f'[data-run-id="{good}"]', state="detached")
    assert page.locator(f'[data-run-id="{waiting}"]').count() == 1
    page.goto(f"{server.url}/ui/#/runs?formation={fid}")
    page.wait_for_selector(f'[data-run-id="{good}"]')
    assert page.locator("[data-run-id]").count() == 1


def test_the_assets_weigh_under_a_megabyte() -> None:
    folder = Path(functions_ui.__file__).parents[2] / "wingman_actors" / "server" / "ui"
    size = sum(f.stat().st_size for f in folder.iterdir())
    print(f"\nviewer assets: {size / 1024:.1f} KiB")
    assert size < 1_000_000


def test_a_run_of_200_nodes_streams_to_the_page_without_falling_behind(page: Any, server: RunningServer,
                                                                       client: httpx.Client) -> None:
    names = [f"n{i:03}" for i in range(200)]
    nodes = [{"name": n, "kind": "function", "function": "shout"} for n in names]
    edges = [{"from": a, "to": b} for a, b in itertools.pairwise(names)]
    fid = client.post("/formations", json={"name": "long", "nodes": nodes, "edges": edges}).json()["id"]
    open_formation(page, server, fid)
    # the moment the page draws the last node succeeded, by the page's clock (the server's is the same)
    page.evaluate("""() => {
        window.lastSeen = new Promise((resolve) => new MutationObserver((_, observer) => {
            const last = document.querySelector('[data-node="n199"][data-status="succeeded"]');
            if (last) { observer.disconnect(); resolve(Date.now()); }
        }).observe(document.body, {subtree: true, attributes: true, childList: true}));
    }""")
    start_run(page, "go")
    seen_ms = page.evaluate("window.lastSeen")
    run_id = page.url.rsplit("/", 1)[1]
    wait_for_status(client, run_id, "succeeded")
    record = client.get(f"/runs/{run_id}").json()
    finished = record["nodes"]["n199"]["finished_at"]
    finished_ms = datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp() * 1000
    lag_s = (seen_ms - finished_ms) / 1000
    print(f"\n200-node run: the page drew the last node {lag_s:.3f} s after it finished on the server")
    assert lag_s < 5  # the target is 1 s (printed above); this bound only catches a page that stalls


GLOB = {"content": [{"type": "tool_use", "id": "c1", "name": "glob", "input": {"pattern": "*.md"}}],
        "stop_reason": "tool_use"}


def test_an_agent_node_shows_its_steps_tool_calls_and_results(page: Any, server: RunningServer,
                                                              client: httpx.Client) -> None:
    agent = scripted_agent(client, GLOB, "two notes found", tools=["glob"], name="scout")
    body = {"name": "scouting", "nodes": [{"name": "scout", "kind": "agent", "agent_id": agent}], "edges": []}
    fid = client.post("/formations", json=body).json()["id"]
    open_formation(page, server, fid)
    start_run(page, "find the notes")
    page.wait_for_selector('[data-node="scout"][data-status="succeeded"]')
    page.click('[data-node="scout"]')
    steps = page.locator("ol.steps")
    steps.get_by_text("tool call glob").wait_for()
    assert "*.md" in steps.inner_text()
    assert "tool result" in steps.inner_text()
    assert "two notes found" in steps.inner_text()


def test_clicking_a_run_in_the_list_opens_it(page: Any, server: RunningServer, client: httpx.Client) -> None:
    fid = create_formation(client, "clicked", "shout")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    page.goto(f"{server.url}/ui/#/runs")
    page.click(f'[data-run-id="{run_id}"]')
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    assert page.url.endswith(f"#/runs/{run_id}")


def test_a_screenshot_of_a_finished_run_is_kept_as_a_test_artefact_outside_the_repository(
    page: Any, server: RunningServer, client: httpx.Client, tmp_path: Path
) -> None:
    # WINGMAN_SCREENSHOT_DIR (set by .ci/run to a folder outside the checkout) keeps it for a person to look at
    folder = Path(os.environ.get("WINGMAN_SCREENSHOT_DIR") or tmp_path)
    repository = Path(__file__).resolve().parents[2]
    assert not folder.resolve().is_relative_to(repository), f"{folder} is inside the repository"
    fid = create_formation(client, "pictured", "slow", "shout")
    open_formation(page, server, fid)
    start_run(page, "a run to look at")
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    page.click('[data-node="shout"]')
    page.locator(".details").get_by_text("A RUN TO LOOK AT", exact=True).wait_for()
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "viewer-run.png"
    page.set_viewport_size({"width": 1280, "height": 800})
    data = page.screenshot(full_page=True)  # written here: with path=, Playwright starts an executor thread
    shot.write_bytes(data)
    print(f"\nviewer screenshot: {shot}")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == 1280 and height >= 800, (width, height)


def test_a_visit_shorter_than_a_millisecond_shows_as_under_one_not_zero(page: Any, server: RunningServer) -> None:
    page.goto(f"{server.url}/ui/")
    shown = page.evaluate("""async () => {
        const { seconds } = await import("./assets/view.js");
        return [0, 0.0002, 0.0006, 0.25, 1.5].map(seconds);
    }""")
    assert shown == ["0 ms", "< 1 ms", "1 ms", "250 ms", "1.50 s"]


def test_a_visit_timed_within_one_millisecond_shows_under_one_not_zero(page: Any, server: RunningServer) -> None:
    # event and record times are read to the millisecond: a quick visit's start and end are often equal
    page.goto(f"{server.url}/ui/")
    shown = page.evaluate("""async () => {
        const { seconds, wall } = await import("./assets/view.js");
        return [{ started: 5.001, finished: 5.001 }, { started: 5.001, finished: 5.003 }, { started: 5.001 }]
          .map(wall).map(seconds);
    }""")
    assert shown == ["< 1 ms", "2 ms", ""]


def test_a_quick_live_visit_never_shows_zero_milliseconds(page: Any, server: RunningServer,
                                                          client: httpx.Client) -> None:
    fid = create_formation(client, "quick", "shout")
    open_formation(page, server, fid)
    start_run(page, "quick")
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    page.click('[data-node="shout"]')
    visit = page.locator("[data-visit-wall-time]").first
    visit.wait_for()
    assert visit.inner_text().endswith(" ms wall") and visit.inner_text() != "0 ms wall", visit.inner_text()
