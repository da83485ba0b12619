"""Behaviours of IBM BeeAI framework's file-system and scratchpad tool tests (i-am-bee/beeai-framework
python/tests/tools/filesystem/test_read_edit.py, test_glob.py, test_grep.py,
tests/tools/test_scratchpad.py), ported to our built-in ``read``, ``write``, ``edit``, ``glob`` and
``grep`` tools and the blackboard's ``team_state_*`` tools, as an agent calls them: through a session
whose model (the scripted provider) makes the calls, in a ``work_dir``.

Deliberately different (each test that touches one says so):
- BeeAI's read returns the file's text and needs an absolute path; ours numbers the lines (as
  ``cat -n``) and takes paths relative to the session's work dir, refusing any outside it.
- BeeAI's glob leaves hidden files out unless asked; ours lists them (``.github/``, ``.env.example``
  matter to a coding agent) and skips only tool and dependency folders (.git, node_modules, .venv...).
- BeeAI's edit has ``mode="overwrite"``; ours is the ``write`` tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wingman_actors import Agent, Formation, Session
from wingman_actors.agents import ToolCall
from wingman_actors.core import InferenceResponse
from wingman_actors.orchestration import Blackboard, blackboard_tools
from wingman_actors.testing import ScriptedProvider


def use(work_dir: Path, name: str, **args: Any) -> ToolCall:
    """The one call of tool ``name`` with ``args`` a model makes in a session in ``work_dir``."""
    model = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", name, args)]), "done"])
    with Session(Agent("coder", provider=model, tools=[name]), work_dir=work_dir) as session:
        [made] = session.run("go").tool_calls
    return made


def tree(root: Path) -> Path:
    """BeeAI's fs_tree fixture (test_glob.py and test_grep.py together)."""
    (root / "a.py").write_text("x = 1\ny = 'hello world'\nz = 3\n")
    (root / "b.py").write_text("greeting = 'Hello'\n")
    (root / "c.txt").write_text("hello again\n")
    (root / ".hidden.py").write_text("")
    (root / "sub").mkdir()
    (root / "sub" / "d.py").write_text("")
    (root / ".git").mkdir()
    (root / ".git" / "e.py").write_text("hello from git\n")
    return root


# -- read ------------------------------------------------------------------------------------------


def test_read_gives_the_files_lines_numbered(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::test_read_local_default.
    Ours differ: the lines come numbered, so the model can cite and continue from them."""
    (tmp_path / "a.txt").write_text("line1\nline2\nline3\n")
    made = use(tmp_path, "read", path="a.txt")
    assert (made.is_error, made.output) == (False, "     1\tline1\n     2\tline2\n     3\tline3")


def test_read_from_a_line_reads_at_most_limit_lines_and_says_how_to_go_on(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::test_read_line_and_limit
    (line=2, limit=2 gives b and c)."""
    (tmp_path / "a.txt").write_text("a\nb\nc\nd\n")
    made = use(tmp_path, "read", path="a.txt", offset=2, limit=2)
    assert made.output.splitlines()[:2] == ["     2\tb", "     3\tc"]
    assert "offset=4" in made.output


def test_reading_a_missing_file_is_an_error_result_that_says_how_to_find_files(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::test_read_missing_file
    ("File not found")."""
    made = use(tmp_path, "read", path="missing.txt")
    assert made.is_error and "file not found" in made.output and "glob" in made.output


def test_reading_a_path_outside_the_work_dir_is_refused(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::
    test_read_requires_absolute_path (a path the tool will not take is a validation error). Ours differ:
    paths are relative to the work dir, and one leading out of it is refused."""
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("s3cret\n")
    for path in ("../secret.txt", str(tmp_path / "secret.txt")):
        made = use(work, "read", path=path)
        assert made.is_error and "s3cret" not in made.output


# -- write and edit ------------------------------------------------------------------------------------


def test_write_replaces_a_files_content(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::test_edit_overwrite
    (mode="overwrite"). Ours: the write tool."""
    (tmp_path / "a.txt").write_text("old content\n")
    made = use(tmp_path, "write", path="a.txt", content="new content\n")
    assert not made.is_error and (tmp_path / "a.txt").read_text() == "new content\n"


def test_edit_replaces_the_one_occurrence_of_the_text(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::
    test_edit_replace_single_occurrence."""
    (tmp_path / "a.py").write_text("x = 1\ny = 'hello'\n")
    made = use(tmp_path, "edit", path="a.py", old_string="hello", new_string="world")
    assert not made.is_error and (tmp_path / "a.py").read_text() == "x = 1\ny = 'world'\n"


def test_edit_of_text_found_twice_is_refused_with_the_count_and_leaves_the_file(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::
    test_edit_replace_occurrence_mismatch_fails ("found 2", the file unchanged)."""
    (tmp_path / "a.py").write_text("a\na\n")
    made = use(tmp_path, "edit", path="a.py", old_string="a", new_string="b")
    assert made.is_error and "found 2 times" in made.output and "replace_all" in made.output
    assert (tmp_path / "a.py").read_text() == "a\na\n"


def test_edit_of_several_lines_copied_from_read_works_in_a_file_with_crlf_line_endings(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_read_edit.py::
    test_local_default_in_new_context (read, then replace what was read) on a file with Windows line
    endings. ``read`` shows the lines without their ``\\r``; the edit tool tells the model to copy the
    text from read's output, so ``"one\\ntwo"`` must find the file's ``"one\\r\\ntwo"``; the file keeps
    its CRLF line endings. It was refused as "old_string not found"."""
    (tmp_path / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    shown = use(tmp_path, "read", path="crlf.txt").output
    assert "\r" not in shown
    made = use(tmp_path, "edit", path="crlf.txt", old_string="one\ntwo", new_string="uno\ndos")
    assert (made.is_error, made.output.startswith("replaced 1")) == (False, True)
    assert (tmp_path / "crlf.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_a_write_whose_path_climbs_out_of_the_work_dir_is_refused_and_a_subdirectory_is_made(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_storage_path_traversal.py::
    test_upload_path_traversal_blocked, test_download_path_traversal_blocked ("Path traversal detected")
    and test_download_subdirectory_filename_works."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(tmp_path)
    for path in ("../../../pwned_by_traversal.txt", "link/pwned_by_traversal.txt"):
        made = use(work, "write", path=path, content="malicious payload")
        assert made.is_error and "outside the working directory" in made.output
    assert not list(tmp_path.rglob("pwned_by_traversal.txt"))

    made = use(work, "write", path="subdir/output.txt", content="subdir content")
    assert not made.is_error and (work / "subdir" / "output.txt").read_text() == "subdir content"


# -- glob and grep ------------------------------------------------------------------------------------


def test_a_recursive_glob_finds_files_at_every_depth_hidden_ones_included_but_not_in_git(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_glob.py::test_recursive_glob
    (``**/*.py`` finds a.py, b.py and sub/d.py) and test_hidden_files_excluded_by_default. Ours differ:
    hidden files are listed; tool folders such as .git are skipped."""
    made = use(tree(tmp_path), "glob", pattern="**/*.py")
    assert made.output.splitlines() == [".hidden.py", "a.py", "b.py", "sub/d.py"]


def test_grep_finds_the_lines_matching_in_every_file_with_their_numbers(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_grep.py::test_stdlib_fallback
    (matches in a.py and c.txt, none from .git)."""
    made = use(tree(tmp_path), "grep", pattern="hello")
    assert made.output.splitlines() == ["a.py:2:y = 'hello world'", "c.txt:1:hello again"]


def test_grep_ignoring_case_also_finds_capitalised_matches(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_grep.py::test_case_insensitive_stdlib."""
    made = use(tree(tmp_path), "grep", pattern="hello", case_insensitive=True)
    assert "b.py:1:greeting = 'Hello'" in made.output.splitlines()


def test_grep_takes_patterns_that_begin_with_hyphens_as_patterns(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/filesystem/test_grep.py::
    test_ripgrep_leading_hyphen_pattern (``--help``, ``--version``, ``-needle`` are searched for, not
    taken as options)."""
    for pattern in ("--help", "--version", "-needle"):
        (tmp_path / "usage.txt").write_text(f"usage: app {pattern}\n")
        made = use(tmp_path, "grep", pattern=pattern)
        assert made.output == f"usage.txt:1:usage: app {pattern}"


# -- the scratchpad: our blackboard tools --------------------------------------------------------------


def board_calls(board: Blackboard, *calls: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    """The tool calls ``calls`` (name, input) a model makes one per step with ``board``'s tools."""
    steps = [InferenceResponse.of_tool_calls([(f"c{i}", name, args)]) for i, (name, args) in enumerate(calls)]
    model = ScriptedProvider([*steps, "done"])
    return Session(Agent("a", provider=model, tools=board.tools("team"))).run("go").tool_calls


def test_an_empty_scratchpad_lists_no_keys_and_reading_a_key_says_which_there_are() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_scratchpad.py::test_read_empty_scratchpad."""
    listed, missing = board_calls(Blackboard(), ("team_state_list", {}), ("team_state_get", {"key": "city"}))
    assert (listed.is_error, listed.output) == (False, "[]")
    assert missing.is_error and "no key 'city'" in missing.output


def test_writes_to_the_scratchpad_merge_and_read_back_as_json() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_scratchpad.py::test_write_and_read,
    test_write_key_value_pairs and test_write_merge_key_value_pairs (city, then date: both are kept)."""
    board = Blackboard()
    *_, listed, date = board_calls(board, ("team_state_set", {"key": "city", "value": "Boston"}),
                                   ("team_state_set", {"key": "date", "value": {"day": "2025-01-28"}}),
                                   ("team_state_list", {}), ("team_state_get", {"key": "date"}))
    assert (listed.output, date.output) == ('["city", "date"]', '{"day": "2025-01-28"}')
    assert (board.get("city"), board.get("date")) == ("Boston", {"day": "2025-01-28"})


def test_a_scratchpad_write_without_its_key_is_an_error_result_naming_it() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_scratchpad.py::test_write_without_content_fails,
    test_invalid_operation and test_missing_operation_field."""
    board = Blackboard()
    [bad] = board_calls(board, ("team_state_set", {"value": "x"}))
    assert bad.is_error and "key" in bad.output
    assert board.keys() == []


def test_each_run_of_a_formation_may_have_its_own_scratchpad_shared_by_its_agents() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_scratchpad.py::test_get_scratchpad_for_session
    and test_clear_session_class_method (a scratchpad per session). Ours: a run's blackboard, shared by
    its agent nodes (``blackboard_tools`` act on the board of the run they are in); two runs, two boards."""
    writes = iter(["Boston", "Lima"])

    def writer_model(request: Any) -> InferenceResponse | str:
        if request.messages[-1].tool_results_blocks:
            return "written"
        return InferenceResponse.of_tool_calls([("w", "team_state_set", {"key": "city", "value": next(writes)})])

    def reader_model(request: Any) -> InferenceResponse | str:
        results = request.messages[-1].tool_results_blocks
        if results:
            return f"city is {results[0].content}"
        return InferenceResponse.of_tool_calls([("r", "team_state_get", {"key": "city"})])

    flow = (Formation("team")
            .add_agent("writer", Agent("writer", provider=ScriptedProvider([writer_model], cycle=True),
                                       tools=blackboard_tools("team")))
            .add_agent("reader", Agent("reader", provider=ScriptedProvider([reader_model], cycle=True),
                                       tools=blackboard_tools("team")))
            .connect("writer", "reader"))
    first, second = Blackboard(), Blackboard()
    with flow.start() as running:
        one = running.submit("go", blackboard=first).result(timeout=30)
        two = running.submit("go", blackboard=second).result(timeout=30)

    assert (one.output, two.output) == ('city is "Boston"', 'city is "Lima"')
    assert (first.get("city"), second.get("city")) == ("Boston", "Lima")
