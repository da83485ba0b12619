"""Per request: Agent(prepare=...) picks each call's provider, tools and instructions;
run metadata reaches RunContext.metadata and ToolContext.metadata."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from wingman_actors import Agent, Fleet, Session, Task, tool
from wingman_actors.agents import Prepared, RunContext
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

seen_contexts: list[ToolContext] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def whoami(ctx: ToolContext) -> str:
    """Say which agent and tenant this is."""
    seen_contexts.append(ctx)
    return f"{ctx.agent} for {ctx.metadata.get('tenant')}"


def _calls(*specs: tuple[str, str, dict[str, object]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


def test_prepare_sees_the_step_the_messages_and_the_metadata() -> None:
    seen: list[tuple[int, list[str], dict[str, Any]]] = []

    def prepare(ctx: RunContext) -> None:
        seen.append((ctx.step, [m.text for m in ctx.messages], dict(ctx.metadata)))

    agent = Agent("a", provider=ScriptedProvider([_calls(("c1", "add", {"a": 1, "b": 2})), "3"]), tools=[add],
                  prepare=prepare)
    Session(agent).run("1+2?", metadata={"tenant": "acme"})

    assert [(step, texts[0], meta) for step, texts, meta in seen] == [
        (1, "1+2?", {"tenant": "acme"}), (2, "1+2?", {"tenant": "acme"}),
    ]


def test_prepared_instructions_replace_the_agents_for_that_call() -> None:
    provider = ScriptedProvider(["ok"])
    agent = Agent("a", instructions="Default.", provider=provider,
                  prepare=lambda ctx: Prepared(instructions=f"Serve {ctx.metadata['tenant']}."))
    Session(agent).run("hi", metadata={"tenant": "acme"})

    assert provider.requests[0].instructions == "Serve acme."


def test_prepared_model_answers_instead_of_the_agents_provider() -> None:
    default, strong = ScriptedProvider(["cheap"]), ScriptedProvider(["strong"])
    agent = Agent("a", provider=default,
                  prepare=lambda ctx: Prepared(model=strong) if ctx.metadata.get("vip") else None)

    assert Session(agent).run("hi", metadata={"vip": True}).response == "strong"
    assert Session(agent).run("hi").response == "cheap"


def test_prepared_tools_are_an_allow_list_of_the_agents_tools() -> None:
    provider = ScriptedProvider([_calls(("c1", "add", {"a": 1, "b": 2})), "no tools"])
    agent = Agent("a", provider=provider, tools=[add, whoami], prepare=lambda ctx: Prepared(tools=["whoami"]))
    result = Session(agent).run("1+2?")

    assert [t.name for t in provider.requests[0].tools] == ["whoami"]
    assert result.tool_calls[0].is_error  # add was not offered: the call is refused
    assert "unknown tool 'add'" in result.tool_calls[0].output


def test_prepared_tools_may_offer_a_tool_the_agent_does_not_have() -> None:
    provider = ScriptedProvider([_calls(("c1", "add", {"a": 1, "b": 2})), "3"])
    agent = Agent("a", provider=provider, prepare=lambda ctx: Prepared(tools=[add]))
    result = Session(agent).run("1+2?")

    assert result.tool_calls[0].output == "3"


def test_prepare_naming_a_tool_the_agent_lacks_fails_the_run_naming_its_tools() -> None:
    agent = Agent("a", provider=ScriptedProvider(["ok"]), tools=[add], prepare=lambda ctx: Prepared(tools=["nope"]))
    with pytest.raises(AgentError, match=r"\['nope'\].*its tools: \['add'\]"):
        Session(agent).run("hi")


def test_prepare_returning_something_else_fails_the_run_clearly() -> None:
    agent = Agent("a", provider=ScriptedProvider(["ok"]), prepare=lambda ctx: "gpt-4")  # type: ignore[arg-type,return-value]
    with pytest.raises(AgentError, match="prepare must return a Prepared"):
        Session(agent).run("hi")


def test_prepared_model_name_goes_with_the_request_to_the_agents_own_provider() -> None:
    provider = ScriptedProvider(["big answer", "small answer"], model="small")
    agent = Agent("a", provider=provider,
                  prepare=lambda ctx: Prepared(model="big") if ctx.metadata.get("vip") else None)

    vip = Session(agent).run("hi", metadata={"vip": True})
    plain = Session(agent).run("hi")

    assert [r.model for r in provider.requests] == ["big", None]
    assert (vip.response, plain.response) == ("big answer", "small answer")  # one script, in order
    assert (vip.trace[0].name, plain.trace[0].name) == ("big", "small")


def test_prepared_model_name_reaches_the_request_of_an_async_run() -> None:
    provider = ScriptedProvider(["ok"])
    agent = Agent("a", provider=provider, prepare=lambda ctx: Prepared(model="big"))

    assert asyncio.run(Session(agent).arun("hi")).response == "ok"
    assert provider.requests[0].model == "big"


class _FixedModelProvider:
    """A provider of the user's own that does not read a request's model."""

    id = "fixed"
    model = "fixed-model"

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        return InferenceResponse.of_text("ok")

    def stream_inference(self, request: InferenceRequest) -> Any:
        raise NotImplementedError


def test_prepared_model_name_is_refused_for_a_provider_that_cannot_take_it() -> None:
    agent = Agent("a", provider=_FixedModelProvider(), prepare=lambda ctx: Prepared(model="big"))

    with pytest.raises(AgentError, match=r"'big' by name.*_FixedModelProvider cannot take a model per request.*"
                                         r"Prepared\(model=new_provider"):
        Session(agent).run("hi")


def test_prepared_refuses_a_model_that_is_neither_a_name_nor_a_provider() -> None:
    with pytest.raises(TypeError, match=r"takes a model name or a provider, got int"):
        Prepared(model=42)  # type: ignore[arg-type]


def test_prepared_refuses_an_empty_model_name() -> None:
    with pytest.raises(ValueError, match="empty model name"):
        Prepared(model=" ")


def test_an_agent_refuses_a_prepare_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="prepare must be a function"):
        Agent("a", prepare="fast")  # type: ignore[arg-type]


def test_an_agent_refuses_an_async_prepare_naming_the_fix() -> None:
    # Called before each model call, and its answer used at once: an ``async def`` would
    # only hand back a coroutine that is never awaited.
    async def choose(ctx: RunContext) -> Prepared | None:
        return None

    with pytest.raises(TypeError, match="prepare must be a plain function, not async def"):
        Agent("a", prepare=choose)  # type: ignore[arg-type]


def test_tools_see_the_run_metadata_and_the_agents_name() -> None:
    agent = Agent("helper", provider=ScriptedProvider([_calls(("c1", "whoami", {})), "done"]), tools=[whoami])
    result = Session(agent).run("who?", metadata={"tenant": "acme"})

    assert result.tool_calls[0].output == "helper for acme"


def test_run_metadata_is_read_only() -> None:
    captured: list[RunContext] = []
    agent = Agent("a", provider=ScriptedProvider(["ok"]), prepare=lambda ctx: captured.append(ctx))  # type: ignore[func-returns-value]
    Session(agent).run("hi", metadata={"tenant": "acme"})

    with pytest.raises(TypeError):
        captured[0].metadata["tenant"] = "other"  # type: ignore[index]


def test_metadata_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="metadata must be a dict"):
        Session(Agent("a", provider=ScriptedProvider(["ok"]))).run("hi", metadata=["tenant"])  # type: ignore[arg-type]


def test_a_fleet_tasks_data_is_its_runs_metadata() -> None:
    agent = Agent("helper", provider=ScriptedProvider([_calls(("c1", "whoami", {})), "done"], cycle=True),
                  tools=[whoami])
    results = Fleet(agent, [Task("who?", data={"tenant": "acme"}), Task("who?", data=7)], max_workers=1).run()

    assert [r.result.tool_calls[0].output for r in results if r.result is not None] == [
        "helper for acme", "helper for None",
    ]


def test_a_fleet_tasks_data_that_is_not_a_dict_arrives_under_data() -> None:
    got: list[Any] = []
    agent = Agent("a", provider=ScriptedProvider(["ok"]), prepare=lambda ctx: got.append(dict(ctx.metadata)))  # type: ignore[func-returns-value]
    Fleet(agent, [Task("hi", data=7)]).run()

    assert got == [{"data": 7}]
