"""Registers the built-in providers. Factories import their module lazily."""

from __future__ import annotations

from typing import Any

from ._base import Provider
from ._registry import ProviderMeta, register_provider


def _anthropic(options: dict[str, Any]) -> Provider:
    from ._anthropic import build_anthropic

    return build_anthropic(options)


def _ollama(options: dict[str, Any]) -> Provider:
    from ._ollama import build_ollama

    return build_ollama(options)


def _openai(options: dict[str, Any]) -> Provider:
    from ._openai import build_openai

    return build_openai(options)


def _scripted(options: dict[str, Any]) -> Provider:
    from ._scripted import build_scripted

    return build_scripted(options)


def _replay(options: dict[str, Any]) -> Provider:
    from ._replay import build_replay

    return build_replay(options)


for _meta in (
    ProviderMeta(
        "anthropic",
        "Anthropic",
        ("api_key",),
        _anthropic,
        "Claude models through the official SDK; api_key option or ANTHROPIC_API_KEY",
        ("ANTHROPIC_API_KEY",),
    ),
    ProviderMeta(
        "ollama",
        "Ollama",
        ("api_key",),
        _ollama,
        "a local Ollama server (/api/chat); model required; base_url default http://localhost:11434; "
        "api_key option or OLLAMA_API_KEY for ollama.com or a proxy (none needed locally)",
        ("OLLAMA_HOST", "OLLAMA_API_KEY"),
    ),
    ProviderMeta(
        "openai",
        "OpenAI-compatible",
        ("api_key",),
        _openai,
        "any /v1/chat/completions endpoint (OpenAI, Grok, vLLM, llama.cpp, LM Studio); "
        "model required; api_key option or OPENAI_API_KEY; base_url default https://api.openai.com/v1",
        ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    ),
    ProviderMeta(
        "scripted",
        "Scripted (offline)",
        (),
        _scripted,
        "canned replies for tests and offline runs: {'replies': [...], 'latency_s': 0.0}",
    ),
    ProviderMeta(
        "replay",
        "Replay cassette (offline)",
        (),
        _replay,
        "replays a JSONL cassette recorded with RecordingProvider: {'cassette': 'path.jsonl'}",
    ),
):
    register_provider(_meta, replace=True)
