"""The provider registry: list the providers, build one from an options dict, and see the
errors for an unknown id and for bad options.

Every provider is built the same way, ``new_provider(id, options)``. This example uses the
offline ``scripted`` provider only: no network, no API keys.

Run it with::

    python examples/providers_registry.py
"""

from __future__ import annotations

from wingman_actors import Agent, Session
from wingman_actors.errors import AgentError
from wingman_actors.providers import list_providers, new_provider


def main() -> None:
    print("registered providers:")
    for meta in list_providers():
        auth = ", ".join(meta.auth_types) or "none"
        print(f"  {meta.id:<10} {meta.name:<28} auth: {auth}")
        print(f"  {'':<10} {meta.description}")

    # One options dict for every provider; "scripted" answers from canned replies.
    provider = new_provider("scripted", {"replies": ["Hello from the registry!"], "latency_s": 0.0})
    answer = Session(Agent("greeter", provider=provider)).run("Say hello.")
    print(f"\nscripted provider answered: {answer.response!r}")

    # An unknown id: AgentError(kind=invalid) listing the registered ids.
    try:
        new_provider("antropic", {"model": "claude"})
    except AgentError as exc:
        print(f"\nunknown id -> {type(exc).__name__} (kind={exc.kind.value}):\n  {exc}")

    # Bad options: an error naming the offending option (and listing the known ones).
    try:
        new_provider("scripted", {"replies": ["hi"], "latency": 0.5})
    except AgentError as exc:
        print(f"\nbad option name -> {type(exc).__name__} (kind={exc.kind.value}):\n  {exc}")
    try:
        new_provider("scripted", {"replies": ["hi"], "temperature": 5})
    except AgentError as exc:
        print(f"\nbad option value -> {type(exc).__name__} (kind={exc.kind.value}):\n  {exc}")


if __name__ == "__main__":
    main()
