"""Choosing the provider of a run: flags, environment, sample replies; `providers`."""

from __future__ import annotations

import pytest

from wingman_actors._launcher.errors import UsageError
from wingman_actors._launcher.providers import (
    ProviderChoice,
    choose_provider,
    describe_choice,
    make_provider,
    parse_assignments,
)
from wingman_actors.cli import main


def test_provider_flag_wins_over_the_environment() -> None:
    env = {"WINGMAN_PROVIDER": "ollama", "WINGMAN_MODEL": "llama3.2", "ANTHROPIC_API_KEY": "sk-x"}
    choice = choose_provider("scripted", env=env)
    assert choice == ProviderChoice("scripted", {}, "--provider")


def test_model_and_options_become_provider_options() -> None:
    choice = choose_provider("openai", "gpt-4o-mini", ["temperature=0.2", "base_url=http://127.0.0.1:8000/v1"], env={})
    assert choice.options == {"temperature": 0.2, "base_url": "http://127.0.0.1:8000/v1", "model": "gpt-4o-mini"}


def test_option_values_are_json_when_they_parse_else_text() -> None:
    assert parse_assignments(["n=3", "ok=true", 'replies=["a"]', "name=plain text"], "--option") == {
        "n": 3, "ok": True, "replies": ["a"], "name": "plain text"}


def test_an_option_without_equals_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="write KEY=VALUE"):
        parse_assignments(["temperature"], "--option")


def test_wingman_provider_brings_wingman_model_and_base_url() -> None:
    env = {"WINGMAN_PROVIDER": "ollama", "WINGMAN_MODEL": "llama3.2", "WINGMAN_BASE_URL": "http://127.0.0.1:11434"}
    assert choose_provider(env=env) == ProviderChoice(
        "ollama", {"model": "llama3.2", "base_url": "http://127.0.0.1:11434"}, "WINGMAN_PROVIDER")


def test_flags_override_options_from_the_environment() -> None:
    env = {"WINGMAN_PROVIDER": "ollama", "WINGMAN_MODEL": "llama3.2"}
    assert choose_provider(model="qwen2.5", env=env).options == {"model": "qwen2.5"}


def test_wingman_provider_wins_over_an_anthropic_key() -> None:
    assert choose_provider(env={"WINGMAN_PROVIDER": "ollama", "ANTHROPIC_API_KEY": "sk-x"}).id == "ollama"


def test_an_anthropic_key_chooses_anthropic() -> None:
    assert choose_provider(env={"ANTHROPIC_API_KEY": "sk-x"}) == ProviderChoice("anthropic", {}, "ANTHROPIC_API_KEY")


def test_nothing_configured_chooses_no_real_provider() -> None:
    choice = choose_provider(env={"ANTHROPIC_API_KEY": "  "})
    assert choice.id is None and not choice.real


def test_model_with_nothing_chosen_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="none is chosen: pass --provider ID"):
        choose_provider(model="big", env={})


def test_the_anthropic_line_names_the_model_and_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-never-sent")
    choice = choose_provider()
    provider = make_provider(choice)  # builds the SDK client; no request is made
    line = describe_choice(choice, provider, samples=False)
    assert line.startswith("provider: anthropic (model claude-") and line.endswith("; from ANTHROPIC_API_KEY)")


def test_anthropic_without_a_key_is_a_usage_error_saying_how_to_set_one() -> None:
    with pytest.raises(UsageError, match=r"cannot use provider 'anthropic' .*ANTHROPIC_API_KEY"):
        make_provider(choose_provider("anthropic", env={}))


def test_bad_provider_options_are_a_usage_error_naming_them() -> None:
    with pytest.raises(UsageError, match=r"bad options for provider 'scripted'.*known options"):
        make_provider(choose_provider("scripted", options=["latency_s=-1", "colour=red"], env={}))


def test_providers_lists_every_provider_with_its_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    for pid in ("anthropic", "ollama", "openai", "scripted", "replay"):
        assert any(line.startswith(pid) for line in out.splitlines())
    assert "ANTHROPIC_API_KEY" in out and "OPENAI_API_KEY" in out


def test_providers_says_which_provider_run_would_use(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WINGMAN_PROVIDER", "ollama")
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    assert "2. WINGMAN_PROVIDER=ID" in out
    assert out.rstrip().endswith("Now it would use: ollama (from WINGMAN_PROVIDER)")
