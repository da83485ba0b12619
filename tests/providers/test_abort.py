"""Provider requests under a run's token: the provider's timeout is cut to the run's
remaining time, a cancel closes the request, and a cancel after a request has ended
closes nothing later."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply
from wingman_actors._cancel import CancelToken, cancel_scope
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._openai import build_openai


def ask() -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("hi")])


def completion(text: str) -> Reply:
    return Reply.json({"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                    "finish_reason": "stop"}]})


def test_a_providers_own_timeout_is_cut_to_the_runs_remaining_time(loopback: LoopbackServer) -> None:
    loopback.handler = lambda _req: Reply.never()
    provider = build_openai({"model": "m", "base_url": loopback.url, "api_key": "k", "timeout": 600})
    try:
        t0 = time.perf_counter()
        with cancel_scope(CancelToken(timeout=0.3)), pytest.raises(AgentError) as info:
            provider.run_inference(ask())
        # the provider's own 600 s, cut to the run's 0.3 s (with room for a loaded CI machine,
        # where it took 2 s)
        assert time.perf_counter() - t0 < 3.0
        assert info.value.kind is ErrorKind.TIMEOUT
        assert "it ran" in info.value.message  # the run's error, not the provider's
    finally:
        provider.close()


def test_a_cancel_closes_the_request_of_a_direct_provider_call(loopback: LoopbackServer) -> None:
    arrived = threading.Event()

    def hang(_req: Any) -> Reply:
        arrived.set()
        return Reply.never()

    loopback.handler = hang
    provider = build_openai({"model": "m", "base_url": loopback.url, "api_key": "k"})
    token = CancelToken()
    # cancelled once the server holds the request (a fixed delay raced a loaded machine's connect)
    timer = threading.Thread(target=lambda: arrived.wait(10) and token.cancel())
    timer.start()
    try:
        with cancel_scope(token), pytest.raises(AgentError) as info:
            provider.run_inference(ask())
        assert info.value.kind is ErrorKind.CANCELLED
        assert loopback.wait_closed(1, timeout=5)
    finally:
        timer.join()
        provider.close()


def test_a_cancel_after_the_request_ended_closes_nothing_later(loopback: LoopbackServer) -> None:
    loopback.queue(completion("one"), completion("two"))
    provider = build_openai({"model": "m", "base_url": loopback.url, "api_key": "k"})
    try:
        first = CancelToken()
        with cancel_scope(first):
            assert provider.run_inference(ask()).text == "one"
        first.cancel()  # that run ends later: its cancel must not reach the next request
        assert provider.run_inference(ask()).text == "two"
    finally:
        provider.close()


def test_sequential_requests_reuse_one_keep_alive_connection(loopback: LoopbackServer) -> None:
    loopback.queue(completion("one"), completion("two"), completion("three"))
    provider = build_openai({"model": "m", "base_url": loopback.url, "api_key": "k"})
    try:
        for _ in range(3):
            with cancel_scope(CancelToken()):
                provider.run_inference(ask())
    finally:
        provider.close()
    assert len({r.peer for r in loopback.requests}) == 1
