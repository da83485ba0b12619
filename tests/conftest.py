"""Suite-wide fixtures: loopback servers, and a guard that fails any test leaking a thread."""

from __future__ import annotations

import threading
import time
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


_ALLOWED_PREFIXES = ("pytest_timeout", "loopback-http")


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail the test if it leaves a thread running (after a short grace period)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2.0
    while True:
        leaked = [
            t for t in threading.enumerate()
            if t not in before and t.is_alive() and not t.name.startswith(_ALLOWED_PREFIXES)
        ]
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if leaked:
        pytest.fail(f"test leaked {len(leaked)} thread(s): {[t.name for t in leaked]}")
