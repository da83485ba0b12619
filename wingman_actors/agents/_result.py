"""What a session run returns: the result, its tool calls and its per-step trace.

A tool that runs other agents (delegation) reports their runs with
:func:`report_child_run`; the session hangs them under that tool call's
:class:`StepTrace` (``children``) and adds their usage to its own, so a result is a tree
a user can walk (:meth:`Result.walk`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core import Message, StopReason, Usage

__all__ = [
    "ChildRun", "Result", "SpentOnFailure", "StepTrace", "ToolCall", "charge", "collect_child_runs", "report_child_run", "report_live_child",
    "spent",
]


_NOTHING_SPENT = Usage()


def charge(error: BaseException, usage: Usage | None) -> None:
    """Say on ``error``, with which a run failed, what the run had spent (``usage``), when
    ``error`` is ours to annotate: an :class:`~wingman_actors.errors.AgentError`'s or
    ``FleetItemsError``'s ``usage``. Any other exception (a user's, a vendor SDK's) is left
    as it was raised: what its run spent travels beside it (:class:`SpentOnFailure`)."""
    from ..errors import AgentError, FleetItemsError

    if isinstance(error, AgentError | FleetItemsError):
        error.usage = None if usage is not None and usage == _NOTHING_SPENT else usage


def spent(error: BaseException) -> Usage | None:
    """What the run that failed with ``error`` had spent (see :func:`charge`), looking
    through its causes (a timeout wraps the session's own error); None when unknown.
    Only our own errors say it: another exception's ``usage`` attribute is not ours to read."""
    from ..errors import AgentError, FleetItemsError

    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 8:
        if isinstance(current, AgentError | FleetItemsError) and current.usage is not None:
            return current.usage
        current, seen = current.__cause__, seen + 1
    return None


class SpentOnFailure(Exception):
    """Internal: an attempt of an agent or fleet node failed with ``error`` (an exception
    the library does not own, so it is not annotated) after spending ``usage`` on model
    calls. A node's ``process`` raises it; the actor that called ``process`` unwraps it at
    once and hands ``error`` on as the attempt's error, ``usage`` beside it (it crosses a
    Ray call intact: it pickles as its two arguments)."""

    def __init__(self, error: Exception, usage: Usage) -> None:
        super().__init__(error, usage)
        self.error = error
        self.usage = usage

    @staticmethod
    def wrap(error: Exception, usage: Usage | None) -> Exception:
        """``error`` with ``usage`` beside it, or ``error`` itself when it says its usage
        itself (our own errors) or nothing was spent."""
        from ..errors import AgentError, FleetItemsError

        if usage is None or usage == _NOTHING_SPENT or isinstance(error, AgentError | FleetItemsError):
            return error
        return SpentOnFailure(error, usage)


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
        spent: for a child that did not finish (failed or cancelled), the tokens its model
            calls had spent by then (they were paid for); empty for one that finished.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    agent: str
    task: str
    result: Result | None = None
    error: str | None = None
    depth: int = 1
    messages: list[Message] = Field(default_factory=list)
    spent: Usage = Field(default_factory=Usage)

    @property
    def usage(self) -> Usage:
        """Tokens the child used (its own children's included), a child that failed too."""
        return self.result.usage if self.result is not None else self.spent


class Result(BaseModel):
    """The outcome of :meth:`Session.run`.

    Attributes:
        response: the final answer's text.
        output: the validated object when the agent has an ``output_schema``, else the text.
        tool_calls: every tool call of the run, in the order the model made them.
        usage: tokens summed over every model call of the run (of a suspended run: those
            made before it suspended; its resumed result counts the whole turn).
        steps: how many model calls the run made (of a suspended run: so far).
        stop_reason: why the last model call stopped.
        refused: the last model call was a refusal (``InferenceResponse.refused``; its
            ``stop_reason`` is ``end_turn``).
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
    refused: bool = False
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

_collector: contextvars.ContextVar[collect_child_runs | None] = contextvars.ContextVar(
    "wingman_child_runs", default=None
)

Spender = Callable[[], Usage | None]
"""What a child run has spent on model calls so far (a child session's ``_spent_so_far``)."""


def report_child_run(child: ChildRun) -> None:
    """Attach ``child`` to the tool call being executed (no-op outside a session's tool call).

    Call it from the thread (or context) that runs the tool.
    """
    collector = _collector.get()
    if collector is not None:
        collector.runs.append(child)


def report_live_child(spent_so_far: Spender) -> None:
    """Say, as a child run starts inside the tool call being executed, how to read what it
    has spent so far (no-op outside a session's tool call). Until the tool step ends and
    its children's usage is added to the run's, the delegating session counts it in its
    own ``_spent_so_far``: a run cut meanwhile (its timeout, its node's, a cancel) counts
    the model calls its children had made."""
    collector = _collector.get()
    if collector is not None and collector.live is not None:
        collector.live.append(spent_so_far)


class collect_child_runs:  # lower-case: used like a function, `with collect_child_runs() as runs:`
    """Collect the :class:`ChildRun` objects reported inside the ``with`` block, and the
    live children's spenders into ``live`` (the tool step's, read by its session).

    The session wraps each tool execution in one; a nested block (a child's own tool
    call) collects separately, so each run sees only its direct children.
    """

    __slots__ = ("_reset", "live", "runs")

    def __init__(self, live: list[Spender] | None = None) -> None:
        self.runs: list[ChildRun] = []
        self.live = live

    def __enter__(self) -> list[ChildRun]:
        self._reset = _collector.set(self)
        return self.runs

    def __exit__(self, *exc: object) -> None:
        _collector.reset(self._reset)
