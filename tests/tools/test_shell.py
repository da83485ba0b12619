"""The bash tool: a persistent shell per session, exit codes, timeouts, output cap, cleanup."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors._cancel import CancelToken
from wingman_actors.errors import AgentError, ErrorKind, ToolError
from wingman_actors.tools import ToolContext, builtin_tool
from wingman_actors.tools._shell import STATE_KEY, Shell, close_shell, truncate_middle

bash = builtin_tool("bash")


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ToolContext]:
    ctx = ToolContext(tmp_path)
    yield ctx
    ctx.close()


def run(ctx: ToolContext, command: str, **extra: object) -> str:
    return bash.execute({"command": command, **extra}, ctx)


def test_command_output_is_returned(ctx: ToolContext) -> None:
    assert run(ctx, "echo hello") == "hello\n"


def test_shell_starts_in_work_dir(ctx: ToolContext, tmp_path: Path) -> None:
    assert run(ctx, "pwd").strip() == str(tmp_path.resolve())


def test_stderr_is_merged_into_output(ctx: ToolContext) -> None:
    assert run(ctx, "echo out; echo err >&2") == "out\nerr\n"


def test_cd_persists_across_calls(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    run(ctx, "cd sub")
    assert run(ctx, "pwd").strip() == str((tmp_path / "sub").resolve())


def test_exported_variables_persist_across_calls(ctx: ToolContext) -> None:
    run(ctx, "export WINGMAN_TEST_VAR=persisted")
    assert run(ctx, "echo $WINGMAN_TEST_VAR") == "persisted\n"


def test_nonzero_exit_code_is_reported(ctx: ToolContext) -> None:
    out = run(ctx, "echo partial; exit_code() { return 3; }; exit_code")
    assert out == "partial\n[exit code: 3]"


def test_zero_exit_code_is_not_reported(ctx: ToolContext) -> None:
    assert "exit code" not in run(ctx, "true; echo ok")


def test_empty_output_says_so(ctx: ToolContext) -> None:
    assert run(ctx, "true") == "(no output)"


def test_quotes_newlines_and_unicode_survive(ctx: ToolContext) -> None:
    out = run(ctx, "printf '%s\\n' \"it's\" 'a \"b\"'\necho héllo ✓")
    assert out == "it's\na \"b\"\nhéllo ✓\n"


def test_syntax_error_does_not_break_the_shell(ctx: ToolContext) -> None:
    out = run(ctx, 'echo "unterminated')
    assert "[exit code: 2]" in out
    assert run(ctx, "echo still here") == "still here\n"


def test_commands_read_empty_stdin(ctx: ToolContext) -> None:
    assert run(ctx, "cat") == "(no output)"


def test_timeout_kills_shell_and_next_call_gets_a_fresh_one(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    run(ctx, "cd sub; export GONE=1")
    first = ctx.state[STATE_KEY]
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"timed out after 0\.5 s.*restarted") as info:
        run(ctx, "echo before; sleep 5", timeout=0.5)
    assert time.monotonic() - started < 2.0
    assert "before" in str(info.value)
    assert STATE_KEY not in ctx.state
    assert not first.alive
    assert run(ctx, "pwd; echo ${GONE:-unset}") == f"{tmp_path.resolve()}\nunset\n"


def test_exit_ends_the_shell_and_next_call_starts_a_new_one(ctx: ToolContext) -> None:
    run(ctx, "export KEPT=1")
    out = run(ctx, "echo bye; exit 4")
    assert out.startswith("bye\n") and "fresh shell" in out
    assert run(ctx, "echo ${KEPT:-unset}") == "unset\n"


def test_long_output_keeps_head_and_tail(ctx: ToolContext) -> None:
    out = run(ctx, "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END")
    assert len(out) < 31_000
    assert out.startswith("START\n") and out.rstrip().endswith("END")
    assert "characters truncated ...]" in out


def test_timeout_above_maximum_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"at most 600"):
        run(ctx, "echo hi", timeout=601)


def test_missing_command_is_an_invalid_argument(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid arguments for tool 'bash'.*command"):
        bash.execute({}, ctx)


def test_unknown_argument_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid arguments"):
        bash.execute({"command": "true", "cwd": "/"}, ctx)


def test_cancelled_token_stops_before_running(tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel("user stop")
    ctx = ToolContext(tmp_path, token=token)
    try:
        with pytest.raises(AgentError) as info:
            run(ctx, "touch ran")
        assert info.value.kind is ErrorKind.CANCELLED
        assert not (tmp_path / "ran").exists()
    finally:
        ctx.close()


def test_close_kills_the_shell(ctx: ToolContext) -> None:
    run(ctx, "true")
    shell = ctx.state[STATE_KEY]
    assert isinstance(shell, Shell)
    ctx.close()
    assert not shell.alive
    assert shell.proc.returncode is not None


def test_close_shell_helper_drops_the_shell(ctx: ToolContext) -> None:
    run(ctx, "export X=1")
    close_shell(ctx)
    assert STATE_KEY not in ctx.state
    assert run(ctx, "echo ${X:-unset}") == "unset\n"


def test_truncate_middle_leaves_short_text_alone() -> None:
    assert truncate_middle("abc", 10) == "abc"


def test_truncate_middle_counts_the_cut_characters() -> None:
    out = truncate_middle("a" * 10 + "b" * 10, 10)
    assert out == "aaaaa\n[... 10 characters truncated ...]\nbbbbb"
