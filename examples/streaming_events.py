"""Streaming a formation run: ``formation.run_stream(input)`` yields ``FormationEvent``s
(``type``, ``node``, ``data``) as the run goes: run and node lifecycle events, the
agent node's text deltas (``agent_text``) and tool use (``agent_tool_call`` /
``agent_tool_result``). It ends with ``run_finished``, whose ``data["result"]`` is the
``FormationResult`` (or ``run_failed``). The formation starts and stops around the
stream.

Run it with::

    python examples/streaming_events.py
"""

from __future__ import annotations

from wingman_actors import Agent, Formation, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.testing import ScriptedProvider


@tool
def word_count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: the text to count.
    """
    return len(text.split())


def clean(text: str) -> str:
    return " ".join(text.split())


def shout(text: str) -> str:
    return text.upper()


def main() -> None:
    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "word_count", {"text": "owls hunt at night"})]),
        "Owls hunt at night, in four words.",
    ], stream_chunk=5)
    writer = Agent("writer", provider=provider, tools=[word_count])
    formation = (
        Formation("streamed")
        .add_function("clean", clean)
        .add_agent("writer", writer, prompt="Write one sentence about: {input}")
        .add_function("shout", shout)
        .connect("clean", "writer", "shout")
    )

    result = None
    text_deltas = []
    for event in formation.run_stream("  owls   hunt at   night "):
        node = event.node or "-"
        if event.type == "agent_text":
            text_deltas.append(event.data["text"])
            print(f"{event.type:<18} {node:<7} {event.data['text']!r}")
        elif event.type == "agent_tool_call":
            print(f"{event.type:<18} {node:<7} {event.data['name']}({event.data['input']})")
        elif event.type == "agent_tool_result":
            print(f"{event.type:<18} {node:<7} -> {event.data['output']!r} (is_error={event.data['is_error']})")
        elif event.type == "node_finished":
            print(f"{event.type:<18} {node:<7} attempt={event.data['attempt']} "
                  f"tokens={event.data['usage'].total_tokens}")
        elif event.type == "run_finished":
            result = event.data["result"]
            print(f"{event.type:<18} {node:<7} in {event.data['duration_s'] * 1000:.0f} ms")
        elif event.type == "run_failed":
            print(f"{event.type:<18} {node:<7} {event.data['error']}")
        else:
            print(f"{event.type:<18} {node:<7}")

    assert result is not None
    print(f"\nthe agent's deltas joined: {''.join(text_deltas)!r}")
    print(f"the run's output:          {result.output!r}")


if __name__ == "__main__":
    main()
