"""Tokens a delegated child spent count in its parent's usage even when the parent's run
is cut (its timeout, its node's timeout, its run cancelled) while the child still works:
the child's model calls were paid for."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider

BOSS = Usage(input_tokens=100, output_tokens=10)
CHILD = Usage(input_tokens=7, output_tokens=3)


@pytest.fixture
def gate() -> Iterator[tuple[threading.Event, threading.Event]]:
    entered, release = threading.Event(), threading.Event()
    try:
        yield entered, release
    finally:
        release.set()


def boss_whose_child_gets_stuck(entered: threading.Event, release: threading.Event) -> Agent:
    """A boss that delegates one task (spending BOSS); the child's first model call spends
    CHILD and asks for a tool that hangs until ``release``."""

    @tool
    def wait_for_data() -> str:
        """Wait for the data to arrive."""
        entered.set()
        release.wait(10)
        return "late data"

    def child_reply(request: InferenceRequest) -> InferenceResponse:
        if len(request.messages) == 1:
            return InferenceResponse(content=[ContentBlock.tool_use_block("w1", "wait_for_data", {})],
                                     stop_reason="tool_use", usage=CHILD)
        return InferenceResponse.of_text("child done", usage=CHILD)

    registry = AgentRegistry()
    registry.register(Agent("helper", provider=ScriptedProvider([child_reply], cycle=True), tools=[wait_for_data]),
                      description="fetches data")
    delegate = InferenceResponse(
        content=[ContentBlock.tool_use_block("d1", "delegate", {"tasks": [{"agent": "helper", "task": "fetch"}]})],
        stop_reason="tool_use", usage=BOSS)
    return Agent("boss", provider=ScriptedProvider([delegate, InferenceResponse.of_text("done", usage=BOSS)]),
                 delegates=registry)


def test_a_session_timing_out_while_its_child_works_counts_the_childs_tokens_in_its_error(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    with Session(boss_whose_child_gets_stuck(entered, release)) as session, pytest.raises(AgentError) as caught:
        session.run("go", timeout=0.5)
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert caught.value.usage == BOSS + CHILD


def test_an_agent_node_timing_out_while_its_child_works_counts_the_childs_tokens(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    formation = Formation("f").add_agent("lead", boss_whose_child_gets_stuck(entered, release), timeout=0.5,
                                         on_error="skip")
    result = formation.run("go")
    assert result.nodes["lead"].status == "skipped"
    assert result.nodes["lead"].usage == BOSS + CHILD
    assert result.usage == BOSS + CHILD


def test_an_agent_node_cut_by_a_cancel_while_its_child_works_counts_the_childs_tokens(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    formation = Formation("f").add_agent("lead", boss_whose_child_gets_stuck(entered, release))
    events: list[object] = []
    with formation.start(on_event=events.append) as running:
        future = running.submit("go")
        assert entered.wait(5)
        time.sleep(0.05)
        assert running.cancel(future.run_id) is True
    cancelled = next(e for e in events if getattr(e, "type", None) == "run_cancelled")
    trace = cancelled.data["nodes"]["lead"]  # type: ignore[attr-defined]
    assert trace.status == "cancelled"
    assert trace.usage == BOSS + CHILD


def test_an_async_session_timing_out_while_its_child_works_counts_the_childs_tokens_in_its_error(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate

    async def main() -> AgentError:
        with Session(boss_whose_child_gets_stuck(entered, release)) as session:
            try:
                await session.arun("go", timeout=0.5)
            except AgentError as exc:
                return exc
        raise AssertionError("the run did not time out")

    error = asyncio.run(main())
    assert error.kind is ErrorKind.TIMEOUT
    assert error.usage == BOSS + CHILD


def test_a_delegated_child_that_fails_after_a_model_call_still_counts_its_tokens_in_the_parents_usage() -> None:
    @tool
    def look() -> str:
        """Look around."""
        return "nothing"

    asks = InferenceResponse(content=[ContentBlock.tool_use_block("l1", "look", {})], stop_reason="tool_use",
                             usage=CHILD)
    refused = AgentError("the provider refused the second call", kind=ErrorKind.INVALID)
    registry = AgentRegistry()
    registry.register(Agent("helper", provider=ScriptedProvider([asks, refused]), tools=[look]),
                      description="fails after one call")
    delegate = InferenceResponse(
        content=[ContentBlock.tool_use_block("d1", "delegate", {"tasks": [{"agent": "helper", "task": "fetch"}]})],
        stop_reason="tool_use", usage=BOSS)
    boss = Agent("boss", provider=ScriptedProvider([delegate, InferenceResponse.of_text("done", usage=BOSS)]),
                 delegates=registry)
    result = Session(boss).run("go")
    (child,) = result.child_runs
    assert child.error is not None and child.result is None
    assert child.usage == CHILD
    assert result.usage == BOSS + BOSS + CHILD
