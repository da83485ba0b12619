"""The ``base_url`` option of the HTTP providers: a URL they can send to, checked when the
provider is made (not found out at every request as a network error that is retried)."""

from __future__ import annotations

import pytest

from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider

REMOTE = ["openai", "ollama", "anthropic"]


def _options(**options: str) -> dict[str, str]:
    return {"model": "m", "api_key": "k", **options}


@pytest.mark.parametrize("provider", REMOTE)
@pytest.mark.parametrize("url", ["localhost:11434", "127.0.0.1:8000/v1", "ftp://example.com", "not a url", "http://"])
def test_a_base_url_that_is_not_an_http_url_is_refused_naming_it_and_the_fix(provider: str, url: str) -> None:
    with pytest.raises(AgentError, match=r"base_url .* is not an http:// or https:// URL.*e\.g\. 'http://") as info:
        new_provider(provider, _options(base_url=url))

    assert info.value.kind is ErrorKind.INVALID
    assert repr(url) in str(info.value)


@pytest.mark.parametrize("provider", REMOTE)
@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1", "https://api.example.com", "HTTP://LOCALHOST:11434/"])
def test_an_http_or_https_base_url_is_taken(provider: str, url: str) -> None:
    made = new_provider(provider, _options(base_url=url))
    made.close()  # type: ignore[attr-defined]
