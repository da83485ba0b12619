"""A compactor that fails does not fail the run: the agent's provider summarises instead,
then plain trimming, and the trace says so."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import estimate_request
from wingman_actors.core import InferenceRequest, InferenceResponse
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


def _main(summaries: bool) -> tuple[ScriptedProvider, list[InferenceRequest]]:
    """The agent's provider: its turns, and (when ``summaries``) summaries when asked for one."""
    turns = _agent_turns()
    asked: list[InferenceRequest] = []

    def reply(request: InferenceRequest) -> InferenceResponse | str | BaseException:
        if request.messages[0].text.endswith("Summarise the conversation above."):
            asked.append(request)
            return "the main provider's summary" if summaries else RuntimeError("main provider down too")
        return next(turns)

    script: list[Callable[[InferenceRequest], object]] = [reply]
    return ScriptedProvider(script, cycle=True), asked  # type: ignore[arg-type]


def _broken_compactor() -> ScriptedProvider:
    return ScriptedProvider([RuntimeError("compactor down")], cycle=True)


def test_a_failing_compactor_falls_back_to_the_agents_provider() -> None:
    provider, asked = _main(summaries=True)
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=_broken_compactor())

    result = Session(agent).run("Read the pages.")

    assert result.response == "all pages read"
    assert asked  # the main provider summarised
    assert any("the main provider's summary" in m.text for r in provider.requests for m in r.messages)


def test_the_trace_says_the_compactor_failed_and_what_was_done_instead() -> None:
    provider, _ = _main(summaries=True)
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=_broken_compactor())

    result = Session(agent).run("Read the pages.")

    notes = [t for t in result.trace if t.name == "compact failed"]
    assert notes and all(t.is_error for t in notes)
    assert "compactor failed (RuntimeError: compactor down); summarising with the agent's provider" in notes[0].output


def test_when_the_agents_provider_fails_too_the_turns_are_trimmed_without_a_summary() -> None:
    provider, asked = _main(summaries=False)
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=_broken_compactor())

    result = Session(agent).run("Read the pages.")

    assert result.response == "all pages read"
    assert asked
    notes = [t.output for t in result.trace if t.name == "compact failed"]
    assert any("the agent's provider failed" in n and "without a summary" in n for n in notes)
    for request in provider.requests:
        if request not in asked:
            assert estimate_request(request) <= BUDGET


def test_a_cancelled_compaction_stops_the_run_rather_than_falling_back() -> None:
    provider, asked = _main(summaries=True)
    compactor = ScriptedProvider([AgentError("cancelled by caller", kind=ErrorKind.CANCELLED)], cycle=True)
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=compactor)

    try:
        Session(agent).run("Read the pages.")
    except AgentError as exc:
        assert exc.kind is ErrorKind.CANCELLED
    else:
        raise AssertionError("the run went on after its compaction was cancelled")
    assert asked == []
