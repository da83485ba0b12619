"""The run viewer behind ``--token``: the page asks for the token once, keeps it for the
tab, and sends it on every call, actions included (which still pass the cross-site rules)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.harness import RunningServer
from tests.ui.conftest import create_formation, start_server, wait_for_status

pytestmark = pytest.mark.browser

TOKEN = "viewer-test-token-1234"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("viewer-token"), token=TOKEN)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def formation_id(server: RunningServer) -> str:
    with server.client(TOKEN) as client:
        return create_formation(client, "guarded", "shout")


def test_the_page_asks_for_the_token_then_shows_the_formations(page: Any, server: RunningServer,
                                                               formation_id: str) -> None:
    page.goto(f"{server.url}/ui/")
    page.wait_for_selector('input[name="token"]', state="visible")
    assert page.locator("[data-node]").count() == 0
    page.fill('input[name="token"]', TOKEN)
    page.click('#token-form button[type="submit"]')
    page.wait_for_selector('[data-node="shout"]')
    assert page.is_hidden("#token-form")


def test_the_page_asks_once_per_tab(page: Any, server: RunningServer, formation_id: str) -> None:
    page.goto(f"{server.url}/ui/")
    page.fill('input[name="token"]', TOKEN)
    page.click('#token-form button[type="submit"]')
    page.wait_for_selector('[data-node="shout"]')
    page.reload()
    page.wait_for_selector('[data-node="shout"]')
    assert page.is_hidden("#token-form")


def test_a_wrong_token_is_asked_for_again(page: Any, server: RunningServer, formation_id: str) -> None:
    page.goto(f"{server.url}/ui/")
    page.fill('input[name="token"]', "not-the-token")
    page.click('#token-form button[type="submit"]')
    page.get_by_text("That token was refused").wait_for()
    page.fill('input[name="token"]', TOKEN)
    page.click('#token-form button[type="submit"]')
    page.wait_for_selector('[data-node="shout"]')


def test_a_run_started_from_the_page_sends_the_token(page: Any, server: RunningServer, formation_id: str) -> None:
    page.goto(f"{server.url}/ui/#/formations/{formation_id}")
    page.fill('input[name="token"]', TOKEN)
    page.click('#token-form button[type="submit"]')
    page.fill('textarea[name="input"]', "quiet")
    page.click('[data-action="start"]')
    page.wait_for_selector('[data-node="shout"][data-status="succeeded"]')
    run_id = page.url.rsplit("/", 1)[1]
    with server.client(TOKEN) as client:
        wait_for_status(client, run_id, "succeeded")
        assert client.get(f"/runs/{run_id}").json()["output"] == "QUIET"
