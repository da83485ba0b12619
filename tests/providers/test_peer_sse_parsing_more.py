"""More of httpx-sse's tests (see test_peer_sse_parsing.py): empty streams, a server that
keeps the connection open after the end of its answer, named ``message`` events, an
Anthropic stream whose events carry no ``event:`` line, and ``data`` values with spaces."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.providers.test_peer_sse_parsing import (
    SSE,
    Reads,
    anthropic,
    anthropic_body,
    anthropic_events,
    anthropic_reads,
    openai,
    openai_body,
    openai_events,
    openai_reads,
)
from tests.providers.test_peer_wire_openai import streamed
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.errors import AgentError
from wingman_actors.providers._base import BaseProvider

__all__ = ["anthropic", "anthropic_reads", "openai", "openai_reads"]  # fixtures, shared with test_peer_sse_parsing.py


@pytest.mark.parametrize("body", [b"", b": only a comment\n\n", b"\n\n\n"], ids=["empty", "comment", "blank"])
def test_an_openai_stream_with_no_events_is_an_error_not_an_empty_answer(
    openai_reads: Reads, body: bytes
) -> None:
    """From florimondmanca/httpx-sse tests/test_decoders.py::test_iter_sse_unknown_field (a stream yielding no event)."""
    with pytest.raises(AgentError, match=r"ended before \[DONE\]"):
        openai_reads(body)


@pytest.mark.parametrize("body", [b"", b": only a comment\n\n"], ids=["empty", "comment"])
def test_an_anthropic_stream_with_no_events_is_an_error_not_an_empty_answer(
    anthropic_reads: Reads, body: bytes
) -> None:
    """From florimondmanca/httpx-sse tests/test_decoders.py::test_iter_sse_unknown_field (a stream yielding no event)."""
    with pytest.raises(AgentError):
        anthropic_reads(body)


def test_an_openai_answer_is_returned_at_done_though_the_server_keeps_the_connection_open(
    loopback: LoopbackServer, openai: Callable[[], BaseProvider], mode: str
) -> None:
    """From florimondmanca/httpx-sse tests/test_api.py (iterating ends with the events; here the body never ends):
    ``[DONE]`` ends the answer, not the server closing the connection."""
    loopback.queue(Reply(200, iter([openai_body(openai_events("kept ", "open"))]), SSE, hang=True))
    _, response = streamed(openai(), mode)
    assert response.text == "kept open"
    assert loopback.wait_closed(1, timeout=10)


def test_an_anthropic_answer_complete_at_message_stop_is_returned_though_the_server_keeps_the_body_open(
    loopback: LoopbackServer, anthropic: Callable[..., BaseProvider], mode: str
) -> None:
    """From florimondmanca/httpx-sse tests/test_api.py (iterating ends with the events; here the body never ends).
    The SDK reads the body to its end (so the connection is reused), which waits out the read timeout here;
    that wait's error is not the answer's: ``message_stop`` came, the answer is whole and returned."""
    loopback.queue(Reply(200, iter([anthropic_body(anthropic_events("kept ", "open"))]), SSE, hang=True))
    _, response = streamed(anthropic(timeout=0.5), mode)
    assert (response.text, response.stop_reason) == ("kept open", "end_turn")


def test_openai_chunks_in_events_named_message_are_read_like_unnamed_ones(openai_reads: Reads) -> None:
    """From florimondmanca/httpx-sse tests/test_decoders.py::test_iter_sse_event (``event:`` names the event;
    ``message`` is the default name)."""
    body = "".join(f"event: message\ndata: {e}\n\n" for e in openai_events("na", "med")) + "data: [DONE]\n\n"
    response = openai_reads(body.encode())
    assert response.text == "named"


def test_openai_data_with_several_leading_spaces_and_trailing_ones_is_still_json(openai_reads: Reads) -> None:
    """From florimondmanca/httpx-sse tests/test_decoders.py::test_iter_sse_whatwg_example2 (only the first space
    after the colon is dropped: ``data:  third event`` keeps one)."""
    body = "".join(f"data:   {e}   \n\n" for e in openai_events("sp", "aced")) + "data:  [DONE] \n\n"
    response = openai_reads(body.encode())
    assert response.text == "spaced"


def test_an_anthropic_stream_whose_events_have_no_event_line_is_an_error_naming_what_was_missing(
    anthropic_reads: Reads
) -> None:
    """From florimondmanca/httpx-sse tests/test_decoders.py::test_iter_sse_whatwg_example1 (an event with no
    ``event:`` line is a ``message``). Differs: the Anthropic SDK's decoder (used as it is) dispatches on the
    event's name, so a gateway that drops the names gives no answer; it is an error saying the stream
    ended before ``message_stop``, not an empty answer. Anthropic's API always names its events."""
    body = "".join(f"data: {json.dumps(data)}\n\n" for _, data in anthropic_events("no ", "names"))
    with pytest.raises(AgentError, match="before message_stop"):
        anthropic_reads(body.encode())
