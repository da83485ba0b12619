"""A formation declared by hand as a ``networkx.DiGraph``: node attributes say what runs
(``kind="function", fn=...`` | ``kind="agent", agent=...`` | ``kind="fleet", agent=...,
max_workers=...``, plus ``prompt`` and policies such as ``retries``), an edge may carry
``when=<predicate on the upstream output>``. ``Formation("name", graph=g)`` runs it exactly
like a formation made with the builder. Also shows that ``validate()`` catches a typo in
a node attribute before anything starts.

Run it with::

    python examples/formation_networkx.py
"""

from __future__ import annotations

import networkx as nx
from pydantic import BaseModel

from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest
from wingman_actors.errors import FormationSetupError
from wingman_actors.testing import ScriptedProvider


class Outline(BaseModel):
    title: str
    sections: list[str]


def sections(outline: Outline) -> list[str]:
    return outline.sections


def has_sections(items: list[str]) -> bool:
    return len(items) > 0


def no_sections(items: list[str]) -> bool:
    return len(items) == 0


def nothing_to_do(items: list[str]) -> str:
    return "the outline had no sections: nothing to research"


def join_notes(notes: list[str]) -> str:
    return "\n".join(f"- {n}" for n in notes)


def research(request: InferenceRequest) -> str:
    section = request.messages[-1].text.removeprefix("Research: ")
    return f"notes on {section.lower()}"


def build(outline_json: str) -> nx.DiGraph:
    outliner = Agent("outliner", provider=ScriptedProvider([outline_json]), output_schema=Outline)
    researcher = Agent("researcher", provider=ScriptedProvider([research], cycle=True))
    writer = Agent("writer", provider=ScriptedProvider(
        [lambda req: "ARTICLE\n" + req.messages[-1].text]))

    g = nx.DiGraph()
    g.add_node("outline", kind="agent", agent=outliner)
    g.add_node("sections", kind="function", fn=sections)
    g.add_node("research", kind="fleet", agent=researcher, max_workers=3, prompt="Research: {input}")
    g.add_node("empty", kind="function", fn=nothing_to_do)
    g.add_node("join", kind="function", fn=join_notes)
    g.add_node("assemble", kind="agent", agent=writer, retries=2, backoff=0.01)
    g.add_edge("outline", "sections")
    g.add_edge("sections", "research", when=has_sections)
    g.add_edge("sections", "empty", when=no_sections)
    g.add_edge("research", "join")
    g.add_edge("join", "assemble")
    return g


def main() -> None:
    g = build('{"title": "Bees", "sections": ["Hives", "Dances"]}')
    formation = Formation("hand-built", graph=g)
    print(formation)
    print(formation.to_mermaid())

    result = formation.run("Write about bees.")
    print(f"outputs (two sinks, so .output is {result.output!r}):")
    for sink, value in result.outputs.items():
        print(f"  [{sink}] {value!r}")
    print("statuses:", {n: str(t.status) for n, t in result.nodes.items()})

    empty = Formation("hand-built", graph=build('{"title": "Void", "sections": []}')).run("Write about nothing.")
    print("\nwith an empty outline:", empty.outputs)
    print("statuses:", {n: str(t.status) for n, t in empty.nodes.items()})

    # The attribute contract is checked: a typo is reported before any actor starts.
    g.nodes["assemble"]["retry"] = 3
    try:
        Formation("typo", graph=g).validate()
    except FormationSetupError as exc:
        print(f"\n{exc}")


if __name__ == "__main__":
    main()
