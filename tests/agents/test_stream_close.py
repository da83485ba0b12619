"""A streamed run left before its end: ``close()`` (``aclose()`` for ``astream``), or the
stream's ``with`` block, ends the run there: the session is free for its next message at
once and the provider's request is closed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors import Agent, Session
from wingman_actors.core import StreamEventType
from wingman_actors.providers import Provider, new_provider
from wingman_actors.testing import ScriptedProvider


def _scripted() -> Session:
    return Session(Agent("a", provider=ScriptedProvider(["hello there"], cycle=True)))


@pytest.fixture
def trickling(loopback: LoopbackServer) -> Iterator[Provider]:
    """An OpenAI-compatible provider whose server sends one text delta, then holds the stream."""

    def reply(req: Request) -> Reply:
        chunk = {"id": "x", "object": "chat.completion.chunk", "model": "m",
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}]}
        held = Reply.sse([(None, chunk)])
        held.hang = True
        return held

    loopback.handler = reply
    provider = new_provider("openai", {"model": "m", "base_url": loopback.url, "max_retries": 0})
    yield provider
    provider.close()  # type: ignore[attr-defined]


def test_closing_a_stream_midway_frees_the_session_at_once() -> None:
    session = _scripted()
    stream = session.run_stream("hi")
    for _ in stream:
        break

    stream.close()

    assert session.run("again").response == "hello there"


def test_a_stream_used_as_a_context_manager_is_closed_when_its_block_ends() -> None:
    session = _scripted()
    events = iter(())
    with session.run_stream("hi") as stream:
        events = iter(stream)
        next(events)

    assert session.run("again").response == "hello there"


def test_closing_a_stream_that_was_never_iterated_leaves_the_session_free() -> None:
    session = _scripted()
    session.run_stream("hi").close()

    assert session.run("again").response == "hello there"


def test_closing_a_stream_midway_closes_the_providers_request(
    trickling: Provider, loopback: LoopbackServer
) -> None:
    session = Session(Agent("a", provider=trickling))
    stream = session.run_stream("hi")
    events = iter(stream)
    while next(events).type is not StreamEventType.TEXT_DELTA:
        pass

    stream.close()

    assert loopback.wait_closed(1, timeout=1.0)


def test_aclose_after_leaving_an_async_stream_frees_the_session_at_once() -> None:
    session = _scripted()

    async def main() -> str:
        stream = session.astream("hi")
        async for _ in stream:
            break
        await stream.aclose()
        return (await session.arun("again")).response

    assert asyncio.run(main()) == "hello there"


def test_an_async_stream_used_with_async_with_is_closed_when_its_block_ends() -> None:
    session = _scripted()

    async def main() -> str:
        async with session.astream("hi") as stream:
            async for _ in stream:
                break
        return (await session.arun("again")).response

    assert asyncio.run(main()) == "hello there"


def test_aclose_of_an_async_stream_never_iterated_leaves_the_session_free() -> None:
    session = _scripted()

    async def main() -> str:
        await session.astream("hi").aclose()
        return (await session.arun("again")).response

    assert asyncio.run(main()) == "hello there"


def test_aclose_midway_closes_the_providers_request(trickling: Provider, loopback: LoopbackServer) -> None:
    session = Session(Agent("a", provider=trickling))

    async def main() -> None:
        stream = session.astream("hi")
        async for event in stream:
            if event.type is StreamEventType.TEXT_DELTA:
                break
        await stream.aclose()

    asyncio.run(main())

    assert loopback.wait_closed(1, timeout=1.0)


def test_running_again_while_a_stream_is_open_says_to_close_it() -> None:
    session = _scripted()
    stream = session.run_stream("hi")
    events = iter(stream)
    next(events)

    with pytest.raises(RuntimeError, match=r"already running a message.*stream\.close\(\)"):
        session.run("again")
    stream.close()
