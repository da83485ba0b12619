"""Which provider a launched run uses, and why.

The order: ``--provider ID`` (with ``--model`` and ``--option KEY=VALUE``), else the
environment (``WINGMAN_PROVIDER``, with ``WINGMAN_MODEL`` and ``WINGMAN_BASE_URL``; else
``ANTHROPIC_API_KEY`` → ``anthropic``), else the formation's bundled offline sample
replies. ``sample`` names those sample replies explicitly (``--provider sample``).

Example:
    >>> choose_provider("scripted", options=["replies=[\\"hi\\"]"], env={}).options
    {'replies': ['hi']}
    >>> choose_provider(env={"ANTHROPIC_API_KEY": "sk-..."}).id
    'anthropic'
    >>> choose_provider(env={}).id is None
    True
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentError
from ..providers import list_providers, new_provider
from ..providers._base import Provider
from .errors import UsageError

__all__ = [
    "SAMPLE",
    "ProviderChoice",
    "choose_provider",
    "command_line_hint",
    "describe_choice",
    "make_provider",
    "parse_assignments",
    "providers_text",
]

SAMPLE = "sample"
"""The launcher's name for a formation's offline sample replies (not a registry id)."""

SAMPLE_HINT = "offline; set ANTHROPIC_API_KEY or pass --provider to use a real model"


@dataclass(frozen=True)
class ProviderChoice:
    """The provider chosen for a run.

    Attributes:
        id: a registry id, :data:`SAMPLE`, or None when nothing was chosen (the run then
            uses the formation's sample replies, or its agents' own providers).
        options: the options for :func:`~wingman_actors.providers.new_provider`.
        source: what chose it: ``"--provider"``, ``"WINGMAN_PROVIDER"``,
            ``"ANTHROPIC_API_KEY"``, or ``""`` when nothing did.
    """

    id: str | None
    options: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def real(self) -> bool:
        """Whether a real (registry) provider was chosen."""
        return self.id is not None and self.id != SAMPLE


def parse_assignments(items: Iterable[str], flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` strings into a dict; values are JSON when they parse as JSON
    (``3``, ``0.2``, ``true``, ``["a", "b"]``), else the text as given. A bad item's error
    shows the form with an example of what ``flag`` takes (``--param`` takes options of the
    formation's ``build()``, ``--option`` provider options).

    Raises:
        UsageError: an item has no ``=`` or an empty key.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            form = ("NAME=VALUE, NAME an option of the formation's build(), e.g. --param size=3"
                    if flag == "--param" else f"KEY=VALUE, e.g. {flag} temperature=0.2")
            raise UsageError(f"{flag} {item.strip()!r}: write {form}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def choose_provider(
    provider: str | None = None,
    model: str | None = None,
    options: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> ProviderChoice:
    """Choose the provider of a run from the flags, else the environment.

    Args:
        provider: ``--provider``: a registry id or ``sample``.
        model: ``--model``: sets the ``model`` option.
        options: ``--option`` items, ``KEY=VALUE``.
        env: the environment (default ``os.environ``).

    Raises:
        UsageError: ``--model``/``--option`` with no real provider to apply them to, or a
            malformed ``--option``.
    """
    env = os.environ if env is None else env
    flags = parse_assignments(options, "--option")
    if model:
        flags["model"] = model
    if provider is not None:
        choice = ProviderChoice(provider.strip(), flags, "--provider")
    elif env.get("WINGMAN_PROVIDER", "").strip():
        choice = ProviderChoice(env["WINGMAN_PROVIDER"].strip(), {**_env_options(env), **flags}, "WINGMAN_PROVIDER")
    elif env.get("ANTHROPIC_API_KEY", "").strip():
        choice = ProviderChoice("anthropic", {**_env_options(env), **flags}, "ANTHROPIC_API_KEY")
    else:
        choice = ProviderChoice(None, flags)
    if not choice.id and choice.source:
        raise UsageError(f"{choice.source} is empty: name a provider (see `wingman-actors providers`)")
    if not choice.real and flags:
        raise UsageError(
            "--model and --option configure a real provider, but none is chosen: pass --provider ID "
            "(see `wingman-actors providers`), or set WINGMAN_PROVIDER or ANTHROPIC_API_KEY"
        )
    return choice


def _env_options(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for var, key in (("WINGMAN_MODEL", "model"), ("WINGMAN_BASE_URL", "base_url")):
        value = env.get(var, "").strip()
        if value:
            out[key] = value
    return out


def make_provider(choice: ProviderChoice) -> Provider:
    """Build the chosen real provider.

    Raises:
        UsageError: unknown id, bad options, or missing credentials (the message says
            which, and which setting chose the provider).
    """
    if not choice.real or choice.id is None:
        raise ValueError(f"{choice!r} is not a real provider")
    where = f"cannot use provider {choice.id!r} (chosen by {choice.source})"
    try:
        return new_provider(choice.id, dict(choice.options))
    except AgentError as exc:
        raise UsageError(f"{where}: {command_line_hint(exc.message)}") from exc


_NEEDS_MODEL = re.compile(r"needs a model, e\.g\. new_provider\([^{]*\{\s*[\"']model[\"']:\s*[\"']([^\"']+)[\"']\s*\}\)")
_OPTION_CALL = re.compile(r"the (\w+) option( \(new_provider\(.*?\)\))?")
_CALL = re.compile(r",? *\(?(e\.g\. )?new_provider\(.*?\}\)\)?")


def command_line_hint(message: str) -> str:
    """A provider's error, reworded for the command line: the flags and environment
    variables that fix it instead of the Python call (``new_provider(...)``).

    Example:
        >>> command_line_hint('the ollama provider needs a model, e.g. new_provider("ollama", {"model": "llama3.2"})')
        'the ollama provider needs a model: pass --model NAME (e.g. --model llama3.2) or set WINGMAN_MODEL'
    """
    message = _NEEDS_MODEL.sub(r"needs a model: pass --model NAME (e.g. --model \1) or set WINGMAN_MODEL", message)
    message = _OPTION_CALL.sub(r"--option \1=VALUE", message)
    return _CALL.sub("", message)


def describe_choice(choice: ProviderChoice, provider: Provider | None, *, samples: bool) -> str:
    """The line the launcher prints first: which provider the run uses, and why.

    Args:
        choice: what :func:`choose_provider` chose.
        provider: the built provider (for its model), if any.
        samples: whether the run uses the formation's sample replies.
    """
    if samples:
        why = "chosen by --provider sample" if choice.source == "--provider" else SAMPLE_HINT
        if choice.source == "WINGMAN_PROVIDER":
            why = "chosen by WINGMAN_PROVIDER=sample"
        return f"provider: sample replies ({why})"
    if not choice.real:
        return ("provider: the formation's own (it ships no sample replies; "
                "no --provider, WINGMAN_PROVIDER or ANTHROPIC_API_KEY is set)")
    model = getattr(provider, "model", None) or choice.options.get("model")
    details = [f"model {model}"] if model else []
    if choice.options.get("base_url"):
        details.append(f"base_url {choice.options['base_url']}")
    details.append(f"from {choice.source}")
    return f"provider: {choice.id} ({'; '.join(details)})"


def providers_text(env: Mapping[str, str] | None = None) -> str:
    """What ``wingman-actors providers`` prints: every registered provider and how to
    configure it, how ``run`` picks one, and what it would pick now."""
    lines = []
    for meta in list_providers():
        auth = ", ".join(meta.auth_types) or "none"
        env_vars = f"; env: {', '.join(meta.env)}" if meta.env else ""
        lines.append(f"{meta.id:<10} {meta.name} (auth: {auth}{env_vars})")
        if meta.description:
            lines.append(f"{'':<10} {meta.description}")
    lines += [
        "",
        "`wingman-actors run` uses, in this order:",
        "  1. --provider ID [--model M] [--option KEY=VALUE ...]   (--provider sample: the sample replies)",
        "  2. WINGMAN_PROVIDER=ID, with WINGMAN_MODEL and WINGMAN_BASE_URL",
        "  3. ANTHROPIC_API_KEY set -> anthropic (WINGMAN_MODEL applies too)",
        "  4. the formation's bundled offline sample replies",
    ]
    try:
        choice = choose_provider(env=env)
    except UsageError as exc:
        now = f"not usable: {exc}"
    else:
        now = f"{choice.id} (from {choice.source})" if choice.source else "the sample replies (nothing is set)"
    lines.append(f"Now it would use: {now}")
    return "\n".join(lines)
