"""Research: an outline, a fleet of researchers (one per section), an assembled report.

::

    outline → plan → research (fleet) → draft → assemble
       └────────────────────────────────┘

* ``outline`` is an agent with structured output (:class:`Outline`: a title and sections).
* ``plan`` turns the sections into one :class:`SectionTask` per section.
* ``research`` is a fleet: one researcher session per section, concurrently.
* ``draft`` puts the notes under their headings; ``assemble`` edits the draft into a report.

Run it (offline sample replies unless a real provider is configured)::

    wingman-actors run formations/research.py --input "the history of the bicycle"
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import Provider
from wingman_actors.testing import ScriptedProvider

__all__ = ["DEFAULT_INPUT", "SAMPLE_LATENCY_S", "Outline", "Section", "SectionTask", "build", "draft_report",
           "plan_sections", "sample_provider"]

DEFAULT_INPUT = "how cities can cut traffic congestion"
"""The topic researched when the launcher is given no ``--input``."""


class Section(BaseModel):
    """One section of the outline: a heading and what it should cover."""

    heading: str
    brief: str


class Outline(BaseModel):
    """The outline agent's structured answer."""

    title: str
    sections: list[Section] = Field(min_length=1)


class SectionTask(BaseModel):
    """What one researcher gets: the report's title and its section."""

    title: str
    number: int
    heading: str
    brief: str


OUTLINE_INSTRUCTIONS = (
    "You plan research reports. Given a topic, give the report a title and three to five "
    "sections, each with a heading and a one-sentence brief of what it must cover."
)
RESEARCHER_INSTRUCTIONS = (
    "You research one section of a report. Write two or three factual paragraphs for it, "
    "plain text, no heading."
)
ASSEMBLER_INSTRUCTIONS = (
    "You edit research drafts into a finished report. Keep every section and its heading, "
    "add a two-sentence introduction and a short conclusion, fix repetition. Markdown."
)
OUTLINE_PROMPT = "Topic: {input}"
RESEARCH_PROMPT = "Report: {title}\nSection {number}: {heading}\nBrief: {brief}"


def plan_sections(outline: Outline, max_sections: int) -> list[SectionTask]:
    """One task per section of ``outline``, at most ``max_sections``."""
    return [
        SectionTask(title=outline.title, number=i, heading=s.heading, brief=s.brief)
        for i, s in enumerate(outline.sections[:max_sections], start=1)
    ]


def draft_report(outline: Outline, research: list[str]) -> str:
    """The ``draft`` node: the title, then each section's heading and notes (Markdown)."""
    parts = [f"# {outline.title}"]
    for section, notes in zip(outline.sections, research, strict=False):
        parts.append(f"## {section.heading}\n\n{notes.strip()}")
    return "\n\n".join(parts)


def build(provider: Provider | None = None, *, max_sections: int = 5, max_workers: int = 4) -> Formation:
    """The research formation.

    Args:
        provider: the model provider of every agent (None: give one later with
            ``formation.run(..., provider=...)``); :func:`sample_provider` for offline
            sample replies.
        max_sections: sections researched at most (the outline may propose more).
        max_workers: researcher sessions at once.

    Returns:
        The formation; its input is a topic, its output the report (Markdown).
    """
    if max_sections < 1:
        raise ValueError(f"max_sections must be >= 1, got {max_sections}")
    outliner = Agent("outliner", instructions=OUTLINE_INSTRUCTIONS, provider=provider, output_schema=Outline)
    researcher = Agent("researcher", instructions=RESEARCHER_INSTRUCTIONS, provider=provider)
    assembler = Agent("assembler", instructions=ASSEMBLER_INSTRUCTIONS, provider=provider)

    def plan(outline: Outline) -> list[SectionTask]:
        return plan_sections(outline, max_sections)

    return (
        Formation("research")
        .add_agent("outline", outliner, prompt=OUTLINE_PROMPT, retries=1)
        .add_function("plan", plan)
        .add_fleet("research", researcher, max_workers=max_workers, prompt=RESEARCH_PROMPT, retries=1)
        .add_function("draft", draft_report)
        .add_agent("assemble", assembler, retries=1)
        .connect("outline", "plan", "research", "draft", "assemble")
        .connect("outline", "draft")
    )


# -- offline sample replies ---------------------------------------------------------------

_SAMPLE_SECTIONS = (
    ("Background", "Context for '{topic}': where the question comes from and why it matters now."),
    ("Current approaches", "What is done today about '{topic}', with typical examples."),
    ("Evidence and trade-offs", "What is known to work for '{topic}', and at what cost."),
    ("Recommendations", "Concrete next steps on '{topic}' for a newcomer."),
)


def _field(text: str, label: str) -> str:
    for line in text.splitlines():
        if line.startswith(label):
            return line[len(label):].strip()
    return ""


def _sample_outline(request: InferenceRequest) -> str:
    topic = _field(request.messages[-1].text, "Topic:") or "the topic"
    outline = Outline(
        title=f"{topic[:1].upper()}{topic[1:]}: a short report",
        sections=[Section(heading=h, brief=b.format(topic=topic)) for h, b in _SAMPLE_SECTIONS],
    )
    return outline.model_dump_json()


def _sample_notes(request: InferenceRequest) -> str:
    text = request.messages[-1].text
    section = _field(text, "Section ")  # "2: Current approaches"
    heading = section.split(":", 1)[-1].strip() or "this section"
    brief = _field(text, "Brief:")
    return (f"(sample reply) Notes for '{heading}': {brief} A real model would write two or three "
            "paragraphs here; run with a provider to get them.")


def _sample_assembly(request: InferenceRequest) -> str:
    return ("(sample reply: assembled offline from the section notes, not edited by a model)\n\n"
            + request.messages[-1].text.strip())


SAMPLE_LATENCY_S = 0.4
"""Seconds each sample reply takes when the launcher shows the live view on a terminal, so
the run unfolds visibly offline (piped and ``--json`` runs stay instant)."""


def sample_provider() -> ScriptedProvider:
    """Deterministic offline replies for every agent of the formation: a four-section
    outline of the topic, a templated note per section, and the draft as the report.
    Used by the launcher when no real provider is configured."""

    def reply(request: InferenceRequest) -> str:
        if request.instructions.startswith(OUTLINE_INSTRUCTIONS):
            return _sample_outline(request)
        if request.instructions.startswith(RESEARCHER_INSTRUCTIONS):
            return _sample_notes(request)
        if request.instructions.startswith(ASSEMBLER_INSTRUCTIONS):
            return _sample_assembly(request)
        raise AgentError("the research sample replies only answer the outliner, researchers and assembler",
                         kind=ErrorKind.INVALID, provider="scripted")

    return ScriptedProvider([reply], cycle=True, model="sample-replies")
