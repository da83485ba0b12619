"""What a session run returns: the result, its tool calls and its per-step trace.

A tool that runs other agents (delegation) reports their runs with
:func:`report_child_run`; the session hangs them under that tool call's
:class:`StepTrace` (``children``) and adds their usage to its own, so a result is a tree
a user can walk (:meth:`Result.walk`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core import Message, StopReason, Usage

__all__ = [
    "ChildRun", "Result", "StepTrace", "ToolCall", "charge", "collect_child_runs", "report_child_run", "spent",
]


_NOTHING_SPENT = Usage()


def charge(error: BaseException, usage: Usage | None) -> None:
    """Say on ``error``, with which a run failed, what the run had spent (``usage``): an
    :class:`~wingman_actors.errors.AgentError`'s or ``FleetItemsError``'s ``usage``; any other
    exception gets a ``usage`` attribute when it has none of its own (the failure path
    only: a traced node counts the tokens of its failed attempts, :func:`spent`)."""
    from ..errors import AgentError, FleetItemsError

    if usage is not None and usage == _NOTHING_SPENT:
        usage = None
    if isinstance(error, AgentError | FleetItemsError):
        error.usage = usage
    elif usage is not None and not hasattr(error, "usage"):
        try:
            error.usage = usage  # type: ignore[attr-defined]
        except Exception:  # a class that refuses new attributes: the tokens go uncounted
            pass


def spent(error: BaseException) -> Usage | None:
    """What the run that failed with ``error`` had spent (see :func:`charge`), looking
    through its causes (a timeout wraps the session's own error); None when unknown."""
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 8:
        usage = getattr(current, "usage", None)
        if isinstance(usage, Usage):
            return usage
        current, seen = current.__cause__, seen + 1
    return None


class ToolCall(BaseModel):
    """One tool call made during a run, with its outcome."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    output: str = ""
    is_error: bool = False
    duration_s: float = 0.0


class StepTrace(BaseModel):
    """One entry of a run's trace: a model call or a tool execution.

    A model call's ``output`` is its answer's text, and ``thinking`` its reasoning
    (:attr:`InferenceResponse.thinking <wingman_actors.core.InferenceResponse.thinking>`:
    the text of its thinking blocks, ``[redacted]`` for an encrypted one), None when it gave
    none; its ``usage.reasoning_tokens`` counts the reasoning where the provider reports it.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["model", "tool"]
    name: str
    step: int
    input: Any = None
    output: Any = None
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0
    is_error: bool = False
    thinking: str | None = None
    children: list[ChildRun] = Field(default_factory=list)
    """Runs this tool call started (delegated agents), in the order it reported them."""


class ChildRun(BaseModel):
    """A run of another agent started by a tool call, e.g. one task of ``delegate``.

    Attributes:
        agent: the name of the agent that ran.
        task: the message it was given.
        result: its result, when it finished.
        error: why it did not finish (failed or cancelled), else None.
        depth: its delegation depth (1 for a task handed out by a root agent).
        messages: its conversation; each message's ``sender`` says who wrote it.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    agent: str
    task: str
    result: Result | None = None
    error: str | None = None
    depth: int = 1
    messages: list[Message] = Field(default_factory=list)

    @property
    def usage(self) -> Usage:
        """Tokens the child used (its own children's included); none when it failed."""
        return self.result.usage if self.result is not None else Usage()


class Result(BaseModel):
    """The outcome of :meth:`Session.run`.

    Attributes:
        response: the final answer's text.
        output: the validated object when the agent has an ``output_schema``, else the text.
        tool_calls: every tool call of the run, in the order the model made them.
        usage: tokens summed over every model call of the run.
        steps: how many model calls the run made.
        stop_reason: why the last model call stopped.
        max_steps_reached: True when the step limit forced a final call without tools.
        trace: per-step records (kind, name, input, output, usage, duration).
        duration_s: wall time of the run.
        status: ``"succeeded"``, or ``"suspended"`` when a tool of a session with a store
            called ``interrupt()`` (or ``ask_human``): the run waits for
            :meth:`Session.resume <wingman_actors.Session.resume>`.
        interrupt: the payload ``interrupt()`` was called with, when suspended.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    response: str = ""
    output: Any = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    steps: int = 0
    stop_reason: StopReason = "end_turn"
    max_steps_reached: bool = False
    trace: list[StepTrace] = Field(default_factory=list)
    duration_s: float = 0.0
    status: Literal["succeeded", "suspended"] = "succeeded"
    interrupt: Any = None

    @property
    def child_runs(self) -> list[ChildRun]:
        """The runs this run's tool calls started (direct children only), in trace order."""
        return [child for entry in self.trace for child in entry.children]

    def walk(self) -> Iterator[ChildRun]:
        """Every run below this one, depth first (children, then their children...)."""
        for child in self.child_runs:
            yield child
            if child.result is not None:
                yield from child.result.walk()


StepTrace.model_rebuild()
ChildRun.model_rebuild()

_collector: contextvars.ContextVar[list[ChildRun] | None] = contextvars.ContextVar(
    "wingman_child_runs", default=None
)


def report_child_run(child: ChildRun) -> None:
    """Attach ``child`` to the tool call being executed (no-op outside a session's tool call).

    Call it from the thread (or context) that runs the tool.
    """
    runs = _collector.get()
    if runs is not None:
        runs.append(child)


class collect_child_runs:  # lower-case: used like a function, `with collect_child_runs() as runs:`
    """Collect the :class:`ChildRun` objects reported inside the ``with`` block.

    The session wraps each tool execution in one; a nested block (a child's own tool
    call) collects separately, so each run sees only its direct children.
    """

    __slots__ = ("_reset", "runs")

    def __init__(self) -> None:
        self.runs: list[ChildRun] = []

    def __enter__(self) -> list[ChildRun]:
        self._reset = _collector.set(self.runs)
        return self.runs

    def __exit__(self, *exc: object) -> None:
        _collector.reset(self._reset)
