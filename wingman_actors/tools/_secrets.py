"""Secrets kept out of the ``bash`` tool: the environment its shell starts with, and the
output it hands back to the model.

A variable is a secret when a provider reads it as its key (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``..., as the provider registry lists them) or when its name ends in
``_KEY``, ``_TOKEN``, ``_SECRET`` or ``_PASSWORD`` (any case). Secrets are left out of the shell's environment
unless the tool was built to pass them (:func:`~wingman_actors.tools.bash_tool`), and the
values of all of them, passed or not, are masked in what the tool returns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["SECRET_SUFFIXES", "ShellEnv", "is_secret_name", "mask"]

SECRET_SUFFIXES: tuple[str, ...] = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
"""Name endings that make an environment variable a secret."""

# Values shorter than this are not masked: "1" or "true" would blank half the output.
_MIN_MASKED = 6


def _provider_variables() -> frozenset[str]:
    # Imported here: the registry is a layer below, but the tools need it only for bash.
    from ..providers._registry import list_providers

    names = {name.upper() for meta in list_providers() for name in meta.env}
    # A provider's keys, not its other settings (OLLAMA_HOST, OPENAI_BASE_URL).
    return frozenset(n for n in names if any(word in n for word in ("KEY", "TOKEN", "SECRET", "PASSWORD")))


def is_secret_name(name: str, provider_variables: frozenset[str] | None = None) -> bool:
    """Whether the environment variable ``name`` holds a secret (see the module docstring).

    Args:
        name: the variable's name.
        provider_variables: the providers' variables, upper-case (looked up when None).
    """
    upper = name.upper()
    if upper.endswith(SECRET_SUFFIXES):
        return True
    return upper in (_provider_variables() if provider_variables is None else provider_variables)


@dataclass(frozen=True)
class ShellEnv:
    """What a bash shell's environment is made of.

    Attributes:
        pass_env: names of secret variables to pass to the shell from this process's
            environment, on purpose (e.g. ``("GITHUB_TOKEN",)``).
        env: variables to set in the shell (they win over the process's).
    """

    pass_env: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, pass_env: Iterable[str] = (), env: Mapping[str, str] | None = None) -> ShellEnv:
        """Validate and build; raises ``ValueError``/``TypeError`` naming the bad entry."""
        if isinstance(pass_env, str):
            raise TypeError(f"pass_env must be a list of variable names, e.g. [{pass_env!r}], not a string")
        names = tuple(pass_env)
        for name in names:
            if not isinstance(name, str) or not name or "=" in name:
                raise ValueError(f"pass_env: {name!r} is not an environment variable name")
        extra = dict(env or {})
        for key, value in extra.items():
            if not isinstance(key, str) or not key or "=" in key or not isinstance(value, str):
                raise ValueError(f"env: {key!r}={value!r} is not a variable name and a string value")
        return cls(names, extra)

    def build(self, environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], re.Pattern[str] | None]:
        """The shell's environment (secrets left out unless passed) and a pattern matching
        the values of every secret known here (``None`` when there is none)."""
        source = os.environ if environ is None else environ
        providers = _provider_variables()
        passed = set(self.pass_env)
        env: dict[str, str] = {}
        secrets: set[str] = set()
        for name, value in source.items():
            if is_secret_name(name, providers):
                secrets.add(value)
                if name not in passed:
                    continue
            env[name] = value
        for name, value in self.env.items():
            if is_secret_name(name, providers):
                secrets.add(value)
            env[name] = value
        values = sorted((v for v in secrets if len(v) >= _MIN_MASKED), key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, values))) if values else None
        return env, pattern


def mask(text: str, pattern: re.Pattern[str] | None) -> str:
    """``text`` with every known secret value replaced by ``[secret masked]``."""
    if pattern is None:
        return text
    return pattern.sub("[secret masked]", text)
