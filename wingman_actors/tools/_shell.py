"""The ``bash`` tool: one persistent shell per session.

The shell is a ``bash`` subprocess started lazily in the session's work_dir and kept in
``ctx.state``, so ``cd`` and exported variables carry over from one call to the next. Each
command is sent on the shell's stdin followed by a ``printf`` of a unique sentinel and the
exit code; the merged stdout+stderr is read (with a selector, no threads) until the sentinel.

The shell starts with this process's environment stripped of secrets (provider keys and
variables named ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``); :func:`bash_tool`
builds a bash tool that passes chosen ones on purpose. Known secret values are masked in
what the tool returns (:mod:`wingman_actors.tools._secrets`).
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping

from ..errors import ToolError
from ._base import FunctionTool, ToolContext
from ._secrets import ShellEnv, mask

__all__ = ["MAX_OUTPUT_CHARS", "MAX_TIMEOUT", "Shell", "bash_tool", "close_shell", "truncate_middle"]

STATE_KEY = "wingman_actors.bash.shell"
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
MAX_OUTPUT_CHARS = 30_000
# Bytes kept while a command runs: the head, and a rolling tail (the middle is dropped).
_KEEP_BYTES = 256 * 1024
# How often a run with a cancel token wakes up to look at it.
_CANCEL_CHECK_INTERVAL = 0.2


def truncate_middle(text: str, limit: int, dropped: int = 0) -> str:
    """Keep the head and the tail of ``text`` (``limit`` characters in all) around a marker.

    Args:
        text: the text to shorten.
        limit: the most characters to keep.
        dropped: characters already removed from the middle elsewhere (added to the count).

    Returns:
        ``text`` itself when short enough (and nothing was dropped), else head, a
        ``[... N characters truncated ...]`` marker, and tail.
    """
    if len(text) <= limit and not dropped:
        return text
    head_len = min(len(text), limit) // 2
    tail_len = min(len(text), limit) - head_len
    cut = len(text) - head_len - tail_len + dropped
    tail = text[len(text) - tail_len :] if tail_len else ""
    return f"{text[:head_len]}\n[... {cut} characters truncated ...]\n{tail}"


def _ansi_c_quote(command: str) -> str:
    """``command`` as a bash ``$'...'`` word: any text, even with quotes or newlines, survives."""
    out = []
    for byte in command.encode("utf-8"):
        ch = chr(byte)
        if 0x20 <= byte < 0x7F and ch not in "\\'":
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


class Shell:
    """A persistent ``bash`` process whose commands run one at a time.

    Args:
        work_dir: the shell's starting directory.
        env: what its environment is made of (default: this process's, without secrets).
    """

    def __init__(self, work_dir: str | os.PathLike[str], env: ShellEnv | None = None) -> None:
        exe = shutil.which("bash")
        if exe is None:
            raise ToolError("bash is not installed on this machine; the bash tool is unavailable", tool="bash")
        base, self.secrets = (env or ShellEnv()).build()
        environ = dict(base, PAGER="cat", GIT_PAGER="cat", TERM="dumb")
        self.proc = subprocess.Popen(
            [exe, "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=work_dir,
            env=environ,
            start_new_session=True,  # its own process group, so close() kills children too
        )
        self._lock = threading.Lock()
        self._closed = False

    @property
    def alive(self) -> bool:
        """Whether the shell process is still running."""
        return not self._closed and self.proc.poll() is None

    def run(self, command: str, timeout: float, ctx: ToolContext | None = None) -> tuple[str, int | None]:
        """Run ``command`` and return (merged output, exit code).

        The exit code is None when the command ended the shell itself (``exit``).
        Output longer than :data:`MAX_OUTPUT_CHARS` keeps its head and tail.

        Raises:
            TimeoutError: ``timeout`` seconds passed first (the caller should close the shell);
                its ``args[1]`` holds the output read so far.
            AgentError: the cancel token of ``ctx`` was cancelled (the shell is closed).
        """
        with self._lock:
            marker = f"__WINGMAN_DONE_{uuid.uuid4().hex}__"
            sentinel = re.compile(rb"\n" + marker.encode() + rb":(\d+)\n")
            script = (
                f"eval {_ansi_c_quote(command)} < /dev/null\n"
                f"printf '\\n%s:%d\\n' {marker} \"$?\"\n"
            )
            assert self.proc.stdin is not None and self.proc.stdout is not None
            try:
                self.proc.stdin.write(script.encode("utf-8"))
                self.proc.stdin.flush()
            except OSError:  # the shell died; treat as exited
                return "", None
            fd = self.proc.stdout.fileno()
            head = b""
            buf = bytearray()
            dropped = 0
            deadline = time.monotonic() + timeout
            token = ctx.token if ctx is not None else None
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        partial = mask((head + buf).decode("utf-8", "replace"), self.secrets)
                        raise TimeoutError("bash command timed out", partial)
                    wait = min(left, _CANCEL_CHECK_INTERVAL) if token is not None else left
                    if not sel.select(wait):
                        if token is not None and token.cancelled:
                            self.close()
                            token.check()
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:  # EOF: the command exited the shell
                        self.close()
                        text = mask((head + buf).decode("utf-8", "replace"), self.secrets)
                        return truncate_middle(text, MAX_OUTPUT_CHARS, dropped), None
                    start = max(0, len(buf) - len(marker) - 32)
                    buf += chunk
                    m = sentinel.search(buf, start)
                    if m:
                        text = mask((head + buf[: m.start()]).decode("utf-8", "replace"), self.secrets)
                        return truncate_middle(text, MAX_OUTPUT_CHARS, dropped), int(m.group(1))
                    if len(buf) > 4 * _KEEP_BYTES:  # bound memory: keep head, drop the middle
                        if not head:
                            head = bytes(buf[:_KEEP_BYTES])
                            del buf[:_KEEP_BYTES]
                        excess = len(buf) - _KEEP_BYTES
                        dropped += excess
                        del buf[:excess]

    def close(self) -> None:
        """Kill the shell and everything it started (its process group). Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def _shell_for(ctx: ToolContext, env: ShellEnv) -> Shell:
    shell = ctx.state.get(STATE_KEY)
    if isinstance(shell, Shell) and shell.alive:
        return shell
    shell = Shell(ctx.work_dir, env)
    ctx.state[STATE_KEY] = shell
    ctx.on_close(shell.close)
    return shell


def close_shell(ctx: ToolContext) -> None:
    """Kill the session's shell, if it has one; the next ``bash`` call starts a fresh one."""
    shell = ctx.state.pop(STATE_KEY, None)
    if isinstance(shell, Shell):
        shell.close()


def _run_bash(ctx: ToolContext, command: str, timeout: float, env: ShellEnv) -> str:
    if not 0 < timeout <= MAX_TIMEOUT:
        raise ToolError(f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds, got {timeout:g}", tool="bash")
    if not command.strip():
        raise ToolError("command is empty; give the bash command to run", tool="bash")
    if ctx.token is not None:
        ctx.token.check()
        remaining = ctx.token.remaining()
        if remaining is not None:
            timeout = min(timeout, max(remaining, 0.001))
    shell = _shell_for(ctx, env)
    try:
        output, code = shell.run(command, timeout, ctx)
    except TimeoutError as exc:
        shell.close()
        if ctx.state.get(STATE_KEY) is shell:
            del ctx.state[STATE_KEY]
        partial = exc.args[1] if len(exc.args) > 1 else ""
        tail = truncate_middle(partial, 2_000) if partial.strip() else "(none)"
        raise ToolError(
            f"command timed out after {timeout:g} s; the shell was killed and restarted, so the next "
            "call starts in a fresh shell in the working directory (earlier cd and variables are lost). "
            "Run long jobs in the background with output to a file, or pass a larger timeout.\n"
            f"Output before the timeout:\n{tail}",
            tool="bash",
        ) from None
    if code is None:
        if ctx.state.get(STATE_KEY) is shell:
            del ctx.state[STATE_KEY]
        note = "[the command exited the shell; the next call starts a fresh shell in the working directory]"
        return f"{output.rstrip()}\n{note}" if output.strip() else note
    if code != 0:
        return f"{output.rstrip()}\n[exit code: {code}]" if output.strip() else f"[exit code: {code}]"
    return output if output else "(no output)"


def bash_tool(
    *, pass_env: Iterable[str] = (), env: Mapping[str, str] | None = None, mask: Callable[[str], str] | None = None
) -> FunctionTool:
    """A ``bash`` tool whose shell gets chosen secrets on purpose.

    The built-in ``"bash"`` starts its shell with this process's environment stripped of
    secrets: provider keys and variables whose names end in ``_KEY``, ``_TOKEN``,
    ``_SECRET`` or ``_PASSWORD``. Build your own to pass some of them; the model cannot.
    The values of all secrets, passed or not, are masked in the tool's output.

    Args:
        pass_env: names of secret variables of this process to pass to the shell.
        env: variables to set in the shell (strings; they win over the process's).
        mask: also masks what the tool returns (its output, or its error's), after the
            environment's secrets are: for keys this process holds elsewhere, such as
            the keys an HTTP server stores (it passes its redactor's).

    Raises:
        ValueError: a name or value is not a valid variable.

    Example:
        >>> from wingman_actors import Agent
        >>> from wingman_actors.tools import bash_tool
        >>> ops = Agent("ops", tools=[bash_tool(pass_env=["GITHUB_TOKEN"])])
    """
    config = ShellEnv.of(pass_env, env)

    def bash(ctx: ToolContext, command: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        if mask is None:
            return _run_bash(ctx, command, timeout, config)
        try:
            return mask(_run_bash(ctx, command, timeout, config))
        except ToolError as exc:
            raise ToolError(mask(exc.message), tool="bash") from None

    bash.__doc__ = _BASH_DOC
    return FunctionTool(bash, name="bash")


_BASH_DOC = """Run a command in a persistent bash shell and return its combined stdout and stderr.

    The shell lives for the whole session and starts in the working directory: `cd`,
    exported variables, functions and aliases carry over to later calls. Commands run
    non-interactively with stdin from /dev/null, so do not start editors, pagers or
    prompts; pass flags such as `-y` instead. Output over 30,000 characters keeps its
    beginning and end with a truncation marker, so filter noisy output (e.g. with `head`,
    `tail` or `grep`). A non-zero exit code is reported after the output. If the command
    runs past the timeout the shell is killed and restarted, losing its directory and
    variables. Prefer the read, write, edit, glob and grep tools for file work.

    Args:
        command: the bash command(s) to run; may span several lines.
        timeout: seconds to wait for the command before killing the shell (default 120, at most 600).
    """

BASH = bash_tool()
"""The built-in ``bash`` tool (stateless object; the shell lives in each session's ``ctx.state``)."""
