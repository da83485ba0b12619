"""Middleware stages, order, modification and halting."""

from __future__ import annotations

import logging
import time

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.agents._middleware import (
    Halt,
    LoggingMiddleware,
    Middleware,
    OutputGuardrail,
    RunContext,
    TimeoutMiddleware,
)
from wingman_actors.agents._result import Result
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def one_tool_then(text: str) -> list[object]:
    return [InferenceResponse.of_tool_calls([("c1", "echo", {"text": "hi"})]), text]


class Recorder(Middleware):
    def __init__(self, tag: str, log: list[str]) -> None:
        self.tag, self.log = tag, log

    def before_agent(self, ctx: RunContext, message: Message) -> None:
        self.log.append(f"{self.tag}:before_agent")

    def before_model(self, ctx: RunContext, request: InferenceRequest) -> None:
        self.log.append(f"{self.tag}:before_model:{ctx.step}")

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> None:
        self.log.append(f"{self.tag}:after_model:{ctx.step}")

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> None:
        self.log.append(f"{self.tag}:before_tool:{call.name}")

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> None:
        self.log.append(f"{self.tag}:after_tool:{call.name}")

    def after_agent(self, ctx: RunContext, result: Result) -> None:
        self.log.append(f"{self.tag}:after_agent")


def test_six_stages_run_in_loop_order_and_list_order() -> None:
    log: list[str] = []
    agent = Agent(
        "a", provider=ScriptedProvider(one_tool_then("done")), tools=[echo],
        middleware=[Recorder("A", log), Recorder("B", log)],
    )
    Session(agent).run("go")
    assert log == [
        "A:before_agent", "B:before_agent",
        "A:before_model:1", "B:before_model:1", "A:after_model:1", "B:after_model:1",
        "A:before_tool:echo", "B:before_tool:echo", "A:after_tool:echo", "B:after_tool:echo",
        "A:before_model:2", "B:before_model:2", "A:after_model:2", "B:after_model:2",
        "A:after_agent", "B:after_agent",
    ]


def test_before_agent_can_rewrite_the_user_message() -> None:
    class Prefix(Middleware):
        def before_agent(self, ctx: RunContext, message: Message) -> Message:
            return Message.user("[ctx] " + message.text)

    provider = ScriptedProvider(["ok"])
    Session(Agent("a", provider=provider, middleware=[Prefix()])).run("hello")
    assert provider.requests[0].messages[-1].text == "[ctx] hello"


def test_before_model_can_modify_the_request() -> None:
    class Cool(Middleware):
        def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest:
            return request.model_copy(update={"temperature": 0.0})

    provider = ScriptedProvider(["ok"])
    Session(Agent("a", provider=provider, middleware=[Cool()])).run("hello")
    assert provider.requests[0].temperature == 0.0


def test_after_model_can_rewrite_the_response() -> None:
    class Upper(Middleware):
        def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse:
            return InferenceResponse.of_text(response.text.upper())

    result = Session(Agent("a", provider=ScriptedProvider(["quiet"]), middleware=[Upper()])).run("x")
    assert result.response == "QUIET"


def test_before_tool_returning_a_result_skips_the_tool() -> None:
    ran: list[str] = []

    @tool
    def danger() -> str:
        """Must not run."""
        ran.append("ran")
        return "boom"

    class Deny(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock:
            return ContentBlock.tool_result_block(call.id or "", "denied by policy", is_error=True)

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "danger", {})]), "ok"])
    result = Session(Agent("a", provider=provider, tools=[danger], middleware=[Deny()])).run("go")
    assert ran == []
    assert result.tool_calls[0].output == "denied by policy" and result.tool_calls[0].is_error


def test_after_tool_can_redact_a_result() -> None:
    class Redact(Middleware):
        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock:
            return result.model_copy(update={"content": "[redacted]"})

    provider = ScriptedProvider(one_tool_then("ok"))
    Session(Agent("a", provider=provider, tools=[echo], middleware=[Redact()])).run("go")
    assert provider.requests[1].messages[-1].content[0].content == "[redacted]"


def test_after_agent_can_replace_the_result() -> None:
    class Stamp(Middleware):
        def after_agent(self, ctx: RunContext, result: Result) -> Result:
            return result.model_copy(update={"response": result.response + " (checked)"})

    result = Session(Agent("a", provider=ScriptedProvider(["fine"]), middleware=[Stamp()])).run("x")
    assert result.response == "fine (checked)"


def test_halt_in_a_hook_stops_the_run_before_the_model_is_called() -> None:
    class Stop(Middleware):
        def before_model(self, ctx: RunContext, request: InferenceRequest) -> None:
            raise Halt("budget exhausted")

    provider = ScriptedProvider(["never"])
    with pytest.raises(Halt, match="budget exhausted") as info:
        Session(Agent("a", provider=provider, middleware=[Stop()])).run("x")
    assert info.value.kind is ErrorKind.INVALID
    assert provider.calls == 0


def test_output_guardrail_halts_a_rejected_answer() -> None:
    guard = OutputGuardrail(lambda text: "password" not in text or "mentions a password")
    with pytest.raises(Halt, match="mentions a password"):
        Session(Agent("a", provider=ScriptedProvider(["the password is 123"]), middleware=[guard])).run("x")


def test_output_guardrail_passes_an_accepted_answer() -> None:
    guard = OutputGuardrail(lambda text: "password" not in text)
    result = Session(Agent("a", provider=ScriptedProvider(["all good"]), middleware=[guard])).run("x")
    assert result.response == "all good"


def test_timeout_middleware_fails_a_slow_run_with_timeout_kind() -> None:
    provider = ScriptedProvider(["late"], latency_s=5.0)
    t0 = time.monotonic()
    with pytest.raises(AgentError) as info:
        Session(Agent("a", provider=provider, middleware=[TimeoutMiddleware(0.2)])).run("x")
    assert info.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - t0 < 2.0


def test_timeout_middleware_refuses_non_positive_seconds() -> None:
    with pytest.raises(ValueError, match="seconds > 0"):
        TimeoutMiddleware(0)


def test_logging_middleware_logs_every_stage(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wingman_actors.agents._session")
    agent = Agent("logger", provider=ScriptedProvider(one_tool_then("done")), tools=[echo],
                  middleware=[LoggingMiddleware()])
    Session(agent).run("go")
    text = caplog.text
    for needle in ("run starts", "step 1: model call", "tool echo", "tool echo ok", "run done in 2 step(s)"):
        assert needle in text


def test_cancel_reaches_a_run_whose_deadline_a_middleware_tightened() -> None:
    import threading

    provider = ScriptedProvider(["late"], latency_s=5.0)
    session = Session(Agent("a", provider=provider, middleware=[TimeoutMiddleware(30)]))
    timer = threading.Timer(0.1, session.cancel)
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(AgentError) as info:
            session.run("x")
    finally:
        timer.join()
    assert info.value.kind is ErrorKind.CANCELLED
    assert time.monotonic() - t0 < 2.0
