"""`wingman-actors mcp serve`, driven by the SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason='needs the mcp extra: pip install -e ".[mcp]"')

from mcp import Client, StdioServerParameters

from wingman_actors.cli import main
from wingman_actors.integrations.mcp import load_tools

TOOLS_MODULE = '''
from wingman_actors import tool

@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()
'''


def _serve(work_dir: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "wingman_actors", "mcp", "serve", "--work-dir", str(work_dir), *args]
    )


def _session(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    async def go() -> tuple[list[Any], list[Any]]:
        async with Client(params, mode="legacy") as client:
            listed = (await client.list_tools()).tools
            results = [await client.call_tool(name, args) for name, args in calls]
            return listed, results

    return asyncio.run(go())


def test_the_sdk_client_lists_and_calls_built_in_tools(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    listed, (read, grep) = _session(
        _serve(tmp_path, "--tools", "read,grep,glob"),
        [("read", {"path": "notes.txt"}), ("grep", {"pattern": "beta"})],
    )
    assert [t.name for t in listed] == ["read", "grep", "glob"]
    assert "path" in listed[0].input_schema["properties"]
    assert not read.is_error and "alpha" in read.content[0].text
    assert not grep.is_error and "beta" in grep.content[0].text


def test_paths_outside_the_work_dir_are_error_results(tmp_path: Path) -> None:
    inside = tmp_path / "inside"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("hidden")
    _, (outside, unknown, bad_args) = _session(
        _serve(inside, "--tools", "read"),
        [("read", {"path": "../secret.txt"}), ("nope", {}), ("read", {"wrong": 1})],
    )
    assert outside.is_error and "hidden" not in outside.content[0].text
    assert unknown.is_error and "unknown tool 'nope'" in unknown.content[0].text
    assert bad_args.is_error and "invalid arguments for tool 'read'" in bad_args.content[0].text


def test_tools_of_a_python_module_are_served_too(tmp_path: Path) -> None:
    module = tmp_path / "my_tools.py"
    module.write_text(TOOLS_MODULE)
    listed, (shouted,) = _session(
        _serve(tmp_path, "--tools", "glob", "--tools-module", str(module)), [("shout", {"text": "hey"})]
    )
    assert [t.name for t in listed] == ["glob", "shout"]
    assert shouted.content[0].text == "HEY"


def test_an_unknown_built_in_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", "--tools", "read,frobnicate", "--work-dir", str(tmp_path)]) == 2
    assert "unknown built-in tool 'frobnicate'" in capsys.readouterr().err


def test_a_missing_work_dir_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", "--tools", "read", "--work-dir", str(tmp_path / "nope")]) == 2
    assert "is not an existing directory" in capsys.readouterr().err


def test_a_module_without_tools_is_refused(tmp_path: Path) -> None:
    module = tmp_path / "empty_tools.py"
    module.write_text("X = 1\n")
    with pytest.raises(ValueError, match="has no tools"):
        load_tools([], str(module))


def test_serving_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="no tools to serve"):
        load_tools([])


def test_a_dotted_module_name_is_found_beside_the_caller(tmp_path: Path) -> None:
    script = shutil.which("wingman-actors", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the wingman-actors console script is not installed beside this interpreter")
    (tmp_path / "team_tools.py").write_text(TOOLS_MODULE)
    params = StdioServerParameters(  # the console script, unlike `python -m`, does not put the cwd on sys.path
        command=script, args=["mcp", "serve", "--tools-module", "team_tools", "--work-dir", "."], cwd=str(tmp_path)
    )
    listed, (shouted,) = _session(params, [("shout", {"text": "ok"})])
    assert [t.name for t in listed] == ["shout"]
    assert shouted.content[0].text == "OK"
