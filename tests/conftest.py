"""Suite-wide fixtures. (The leak check comes from the wingman_actors pytest plugin.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.loopback import LoopbackServer


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The launcher's default run store lives in the user data directory: every test (and
    every process it starts) gets a fresh one of its own, never the real one.
    ``XDG_DATA_HOME`` covers platformdirs on Linux, ``WINGMAN_ACTORS_DATA_DIR`` every platform."""
    base = tmp_path_factory.mktemp("data")
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "xdg"))
    monkeypatch.setenv("WINGMAN_ACTORS_DATA_DIR", str(base / "wingman-actors"))
    return base
