"""A compactor that fails does not fail the run: the turns are trimmed (left out without a
summary), as DESIGN says, no other provider is asked for a summary, and the trace says so."""

from __future__ import annotations

from collections.abc import Iterator

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import estimate_request
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider

BUDGET = 6_000
STEPS = 20


@tool
def fetch(page: int) -> str:
    """Fetch a page of a long document."""
    return f"page {page}: " + "lorem ipsum dolor sit amet " * 80


def _agent_turns() -> Iterator[InferenceResponse | str]:
    for i in range(1, STEPS):
        yield InferenceResponse.of_tool_calls([(f"call-{i}", "fetch", {"page": i})], text=f"reading page {i}")
    yield "all pages read"


def _broken_compactor() -> ScriptedProvider:
    return ScriptedProvider([RuntimeError("compactor down")], cycle=True)


def _reader(compactor: ScriptedProvider) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(list(_agent_turns()))
    return Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=compactor), provider


def test_a_failing_compactor_falls_back_to_trimming_without_asking_the_agents_provider() -> None:
    agent, provider = _reader(_broken_compactor())

    result = Session(agent).run("Read the pages.")

    assert result.response == "all pages read"
    assert len(provider.requests) == STEPS  # one call a step, each answered by the agent's own turn
    assert not any("Summarise the conversation" in m.text for r in provider.requests for m in r.messages)
    assert all(estimate_request(r) <= BUDGET for r in provider.requests)


def test_the_trace_says_the_compactor_failed_and_what_was_done_instead() -> None:
    agent, _ = _reader(_broken_compactor())

    result = Session(agent).run("Read the pages.")

    notes = [t for t in result.trace if t.name == "compact failed"]
    assert notes and all(t.is_error for t in notes)
    assert notes[0].output.startswith("compactor failed (RuntimeError: compactor down); leaving ")
    assert notes[0].output.endswith(" message(s) out without a summary")


def test_a_compactor_that_fails_once_summarises_at_its_next_compaction() -> None:
    compactor = ScriptedProvider([RuntimeError("compactor down"), "the pages so far"], cycle=True)
    agent, provider = _reader(compactor)

    result = Session(agent).run("Read the pages.")

    assert result.response == "all pages read"
    assert [t.name for t in result.trace if t.name == "compact failed"]
    assert any("the pages so far" in m.text for r in provider.requests for m in r.messages)


def test_a_cancelled_compaction_stops_the_run_rather_than_falling_back() -> None:
    compactor = ScriptedProvider([AgentError("cancelled by caller", kind=ErrorKind.CANCELLED)], cycle=True)
    agent, provider = _reader(compactor)

    try:
        Session(agent).run("Read the pages.")
    except AgentError as exc:
        assert exc.kind is ErrorKind.CANCELLED
    else:
        raise AssertionError("the run went on after its compaction was cancelled")
    assert len(provider.requests) < STEPS
