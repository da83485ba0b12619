"""Middleware: hooks at the six stages of a session run.

Stages, in the order a run meets them::

    before_agent(ctx, message)        -> Message | None        (once, before the user message is added)
    before_model(ctx, request)        -> InferenceRequest | None   (each step)
    after_model(ctx, response)        -> InferenceResponse | None  (each step)
    before_tool(ctx, call)            -> ContentBlock | None    (each tool call; a tool_result
                                                                 block short-circuits the tool)
    after_tool(ctx, call, result)     -> ContentBlock | None    (each tool call)
    after_agent(ctx, result)          -> Result | None          (once, at the end)

A hook returns None to leave things as they are, or a replacement. To stop the run, raise
:class:`Halt` (the run fails with it). Hooks of several middleware run in list order.

Example:
    >>> class Shout(Middleware):
    ...     def after_model(self, ctx, response):
    ...         return response.model_copy(update={"content": [
    ...             b.model_copy(update={"text": b.text.upper()}) if b.type == "text" else b
    ...             for b in response.content]})
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._cancel import CancelToken
from ..core import ContentBlock, InferenceRequest, InferenceResponse, Message, Usage
from ..errors import AgentError, ErrorKind

if TYPE_CHECKING:
    from ._agent import Agent
    from ._result import Result

__all__ = [
    "Halt",
    "LoggingMiddleware",
    "Middleware",
    "OutputGuardrail",
    "RunContext",
    "TimeoutMiddleware",
]


class Halt(AgentError):
    """Raised by a middleware hook to stop the run. ``kind`` defaults to ``invalid``."""

    def __init__(self, reason: str, *, kind: ErrorKind = ErrorKind.INVALID) -> None:
        super().__init__(f"run halted by middleware: {reason}", kind=kind)
        self.reason = reason


_NO_USAGE = Usage()  # immutable, so every context may start from the same one
NO_METADATA: Mapping[str, Any] = types.MappingProxyType({})  # a run given no metadata (read-only, shared)


@dataclass(slots=True)
class RunContext:
    """What middleware and an agent's ``prepare`` function see of the run in progress.

    Attributes:
        agent: the agent being run.
        session_id: the session's id.
        history: the session's history (read it; replace messages through hook returns).
        token: the run's cancel token (:meth:`limit_time` tightens its deadline).
        step: the current step (model call number, from 1).
        usage: usage so far in this run.
        state: free storage for middleware, per run.
        metadata: what the caller passed as ``Session.run(message, metadata={...})`` (a
            fleet task's ``data``), read-only; empty when nothing was passed.
        depth: how many delegations separate this run from the root agent's (0 for a run
            no ``delegate`` call started; 1 for a task a root agent handed out...).
        parent_session_id: the delegating session's id, for a delegated run; else None.
    """

    agent: Agent
    session_id: str
    history: list[Message]
    token: CancelToken
    step: int = 0
    usage: Usage = _NO_USAGE
    state: dict[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=lambda: NO_METADATA)
    depth: int = 0
    parent_session_id: str | None = None

    @property
    def messages(self) -> list[Message]:
        """The conversation so far (the session's history, the current message included)."""
        return self.history

    def limit_time(self, seconds: float) -> None:
        """Make the run time out after ``seconds`` from now (or earlier if already due)."""
        self.token = CancelToken(timeout=seconds, parent=self.token)


class Middleware:
    """Base class: override the stages you need. Every hook is a no-op by default."""

    def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
        return None

    def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
        return None

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
        return None

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        return None

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
        return None

    def after_agent(self, ctx: RunContext, result: Result) -> Result | None:
        return None


class TimeoutMiddleware(Middleware):
    """Fail the run with ``AgentError(timeout)`` once ``seconds`` have passed.

    Checked at every model and tool boundary, and it cuts short provider retry waits.
    """

    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError(f"TimeoutMiddleware needs seconds > 0, got {seconds}")
        self.seconds = seconds

    def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
        ctx.limit_time(self.seconds)
        return None


class LoggingMiddleware(Middleware):
    """Log every stage through the standard ``logging`` module.

    Args:
        logger: the logger (default ``wingman_actors.agents._session``).
        level: the level of stage records (errors are not logged here; they propagate).
        max_chars: longest text quoted in a record.
    """

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO, max_chars: int = 200) -> None:
        self.log = logger or logging.getLogger("wingman_actors.agents._session")
        self.level = level
        self.max_chars = max_chars

    def _clip(self, text: str) -> str:
        return text if len(text) <= self.max_chars else text[: self.max_chars] + "..."

    def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
        self.log.log(self.level, "[%s] run starts: %s", ctx.agent.name, self._clip(message.text))
        return None

    def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
        self.log.log(
            self.level, "[%s] step %d: model call, %d message(s), %d tool(s)",
            ctx.agent.name, ctx.step, len(request.messages), len(request.tools),
        )
        return None

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
        self.log.log(
            self.level, "[%s] step %d: %s, %d tool call(s), %d+%d tokens",
            ctx.agent.name, ctx.step, response.stop_reason, len(response.tool_calls),
            response.usage.input_tokens, response.usage.output_tokens,
        )
        return None

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        self.log.log(self.level, "[%s] tool %s(%s)", ctx.agent.name, call.name, self._clip(str(call.input)))
        return None

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
        status = "error" if result.is_error else "ok"
        self.log.log(
            self.level, "[%s] tool %s %s: %s", ctx.agent.name, call.name, status, self._clip(result.content or "")
        )
        return None

    def after_agent(self, ctx: RunContext, result: Result) -> Result | None:
        self.log.log(
            self.level, "[%s] run done in %d step(s), %d tokens",
            ctx.agent.name, result.steps, result.usage.total_tokens,
        )
        return None


class OutputGuardrail(Middleware):
    """Check the final answer; halt the run when the check fails.

    ``check`` receives the final response text and returns True/None when it is
    acceptable, or False or a string (the reason) when it is not.

    Example:
        >>> no_secrets = OutputGuardrail(lambda text: "password" not in text.lower() or "mentions a password")
    """

    def __init__(self, check: Callable[[str], bool | str | None], *, name: str = "output guardrail") -> None:
        self.check = check
        self.name = name

    def after_agent(self, ctx: RunContext, result: Result) -> Result | None:
        verdict = self.check(result.response)
        if verdict is None or verdict is True:
            return None
        reason = verdict if isinstance(verdict, str) else "the answer was rejected"
        raise Halt(f"{self.name}: {reason}")
