"""Path confinement: resolve_in, and every file tool refusing paths that leave the work_dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wingman_actors.errors import ToolError
from wingman_actors.tools import ToolContext, builtin_tool
from wingman_actors.tools._sandbox import display_path, resolve_in


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    return outside


@pytest.fixture
def ctx(work: Path) -> Iterator[ToolContext]:
    ctx = ToolContext(work)
    yield ctx
    ctx.close()


def test_relative_path_resolves_against_work_dir(ctx: ToolContext, work: Path) -> None:
    assert resolve_in(ctx, "a/b.txt") == work.resolve() / "a" / "b.txt"


def test_absolute_path_inside_work_dir_is_accepted(ctx: ToolContext, work: Path) -> None:
    assert resolve_in(ctx, str(work / "x.txt")) == work.resolve() / "x.txt"


def test_dotdot_that_stays_inside_is_accepted(ctx: ToolContext, work: Path) -> None:
    assert resolve_in(ctx, "a/../b.txt") == work.resolve() / "b.txt"


def test_dotdot_escape_is_refused_naming_path_and_work_dir(ctx: ToolContext, work: Path) -> None:
    with pytest.raises(ToolError) as info:
        resolve_in(ctx, "../x", tool="read")
    assert "'../x'" in str(info.value)
    assert str(work.resolve()) in str(info.value)
    assert info.value.tool == "read"


def test_absolute_path_outside_is_refused(ctx: ToolContext, outside: Path) -> None:
    with pytest.raises(ToolError, match=r"outside the working directory"):
        resolve_in(ctx, str(outside / "secret.txt"))


def test_symlinked_file_pointing_outside_is_refused(ctx: ToolContext, work: Path, outside: Path) -> None:
    (work / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match=r"symbolic link"):
        resolve_in(ctx, "link.txt")


def test_symlinked_directory_pointing_outside_is_refused(ctx: ToolContext, work: Path, outside: Path) -> None:
    (work / "linkdir").symlink_to(outside)
    with pytest.raises(ToolError, match=r"symbolic link"):
        resolve_in(ctx, "linkdir/secret.txt")


def test_symlink_pointing_inside_is_followed(ctx: ToolContext, work: Path) -> None:
    (work / "real.txt").write_text("x")
    (work / "alias.txt").symlink_to(work / "real.txt")
    assert resolve_in(ctx, "alias.txt") == work.resolve() / "real.txt"


def test_nul_character_in_path_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"NUL"):
        resolve_in(ctx, "a\0b")


def test_display_path_is_relative_to_work_dir(ctx: ToolContext, work: Path) -> None:
    assert display_path(ctx, work.resolve() / "a" / "b.txt") == "a/b.txt"
    assert display_path(ctx, work.resolve()) == "."


def _escape_path(kind: str, work: Path, outside: Path) -> str:
    if kind == "dotdot":
        return "../outside/secret.txt"
    if kind == "absolute":
        return str(outside / "secret.txt")
    (work / "sneaky").symlink_to(outside)
    return "sneaky/secret.txt"


def _dir_escape_path(kind: str, work: Path, outside: Path) -> str:
    if kind == "dotdot":
        return "../outside"
    if kind == "absolute":
        return str(outside)
    (work / "sneaky").symlink_to(outside)
    return "sneaky"


_FILE_CALLS: dict[str, dict[str, Any]] = {
    "read": {},
    "write": {"content": "pwned"},
    "edit": {"old_string": "top secret", "new_string": "pwned"},
}
_ESCAPES = ["dotdot", "absolute", "symlink"]


@pytest.mark.parametrize("kind", _ESCAPES)
@pytest.mark.parametrize("tool_name", list(_FILE_CALLS))
def test_file_tools_refuse_paths_outside_work_dir(
    tool_name: str, kind: str, ctx: ToolContext, work: Path, outside: Path
) -> None:
    path = _escape_path(kind, work, outside)
    with pytest.raises(ToolError) as info:
        builtin_tool(tool_name).execute({"path": path, **_FILE_CALLS[tool_name]}, ctx)
    assert info.value.tool == tool_name
    assert (outside / "secret.txt").read_text() == "top secret\n"


@pytest.mark.parametrize("kind", _ESCAPES)
@pytest.mark.parametrize("tool_name", ["glob", "grep"])
def test_search_tools_refuse_paths_outside_work_dir(
    tool_name: str, kind: str, ctx: ToolContext, work: Path, outside: Path
) -> None:
    path = _dir_escape_path(kind, work, outside)
    pattern = "**/*" if tool_name == "glob" else "secret"
    with pytest.raises(ToolError, match=r"outside the working directory"):
        builtin_tool(tool_name).execute({"pattern": pattern, "path": path}, ctx)


def test_glob_skips_symlinks_pointing_outside(ctx: ToolContext, work: Path, outside: Path) -> None:
    (work / "sneaky").symlink_to(outside)
    (work / "sneaky.txt").symlink_to(outside / "secret.txt")
    (work / "mine.txt").write_text("mine")
    out = builtin_tool("glob").execute({"pattern": "**/*"}, ctx)
    assert out == "mine.txt"


def test_grep_skips_symlinks_pointing_outside(ctx: ToolContext, work: Path, outside: Path) -> None:
    (work / "sneaky").symlink_to(outside)
    (work / "sneaky.txt").symlink_to(outside / "secret.txt")
    out = builtin_tool("grep").execute({"pattern": "secret"}, ctx)
    assert out.startswith("no matches")


def test_glob_pattern_with_dotdot_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"\.\."):
        builtin_tool("glob").execute({"pattern": "../outside/*"}, ctx)


def test_glob_absolute_pattern_is_refused(ctx: ToolContext, outside: Path) -> None:
    with pytest.raises(ToolError, match=r"relative"):
        builtin_tool("glob").execute({"pattern": f"{outside}/*"}, ctx)
