"""LiteLLM's own tests of its exception mapping and retries, ported to our three HTTP
providers (OpenAI-compatible, Ollama, Anthropic) against loopback servers speaking each
one's error format: every status code's kind and retryability, the API's message and
the fix in ours, context-window and content-policy errors, retry-after headers, timeouts
and refused connections, and retries that end in an answer. What is asserted is what a
user sees: the AgentError (kind, status, provider, retry_after, message) or the answer."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_anthropic import error_reply, message_json
from tests.providers.test_ollama import chat_reply
from tests.providers.test_openai import completion
from tests.support.loopback import LoopbackServer, Reply, free_port
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._base import BaseProvider

MAPPING = "BerriAI/litellm tests/test_litellm/litellm_core_utils/test_exception_mapping_utils.py"
EXCEPTIONS = "BerriAI/litellm tests/local_testing/test_exceptions.py"
RETRIES = "BerriAI/litellm tests/local_testing/test_completion_with_retries.py"

PROVIDERS = ["openai", "ollama", "anthropic"]
REQUEST = InferenceRequest(messages=[Message.user("Hi")])


def options(provider: str, url: str) -> dict[str, Any]:
    if provider == "openai":
        return {"model": "gpt-4o", "base_url": f"{url}/v1", "api_key": "sk-test"}
    if provider == "ollama":
        return {"model": "llama3.2", "base_url": url}
    return {"model": "claude-test-model", "base_url": url, "api_key": "test-key"}


@pytest.fixture
def make(loopback: LoopbackServer, build_provider: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    def build(provider: str, max_retries: int = 0, url: str | None = None, **extra: Any) -> BaseProvider:
        return build_provider(provider, {**options(provider, url or loopback.url), **extra}, max_retries)

    return build


def failure(provider: str, status: int, message: str, headers: dict[str, str] | None = None,
            code: str | None = None) -> Reply:
    """An error answer in the provider's own shape."""
    if provider == "anthropic":
        kinds = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 408: "timeout_error", 413: "request_too_large", 429: "rate_limit_error",
                 529: "overloaded_error"}
        return error_reply(status, kinds.get(status, "api_error"), message, headers)
    if provider == "ollama":
        return Reply.json({"error": message}, status=status, headers=headers)
    return Reply.json({"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}},
                      status=status, headers=headers)


def success(provider: str) -> Reply:
    if provider == "anthropic":
        return Reply.json(message_json([{"type": "text", "text": "Done."}]))
    if provider == "ollama":
        return Reply.json(chat_reply("Done."))
    return Reply.json(completion("Done."))


def failed(provider: BaseProvider) -> AgentError:
    with pytest.raises(AgentError) as caught:
        provider.run_inference(REQUEST)
    return caught.value


# --- kinds and retryability by status ------------------------------------------------------------

KINDS = [
    (400, ErrorKind.INVALID), (401, ErrorKind.INVALID), (403, ErrorKind.INVALID), (404, ErrorKind.INVALID),
    (408, ErrorKind.TIMEOUT), (409, ErrorKind.INVALID), (422, ErrorKind.INVALID), (429, ErrorKind.RATE_LIMIT),
    (500, ErrorKind.AGENT), (502, ErrorKind.AGENT), (503, ErrorKind.AGENT), (504, ErrorKind.AGENT),
]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("status", "kind"), KINDS)
def test_each_error_status_is_an_agent_error_of_its_kind_with_the_apis_message(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str, status: int, kind: ErrorKind
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_exception_mapping_utils.py::test_oci_exception_mapping.

    LiteLLM has a class per status (BadRequestError, AuthenticationError, NotFoundError,
    RateLimitError, Timeout...); we have one AgentError whose ``kind`` sorts them and
    whose ``status`` keeps the code. LiteLLM maps 504 to Timeout; ours is ``agent``
    (retried all the same)."""
    loopback.queue(failure(provider, status, f"the server says {status}"))
    error = failed(make(provider))
    assert (error.kind, error.status, error.provider) == (kind, status, provider)
    assert f"the server says {status}" in str(error)
    assert f"HTTP {status}" in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_names_the_option_to_set(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str, status: int
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py::test_completion_azure_exception (a bad key is an AuthenticationError)."""
    loopback.queue(failure(provider, status, "Incorrect API key provided"))
    assert "api_key" in str(failed(make(provider)))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_missing_model_names_the_model_and_base_url_to_check(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py (NotFoundError for a model the server does not have)."""
    loopback.queue(failure(provider, 404, "model 'nope' not found"))
    message = str(failed(make(provider)))
    assert "model 'nope' not found" in message and "base_url" in message


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_a_retryable_status_is_retried_and_the_answer_returned(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str, status: int
) -> None:
    """From BerriAI/litellm tests/local_testing/test_completion_with_retries.py::test_completion_with_num_retries."""
    loopback.queue(failure(provider, status, "try again"), success(provider))
    assert make(provider, max_retries=1).run_inference(REQUEST).text == "Done."
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_request_error_is_sent_once_whatever_the_retries(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str, status: int
) -> None:
    """From BerriAI/litellm tests/local_testing/test_completion_with_retries.py (num_retries does not retry a BadRequestError)."""
    loopback.queue(failure(provider, status, "no"), success(provider))
    error = failed(make(provider, max_retries=3))
    assert not error.kind.retryable
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retries_spent_raise_the_last_error_after_one_plus_max_retries_requests(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_completion_with_retries.py (the error after num_retries is the provider's)."""
    loopback.handler = lambda _: failure(provider, 503, "still down")
    error = failed(make(provider, max_retries=2))
    assert (error.kind, error.status) == (ErrorKind.AGENT, 503)
    assert "still down" in str(error)
    assert len(loopback.requests) == 3


# --- context window and content policy -------------------------------------------------------------

OVERFLOWS = [
    ("openai", "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."),
    ("openai", "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens."),
    ("openai", "Your prompt is longer than the model's context length of 2048."),
    ("ollama", "The input exceeds the model's maximum context limit of 8192 tokens."),
    ("anthropic", "prompt is too long: 210000 tokens > 200000 maximum"),
]


@pytest.mark.parametrize(("provider", "message"), OVERFLOWS)
def test_a_context_window_overflow_is_invalid_and_names_context_budget_as_the_fix(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str, message: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_exception_mapping_utils.py::test_is_error_str_context_window_exceeded.

    LiteLLM raises ContextWindowExceededError; ours is ``invalid`` (never retried: the same
    request overflows again) with the server's words and the fix. Before the fix the
    message had only the server's words."""
    loopback.queue(failure(provider, 400, message, code="context_length_exceeded"), success(provider))
    error = failed(make(provider, max_retries=2))
    assert error.kind is ErrorKind.INVALID
    assert message in str(error) and "context_budget" in str(error)
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("message", ["A generic API error occurred.", "Invalid API Key provided.",
                                     "The context is large, but acceptable."])
def test_other_bad_requests_do_not_mention_the_context_window(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], message: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_exception_mapping_utils.py::test_is_error_str_context_window_exceeded (the negative cases)."""
    loopback.queue(failure("openai", 400, message))
    assert "context_budget" not in str(failed(make("openai")))


def test_a_rate_limit_that_mentions_tokens_is_still_a_rate_limit_without_the_context_hint(
    loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_exception_mapping_utils.py::test_is_error_str_rate_limit_detects_true_rate_limit."""
    loopback.queue(failure("openai", 429, "Rate limit reached: tokens per min (TPM): Limit 30000, context length of request 9000"))
    error = failed(make("openai"))
    assert error.kind is ErrorKind.RATE_LIMIT and "context_budget" not in str(error)


@pytest.mark.parametrize("message", [
    "Your request was rejected as a result of our safety system. content_policy_violation",
    "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
])
def test_a_content_policy_refusal_is_invalid_with_the_apis_message_and_not_retried(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], message: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_exception_mapping_utils.py::test_is_azure_content_policy_violation_error_with_policy_violation_text.

    LiteLLM raises ContentPolicyViolationError; ours is an ``invalid`` AgentError with the
    server's message (the same prompt would be refused again)."""
    loopback.queue(failure("openai", 400, message, code="content_filter"), success("openai"))
    error = failed(make("openai", max_retries=2))
    assert error.kind is ErrorKind.INVALID and message in str(error)
    assert len(loopback.requests) == 1


# --- retry-after, timeouts, connections -------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_retry_after_http_date_is_read_as_seconds_from_now(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py (retry-after on a RateLimitError, here as an HTTP date)."""
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    loopback.queue(failure(provider, 429, "slow down", headers={"retry-after": when}))
    error = failed(make(provider))
    assert error.retry_after is not None and 20 <= error.retry_after <= 31


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_retry_after_that_is_not_a_number_or_date_is_ignored(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py (a malformed retry-after header falls back to backoff)."""
    loopback.queue(failure(provider, 429, "slow down", headers={"retry-after": "soon"}), success(provider))
    error = failed(make(provider))
    assert (error.kind, error.retry_after) == (ErrorKind.RATE_LIMIT, None)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_request_that_times_out_is_retried_and_the_second_answer_returned(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_completion_with_retries.py (a Timeout is retried)."""
    loopback.queue(Reply.never(), success(provider))
    assert make(provider, max_retries=1, timeout=0.5).run_inference(REQUEST).text == "Done."
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeouts_that_outlast_the_retries_are_a_timeout_naming_the_option(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py::test_completion_openai_timeout (litellm.Timeout)."""
    loopback.handler = lambda _: Reply.never()
    error = failed(make(provider, max_retries=1, timeout=0.3))
    assert error.kind is ErrorKind.TIMEOUT and "timeout" in str(error)
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_connection_is_a_network_error_naming_the_address_after_the_retries(
    make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py (APIConnectionError for a server that is not there)."""
    port = free_port()
    error = failed(make(provider, max_retries=1, url=f"http://127.0.0.1:{port}"))
    assert error.kind is ErrorKind.NETWORK and error.kind.retryable
    assert str(port) in str(error)


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_gateways_html_error_page_is_kept_as_the_message(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py (a 502 from a proxy in front of the model server)."""
    loopback.queue(Reply(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", {"content-type": "text/html"}))
    error = failed(make(provider))
    assert (error.kind, error.status) == (ErrorKind.AGENT, 502) and "502 Bad Gateway" in str(error)


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_an_error_status_with_an_empty_body_says_the_reason_phrase(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], provider: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py (a 503 with no body is a ServiceUnavailableError)."""
    loopback.queue(Reply(503, b""))
    assert "Service Unavailable" in str(failed(make(provider)))
