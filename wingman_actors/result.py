"""What a session run returns: the result, its tool calls and its per-step trace."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .core import StopReason, Usage

__all__ = ["Result", "StepTrace", "ToolCall"]


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
    """One entry of a run's trace: a model call or a tool execution."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["model", "tool"]
    name: str
    step: int
    input: Any = None
    output: Any = None
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0
    is_error: bool = False


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
