"""Fixtures of the browser tests: headless Chromium (Debian's package) driven by Playwright,
one browser and one server per module, a fresh page per test.

Outside CI a machine without Chromium or Playwright skips these tests, saying why; in CI
(``CI=true``) they must run, so a missing browser fails them.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.harness import RunningServer
from wingman_actors.server import ServerConfig

CHROMIUM = Path("/usr/bin/chromium")
FUNCTIONS = "tests.ui.functions_ui"


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return 'Playwright is not installed: pip install -e ".[dev]"'
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM}: apt-get install -y chromium"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser tests must run in CI: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    context.set_default_timeout(20_000)  # generous: CI machines are shared
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"the page raised: {errors}"


def start_server(tmp: Path, token: str | None = None) -> RunningServer:
    config = ServerConfig(db_path=tmp / "wingman.db", work_root=tmp, functions=(FUNCTIONS,), entry_points=False,
                          token=token)
    return RunningServer(config).start()


def create_formation(client: httpx.Client, name: str, *functions: str) -> str:
    """A chain of function nodes named after their functions; the formation's id."""
    nodes = [{"name": f, "kind": "function", "function": f} for f in functions]
    edges = [{"from": a, "to": b} for a, b in itertools.pairwise(functions)]
    response = client.post("/formations", json={"name": name, "nodes": nodes, "edges": edges})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def wait_for_status(client: httpx.Client, run_id: str, status: str) -> None:
    """Until the run's record says ``status`` (the page may show it a moment before it is written)."""
    deadline = time.monotonic() + 10
    while (now := client.get(f"/runs/{run_id}").json()["status"]) != status:
        assert time.monotonic() < deadline, f"run {run_id} is {now}, not {status}"
        time.sleep(0.05)
