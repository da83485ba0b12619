"""A run's turn in the session's history: how a run opens it, how a run that raised leaves
it, the error of a structured run whose model refused to answer, and the warning of a run
the step limit cut short.

A run that fails (a provider error, a timeout, a cancel, a middleware ``Halt``) before the
model answered leaves no trace: the history is as it was before the run, so running the
same message again sends it once. A run that fails after the model answered keeps its turn
(the tools it asked for ran: the model should know), and each tool call left without a
result is answered with an error result, so the next run sends a history a provider
accepts.

Used by :class:`~wingman_actors.agents._session.Session`; not a public API.
"""

from __future__ import annotations

import logging

from ..core import InferenceResponse, Message, Role
from ..errors import AgentError, ErrorKind
from ._tool_steps import close_unanswered

__all__ = ["begin_turn", "end_unfinished", "refused", "warn_step_limit"]

log = logging.getLogger("wingman_actors.agents")

_UNANSWERED = "Error: this tool call was never answered (a new message came first); its result is unknown"


def begin_turn(history: list[Message], msg: Message) -> int:
    """Add the run's user message ``msg`` to ``history``; returns its index.

    A given history ending in tool calls nobody answered (a stored conversation): a provider
    refuses a call without its result, so each is answered as unknown before the message."""
    if history and history[-1].role is Role.ASSISTANT and history[-1].tool_calls:
        close_unanswered(history, None, _UNANSWERED)
    index = len(history)
    history.append(msg)
    return index


def end_unfinished(history: list[Message], start: int, failure: BaseException | None) -> None:
    """After a run that stopped without a result (not suspended; ``failure``: why, if
    known) and whose turn began at ``history[start]``: without a model answer in the turn,
    the history goes back to how it was before the run; else the turn's open tool calls get
    error results."""
    if not any(m.role is Role.ASSISTANT for m in history[start:]):
        del history[start:]
        return
    close_unanswered(history, failure)


def refused(agent: str, response: InferenceResponse) -> AgentError:
    """The error of a run with an output schema whose model refused to answer
    (``InferenceResponse.refused``): at once, without the corrective retry (the model declined; it did not
    answer badly), and not a JSON error about the refusal's text. Not retryable: the same
    request is refused again."""
    said = response.text.strip()
    return AgentError(
        f"agent {agent!r}: the model refused to answer"
        + (f", saying {said[:300]!r}" if said else ", without a word")
        + ", so there is no output to match the output schema; change the request, or catch the refusal",
        kind=ErrorKind.INVALID,
    )


def warn_step_limit(agent: str, limit: int, default: bool) -> None:
    """Say (once per run, as a warning) that the step limit ends a run whose model still calls
    tools: its answer comes from one last call without them, which only
    ``Result.max_steps_reached`` would tell otherwise."""
    log.warning(
        "agent %r reached max_steps=%d%s with tool calls still coming: its answer comes from one last call "
        "without tools (Result.max_steps_reached); raise Agent(max_steps=...) if the task needs more steps",
        agent, limit, " (the default)" if default else "",
    )
