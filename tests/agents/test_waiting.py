"""Sessions that wait: Session(agent, store=...) suspends on interrupt()/ask_human and
Session.resume continues it, in this process or another, without repeating model calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors import Agent, Session, interrupt, tool
from wingman_actors.core import InferenceResponse, StreamEventType
from wingman_actors.errors import NoStoreError
from wingman_actors.store import RunNotResumableError, RunStore
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

from .session_worker import ASK, agent, confirm

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.sqlite") as store:
        yield store


def test_a_tool_that_interrupts_suspends_the_run_with_its_payload(store: RunStore) -> None:
    session = Session(agent(ScriptedProvider([ASK])), store=store)

    result = session.run("Book me a trip.")

    assert result.status == "suspended"
    assert result.interrupt == {"question": "Which city?"}
    assert store.get(session.id).status == "suspended"


def test_a_finished_run_says_succeeded_and_writes_nothing_to_the_store(store: RunStore) -> None:
    result = Session(Agent("a", provider=ScriptedProvider(["hi"])), store=store).run("hello")

    assert result.status == "succeeded" and result.interrupt is None
    assert store.runs() == []


def test_resume_answers_the_interrupt_without_repeating_model_calls(store: RunStore) -> None:
    provider = ScriptedProvider([ASK, confirm])
    session = Session(agent(provider), store=store)
    session.run("Book me a trip.")

    result = session.resume(session.id, answer="Lisbon")

    assert (result.status, result.response) == ("succeeded", "Booked for Lisbon")
    assert provider.calls == 2  # the ask, then the confirmation: the ask was replayed
    assert session.history[0].text == "Book me a trip."
    assert store.get(session.id).status == "succeeded"


def test_a_suspended_session_resumes_in_another_process(store: RunStore, tmp_path: Path) -> None:
    session = Session(agent(ScriptedProvider([ASK])), store=store)
    session.run("Book me a trip.")
    store.flush()

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "tests.agents.session_worker", str(tmp_path / "runs.sqlite"), session.id, "Porto"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True,
    )

    assert json.loads(out.stdout) == {"status": "succeeded", "response": "Booked for Porto", "calls": 1}


def test_a_streamed_run_that_interrupts_ends_its_stream_with_a_suspended_result(store: RunStore) -> None:
    session = Session(agent(ScriptedProvider([ASK])), store=store)

    stream = session.run_stream("Book me a trip.")
    kinds = [event.type for event in stream]
    result = stream.result()

    assert (result.status, result.interrupt) == ("suspended", {"question": "Which city?"})
    assert StreamEventType.TOOL_START in kinds and StreamEventType.ERROR not in kinds
    assert store.get(session.id).status == "suspended"
    assert session.history == []  # the turn is not over: resume runs it again


def test_a_suspended_streamed_run_resumes_without_repeating_model_calls(store: RunStore) -> None:
    provider = ScriptedProvider([ASK, confirm])
    session = Session(agent(provider), store=store)
    stream = session.run_stream("Book me a trip.")
    for _ in stream:
        pass

    result = Session(agent(provider), store=store).resume(session.id, answer="Lisbon")

    assert (result.status, result.response) == ("succeeded", "Booked for Lisbon")
    assert provider.calls == 2


def test_a_streamed_run_that_finishes_with_a_store_streams_and_succeeds(store: RunStore) -> None:
    session = Session(Agent("a", provider=ScriptedProvider(["hello there"])), store=store)

    stream = session.run_stream("hi")
    text = "".join(event.text or "" for event in stream if event.type is StreamEventType.TEXT_DELTA)

    assert (text, stream.result().status) == ("hello there", "succeeded")
    assert store.runs() == []


def test_interrupt_in_a_session_without_a_store_still_says_to_use_one() -> None:
    session = Session(agent(ScriptedProvider([ASK, "unused"])))
    result = session.run("Book me a trip.")

    assert result.tool_calls[0].is_error
    assert "store" in result.tool_calls[0].output
    with pytest.raises(NoStoreError):
        interrupt("outside any run")


def test_a_second_interrupt_of_the_same_turn_suspends_again_and_both_answers_are_kept(store: RunStore) -> None:
    asked: list[str] = []

    @tool
    def two_questions(ctx: ToolContext) -> str:
        """Ask two things."""
        first = interrupt("first?")
        second = interrupt("second?")
        asked.append(f"{first}+{second}")
        return f"{first} and {second}"

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("t1", "two_questions", {})]), "done"])
    session = Session(Agent("a", provider=provider, tools=[two_questions]), store=store)

    assert session.run("go").interrupt == "first?"
    assert session.resume(session.id, answer="A").interrupt == "second?"
    result = session.resume(session.id, answer="B")

    assert result.status == "succeeded" and asked == ["A+B"]
    assert provider.calls == 2


def test_a_later_turn_of_the_same_session_may_suspend_too(store: RunStore) -> None:
    provider = ScriptedProvider([ASK, confirm, ASK, confirm])
    session = Session(agent(provider), store=store)
    session.run("Book me a trip.")
    session.resume(session.id, answer="Lisbon")

    assert session.run("And another.").status == "suspended"
    result = session.resume(session.id, answer="Rome")

    assert result.response == "Booked for Rome"
    assert [m.text for m in session.history][:2] == ["Book me a trip.", ""]  # the first turn is kept


def test_metadata_survives_a_suspension(store: RunStore) -> None:
    seen: list[object] = []

    @tool
    def gated(ctx: ToolContext) -> str:
        """Ask, then report the tenant."""
        answer = interrupt("ok?")
        seen.append(ctx.metadata.get("tenant"))
        return str(answer)

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("g1", "gated", {})]), "done"])
    session = Session(Agent("a", provider=provider, tools=[gated]), store=store)
    session.run("go", metadata={"tenant": "acme"})
    session.resume(session.id, answer="yes")

    assert seen == ["acme"]


def test_resuming_a_finished_session_is_refused(store: RunStore) -> None:
    session = Session(agent(ScriptedProvider([ASK, confirm])), store=store)
    session.run("Book me a trip.")
    session.resume(session.id, answer="Lisbon")

    with pytest.raises(RunNotResumableError):
        session.resume(session.id, answer="again")


def test_resuming_an_unknown_session_names_what_to_pass(store: RunStore) -> None:
    with pytest.raises(ValueError, match="no suspended session 'nope'"):
        Session(agent(ScriptedProvider())).resume("nope", store=store, answer="x")


def test_resume_without_a_store_says_where_to_give_one() -> None:
    with pytest.raises(ValueError, match="resume needs the store"):
        Session(agent(ScriptedProvider())).resume("some-id", answer="x")


def test_a_session_refuses_a_store_that_is_not_one() -> None:
    with pytest.raises(TypeError, match="takes a RunStore"):
        Session(Agent("a", provider=ScriptedProvider()), store="runs.sqlite")


def test_resume_called_on_the_class_says_to_call_it_on_a_session_of_the_agent(store: RunStore) -> None:
    session = Session(agent(ScriptedProvider([ASK])), store=store)
    session.run("Book me a trip.")

    with pytest.raises(TypeError, match=r"Session\(agent\)\.resume\(session_id, store=store, answer=\.\.\.\)"):
        Session.resume(session.id, store=store, answer="Lisbon")  # type: ignore[arg-type,call-arg]
    assert store.get(session.id).status == "suspended"  # nothing was taken


@pytest.mark.parametrize("name", ["resume", "aresume"])
def test_resume_looked_up_on_the_class_shows_the_methods_docs_and_signature(name: str) -> None:
    import inspect

    on_class, on_session = getattr(Session, name), getattr(Session(agent(ScriptedProvider())), name)
    assert inspect.getdoc(on_class) == inspect.getdoc(on_session) and "answer" in (inspect.getdoc(on_class) or "")
    assert "answer" in inspect.signature(on_class).parameters


def test_aresume_called_on_the_class_says_to_call_it_on_a_session_of_the_agent(store: RunStore) -> None:
    import asyncio

    session = Session(agent(ScriptedProvider([ASK])), store=store)
    session.run("Book me a trip.")

    with pytest.raises(TypeError, match=r"Session\(agent\)\.aresume\("):
        asyncio.run(Session.aresume(session.id, store=store, answer="Lisbon"))  # type: ignore[arg-type,call-arg]
