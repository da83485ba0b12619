"""The run viewer's libraries (Preact, htm, dagre; ``server/ui/vendor/``) in a real browser:
they come from the server itself, and the page lays a formation's graph out with them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.server.harness import RunningServer
from tests.ui.conftest import start_server
from wingman_actors.server._ui_page import VENDORED

pytestmark = pytest.mark.browser

UI = Path(__file__).parents[2] / "wingman_actors" / "server" / "ui"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("viewer-libraries"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def fork(server: RunningServer) -> str:
    """``a`` feeds ``b`` and ``c``, and ``b`` feeds ``d``; the formation's id."""
    nodes = [{"name": n, "kind": "function", "function": "shout"} for n in "abcd"]
    edges = [{"from": s, "to": t} for s, t in ("ab", "ac", "bd")]
    with server.client() as client:
        response = client.post("/formations", json={"name": "fork", "nodes": nodes, "edges": edges})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def boxes(page: Any) -> dict[str, dict[str, float]]:
    return dict(page.eval_on_selector_all("[data-node]", """els => els.map(e => {
        const r = e.getBoundingClientRect();
        return [e.dataset.node, {left: r.left, right: r.right, top: r.top, bottom: r.bottom}];
    })"""))


def test_the_vendored_libraries_are_loaded_from_the_server_and_nothing_else(page: Any, server: RunningServer,
                                                                            fork: str) -> None:
    seen: list[str] = []
    complaints: list[str] = []

    def check(route: Any) -> None:
        seen.append(route.request.url)
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            route.abort()

    page.route("**/*", check)
    page.on("console", lambda message: message.type == "error" and complaints.append(message.text))
    page.goto(f"{server.url}/ui/#/formations/{fork}")
    page.wait_for_selector("[data-node]")
    assert not complaints, complaints  # a script the policy refused would be logged here
    assert urlsplit(server.url).hostname == "127.0.0.1"
    assert all(urlsplit(url).hostname == "127.0.0.1" for url in seen), seen
    assert {f"/ui/assets/{name}" for name in VENDORED} <= {urlsplit(url).path for url in seen}


def test_the_page_lays_a_graph_out_left_to_right_without_overlaps(page: Any, server: RunningServer,
                                                                  fork: str) -> None:
    page.goto(f"{server.url}/ui/#/formations/{fork}")
    page.wait_for_selector('[data-node="d"]')
    at = boxes(page)
    assert at["a"]["right"] < at["b"]["left"] and at["a"]["right"] < at["c"]["left"]
    assert at["b"]["left"] == at["c"]["left"]  # one rank
    assert at["b"]["bottom"] <= at["c"]["top"] or at["c"]["bottom"] <= at["b"]["top"]
    assert at["b"]["right"] < at["d"]["left"]
    assert page.locator("[data-edge]").count() == 3


def test_the_assets_with_their_libraries_weigh_under_a_megabyte() -> None:
    size = sum(f.stat().st_size for f in UI.rglob("*") if f.is_file())
    libraries = sum((UI / name).stat().st_size for name in VENDORED)
    print(f"\nviewer assets: {size / 1024:.1f} KiB in all, of which the libraries {libraries / 1024:.1f} KiB")
    assert size < 1_000_000


def test_every_vendored_library_ships_with_its_licence_and_is_named_in_the_readme() -> None:
    readme = (UI / "vendor" / "README.md").read_text()
    for library in ("preact", "htm", "dagre"):
        assert (UI / "vendor" / f"LICENSE.{library}").is_file()
        assert library in readme
