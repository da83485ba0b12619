"""The provider registry and the one retry policy every provider uses."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterator

import pytest

from wingman_actors._cancel import CancelToken, cancel_scope
from wingman_actors.core import InferenceRequest, InferenceResponse, Message, StreamEvent
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import (
    BaseProvider,
    ProviderMeta,
    ProviderOptions,
    RetryPolicy,
    ScriptedProvider,
    get_provider_meta,
    list_providers,
    new_provider,
    register_provider,
)
from wingman_actors.providers import _registry as registry_module
from wingman_actors.providers import _retry as retry_module
from wingman_actors.providers._base import ResponseBuilder


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a test register providers; the registry is restored afterwards."""
    list_providers()  # load the built-ins into the real registry first
    monkeypatch.setattr(registry_module, "_registry", dict(registry_module._registry))


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the retry policy's sleeps (outside a cancel scope) instead of sleeping."""
    recorded: list[float] = []
    monkeypatch.setattr(retry_module, "time", types.SimpleNamespace(sleep=recorded.append))
    return recorded


def _meta(id: str, reply: str = "x") -> ProviderMeta:
    return ProviderMeta(id, id.title(), (), lambda options: ScriptedProvider([reply]))


def _failing(*errors: BaseException, result: str = "ok") -> tuple[Callable[[], str], list[int]]:
    """A callable raising ``errors`` one per call, then returning ``result``; and its call count."""
    calls = [0]

    def fn() -> str:
        calls[0] += 1
        if calls[0] <= len(errors):
            raise errors[calls[0] - 1]
        return result

    return fn, calls


# --- registry -------------------------------------------------------------------------------


def test_the_builtin_providers_are_registered() -> None:
    ids = [m.id for m in list_providers()]

    assert {"anthropic", "ollama", "openai", "replay", "scripted"} <= set(ids)
    assert ids == sorted(ids)


def test_an_unknown_provider_id_lists_the_registered_ids() -> None:
    with pytest.raises(AgentError) as info:
        new_provider("nope")

    assert info.value.kind is ErrorKind.INVALID
    assert "unknown provider 'nope'" in info.value.message
    assert "scripted" in info.value.message and "replay" in info.value.message


def test_unknown_option_keys_are_named_with_the_known_ones() -> None:
    with pytest.raises(AgentError) as info:
        new_provider("scripted", {"replys": ["a"]})

    assert info.value.kind is ErrorKind.INVALID
    assert "replys" in info.value.message
    assert "known options:" in info.value.message and "replies" in info.value.message


def test_an_option_of_the_wrong_type_is_named() -> None:
    with pytest.raises(AgentError, match="max_tokens"):
        new_provider("scripted", {"max_tokens": 0})


def test_options_that_are_not_a_dict_are_refused() -> None:
    with pytest.raises(AgentError, match="must be a dict, got list"):
        new_provider("scripted", ["a"])  # type: ignore[arg-type]


def test_options_parse_into_the_shared_model() -> None:
    opts = ProviderOptions.parse("x", {"model": "m", "max_retries": 5})

    assert (opts.model, opts.max_retries, opts.max_tokens) == ("m", 5, 4096)


@pytest.mark.usefixtures("scratch_registry")
def test_a_registered_provider_is_built_by_new_provider() -> None:
    register_provider(_meta("custom_one", reply="custom"))

    provider = new_provider("custom_one")

    assert provider.run_inference(InferenceRequest(messages=[Message.user("hi")])).text == "custom"


@pytest.mark.usefixtures("scratch_registry")
def test_registering_an_existing_id_is_refused() -> None:
    register_provider(_meta("custom_two"))

    with pytest.raises(ValueError, match="already registered; pass replace=True"):
        register_provider(_meta("custom_two"))


@pytest.mark.usefixtures("scratch_registry")
def test_registering_an_existing_id_with_replace_overrides_it() -> None:
    register_provider(_meta("custom_three", reply="old"))
    new = register_provider(_meta("custom_three", reply="new"), replace=True)

    assert get_provider_meta("custom_three") is new


@pytest.mark.usefixtures("scratch_registry")
def test_a_provider_id_must_be_a_name() -> None:
    with pytest.raises(ValueError, match="must be a non-empty name"):
        register_provider(_meta("has space"))


_FIRST_CALLS = textwrap.dedent("""
    import threading
    from wingman_actors.providers import new_provider

    start = threading.Barrier(8)
    errors = []

    def build():
        start.wait()
        try:
            new_provider("scripted", {"replies": ["hi"]})
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(len(errors), errors[:1])
""")


@pytest.mark.slow
@pytest.mark.timeout(150)  # 20 interpreters start on a shared machine
def test_the_first_calls_in_a_fresh_process_from_many_threads_all_find_the_builtins() -> None:
    # The built-ins load on first use; 8 threads race to it in each of 20 fresh processes.
    procs = [
        subprocess.Popen([sys.executable, "-c", _FIRST_CALLS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(20)
    ]
    outcomes = [p.communicate(timeout=50) for p in procs]
    assert [p.returncode for p in procs] == [0] * 20, [err for _, err in outcomes if err][:1]
    assert [out.strip() for out, _ in outcomes] == ["0 []"] * 20


def test_scratch_registrations_do_not_leak_into_the_real_registry() -> None:
    assert not any(m.id.startswith("custom_") for m in list_providers())


# --- retry policy ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        AgentError("slow down", kind=ErrorKind.RATE_LIMIT, status=429),
        AgentError("reset", kind=ErrorKind.NETWORK),
        AgentError("read timeout", kind=ErrorKind.TIMEOUT),
        AgentError("overloaded", kind=ErrorKind.AGENT, status=529),
        AgentError("server error", kind=ErrorKind.AGENT, status=500),
    ],
    ids=["rate_limit", "network", "timeout", "529", "500"],
)
def test_retryable_errors_are_retried_until_success(error: AgentError, waits: list[float]) -> None:
    fn, calls = _failing(error, error)

    assert RetryPolicy(max_retries=2).call(fn) == "ok"
    assert calls[0] == 3
    assert len(waits) == 2


@pytest.mark.parametrize(
    "error",
    [
        AgentError("bad request", kind=ErrorKind.INVALID, status=400),
        AgentError("unauthorised", kind=ErrorKind.AGENT, status=401),
        AgentError("not found", kind=ErrorKind.AGENT, status=404),
        AgentError("cancelled", kind=ErrorKind.CANCELLED),
    ],
    ids=["invalid", "401", "404", "cancelled"],
)
def test_non_retryable_errors_are_raised_at_once(error: AgentError, waits: list[float]) -> None:
    fn, calls = _failing(error)

    with pytest.raises(AgentError) as info:
        RetryPolicy(max_retries=5).call(fn)

    assert info.value is error
    assert calls[0] == 1
    assert waits == []


def test_errors_other_than_agent_errors_are_not_retried(waits: list[float]) -> None:
    fn, calls = _failing(ValueError("bug"))

    with pytest.raises(ValueError):
        RetryPolicy(max_retries=5).call(fn)

    assert calls[0] == 1


def test_an_async_call_awaits_the_function_with_the_given_arguments_on_each_attempt() -> None:
    seen: list[tuple[int, str]] = []

    async def attempt(number: int, word: str) -> str:
        seen.append((number, word))
        if len(seen) == 1:
            raise AgentError("reset", kind=ErrorKind.NETWORK)
        return f"{word} {number}"

    policy = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.001)

    assert asyncio.run(policy.acall(attempt, 7, "try")) == "try 7"
    assert seen == [(7, "try"), (7, "try")]


def test_retry_after_is_honoured(waits: list[float]) -> None:
    fn, _ = _failing(AgentError("slow down", kind=ErrorKind.RATE_LIMIT, retry_after=0.25))

    RetryPolicy(max_retries=1).call(fn)

    assert waits == [0.25]


def test_retry_after_is_capped_at_max_retry_after(waits: list[float]) -> None:
    fn, _ = _failing(AgentError("slow down", kind=ErrorKind.RATE_LIMIT, retry_after=3600))

    RetryPolicy(max_retries=1, max_retry_after=2.0).call(fn)

    assert waits == [2.0]


def test_backoff_doubles_with_jitter_up_to_max_delay() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=3.0)
    error = AgentError("reset", kind=ErrorKind.NETWORK)

    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 3.0), (6, 3.0)]:
        delays = [policy.delay(attempt, error) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays), (attempt, delays)


def test_giving_up_after_max_retries_raises_the_last_error(waits: list[float]) -> None:
    errors = [AgentError(f"fail {i}", kind=ErrorKind.NETWORK) for i in range(4)]
    fn, calls = _failing(*errors)

    with pytest.raises(AgentError) as info:
        RetryPolicy(max_retries=2).call(fn)

    assert info.value is errors[2]
    assert calls[0] == 3


def test_zero_max_retries_never_retries(waits: list[float]) -> None:
    fn, calls = _failing(AgentError("reset", kind=ErrorKind.NETWORK))

    with pytest.raises(AgentError, match="reset"):
        RetryPolicy(max_retries=0).call(fn)

    assert calls[0] == 1


def test_retry_waits_through_the_current_cancel_token(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(CancelToken, "sleep", lambda self, seconds: slept.append(seconds))
    fn, _ = _failing(AgentError("slow down", kind=ErrorKind.RATE_LIMIT, retry_after=0.5))

    with cancel_scope(CancelToken()):
        RetryPolicy(max_retries=1).call(fn)

    assert slept == [0.5]


def test_a_cancelled_token_stops_retrying_with_kind_cancelled() -> None:
    token = CancelToken()
    calls = [0]

    def fn() -> str:
        calls[0] += 1
        token.cancel("user pressed stop")
        raise AgentError("slow down", kind=ErrorKind.RATE_LIMIT, retry_after=30)

    with cancel_scope(token), pytest.raises(AgentError) as info:
        RetryPolicy(max_retries=5).call(fn)

    assert info.value.kind is ErrorKind.CANCELLED
    assert "user pressed stop" in info.value.message
    assert calls[0] == 1


def test_a_token_cancelled_before_the_call_prevents_it() -> None:
    token = CancelToken()
    token.cancel()
    fn, calls = _failing()

    with cancel_scope(token), pytest.raises(AgentError) as info:
        RetryPolicy().call(fn)

    assert info.value.kind is ErrorKind.CANCELLED
    assert calls[0] == 0


def test_a_deadline_passing_during_backoff_stops_retrying_with_kind_timeout() -> None:
    fn, calls = _failing(*[AgentError("slow down", kind=ErrorKind.RATE_LIMIT, retry_after=30)] * 5)

    with cancel_scope(CancelToken(timeout=0.05)), pytest.raises(AgentError) as info:
        RetryPolicy(max_retries=5).call(fn)

    assert info.value.kind is ErrorKind.TIMEOUT
    assert calls[0] == 1


# --- BaseProvider's use of the policy -------------------------------------------------------


class _FlakyStream(BaseProvider):
    """Fails ``fail_before`` times before its first event, then optionally after one event."""

    id = "flaky"

    def __init__(self, fail_before: int, fail_after_first: bool = False) -> None:
        super().__init__(ProviderOptions(max_retries=3))
        self.fail_before = fail_before
        self.fail_after_first = fail_after_first
        self.attempts = 0

    def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        self.attempts += 1
        if self.attempts <= self.fail_before:
            raise AgentError("reset", kind=ErrorKind.NETWORK)
        b = ResponseBuilder(self.id)
        yield b.message_start()
        if self.fail_after_first:
            raise AgentError("reset mid-stream", kind=ErrorKind.NETWORK)
        yield b.start_text(0)
        yield b.text(0, "hello")
        yield from b.finish()


def test_a_stream_failing_before_its_first_event_is_retried(waits: list[float]) -> None:
    provider = _FlakyStream(fail_before=2)

    response = provider.stream_inference(InferenceRequest(messages=[Message.user("hi")])).consume()

    assert response == InferenceResponse.of_text("hello")
    assert provider.attempts == 3


def test_a_stream_failing_after_its_first_event_is_not_retried(waits: list[float]) -> None:
    provider = _FlakyStream(fail_before=0, fail_after_first=True)

    with pytest.raises(AgentError, match="reset mid-stream"):
        provider.stream_inference(InferenceRequest(messages=[Message.user("hi")])).consume()

    assert provider.attempts == 1


def test_a_blocking_call_is_retried(waits: list[float]) -> None:
    provider = _FlakyStream(fail_before=1)

    assert provider.run_inference(InferenceRequest(messages=[Message.user("hi")])).text == "hello"
    assert provider.attempts == 2
