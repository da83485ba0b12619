"""Sessions: a blocking run, a multi-turn conversation (history is kept), and a streamed
run printing text deltas as they arrive, then ``.result()``.

An ``Agent`` is an immutable configuration; a ``Session`` is one conversation with it.
The model is a ``ScriptedProvider`` (canned replies), so this runs offline.

Run it with::

    python examples/sessions.py
"""

from __future__ import annotations

from wingman_actors import Agent, Session
from wingman_actors.testing import ScriptedProvider


def main() -> None:
    provider = ScriptedProvider([
        "Paris.",
        "About 2.1 million people live in the city proper.",
        "The Seine flows through Paris, past the Louvre and Notre-Dame, on its way to the sea.",
    ], stream_chunk=6)
    agent = Agent("guide", instructions="Answer briefly.", provider=provider)

    with Session(agent) as session:
        # 1. A blocking run.
        result = session.run("What is the capital of France?")
        print(f"[1] {result.response}  (steps={result.steps}, tokens={result.usage.total_tokens})")

        # 2. A second turn: the session keeps the history, so the model sees both turns.
        result = session.run("How many people live there?")
        print(f"[2] {result.response}  (history now holds {len(session.history)} messages)")
        sent = [f"{m.role}: {m.text}" for m in provider.requests[-1].messages]
        print("    the model received:", sent)

        # 3. Streaming: iterate the events, print the text deltas, then ask for the result.
        print("[3] ", end="")
        stream = session.run_stream("Which river flows through it?")
        deltas = 0
        kinds: list[str] = []
        for event in stream:
            kinds.append(event.type.value)
            if event.type == "text_delta":
                deltas += 1
                print(event.text, end="|", flush=True)
        print()
        final = stream.result()
        print(f"    {deltas} text deltas; event types: {sorted(set(kinds))}")
        print(f"    stream.result().response == {final.response!r}")
        print(f"    history: {len(session.history)} messages after three turns")


if __name__ == "__main__":
    main()
