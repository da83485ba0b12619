"""Skills: SKILL.md folders listed in the system prompt and loaded with load_skill."""

from __future__ import annotations

from pathlib import Path

import pytest

from wingman_actors import Agent, Session
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.orchestration import SkillError, load_skill
from wingman_actors.testing import ScriptedProvider


def make_skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder
    path.mkdir()
    (path / "SKILL.md").write_text(text, encoding="utf-8")
    return path


def skill_text(name: str, description: str, body: str = "Do the thing.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def test_a_skill_folder_loads_name_description_body_and_path(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "pdf", skill_text("pdf-summary", "Summarise a PDF.", "1. Read it.\n2. Sum it."))

    skill = load_skill(folder)

    assert (skill.name, skill.description, skill.body, skill.path) == (
        "pdf-summary", "Summarise a PDF.", "1. Read it.\n2. Sum it.", folder.resolve()
    )


def test_the_system_prompt_lists_the_skills(tmp_path: Path) -> None:
    skills = [make_skill(tmp_path, "b", skill_text("beta", "Second.")), make_skill(tmp_path, "a", skill_text("alpha", "First."))]

    agent = Agent("x", instructions="Be useful.", skills=skills)

    assert agent.system_prompt.startswith("Be useful.\n\n## Skills\n")
    assert agent.system_prompt.endswith("- alpha: First.\n- beta: Second.")
    assert "load_skill" in agent.tool_registry


def test_the_session_sends_the_skills_section_to_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider(["ok"])
    agent = Agent("x", provider=provider, skills=[make_skill(tmp_path, "a", skill_text("alpha", "First."))])

    Session(agent).run("hi")

    assert "- alpha: First." in provider.requests[0].instructions


def test_load_skill_returns_the_body_and_the_folder(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "a", skill_text("alpha", "First.", "Step one: read notes.txt."))

    def answer(request: InferenceRequest) -> str:
        return request.messages[-1].tool_results_blocks[0].content or ""

    agent = Agent(
        "x",
        provider=ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "load_skill", {"name": "alpha"})]), answer]),
        skills=[folder],
    )

    text = Session(agent).run("hi").response

    assert text.startswith(f"# Skill: alpha\nFolder: {folder.resolve()}\n")
    assert text.endswith("Step one: read notes.txt.")


def test_load_skill_of_an_unknown_name_is_a_tool_error_listing_the_skills(tmp_path: Path) -> None:
    agent = Agent(
        "x",
        provider=ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "load_skill", {"name": "nope"})]), "ok"]),
        skills=[make_skill(tmp_path, "a", skill_text("alpha", "First."))],
    )

    call = Session(agent).run("hi").tool_calls[0]

    assert call.is_error and "no skill named 'nope'; skills: ['alpha']" in call.output


def test_a_folder_without_skill_md_is_refused_when_the_agent_is_made(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()

    with pytest.raises(SkillError, match=r"has no SKILL\.md"):
        Agent("x", skills=[tmp_path / "empty"])


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="does not exist"):
        Agent("x", skills=[tmp_path / "nowhere"])


def test_a_skill_without_front_matter_is_refused(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "a", "Just instructions, no header.\n")

    with pytest.raises(SkillError, match="no front matter; start the file with '---'"):
        Agent("x", skills=[folder])


def test_a_skill_without_a_description_is_refused(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "a", "---\nname: alpha\n---\nbody\n")

    with pytest.raises(SkillError, match=r"needs description \(text\), got keys \['name'\]"):
        Agent("x", skills=[folder])


def test_front_matter_that_is_not_yaml_is_refused(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "a", "---\nname: [unclosed\n---\nbody\n")

    with pytest.raises(SkillError, match="not valid YAML"):
        Agent("x", skills=[folder])


def test_two_skills_with_one_name_are_refused(tmp_path: Path) -> None:
    one = make_skill(tmp_path, "one", skill_text("same", "First."))
    two = make_skill(tmp_path, "two", skill_text("same", "Second."))

    with pytest.raises(SkillError, match="two skills are named 'same'"):
        Agent("x", skills=[one, two])


def test_every_bad_folder_is_reported_at_once(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    bare = make_skill(tmp_path, "bare", "no header\n")

    with pytest.raises(SkillError) as info:
        Agent("x", skills=[tmp_path / "empty", bare])

    assert "has no SKILL.md" in str(info.value) and "no front matter" in str(info.value)


def test_skills_must_be_a_list_not_one_path(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="skills must be a list of folders"):
        Agent("x", skills=str(tmp_path))  # type: ignore[arg-type]


def test_with_overrides_keeps_the_skills_without_repeating_the_section(tmp_path: Path) -> None:
    agent = Agent("x", instructions="Hi.", skills=[make_skill(tmp_path, "a", skill_text("alpha", "First."))])

    copy = agent.with_overrides(instructions="Hello.")

    assert copy.system_prompt.count("## Skills") == 1 and copy.system_prompt.startswith("Hello.")


def test_an_edited_skill_is_read_again_by_the_next_agent(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "a", skill_text("alpha", "First."))
    assert "- alpha: First." in Agent("x", skills=[folder]).system_prompt

    (folder / "SKILL.md").write_text(skill_text("alpha", "Changed, and longer."), encoding="utf-8")

    assert "- alpha: Changed, and longer." in Agent("x", skills=[folder]).system_prompt
