"""The research formation: outline, one researcher per section, assembly."""

from __future__ import annotations

from formations import research
from wingman_actors.core import InferenceRequest, Message


def test_research_with_sample_replies_produces_every_section() -> None:
    result = research.build(provider=research.sample_provider()).run("urban beekeeping")
    headings = [line.removeprefix("## ") for line in result.output.splitlines() if line.startswith("## ")]
    assert headings == ["Background", "Current approaches", "Evidence and trade-offs", "Recommendations"]
    assert result.output.count("Notes for") == 4
    assert "# Urban beekeeping: a short report" in result.output


def test_research_fleet_runs_one_researcher_per_section() -> None:
    provider = research.sample_provider()
    research.build(provider=provider).run("tides")
    researchers = [r for r in provider.requests if r.instructions.startswith(research.RESEARCHER_INSTRUCTIONS)]
    assert sorted(r.messages[-1].text.splitlines()[1] for r in researchers) == [
        "Section 1: Background", "Section 2: Current approaches",
        "Section 3: Evidence and trade-offs", "Section 4: Recommendations",
    ]


def test_max_sections_caps_the_sections_researched() -> None:
    result = research.build(provider=research.sample_provider(), max_sections=2).run("tides")
    assert result.output.count("Notes for") == 2


def test_sample_outline_is_valid_structured_output() -> None:
    request = InferenceRequest(messages=[Message.user("Topic: tides")], instructions=research.OUTLINE_INSTRUCTIONS)
    outline = research.Outline.model_validate_json(research.sample_provider().run_inference(request).text)
    assert len(outline.sections) == 4 and "tides" in outline.sections[0].brief


def test_draft_puts_each_note_under_its_heading() -> None:
    outline = research.Outline(title="T", sections=[research.Section(heading="A", brief="a"),
                                                    research.Section(heading="B", brief="b")])
    assert research.draft_report(outline, ["note a", "note b"]) == "# T\n\n## A\n\nnote a\n\n## B\n\nnote b"


def test_research_formation_validates() -> None:
    plan = research.build().validate()
    assert list(plan.order) == ["outline", "plan", "research", "draft", "assemble"]
