"""The file tools read, write, edit, glob and grep, and the built-in tool registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wingman_actors.errors import ToolError
from wingman_actors.tools import BUILTIN_TOOL_NAMES, Tool, ToolContext, builtin_tool, builtin_tools
from wingman_actors.tools._files import glob_regex


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ToolContext]:
    ctx = ToolContext(tmp_path)
    yield ctx
    ctx.close()


def call(ctx: ToolContext, name: str, **args: Any) -> str:
    return builtin_tool(name).execute(args, ctx)


# -- read ---------------------------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    assert call(ctx, "read", path="a.txt") == "     1\tone\n     2\ttwo"


def test_read_returns_the_requested_range_with_a_continue_hint(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = call(ctx, "read", path="a.txt", offset=3, limit=2)
    assert out.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "lines 3-4 of 10" in out and "offset=5" in out


def test_read_past_the_end_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    with pytest.raises(ToolError, match=r"past the end.*1 lines"):
        call(ctx, "read", path="a.txt", offset=5)


def test_read_cuts_long_lines(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x" * 5000 + "\n")
    out = call(ctx, "read", path="a.txt")
    assert len(out) < 2100 and "3000 more characters" in out


def test_read_empty_file_says_so(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("")
    assert call(ctx, "read", path="a.txt") == "(empty file)"


def test_read_missing_file_is_an_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"file not found: 'nope.txt'"):
        call(ctx, "read", path="nope.txt")


def test_read_directory_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match=r"is a directory"):
        call(ctx, "read", path="d")


def test_read_binary_file_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    with pytest.raises(ToolError, match=r"binary file"):
        call(ctx, "read", path="b.bin")


def test_read_offset_zero_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    with pytest.raises(ToolError, match=r"offset must be 1 or more"):
        call(ctx, "read", path="a.txt", offset=0)


def test_read_without_path_is_an_invalid_argument(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid arguments for tool 'read'.*path"):
        call(ctx, "read")


# -- write --------------------------------------------------------------------------------


def test_write_creates_file_and_parent_dirs(ctx: ToolContext, tmp_path: Path) -> None:
    out = call(ctx, "write", path="new/deep/f.txt", content="héllo\n")
    assert (tmp_path / "new" / "deep" / "f.txt").read_text(encoding="utf-8") == "héllo\n"
    assert out == "wrote 7 bytes to new/deep/f.txt"


def test_write_replaces_existing_content(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old")
    call(ctx, "write", path="f.txt", content="new")
    assert (tmp_path / "f.txt").read_text() == "new"


def test_write_to_a_directory_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match=r"is a directory"):
        call(ctx, "write", path="d", content="x")


def test_write_without_content_is_an_invalid_argument(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid arguments for tool 'write'.*content"):
        call(ctx, "write", path="f.txt")


# -- edit ---------------------------------------------------------------------------------


def test_edit_replaces_a_unique_match(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("a = 1\nb = 2\n")
    out = call(ctx, "edit", path="f.py", old_string="b = 2", new_string="b = 3")
    assert (tmp_path / "f.py").read_text() == "a = 1\nb = 3\n"
    assert out == "replaced 1 occurrence(s) in f.py"


def test_edit_with_no_match_says_read_the_file_first(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("a = 1\n")
    with pytest.raises(ToolError, match=r"not found.*read the file first"):
        call(ctx, "edit", path="f.py", old_string="zzz", new_string="y")


def test_edit_with_many_matches_asks_for_context(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x\nx\nx\n")
    with pytest.raises(ToolError, match=r"found 3 times.*more surrounding context.*replace_all"):
        call(ctx, "edit", path="f.py", old_string="x", new_string="y")
    assert (tmp_path / "f.py").read_text() == "x\nx\nx\n"


def test_edit_replace_all_replaces_every_match(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x\nx\nx\n")
    out = call(ctx, "edit", path="f.py", old_string="x", new_string="y", replace_all=True)
    assert (tmp_path / "f.py").read_text() == "y\ny\ny\n"
    assert out.startswith("replaced 3 occurrence(s)")


def test_edit_with_identical_strings_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x\n")
    with pytest.raises(ToolError, match=r"identical"):
        call(ctx, "edit", path="f.py", old_string="x", new_string="x")


def test_edit_preserves_crlf_line_endings(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"a\r\nb\r\n")
    call(ctx, "edit", path="f.txt", old_string="b", new_string="c")
    assert (tmp_path / "f.txt").read_bytes() == b"a\r\nc\r\n"


def test_edit_missing_file_is_an_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"file not found"):
        call(ctx, "edit", path="nope.py", old_string="a", new_string="b")


# -- glob ---------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ["a.py", "b.txt", "src/c.py", "src/pkg/d.py", "src/pkg/e.pyi", ".git/config", "node_modules/m.py"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"content of {rel}\n")
    return tmp_path


def test_glob_double_star_matches_at_any_depth(ctx: ToolContext, tree: Path) -> None:
    assert call(ctx, "glob", pattern="**/*.py").splitlines() == ["a.py", "src/c.py", "src/pkg/d.py"]


def test_glob_single_star_stays_in_one_directory(ctx: ToolContext, tree: Path) -> None:
    assert call(ctx, "glob", pattern="*.py") == "a.py"


def test_glob_in_a_sub_directory_returns_work_dir_relative_paths(ctx: ToolContext, tree: Path) -> None:
    assert call(ctx, "glob", pattern="*.py", path="src/pkg") == "src/pkg/d.py"


def test_glob_braces_give_alternatives(ctx: ToolContext, tree: Path) -> None:
    assert call(ctx, "glob", pattern="src/pkg/*.{py,pyi}").splitlines() == ["src/pkg/d.py", "src/pkg/e.pyi"]


def test_glob_marks_directories_with_a_slash(ctx: ToolContext, tree: Path) -> None:
    assert call(ctx, "glob", pattern="src/*").splitlines() == ["src/c.py", "src/pkg/"]


def test_glob_skips_vcs_and_dependency_dirs(ctx: ToolContext, tree: Path) -> None:
    out = call(ctx, "glob", pattern="**/*")
    assert ".git" not in out and "node_modules" not in out


def test_glob_with_no_match_says_so(ctx: ToolContext, tree: Path) -> None:
    assert call(ctx, "glob", pattern="**/*.rs").startswith("no files match")


def test_glob_caps_the_number_of_results(ctx: ToolContext, tmp_path: Path) -> None:
    for i in range(1005):
        (tmp_path / f"f{i:04}.txt").touch()
    out = call(ctx, "glob", pattern="*.txt").splitlines()
    assert len(out) == 1001
    assert out[-1].startswith("[5 more matches not shown")


def test_glob_regex_translation() -> None:
    rx = glob_regex("src/**/test_[!x]?.py")
    assert rx.match("src/test_ab.py") and rx.match("src/a/b/test_ab.py")
    assert not rx.match("src/test_xb.py") and not rx.match("other/test_ab.py")


# -- grep ---------------------------------------------------------------------------------


def test_grep_prints_path_line_number_and_line(ctx: ToolContext, tree: Path) -> None:
    out = call(ctx, "grep", pattern=r"of src/\w+/d")
    assert out == "src/pkg/d.py:1:content of src/pkg/d.py"


def test_grep_glob_filters_by_file_name(ctx: ToolContext, tree: Path) -> None:
    out = call(ctx, "grep", pattern="content", glob="*.py")
    assert out.splitlines() == ["a.py:1:content of a.py", "src/c.py:1:content of src/c.py",
                                "src/pkg/d.py:1:content of src/pkg/d.py"]


def test_grep_path_limits_the_search(ctx: ToolContext, tree: Path) -> None:
    out = call(ctx, "grep", pattern="content", path="src/pkg/e.pyi")
    assert out == "src/pkg/e.pyi:1:content of src/pkg/e.pyi"


def test_grep_case_insensitive(ctx: ToolContext, tree: Path) -> None:
    assert call(ctx, "grep", pattern="CONTENT OF A", case_insensitive=True) == "a.py:1:content of a.py"
    assert call(ctx, "grep", pattern="CONTENT OF A").startswith("no matches")


def test_grep_invalid_regex_names_the_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid regular expression '\(unclosed'.*missing \)"):
        call(ctx, "grep", pattern="(unclosed")


def test_grep_skips_binary_files(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"needle\x00\x01")
    (tmp_path / "t.txt").write_text("needle\n")
    assert call(ctx, "grep", pattern="needle") == "t.txt:1:needle"


def test_grep_caps_the_number_of_matches(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 600)
    out = call(ctx, "grep", pattern="hit").splitlines()
    assert len(out) == 501
    assert out[-1].startswith("[100 more matching lines not shown")


def test_grep_missing_path_is_an_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"path not found"):
        call(ctx, "grep", pattern="x", path="nope")


# -- registry -----------------------------------------------------------------------------


def test_every_builtin_is_a_tool_with_an_object_schema() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == list(BUILTIN_TOOL_NAMES)
    for t in tools:
        assert isinstance(t, Tool)
        assert t.definition.input_schema["type"] == "object"
        assert t.description and all("description" in p for p in t.definition.input_schema["properties"].values())


def test_unknown_builtin_name_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match=r"unknown built-in tool 'nope'.*bash, read, write, edit, glob, grep, webfetch"):
        builtin_tool("nope")
