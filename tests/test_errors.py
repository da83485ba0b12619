"""The error hierarchy: what each error says and carries."""

from __future__ import annotations

import copy
import pickle

import pytest

from wingman_actors.errors import (
    AgentError,
    ErrorKind,
    FormationRuntimeError,
    FormationSetupError,
    ToolError,
    WingmanError,
)


def test_every_error_derives_from_wingman_error() -> None:
    for cls in (AgentError, ToolError, FormationSetupError, FormationRuntimeError):
        assert issubclass(cls, WingmanError)


def test_agent_error_str_includes_provider_kind_status_and_retry_after() -> None:
    err = AgentError("slow down", kind=ErrorKind.RATE_LIMIT, status=429, retry_after=1.5, provider="openai")

    assert str(err) == "slow down [provider=openai, kind=rate_limit, status=429, retry_after=1.5s]"


def test_agent_error_str_leaves_out_unknown_facts() -> None:
    assert str(AgentError("boom")) == "boom [kind=agent]"


def test_agent_error_accepts_a_kind_given_as_a_string() -> None:
    assert AgentError("x", kind="network").kind is ErrorKind.NETWORK  # type: ignore[arg-type]


def test_agent_error_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValueError):
        AgentError("x", kind="weird")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "retryable"),
    [
        (ErrorKind.AGENT, True),
        (ErrorKind.RATE_LIMIT, True),
        (ErrorKind.NETWORK, True),
        (ErrorKind.TIMEOUT, True),
        (ErrorKind.INVALID, False),
        (ErrorKind.TOOL, False),
        (ErrorKind.CANCELLED, False),
    ],
)
def test_retryable_follows_the_kind(kind: ErrorKind, retryable: bool) -> None:
    assert AgentError("x", kind=kind).retryable is retryable
    assert kind.retryable is retryable


@pytest.mark.parametrize(
    ("status", "retryable"), [(500, True), (503, True), (529, True), (400, False), (401, False)]
)
def test_agent_kind_errors_are_retryable_only_for_5xx(status: int, retryable: bool) -> None:
    assert AgentError("x", kind=ErrorKind.AGENT, status=status).retryable is retryable


def test_a_rate_limit_with_status_429_is_retryable() -> None:
    assert AgentError("x", kind=ErrorKind.RATE_LIMIT, status=429).retryable


def test_agent_error_pickles_with_its_attributes() -> None:
    err = AgentError("slow down", kind=ErrorKind.RATE_LIMIT, status=429, retry_after=2.0, provider="openai")

    again = pickle.loads(pickle.dumps(err))

    assert type(again) is AgentError
    assert (again.message, again.kind, again.status, again.retry_after, again.provider) == (
        "slow down",
        ErrorKind.RATE_LIMIT,
        429,
        2.0,
        "openai",
    )
    assert str(again) == str(err)


class _Halted(AgentError):
    """A subclass with an attribute of its own, like a middleware's halt error."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"halted: {reason}", kind=ErrorKind.INVALID)
        self.reason = reason


def test_an_agent_error_subclass_pickles_with_its_own_attributes() -> None:
    again = pickle.loads(pickle.dumps(_Halted("guardrail")))

    assert (type(again), again.reason, again.kind, again.message) == (
        _Halted,
        "guardrail",
        ErrorKind.INVALID,
        "halted: guardrail",
    )


def test_agent_error_copies_with_its_attributes() -> None:
    err = AgentError("x", kind=ErrorKind.NETWORK, status=None, provider="ollama")

    again = copy.copy(err)

    assert (again.kind, again.provider) == (ErrorKind.NETWORK, "ollama")


def test_tool_error_has_kind_tool_and_its_tool_name() -> None:
    err = ToolError("no such file", tool="read")

    assert (err.kind, err.tool, err.retryable) == (ErrorKind.TOOL, "read", False)
    assert isinstance(err, AgentError)


def test_tool_error_str_is_just_its_message() -> None:
    assert str(ToolError("no such file")) == "no such file"


def test_tool_error_pickles_with_its_tool_name() -> None:
    again = pickle.loads(pickle.dumps(ToolError("no such file", tool="read")))

    assert (type(again), again.message, again.tool, again.kind) == (
        ToolError,
        "no such file",
        "read",
        ErrorKind.TOOL,
    )


def test_formation_setup_error_lists_every_problem() -> None:
    err = FormationSetupError("pipeline", ["node 'a' has no agent", "edge a->b: unknown node 'b'"])

    assert err.formation == "pipeline"
    assert err.problems == ["node 'a' has no agent", "edge a->b: unknown node 'b'"]
    assert str(err) == (
        "formation 'pipeline' is not valid (2 problem(s)):\n"
        "  - node 'a' has no agent\n"
        "  - edge a->b: unknown node 'b'"
    )


def test_formation_setup_error_pickles_with_its_problems() -> None:
    again = pickle.loads(pickle.dumps(FormationSetupError("f", ["p1", "p2"])))

    assert (again.formation, again.problems) == ("f", ["p1", "p2"])


def test_formation_runtime_error_carries_node_attempts_run_id_and_outputs() -> None:
    outputs = {"fetch": "page"}
    err = FormationRuntimeError(
        "node 'summarise' failed", node="summarise", attempts=3, run_id="r1", outputs=outputs
    )
    outputs["later"] = "mutation"

    assert (err.message, err.node, err.attempts, err.run_id) == (
        "node 'summarise' failed",
        "summarise",
        3,
        "r1",
    )
    assert err.outputs == {"fetch": "page"}
    assert str(err) == "node 'summarise' failed"


def test_formation_runtime_error_defaults_to_a_run_level_failure() -> None:
    err = FormationRuntimeError("run timed out")

    assert (err.node, err.attempts, err.run_id, err.outputs) == (None, 0, None, {})


def test_formation_runtime_error_pickles_with_its_attributes() -> None:
    err = FormationRuntimeError("failed", node="n", attempts=2, run_id="r", outputs={"a": 1})

    again = pickle.loads(pickle.dumps(err))

    assert (again.node, again.attempts, again.run_id, again.outputs) == ("n", 2, "r", {"a": 1})


def test_a_chained_cause_is_kept() -> None:
    try:
        try:
            raise ConnectionResetError("reset by peer")
        except OSError as exc:
            raise AgentError("network down", kind=ErrorKind.NETWORK) from exc
    except AgentError as err:
        assert isinstance(err.__cause__, ConnectionResetError)
