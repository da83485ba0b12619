"""Library results as JSON-ready values."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError

from ..agents._result import ChildRun, Result, ToolCall
from ..core import Usage
from ..errors import AgentError
from ..formation._result import ZERO_USAGE

__all__ = ["delegation_tree", "error_kind", "jsonable", "result_fields", "tool_call_dict", "usage_dict"]

_ANY: TypeAdapter[Any] = TypeAdapter(Any)


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: pydantic models dumped, unknown objects as ``str``."""
    try:
        return _ANY.dump_python(value, mode="json")
    except (PydanticSerializationError, TypeError, ValueError):
        pass
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    return str(value)


_NO_USAGE = {**Usage().model_dump(), "total_tokens": 0}


def usage_dict(usage: Usage | None) -> dict[str, int]:
    """Token counts plus ``total_tokens``."""
    if usage is None or usage is ZERO_USAGE:  # (most nodes, and runs without agents)
        return dict(_NO_USAGE)
    return {**usage.model_dump(), "total_tokens": usage.total_tokens}


def tool_call_dict(call: ToolCall) -> dict[str, Any]:
    """One tool call: id, name (also as the reference's ``tool_name``), input, output, is_error."""
    data = call.model_dump(mode="json")
    data["tool_name"] = call.name
    return data


def result_fields(result: Result) -> dict[str, Any]:
    """The fields of a message response: response, output, tool_calls, usage, steps."""
    return {
        "response": result.response,
        "output": jsonable(result.output),
        "tool_calls": [tool_call_dict(c) for c in result.tool_calls],
        "usage": usage_dict(result.usage),
        "steps": result.steps,
        "delegations": delegation_tree(result),
        "status": result.status,
        "interrupt": jsonable(result.interrupt),
    }


def delegation_tree(result: Result) -> list[dict[str, Any]]:
    """The runs ``result``'s tool calls delegated, each with its own (agent, task, depth,
    response or error, usage, delegations)."""
    return [_child(child) for child in result.child_runs]


def _child(child: ChildRun) -> dict[str, Any]:
    done = child.result
    return {
        "agent": child.agent, "task": child.task, "depth": child.depth,
        "response": None if done is None else done.response, "error": child.error,
        "usage": usage_dict(child.usage), "delegations": [] if done is None else delegation_tree(done),
    }


def error_kind(exc: BaseException) -> str:
    """An AgentError's kind, else ``"error"``."""
    return exc.kind.value if isinstance(exc, AgentError) else "error"
