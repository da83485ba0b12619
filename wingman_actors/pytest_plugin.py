"""pytest plugin of wingman-actors (registered through the ``pytest11`` entry point).

Fixtures:
    actor_probe: a started :class:`~wingman_actors.testing.ActorProbe`, stopped afterwards.
    scripted_provider: a factory ``scripted_provider(replies, **kwargs)`` of
        :class:`~wingman_actors.testing.ScriptedProvider`.

Leak check: a checked test fails if it leaves a Pykka actor or a thread running that it
started (after a grace period of up to 2 seconds for them to wind down). It is opt-in, so
the plugin never touches the tests of other projects that merely share the environment:

* the ini option ``wingman_leak_check = true`` checks every test of the project;
* ``@pytest.mark.wingman_leak_check`` checks one test (or a module, with ``pytestmark``);
* a test that uses the plugin's fixtures (``actor_probe``, ``scripted_provider``) is
  checked.

``@pytest.mark.wingman_allow_leaks`` turns it off for a test; the ini option
``wingman_thread_allowlist`` lists thread-name prefixes of your own test servers to ignore.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pykka
import pytest

from .testing import ActorProbe, ScriptedProvider

_GRACE_S = 2.0
_FIXTURES = frozenset({"actor_probe", "scripted_provider"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "wingman_leak_check",
        "fail every test that leaves a Pykka actor or a thread running (default: only tests "
        "marked wingman_leak_check or using the wingman fixtures)",
        type="bool",
        default=False,
    )
    parser.addini(
        "wingman_thread_allowlist",
        "thread-name prefixes the wingman leak check ignores",
        type="linelist",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "wingman_allow_leaks: skip the wingman actor/thread leak check")
    config.addinivalue_line("markers", "wingman_leak_check: fail the test if it leaves an actor or thread running")


@pytest.fixture
def actor_probe() -> Iterator[ActorProbe]:
    """A started ActorProbe; stopped after the test."""
    probe = ActorProbe.start()
    try:
        yield probe
    finally:
        probe.stop()


@pytest.fixture
def scripted_provider() -> Callable[..., ScriptedProvider]:
    """A factory: ``scripted_provider(["reply", ...], latency_s=0.0, cycle=False)``."""

    def make(replies: Any = (), **kwargs: Any) -> ScriptedProvider:
        return ScriptedProvider(replies, **kwargs)

    return make


def _leak_check_on(request: pytest.FixtureRequest) -> bool:
    node = request.node
    if node.get_closest_marker("wingman_allow_leaks"):
        return False
    return (
        bool(request.config.getini("wingman_leak_check"))
        or node.get_closest_marker("wingman_leak_check") is not None
        or not _FIXTURES.isdisjoint(request.fixturenames)
    )


@pytest.fixture(autouse=True)
def _wingman_leak_check(request: pytest.FixtureRequest) -> Iterator[None]:
    if not _leak_check_on(request):
        yield
        return
    allow = tuple(["pytest_timeout", *request.config.getini("wingman_thread_allowlist")])
    threads_before = set(threading.enumerate())
    actors_before = {ref.actor_urn for ref in pykka.ActorRegistry.get_all()}
    yield
    deadline = time.monotonic() + _GRACE_S
    while True:
        actors = [r for r in pykka.ActorRegistry.get_all() if r.actor_urn not in actors_before]
        threads = [
            t for t in threading.enumerate()
            if t not in threads_before and t.is_alive() and not t.name.startswith(allow)
        ]
        if (not actors and not threads) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if actors or threads:
        for ref in actors:
            ref.stop(block=False)
        pytest.fail(
            f"test left {len(actors)} actor(s) and {len(threads)} thread(s) running: "
            f"actors {[str(r) for r in actors]}, threads {[t.name for t in threads]}. "
            "Stop every actor and formation you start (use `with formation.start()`).",
            pytrace=False,
        )
