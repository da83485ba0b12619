"""A model's reasoning in what a run records: a session's trace (the model step's
``thinking``), sync and async, and a formation's agent node events (``agent_thinking``)."""

from __future__ import annotations

import asyncio

from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.core import ContentBlock, InferenceResponse
from wingman_actors.formation.events import FormationEvent
from wingman_actors.testing import ScriptedProvider

REASONING = "27 * 453 = 12231"


def thought(text: str = "12231") -> InferenceResponse:
    return InferenceResponse(content=[ContentBlock.thinking_block(REASONING, signature="sig"),
                                      ContentBlock.text_block(text)])


@tool
def multiply(a: int, b: int) -> str:
    """Multiply two integers."""
    return str(a * b)


def test_a_model_step_of_the_trace_carries_the_reasoning_of_its_answer() -> None:
    result = Session(Agent("calc", provider=ScriptedProvider([thought()]))).run("What is 27 * 453?")

    assert (result.trace[0].thinking, result.trace[0].output) == (REASONING, "12231")


def test_a_model_step_without_reasoning_has_no_thinking() -> None:
    result = Session(Agent("calc", provider=ScriptedProvider(["12231"]))).run("What is 27 * 453?")

    assert result.trace[0].thinking is None


def test_each_model_step_of_a_tool_loop_keeps_its_own_reasoning() -> None:
    call = InferenceResponse(content=[
        ContentBlock.thinking_block("I should use the tool.", signature="sig"),
        ContentBlock.tool_use_block("t1", "multiply", {"a": 27, "b": 453}),
    ], stop_reason="tool_use")
    agent = Agent("calc", provider=ScriptedProvider([call, thought()]), tools=[multiply])

    result = Session(agent).run("What is 27 * 453?")

    assert [(e.kind, e.thinking) for e in result.trace] == [
        ("model", "I should use the tool."), ("tool", None), ("model", REASONING)]


def test_encrypted_reasoning_shows_in_the_trace_as_redacted() -> None:
    answer = InferenceResponse(content=[ContentBlock.thinking_block(REASONING, signature="sig"),
                                        ContentBlock.redacted_thinking_block("EmwKAhgB"),
                                        ContentBlock.text_block("12231")])

    result = Session(Agent("calc", provider=ScriptedProvider([answer]))).run("What is 27 * 453?")

    assert result.trace[0].thinking == f"{REASONING}\n\n[redacted]"


def test_an_async_session_streamed_records_the_reasoning_in_its_trace() -> None:
    async def run() -> str | None:
        stream = Session(Agent("calc", provider=ScriptedProvider([thought()]))).astream("What is 27 * 453?")
        async for _ in stream:
            pass
        return stream.result().trace[0].thinking

    assert asyncio.run(run()) == REASONING


def test_an_agent_node_reports_its_reasoning_as_agent_thinking_events() -> None:
    seen: list[FormationEvent] = []
    agent = Agent("calc", provider=ScriptedProvider([thought()]))

    Formation("reason").add_agent("calc", agent).run("What is 27 * 453?", on_event=seen.append)

    thinking = [e for e in seen if e.type == "agent_thinking"]
    assert "".join(e.data["text"] for e in thinking) == REASONING
    assert {e.node for e in thinking} == {"calc"}
    assert "".join(e.data["text"] for e in seen if e.type == "agent_text") == "12231"


def test_agent_thinking_events_come_before_the_answer_text_of_the_same_step() -> None:
    seen: list[str] = []
    agent = Agent("calc", provider=ScriptedProvider([thought()]))

    Formation("reason").add_agent("calc", agent).run("What is 27 * 453?", on_event=lambda e: seen.append(e.type))

    assert seen.index("agent_thinking") < seen.index("agent_text")
