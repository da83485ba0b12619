"""A blocking run holds its time limit and its cancel with a provider of one's own that never
looks at the run's cancel token (found porting Langroid: ``task.kill()`` and a task's
``timeout`` end a run whose model call hangs). Such a provider's call is made on a thread of
its own and abandoned when the run stops first, as a stuck tool call is: the run returns
within its limit, the late answer is dropped, and the thread ends when the call does (the
suite's leak check sees it end once the test lets the provider go)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.peers import until
from wingman_actors import Agent, Fleet, Session, Task
from wingman_actors.core import InferenceRequest, InferenceResponse, StreamEvent, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import InferenceStream
from wingman_actors.testing import ScriptedProvider

LIMIT = 0.3
MARGIN = 1.5  # generous: the machine is shared; the provider itself would hold the run for 10 s


class Stubborn:
    """A provider of one's own that ignores the cancel token: each call waits for ``release``
    (at most 10 s), then answers with its next reply."""

    id = "stubborn"
    model = "stubborn-1"

    def __init__(self, release: threading.Event, replies: list[str], *, blocked: int = 1) -> None:
        self.release = release
        self.replies = list(replies)
        self.blocked = blocked  # how many of the first calls wait for the release
        self.entered = threading.Event()
        self.calls = 0
        self.returned: list[str] = []

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        self.calls += 1
        if self.calls <= self.blocked:
            self.entered.set()
            self.release.wait(10)
        text = self.replies.pop(0)
        self.returned.append(text)
        return InferenceResponse.of_text(text)

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        def events() -> Iterator[StreamEvent]:
            response = self.run_inference(request)
            yield StreamEvent(type=StreamEventType.TEXT_DELTA, text=response.text)
            yield StreamEvent(type=StreamEventType.MESSAGE_STOP, response=response)

        return InferenceStream(events())


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: the stubborn provider returns then, so its thread ends."""
    event = threading.Event()
    yield event
    event.set()


def _cancel_once_entered(session: Session, provider: Stubborn) -> threading.Thread:
    def cancel() -> None:
        if provider.entered.wait(5):
            session.cancel("user pressed stop")

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


def test_a_run_whose_own_provider_ignores_the_token_times_out_within_its_limit(release: threading.Event) -> None:
    """From langroid tests/main/test_task.py::test_task_kill (a stuck task is stopped); here by
    ``Session.run(timeout=)``."""
    provider = Stubborn(release, ["late"])
    session = Session(Agent("a", provider=provider))
    t0 = time.monotonic()
    with pytest.raises(AgentError) as caught:
        session.run("hi", timeout=LIMIT)
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - t0 < LIMIT + MARGIN


@pytest.mark.parametrize("driver", ["run", "run_stream"])
def test_cancel_stops_a_blocking_run_whose_own_provider_ignores_the_token(release: threading.Event, driver: str) -> None:
    """From langroid tests/main/test_task.py::test_task_kill (``task.kill()`` from another thread
    ends the run, which says it was killed)."""
    provider = Stubborn(release, ["late"])
    session = Session(Agent("a", provider=provider))
    canceller = _cancel_once_entered(session, provider)
    try:
        with pytest.raises(AgentError, match="user pressed stop") as caught:
            if driver == "run":
                session.run("hi")
            else:
                list(session.run_stream("hi"))
    finally:
        canceller.join()
    assert caught.value.kind is ErrorKind.CANCELLED
    assert not release.is_set() and provider.returned == []  # it returned while the provider still waited


def test_the_abandoned_calls_late_answer_is_dropped_and_the_session_answers_the_next_message(
    release: threading.Event,
) -> None:
    """From langroid tests/main/test_task.py::test_task_kill (the killed task runs again)."""
    provider = Stubborn(release, ["late", "fresh"])
    session = Session(Agent("a", provider=provider))
    with pytest.raises(AgentError):
        session.run("hi", timeout=LIMIT)
    release.set()  # the stuck call now returns "late": nobody waits for it any more
    assert until(lambda: provider.returned == ["late"])
    result = session.run("again")
    assert result.response == "fresh"
    assert all("late" not in m.text for m in session.history)


def test_a_fleet_task_whose_own_provider_hangs_is_cancelled_with_the_fleet(release: threading.Event) -> None:
    """From langroid tests/main/test_batch_cancellation.py (cancelling a batch ends its running
    tasks), with a model call that never heeds the cancel."""
    provider = Stubborn(release, ["late"])
    fleet = Fleet(Agent("a", provider=provider), [Task("hi")])
    canceller = threading.Thread(target=lambda: provider.entered.wait(5) and fleet.cancel())
    canceller.start()
    t0 = time.monotonic()
    try:
        results = fleet.run()
    finally:
        canceller.join()
    assert time.monotonic() - t0 < 5  # well before the provider's own 10 s
    assert isinstance(results[0].error, AgentError) and results[0].error.kind is ErrorKind.CANCELLED


class OwnHttp:
    """A provider of one's own over HTTP with its own client and no idea of the run's token:
    a request to a server that never answers waits for the client's 30 s timeout."""

    id = "own-http"
    model = "own"

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=30)

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        reply: Any = self.client.post("/v1/answer", json={"q": request.messages[-1].text}).json()
        return InferenceResponse.of_text(reply["text"])


def test_a_run_over_a_hanging_http_provider_of_ones_own_returns_at_its_limit(loopback: LoopbackServer) -> None:
    """From langroid tests/main/test_task.py::test_task_kill, the model call hanging on the wire
    (a loopback server that reads the request and never answers)."""
    loopback.queue(Reply.never())
    provider = OwnHttp(loopback.url)
    try:
        t0 = time.monotonic()
        with pytest.raises(AgentError) as caught:
            Session(Agent("a", provider=provider)).run("hi", timeout=LIMIT)
        assert caught.value.kind is ErrorKind.TIMEOUT
        assert time.monotonic() - t0 < LIMIT + MARGIN
    finally:
        provider.client.close()  # (the abandoned request ends when the server stops at teardown)


def test_a_provider_of_ones_own_that_answers_still_answers_and_its_errors_still_reach_the_caller() -> None:
    """The thread changes nothing for a provider that answers: its answer, and its error."""

    class Answers:
        id = "answers"
        model = "m"

        def __init__(self) -> None:
            self.calls = 0

        def run_inference(self, request: InferenceRequest) -> InferenceResponse:
            self.calls += 1
            if self.calls == 2:
                raise AgentError("upstream said no", kind=ErrorKind.AGENT)
            return InferenceResponse.of_text(f"answer {self.calls}")

    session = Session(Agent("a", provider=Answers()))
    assert session.run("one").response == "answer 1"
    with pytest.raises(AgentError, match="upstream said no") as caught:
        session.run("two")
    assert caught.value.kind is ErrorKind.AGENT


def test_the_built_in_providers_are_called_on_the_sessions_own_thread_and_ones_own_on_another() -> None:
    """The cost stays off the built-in providers' path (they close their request on a cancel):
    no thread per call for them; a provider of one's own runs on a thread of its own, as
    docs/providers-and-errors.md says."""
    seen: list[threading.Thread] = []

    def reply(request: InferenceRequest) -> InferenceResponse:
        seen.append(threading.current_thread())
        return InferenceResponse.of_text("ok")

    class Own:
        id = "own"
        model = "m"

        def run_inference(self, request: InferenceRequest) -> InferenceResponse:
            return reply(request)

    Session(Agent("a", provider=ScriptedProvider([reply]))).run("hi")
    Session(Agent("b", provider=Own())).run("hi")
    assert seen[0] is threading.current_thread()
    assert seen[1] is not threading.current_thread()
