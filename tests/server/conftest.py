"""Fixtures of the HTTP server tests: one real server per test module, a client per test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server import functions_fixture as fx
from tests.server.harness import FUNCTIONS_MODULE, RunningServer
from tests.support.postgres import postgres_server, postgres_url
from wingman_actors.server import ServerConfig

__all__ = ["client", "gate", "postgres_server", "postgres_url", "server", "work_root"]


@pytest.fixture(scope="module")
def work_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("work-root")
    (root / "project").mkdir()
    return root


@pytest.fixture(scope="module")
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, work_root: Path
) -> Iterator[RunningServer]:
    """The module's server; a module's ``SERVER_FUNCTIONS`` (module names) are registered beside the fixture's."""
    db = tmp_path_factory.mktemp("db") / "wingman.db"
    functions = (FUNCTIONS_MODULE, *getattr(request.module, "SERVER_FUNCTIONS", ()))
    config = ServerConfig(db_path=db, work_root=work_root, functions=functions, entry_points=False)
    running = RunningServer(config).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """The closed gate of ``functions_fixture.gated`` (its calls list emptied); opened at the
    end so no node thread is left waiting. Modules whose every test needs it use it with
    ``pytestmark = pytest.mark.usefixtures("gate")``."""
    fx.GATE.clear()
    fx.CALLS.clear()
    try:
        yield fx.GATE
    finally:
        fx.GATE.set()
