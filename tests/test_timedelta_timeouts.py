"""A ``datetime.timedelta`` is taken wherever a time limit is, as its seconds (Temporal's and
Hatchet's SDKs take time limits so; users coming from them pass one): a node's, a run's
(``run``, ``arun``, ``RunOptions``), a session's. One that is not > 0 is refused like a number
that is not."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from wingman_actors import Agent, Formation, Session
from wingman_actors.errors import (
    AgentError,
    ErrorKind,
    FormationRuntimeError,
    FormationSetupError,
    NodeTimeoutError,
)
from wingman_actors.formation import RunOptions
from wingman_actors.testing import ScriptedProvider

LIMIT = timedelta(milliseconds=200)


@pytest.fixture
def stuck() -> Iterator[Callable[[int], int]]:
    release = threading.Event()

    def wait(x: int) -> int:
        release.wait(5)
        return x

    yield wait
    release.set()


def test_a_node_timeout_given_as_a_timedelta_fails_the_attempt_at_its_seconds(stuck: Callable[[int], int]) -> None:
    formation = Formation("f").add_function("slow", stuck, timeout=LIMIT)

    with pytest.raises(FormationRuntimeError) as caught:
        formation.run(1, timeout=10)

    assert isinstance(caught.value.__cause__, NodeTimeoutError)
    assert formation.graph.nodes["slow"]["timeout"] == LIMIT  # the declaration keeps what was given


@pytest.mark.parametrize("how", ["run", "arun", "RunOptions", "submit"])
def test_a_run_timeout_given_as_a_timedelta_ends_the_run_at_its_seconds(stuck: Callable[[int], int], how: str) -> None:
    formation = Formation("f").add_function("slow", stuck)

    with pytest.raises(FormationRuntimeError, match="timed out"):
        if how == "run":
            formation.run(1, timeout=LIMIT)
        elif how == "arun":
            asyncio.run(formation.arun(1, timeout=LIMIT))
        elif how == "RunOptions":
            formation.run(1, options=RunOptions(timeout=LIMIT))
        else:
            with formation.start() as running:
                running.submit(1, timeout=LIMIT).result(10)


def test_a_session_timeout_given_as_a_timedelta_stops_the_run_at_its_seconds() -> None:
    slow = Agent("slow", provider=ScriptedProvider(["late"], latency_s=5))

    with pytest.raises(AgentError) as caught:
        Session(slow).run("hurry", timeout=LIMIT)

    assert caught.value.kind is ErrorKind.TIMEOUT


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(seconds=-1)])
def test_a_timedelta_that_is_not_positive_is_refused_naming_what_fits(bad: timedelta) -> None:
    with pytest.raises(FormationSetupError, match="seconds > 0"):
        Formation("f").add_function("inc", lambda x: x, timeout=bad)
    with pytest.raises(ValueError, match="seconds > 0"):
        Formation("f").add_function("inc", lambda x: x).run(1, timeout=bad)


@pytest.mark.parametrize("how", ["run", "run_stream", "arun", "astream"])
def test_every_session_run_takes_a_timedelta_timeout(how: str) -> None:
    session = Session(Agent("slow", provider=ScriptedProvider(["late"], latency_s=5)))

    async def drain() -> None:
        async for _ in session.astream("hurry", timeout=LIMIT):
            pass

    with pytest.raises(AgentError) as caught:
        if how == "run":
            session.run("hurry", timeout=LIMIT)
        elif how == "run_stream":
            for _ in session.run_stream("hurry", timeout=LIMIT):
                pass
        elif how == "arun":
            asyncio.run(session.arun("hurry", timeout=LIMIT))
        else:
            asyncio.run(drain())

    assert caught.value.kind is ErrorKind.TIMEOUT
