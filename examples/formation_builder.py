"""A formation built with the builder: ``add_function``, ``add_agent``, ``add_fleet`` and
``connect``. The pipeline: an outline agent answers with a pydantic object (its
``output_schema``) → a function extracts the sections → a fleet of researchers takes one
section each → a function joins their notes → an assembly agent writes the article.

Prints the Mermaid chart, the run's output, and each node's status, attempts and usage.
All models are ``ScriptedProvider``s: offline and deterministic.

Run it with::

    python examples/formation_builder.py
"""

from __future__ import annotations

from pydantic import BaseModel

from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest
from wingman_actors.testing import ScriptedProvider


class Outline(BaseModel):
    title: str
    sections: list[str]


def sections(outline: Outline) -> list[str]:
    """The section titles of the outline: the fleet researches one each."""
    return outline.sections


def join_notes(notes: list[str]) -> str:
    """Join the researchers' notes into one briefing."""
    return "\n".join(f"- {n}" for n in notes)


def research(request: InferenceRequest) -> str:
    section = request.messages[-1].text.removeprefix("Research this section: ")
    return f"{section}: three solid facts about {section.lower()}."


def assemble(request: InferenceRequest) -> str:
    notes = request.messages[-1].text.split("\n")[1:]
    return f"OWLS, AN ARTICLE ({len(notes)} sections)\n" + "\n".join(n.removeprefix("- ") for n in notes)


def build() -> Formation:
    outliner = Agent(
        "outliner",
        instructions="Plan an article.",
        provider=ScriptedProvider(['{"title": "Owls", "sections": ["Diet", "Flight", "Night vision"]}']),
        output_schema=Outline,
    )
    researcher = Agent("researcher", instructions="Research one section.",
                       provider=ScriptedProvider([research], cycle=True))
    writer = Agent("writer", instructions="Write the article.", provider=ScriptedProvider([assemble]))
    return (
        Formation("article")
        .add_agent("outline", outliner)
        .add_function("sections", sections)
        .add_fleet("research", researcher, max_workers=2, prompt="Research this section: {input}")
        .add_function("join", join_notes)
        .add_agent("assemble", writer, prompt="Write the article from these notes:\n{input}", retries=1)
        .connect("outline", "sections", "research", "join", "assemble")
    )


def main() -> None:
    formation = build()
    print(formation)
    print(formation.to_mermaid())

    result = formation.run("Write an article about owls.")
    print("output:")
    print(result.output)
    print(f"\nrun {result.run_id} took {result.duration_s * 1000:.0f} ms, "
          f"{result.usage.total_tokens} tokens in all")
    print(f"{'node':<10} {'status':<10} {'attempts':>8} {'visits':>6} {'tokens':>6}")
    for name, trace in result.nodes.items():
        print(f"{name:<10} {trace.status:<10} {trace.attempts:>8} {trace.visits:>6} {trace.usage.total_tokens:>6}")


if __name__ == "__main__":
    main()
