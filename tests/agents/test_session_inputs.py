"""What a session does with bad inputs to ``run``: a clear error, and a session still usable after it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from wingman_actors import Agent, Session
from wingman_actors.testing import ScriptedProvider


def _session() -> Session:
    return Session(Agent("a", provider=ScriptedProvider(["ok"], cycle=True)))


@pytest.mark.parametrize("message", [None, 3, b"bytes", ["hello"]])
def test_a_message_that_is_neither_text_nor_a_message_is_a_type_error_naming_it(message: Any) -> None:
    with pytest.raises(TypeError, match=rf"message must be a str or a Message, got {type(message).__name__}: pass the text"):
        _session().run(message)


def test_a_refused_message_leaves_the_history_as_it_was_and_the_session_usable() -> None:
    session = _session()
    with pytest.raises(TypeError):
        session.run(None)  # type: ignore[arg-type]
    assert session.history == []
    assert session.run("hello").response == "ok"


def test_a_streamed_or_awaited_run_refuses_a_bad_message_the_same_way() -> None:
    session = _session()
    with pytest.raises(TypeError, match="message must be a str or a Message"):
        list(session.run_stream(7))  # type: ignore[arg-type]

    async def main() -> None:
        with pytest.raises(TypeError, match="message must be a str or a Message"):
            await session.arun(7)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="message must be a str or a Message"):
            async for _ in session.astream(7):  # type: ignore[arg-type]
                pass

    asyncio.run(main())
    assert session.history == []


@pytest.mark.parametrize("timeout", [0, -1, float("nan")])
def test_a_timeout_that_is_not_above_zero_is_a_value_error(timeout: float) -> None:
    session = _session()
    with pytest.raises(ValueError, match=r"timeout must be a number of seconds > 0, or None or math.inf for no limit, got"):
        session.run("hello", timeout=timeout)
    assert session.history == []


@pytest.mark.parametrize("timeout", ["1", True, [1]])
def test_a_timeout_that_is_not_a_number_is_a_type_error_naming_it(timeout: Any) -> None:
    with pytest.raises(TypeError, match=r"timeout must be a number of seconds > 0, or None or math.inf for no limit, got"):
        _session().run("hello", timeout=timeout)


def test_an_awaited_run_checks_its_timeout_the_same_way() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
            await _session().arun("hello", timeout=0)

    asyncio.run(main())


def test_a_fleet_timeout_that_is_not_a_number_is_a_type_error_naming_it() -> None:
    from wingman_actors import Fleet

    with pytest.raises(TypeError, match=r"Fleet timeout must be a number of seconds > 0, or None or math.inf for no limit, got '1'"):
        Fleet(Agent("a", provider=ScriptedProvider(["ok"])), ["x"], timeout="1")  # type: ignore[arg-type]


@pytest.mark.parametrize("history", ["abc", ["hi"], [None]])
def test_a_history_that_is_not_a_list_of_messages_is_refused_when_the_session_is_made(history: Any) -> None:
    with pytest.raises(TypeError, match=r"Session history must be a list of Message objects"):
        Session(Agent("a"), history=history)


def test_a_history_of_message_dicts_becomes_messages() -> None:
    from wingman_actors.core import Message

    session = Session(Agent("a", provider=ScriptedProvider(["ok"])),
                      history=[{"role": "user", "content": [{"type": "text", "text": "earlier"}]}])  # type: ignore[list-item]
    assert session.history == [Message.user("earlier")]
    assert session.run("now").response == "ok"


@pytest.mark.parametrize("session_id", [3, b"abc"])
def test_an_id_that_is_not_a_str_is_refused(session_id: Any) -> None:
    with pytest.raises(TypeError, match=r"Session id must be a str"):
        Session(Agent("a"), id=session_id)


@pytest.mark.parametrize("how", ["run", "run_stream", "arun", "astream"])
def test_refused_metadata_leaves_the_session_free_for_the_next_message(how: str) -> None:
    session = _session()
    with pytest.raises(TypeError, match=r"metadata must be a dict"):
        if how == "run":
            session.run("hello", metadata=[1])  # type: ignore[arg-type]
        elif how == "run_stream":
            list(session.run_stream("hello", metadata=[1]))  # type: ignore[arg-type]
        else:

            async def main() -> None:
                if how == "arun":
                    await session.arun("hello", metadata=[1])  # type: ignore[arg-type]
                else:
                    async for _ in session.astream("hello", metadata=[1]):  # type: ignore[arg-type]
                        pass

            asyncio.run(main())

    assert session.run("hello", timeout=5).response == "ok"
    assert session.history[0].text == "hello"
