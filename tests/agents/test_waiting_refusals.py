"""A resume refused for its answer leaves the suspended session as it was: still
suspended, and resumable with an answer the store can keep (sync and awaited)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors import Session
from wingman_actors.store import RunStore, SerializationError
from wingman_actors.testing import ScriptedProvider

from .session_worker import ASK, agent, confirm


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.sqlite") as store:
        yield store


@pytest.mark.parametrize("awaited", [False, True])
def test_an_answer_the_store_cannot_keep_is_refused_and_the_session_stays_resumable(
    store: RunStore, awaited: bool
) -> None:
    suspended = Session(agent(ScriptedProvider([ASK])), store=store)
    suspended.run("Book me a trip.")
    refused = Session(agent(ScriptedProvider([confirm])), store=store)

    with pytest.raises(SerializationError, match=r"the answer to run"):
        if awaited:
            asyncio.run(refused.aresume(suspended.id, answer=object()))
        else:
            refused.resume(suspended.id, answer=object())

    assert store.get(suspended.id).status == "suspended"
    provider = ScriptedProvider([confirm])
    result = Session(agent(provider), store=store).resume(suspended.id, answer="Lisbon")
    assert (result.status, result.response) == ("succeeded", "Booked for Lisbon")


@pytest.mark.parametrize("awaited", [False, True])
@pytest.mark.parametrize("timeout", [-1, 0, "5"])
def test_a_resume_refused_for_its_timeout_leaves_the_answer_unrecorded(
    store: RunStore, awaited: bool, timeout: object
) -> None:
    suspended = Session(agent(ScriptedProvider([ASK])), store=store)
    suspended.run("Book me a trip.")
    refused = Session(agent(ScriptedProvider([confirm])), store=store)

    with pytest.raises((TypeError, ValueError), match=r"timeout must be"):
        if awaited:
            asyncio.run(refused.aresume(suspended.id, answer="Paris", timeout=timeout))  # type: ignore[arg-type]
        else:
            refused.resume(suspended.id, answer="Paris", timeout=timeout)  # type: ignore[arg-type]

    assert store.get(suspended.id).status == "suspended"
    result = Session(agent(ScriptedProvider([confirm])), store=store).resume(suspended.id, answer="Lisbon")
    assert (result.status, result.response) == ("succeeded", "Booked for Lisbon")


@pytest.mark.parametrize("session_id", [None, 3, ""])
def test_resume_refuses_a_session_id_that_is_not_a_non_empty_str_naming_it(store: RunStore, session_id: object) -> None:
    with pytest.raises((TypeError, ValueError), match=r"session_id must be a non-empty str \(a suspended session's \.id\), got"):
        Session(agent(ScriptedProvider([confirm])), store=store).resume(session_id, answer="x")  # type: ignore[arg-type]
