"""The bash tool keeps secrets: its shell starts without provider keys and ``*_KEY``,
``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD`` variables unless built to pass them, and known
secret values are masked in its output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors.errors import ToolError
from wingman_actors.tools import ToolContext, bash_tool, builtin_tool
from wingman_actors.tools._secrets import is_secret_name

SECRET = "sk-test-0123456789abcdef"


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ToolContext]:
    ctx = ToolContext(tmp_path)
    yield ctx
    ctx.close()


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-github-token-value")
    monkeypatch.setenv("db_password", "hunter2-but-longer")
    monkeypatch.setenv("PLAIN_SETTING", "visible-value")


def run(ctx: ToolContext, command: str, tool: object = None) -> str:
    bash = tool if tool is not None else builtin_tool("bash")
    return bash.execute({"command": command}, ctx)  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "GITHUB_TOKEN", "db_password"])
def test_the_built_in_bash_starts_without_secret_variables(ctx: ToolContext, secrets: None, name: str) -> None:
    assert run(ctx, f'echo "[${{{name}:-unset}}]"') == "[unset]\n"


def test_the_built_in_bash_keeps_other_variables(ctx: ToolContext, secrets: None) -> None:
    assert run(ctx, 'echo "$PLAIN_SETTING"') == "visible-value\n"


def test_env_in_the_shell_prints_no_secret(ctx: ToolContext, secrets: None) -> None:
    out = run(ctx, "env")
    assert "OPENAI_API_KEY" not in out and "GITHUB_TOKEN" not in out and SECRET not in out


def test_a_bash_tool_built_with_pass_env_passes_that_variable_only(ctx: ToolContext, secrets: None) -> None:
    bash = bash_tool(pass_env=["GITHUB_TOKEN"])
    assert run(ctx, 'echo "${#GITHUB_TOKEN} ${OPENAI_API_KEY:-unset}"', bash) == "22 unset\n"


def test_known_secret_values_are_masked_in_the_output(ctx: ToolContext, secrets: None) -> None:
    bash = bash_tool(pass_env=["GITHUB_TOKEN"])
    out = run(ctx, f'echo "$GITHUB_TOKEN"; echo "{SECRET}"', bash)
    assert out == "[secret masked]\n[secret masked]\n"


def test_secrets_set_through_env_are_passed_and_masked(ctx: ToolContext) -> None:
    bash = bash_tool(env={"DEPLOY_KEY": "deploy-key-value-123"})
    assert run(ctx, 'test -n "$DEPLOY_KEY" && echo "$DEPLOY_KEY"', bash) == "[secret masked]\n"


def test_a_string_for_pass_env_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match=r"list of variable names, e\.g\. \['GITHUB_TOKEN'\]"):
        bash_tool(pass_env="GITHUB_TOKEN")


def test_a_bad_variable_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"pass_env: 'A=B' is not an environment variable name"):
        bash_tool(pass_env=["A=B"])


@pytest.mark.parametrize(
    ("name", "secret"),
    [("ANTHROPIC_API_KEY", True), ("aws_secret_access_key", True), ("SESSION_TOKEN", True),
     ("APP_SECRET", True), ("PGPASSWORD", False), ("DB_PASSWORD", True), ("HOME", False), ("OLLAMA_HOST", False)],
)
def test_secret_names_are_recognised_by_their_ending(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_a_mask_given_to_bash_tool_masks_keys_held_outside_the_environment(ctx: ToolContext) -> None:
    bash = bash_tool(mask=lambda text: text.replace("stored-key-value", "[hidden]"))
    assert run(ctx, "echo stored-key-value", bash) == "[hidden]\n"


def test_a_mask_given_to_bash_tool_masks_the_output_a_timeout_error_quotes(ctx: ToolContext) -> None:
    bash = bash_tool(mask=lambda text: text.replace("stored-key-value", "[hidden]"))
    with pytest.raises(ToolError) as info:
        bash.execute({"command": "echo stored-key-value; sleep 5", "timeout": 0.3}, ctx)
    assert "[hidden]" in info.value.message and "stored-key-value" not in info.value.message
