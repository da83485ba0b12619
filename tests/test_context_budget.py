"""Context budgets: long tool sessions stay under the budget, pairs intact, first message kept."""

from __future__ import annotations

import itertools

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.agents._context_budget import estimate_request
from wingman_actors.core import InferenceRequest, InferenceResponse, Message, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider

BUDGET = 6_000


@tool
def fetch(page: int) -> str:
    """Fetch a page of a long document."""
    return f"page {page}: " + "lorem ipsum dolor sit amet " * 80  # ~2,200 characters


def _tool_script(steps: int) -> list[InferenceResponse | str]:
    script: list[InferenceResponse | str] = [
        InferenceResponse.of_tool_calls([(f"call-{i}", "fetch", {"page": i})], text=f"reading page {i}")
        for i in range(1, steps)
    ]
    script.append("all pages read")
    return script


def _assert_pairs_intact(request: InferenceRequest) -> None:
    msgs = request.messages
    for i, m in enumerate(msgs):
        calls = {b.id for b in m.tool_calls}
        if calls:
            assert i + 1 < len(msgs), "a tool call is the last message of a request"
            assert {b.tool_use_id for b in msgs[i + 1].tool_results_blocks} == calls
        results = {b.tool_use_id for b in m.tool_results_blocks}
        if results:
            assert {b.id for b in msgs[i - 1].tool_calls} == results


def _chars(request: InferenceRequest) -> int:
    return len(request.model_dump_json())


def test_a_forty_step_tool_session_keeps_every_request_under_the_budget() -> None:
    provider = ScriptedProvider(_tool_script(40))
    agent = Agent("reader", instructions="Read every page.", provider=provider, tools=[fetch],
                  context_budget=BUDGET, max_steps=50)
    session = Session(agent)
    result = session.run("Read pages 1 to 39 of the report.")
    assert result.steps == 40 and result.response == "all pages read"
    assert len(provider.requests) == 40
    first = session.history[0]
    for request in provider.requests:
        assert estimate_request(request) <= BUDGET
        assert _chars(request) < BUDGET * 4 * 1.5  # the estimate is not wildly off the real size
        assert request.messages[0] == first
        _assert_pairs_intact(request)
    last = provider.requests[-1]
    assert len(last.messages) < len(session.history) - 1  # turns were left out...
    assert last.messages[-1] == session.history[-2]  # ...but never the newest one
    assert len(session.history) == 80  # the session's own history keeps everything


def test_trimming_leaves_room_so_the_next_requests_share_their_beginning() -> None:
    provider = ScriptedProvider(_tool_script(40))
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, max_steps=50)
    Session(agent).run("Read the report.")
    starts = [r.messages[1] for r in provider.requests[1:]]
    changes = sum(1 for a, b in itertools.pairwise(starts) if a != b)
    assert 0 < changes < len(starts) // 2


def test_a_compactor_summarises_the_dropped_turns_into_one_message() -> None:
    provider = ScriptedProvider(_tool_script(40))
    summaries = (f"summary {n}: pages were read" for n in itertools.count(1))
    compactor = ScriptedProvider(
        [lambda req: InferenceResponse.of_text(next(summaries), usage=Usage(input_tokens=1000, output_tokens=50))],
        cycle=True,
    )
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=compactor,
                  max_steps=50)
    session = Session(agent)
    result = session.run("Read pages 1 to 39.")
    compactions = [t for t in result.trace if t.name.startswith("compact")]
    assert len(compactor.requests) == len(compactions) >= 2
    assert sum(t.usage for t in compactions) == Usage(
        input_tokens=1000 * len(compactions), output_tokens=50 * len(compactions)
    )
    assert result.usage == sum(t.usage for t in result.trace if t.kind == "model")
    for request in compactor.requests:
        assert estimate_request(request) <= BUDGET
    assert "page 1:" in compactor.requests[0].messages[0].text
    for request in provider.requests:
        assert estimate_request(request) <= BUDGET
        _assert_pairs_intact(request)
        assert request.messages[0] == session.history[0]
    last = provider.requests[-1].messages
    assert last[1].text.endswith(f"summary {len(compactions)}: pages were read")
    assert sum("Summary of the earlier conversation" in m.text for m in last) == 1
    # the second summary was made from the first one and the turns dropped since
    assert "summary 1: pages were read" in compactor.requests[1].messages[0].text


def test_the_current_prompt_of_a_later_run_is_kept() -> None:
    provider = ScriptedProvider(_tool_script(3) + _tool_script(30), cycle=False)
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, max_steps=50)
    session = Session(agent)
    session.run("First task.")
    session.run("Second task.")
    for request in provider.requests:
        assert estimate_request(request) <= BUDGET
    last = provider.requests[-1].messages
    assert last[0].text == "First task."
    assert last[1].text == "Second task."


def test_a_message_too_big_for_the_budget_fails_before_any_call() -> None:
    provider = ScriptedProvider(["never"])
    agent = Agent("a", provider=provider, context_budget=1_000)
    with pytest.raises(AgentError, match=r"needs ~\d+ tokens even after leaving out every older turn.*context_budget=1000") as info:
        Session(agent).run("x" * 10_000)
    assert info.value.kind is ErrorKind.INVALID
    assert provider.requests == []


def test_requests_under_the_budget_are_sent_whole() -> None:
    provider = ScriptedProvider(["ok"])
    history = [Message.user("earlier"), Message.assistant("noted")]
    session = Session(Agent("a", provider=provider, context_budget=10_000), history=history)
    session.run("now")
    assert provider.requests[0].messages == session.history[:3]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"context_budget": 10}, "context_budget must be a number of tokens >= 256"),
        ({"compactor": ScriptedProvider(["s"])}, "set context_budget too"),
    ],
)
def test_bad_budget_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Agent("a", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("budget", ["big", 1000.0, True])
def test_a_budget_that_is_not_an_int_is_a_type_error(budget: object) -> None:
    with pytest.raises(TypeError, match=r"context_budget must be an int, got"):
        Agent("a", context_budget=budget)  # type: ignore[arg-type]


def test_tool_results_are_truncated_before_the_budget_counts_them() -> None:
    @tool
    def dump() -> str:
        """Return a huge text."""
        return "z" * 200_000

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "dump", {})]), "ok"])
    agent = Agent("a", provider=provider, tools=[dump], context_budget=2_000, max_tool_result_chars=2_000)
    result = Session(agent).run("dump it")
    assert result.response == "ok"
    sent = provider.requests[1].messages[-1].content[0].content or ""
    assert len(sent) <= 2_000 and "tool result truncated" in sent
    assert estimate_request(provider.requests[1]) <= 2_000


def _greeting() -> Message:
    from wingman_actors.core import ContentBlock, Role

    return Message(role=Role.ASSISTANT, content=[ContentBlock(type="text", text="Hello! How can I help?")])


@pytest.mark.parametrize("compactor", [False, True], ids=["trimmed", "compacted"])
def test_the_first_user_message_stays_when_the_history_opens_with_an_assistant_turn(compactor: bool) -> None:
    provider = ScriptedProvider(["y" * 1_500], cycle=True)
    summariser = ScriptedProvider(["the summary"], cycle=True) if compactor else None
    session = Session(Agent("a", provider=provider, context_budget=2_000, compactor=summariser), history=[_greeting()])
    session.run("FIRST: my name is Ada")
    for i in range(8):
        session.run(f"turn {i} " + "x" * 1_500)
    for request in provider.requests:
        assert estimate_request(request) <= 2_000
        texts = [m.text for m in request.messages]
        assert texts[:2] == ["Hello! How can I help?", "FIRST: my name is Ada"]
    assert provider.requests[-1].messages[-1].text.startswith("turn 7")
    assert len(provider.requests[-1].messages) < len(session.history)  # it did leave turns out
