"""Nested formations: a whole formation runs as one node of another.

``review`` (draft → check) is a formation of its own; ``add_formation`` puts it in the
middle of a bigger one. The node's input is the inner run's input, its output the inner
sink's output. Inner events reach the outer run's listeners named by path
(``"review/draft"``), the result has the inner traces under the same names, and an
``interrupt()`` inside suspends the outer run, which ``resume`` answers.

Run it with::

    python examples/nested_formations.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from wingman_actors import Agent, Formation, interrupt
from wingman_actors.formation.events import FormationEventType
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def topic(text: str) -> str:
    return text.strip().lower()


def check(draft: str) -> str:
    return draft if draft.endswith(".") else draft + "."


def approve(draft: str) -> str:
    verdict = interrupt({"approve?": draft})  # suspends the whole (outer) run
    return draft if verdict == "yes" else "(rejected)"


def publish(text: str) -> str:
    return f"PUBLISHED: {text}"


def review(*, ask: bool) -> Formation:
    """draft (an agent) → check [→ approve]: a formation usable on its own, or nested."""
    writer = Agent("writer", provider=ScriptedProvider(["Cats sleep sixteen hours a day"], cycle=True))
    inner = Formation("review").add_agent("draft", writer, prompt="Write one line about {input}")
    inner.add_function("check", check).connect("draft", "check")
    if ask:
        inner.add_function("approve", approve).connect("check", "approve")
    return inner


def blog(*, ask: bool = False) -> Formation:
    outer = Formation("blog").add_function("topic", topic).add_formation("review", review(ask=ask), retries=1)
    return outer.add_function("publish", publish).connect("topic", "review", "publish")


def main() -> None:
    formation = blog()
    print(formation.to_mermaid())

    def show(event: object) -> None:
        if getattr(event, "type", None) is FormationEventType.NODE_FINISHED:
            print("  finished:", getattr(event, "node", None))

    result = formation.run("  Cats ", on_event=show)
    print(result.output)
    print("traces:", ", ".join(result.nodes))
    print("tokens used inside the review:", result.nodes["review"].usage.output_tokens)

    # An interrupt() inside the nested formation suspends the outer run.
    with tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "runs.sqlite") as store:
        asking = blog(ask=True)
        suspended = asking.run("Cats", store=store)
        print("suspended:", suspended.status, suspended.interrupt)
        done = asking.resume(suspended.run_id, store=store, answer="yes")
        print("resumed:", done.output)


if __name__ == "__main__":
    main()
