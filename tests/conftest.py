"""Suite-wide fixtures. (The leak check comes from the wingman_actors pytest plugin.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.loopback import LoopbackServer


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()
