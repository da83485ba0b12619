"""Skills: folders of instructions an agent loads on demand.

A skill is a folder holding a ``SKILL.md``: YAML front matter with ``name`` and
``description``, then the instructions (the body). The folder may hold supplementary files
(scripts, references) that the agent reads with its file tools. ``Agent(..., skills=[...])``
lists every skill (name and description) in the system prompt, and the tool ``load_skill``
returns a skill's body and folder, so a model reads the full text only when it needs it.

Example ``SKILL.md``::

    ---
    name: summarise-pdf
    description: Summarise a PDF statement into totals per category.
    ---
    1. Read the PDF with the read tool...
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._extras import require
from ..core import ToolDefinition
from ..errors import ToolError, WingmanError
from ..tools import ToolContext

__all__ = ["LoadSkillTool", "Skill", "SkillError", "load_skill", "load_skills", "skills_section"]

SKILL_FILE = "SKILL.md"


class SkillError(WingmanError, ValueError):
    """A skill folder cannot be used (no SKILL.md, no front matter, missing fields, duplicates).

    Also a ``ValueError``, as it was before it joined :class:`~wingman_actors.errors.WingmanError`.
    """


@dataclass(frozen=True)
class Skill:
    """One loaded skill.

    Attributes:
        name: its name (front matter ``name``).
        description: when to use it (front matter ``description``).
        path: the skill's folder, absolute.
        body: the instructions after the front matter.
    """

    name: str
    description: str
    path: Path
    body: str


def load_skill(folder: str | os.PathLike[str]) -> Skill:
    """Load the skill in ``folder``.

    Raises:
        SkillError: the folder or its ``SKILL.md`` is missing, the front matter is absent or
            not YAML, or ``name`` / ``description`` is missing or not text.
    """
    path = Path(folder).expanduser().resolve()
    file = path / SKILL_FILE
    if not path.is_dir():
        raise SkillError(f"skill folder {str(folder)!r} does not exist or is not a folder")
    if not file.is_file():
        raise SkillError(f"skill folder {str(path)!r} has no {SKILL_FILE}: add one with front matter (name, description)")
    stat = file.stat()
    # Parsed once per version of the file: a fleet deriving an agent per task (with_overrides)
    # re-checks its skill folders, and should not re-read and re-parse each of them.
    name, description, body = _parse(str(file), stat.st_mtime_ns, stat.st_size)
    return Skill(name=name, description=description, path=path, body=body)


@functools.lru_cache(maxsize=256)
def _parse(file: str, mtime_ns: int, size: int) -> tuple[str, str, str]:
    text = Path(file).read_text(encoding="utf-8")
    with require("skills", "skills (SKILL.md front matter)"):
        import frontmatter  # with PyYAML: imported by the first skill loaded, not by every program
    try:
        post = frontmatter.loads(text)
    except Exception as exc:  # the YAML parser's errors, of several types
        raise SkillError(f"{file}: the front matter is not valid YAML: {exc}") from exc
    meta: dict[str, Any] = dict(post.metadata)
    if not meta:
        raise SkillError(
            f"{file}: no front matter; start the file with '---', then 'name: ...' and "
            "'description: ...' lines, then '---' and the instructions"
        )
    missing = [key for key in ("name", "description") if not isinstance(meta.get(key), str) or not meta[key].strip()]
    if missing:
        raise SkillError(f"{file}: the front matter needs {' and '.join(missing)} (text), got keys {sorted(meta)}")
    return meta["name"].strip(), " ".join(meta["description"].split()), post.content


def load_skills(folders: Iterable[str | os.PathLike[str]]) -> dict[str, Skill]:
    """Load every folder; report every bad one at once.

    Raises:
        SkillError: listing each folder that failed and each name used twice.
    """
    if isinstance(folders, str | bytes | os.PathLike):
        raise TypeError(f"skills must be a list of folders, e.g. skills=[{str(folders)!r}]")
    skills: dict[str, Skill] = {}
    problems: list[str] = []
    for folder in folders:
        try:
            skill = load_skill(folder)
        except SkillError as exc:
            problems.append(str(exc))
            continue
        if skill.name in skills:
            problems.append(
                f"two skills are named {skill.name!r} ({skills[skill.name].path} and {skill.path}): "
                "rename one in its SKILL.md"
            )
            continue
        skills[skill.name] = skill
    if problems:
        raise SkillError("bad skill folder(s):\n- " + "\n- ".join(problems))
    return skills


def skills_section(skills: dict[str, Skill]) -> str:
    """The "Skills" section of the system prompt."""
    if not skills:
        return ""
    lines = [f"- {s.name}: {s.description}" for s in sorted(skills.values(), key=lambda s: s.name)]
    return (
        "## Skills\n"
        "Before a task a skill covers, call load_skill with its name and follow its instructions.\n"
        + "\n".join(lines)
    )


class LoadSkillTool:
    """``load_skill(name)``: a skill's instructions and the folder its files are in."""

    name = "load_skill"
    description = "Load a skill's full instructions (and the folder holding its files) by name."

    def __init__(self, skills: dict[str, Skill]) -> None:
        self.skills = dict(skills)
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": sorted(self.skills), "description": "the skill's name"}},
            "required": ["name"],
            "additionalProperties": False,
        }
        self._definition = ToolDefinition(name=self.name, description=self.description, input_schema=schema)

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model."""
        return self._definition

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        """The body, under a header naming the skill and its folder."""
        name = (input or {}).get("name")
        skill = self.skills.get(name) if isinstance(name, str) else None
        if skill is None:
            raise ToolError(f"no skill named {name!r}; skills: {sorted(self.skills)}", tool=self.name)
        return (
            f"# Skill: {skill.name}\n"
            f"Folder: {skill.path}\n"
            "(Files this skill mentions are in that folder; read them with your file tools.)\n\n"
            f"{skill.body}"
        )
