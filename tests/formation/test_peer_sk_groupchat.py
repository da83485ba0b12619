"""Behaviours of Microsoft Semantic Kernel's agent group chat and orchestration tests
(microsoft/semantic-kernel, ``python/tests/unit/agents/test_group_chat/test_agent_group_chat.py``,
``test_group_chat_strategies/``, ``orchestration/test_sequential.py``,
``orchestration/test_concurrent.py``, ``orchestration/test_group_chat.py``), ported to
formations of agent nodes: a group chat is a loop between agent nodes whose termination
strategy is a route on the last message, a sequential orchestration is a chain, a concurrent
one a fan-out joined by one node. Models are played by the scripted provider.

Where we deliberately differ: SK's selection strategies pick the next agent at run time
from the whole chat (round-robin, or a kernel function); a formation fixes who may speak
after whom in its edges, and a "selection function" is a route (``when=``) on the last
answer. The loop bound is ``max_visits`` (a failure past it), not a quiet stop: see
``test_peer_sk_process.py``."""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

import pytest

from tests.support.peers import Order, until
from wingman_actors import Agent, Formation
from wingman_actors.core import ContentBlock, InferenceResponse, Usage
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def approved(text: str) -> bool:
    return "approved" in text.lower()


def review_loop(writer: ScriptedProvider, reviewer: ScriptedProvider, *, max_visits: int = 10) -> Formation:
    """Writer → reviewer → writer until the reviewer approves (a keyword termination strategy)."""
    return (
        Formation("review")
        .add_function("topic", lambda x: x)
        .add_agent("writer", Agent("writer", provider=writer), max_visits=max_visits)
        .add_agent("reviewer", Agent("reviewer", provider=reviewer), max_visits=max_visits)
        .add_function("publish", lambda text: f"published after: {text}")
        .connect("topic", "writer")
        .connect("writer", "reviewer")
        .connect("reviewer", "writer", when=lambda t: not approved(t))
        .connect("reviewer", "publish", otherwise=True)
    )


def test_a_group_chat_takes_turns_until_the_termination_keyword_appears() -> None:
    """From semantic-kernel python/tests/unit/agents/test_group_chat_strategies/test_termination_strategy.py
    and test_agent_group_chat.py (invoke until the termination strategy says the chat is done)."""
    writer = ScriptedProvider(["draft 1", "draft 2", "draft 3"])
    reviewer = ScriptedProvider(["too long", "too vague", "Approved."])
    order = Order()
    result = review_loop(writer, reviewer).run("tides", on_event=order)

    assert result.output == "published after: Approved."
    assert order.nodes == ["topic", "writer", "reviewer", "writer", "reviewer", "writer", "reviewer", "publish"]
    assert result.nodes["writer"].outputs == ["draft 1", "draft 2", "draft 3"]


def test_each_turn_of_the_chat_gets_the_previous_speaker_message() -> None:
    """From semantic-kernel python/tests/unit/agents/test_group_chat/test_agent_group_chat.py (each agent
    receives the chat's latest message)."""
    writer = ScriptedProvider(["draft 1", "draft 2"])
    reviewer = ScriptedProvider(["needs a title", "approved"])
    review_loop(writer, reviewer).run("tides")

    assert writer.requests[0].messages[-1].text == "tides"
    assert writer.requests[1].messages[-1].text == "needs a title"
    assert [r.messages[-1].text for r in reviewer.requests] == ["draft 1", "draft 2"]


def test_a_chat_that_is_never_approved_fails_at_its_turn_limit_naming_the_agent() -> None:
    """From semantic-kernel python/tests/unit/agents/test_group_chat/test_agent_group_chat.py
    (test_invoke_with_max_iterations: the chat stops at maximum_iterations). Differs: a failure
    naming the node and the limit, not a quiet stop."""
    writer = ScriptedProvider(["draft"], cycle=True)
    reviewer = ScriptedProvider(["no"], cycle=True)
    with pytest.raises(FormationRuntimeError, match=r"max_visits=3") as caught:
        review_loop(writer, reviewer, max_visits=3).run("tides", timeout=20)

    assert caught.value.node in {"writer", "reviewer"}
    assert writer.calls <= 4 and reviewer.calls <= 4


def test_a_sequential_orchestration_hands_each_agent_the_previous_agent_answer() -> None:
    """From semantic-kernel python/tests/unit/agents/orchestration/test_sequential.py (the output of one
    agent is the input of the next; the last agent's answer is the result)."""
    concept = ScriptedProvider(["features: waterproof"])
    copy = ScriptedProvider(["Stay dry!"])
    f = (
        Formation("sequential")
        .add_agent("analyst", Agent("analyst", provider=concept))
        .add_agent("writer", Agent("writer", provider=copy))
        .connect("analyst", "writer")
    )
    assert f.run("a jacket").output == "Stay dry!"
    assert copy.requests[0].messages[-1].text == "features: waterproof"


def test_a_concurrent_orchestration_gives_one_node_every_agent_answer() -> None:
    """From semantic-kernel python/tests/unit/agents/orchestration/test_concurrent.py (every agent gets the
    task; the results are collected together)."""
    f = (
        Formation("concurrent")
        .add_function("task", lambda x: x)
        .add_agent("physicist", Agent("physicist", provider=ScriptedProvider(["energy"])))
        .add_agent("chemist", Agent("chemist", provider=ScriptedProvider(["bonds"])))
        .add_function("collect", lambda physicist, chemist: sorted([physicist, chemist]))
        .connect("task", "physicist")
        .connect("task", "chemist")
        .connect("physicist", "collect")
        .connect("chemist", "collect")
    )
    assert f.run("what is temperature?").output == ["bonds", "energy"]


def test_an_agent_that_fails_in_a_chat_is_handed_to_the_error_handler() -> None:
    """From semantic-kernel python/tests/unit/agents/orchestration/test_group_chat.py (an agent raising
    during the chat surfaces its error to the orchestration)."""
    broken = ScriptedProvider([RuntimeError("model unavailable")])
    f = (
        Formation("chat")
        .add_agent("speaker", Agent("speaker", provider=broken))
        .add_function("fallback", lambda failure: f"{failure.node}: {type(failure.error).__name__}")
        .add_function("next", lambda x: x)
        .connect("speaker", "next")
        .connect("speaker", "fallback", on_error=True)
    )
    result = f.run("hi")

    assert result.outputs == {"fallback": "speaker: RuntimeError"}
    assert result.nodes["speaker"].status == "failed" and result.nodes["next"].status == "skipped"


def test_a_journalled_chat_resumed_after_a_failure_makes_no_model_call_again(store: RunStore) -> None:
    """From semantic-kernel python/tests/unit/agents/test_group_chat/test_agent_group_chat.py and the Dapr
    process actor tests (a chat's history survives a restart): turns already taken are not taken
    again."""
    writer = ScriptedProvider(["draft 1", "draft 2"])
    reviewer = ScriptedProvider(["too long", RuntimeError("reviewer crashed"), "approved"])
    f = review_loop(writer, reviewer)
    with pytest.raises(FormationRuntimeError):
        f.run("tides", store=store, run_id="chat")
    writer_calls, reviewer_calls = writer.calls, reviewer.calls

    result = f.resume("chat", store=store)

    assert result.output == "published after: approved"
    assert writer.calls == writer_calls  # both drafts were journalled
    assert reviewer.calls == reviewer_calls + 1  # only the crashed turn again
    assert result.nodes["reviewer"].outputs[-1] == "approved"


def test_a_fallback_handler_receives_the_failure_as_a_node_failure() -> None:
    """From semantic-kernel python/tests/unit/agents/orchestration/test_orchestration_base.py (the
    exception callback is given the failure details)."""
    seen: list[NodeFailure] = []

    def fallback(failure: NodeFailure) -> str:
        seen.append(failure)
        return "sorry"

    f = (
        Formation("chat")
        .add_agent("speaker", Agent("speaker", provider=ScriptedProvider([RuntimeError("down")])))
        .add_function("fallback", fallback)
        .connect("speaker", "fallback", on_error=True)
    )
    assert f.run("hello").outputs == {"fallback": "sorry"}  # a node with only error edges out is a sink too
    assert (seen[0].node, seen[0].input, seen[0].attempts) == ("speaker", "hello", 1)


def test_streaming_a_group_chat_gives_each_speaker_message_in_turn() -> None:
    """From semantic-kernel python/tests/unit/agents/test_group_chat/test_agent_group_chat.py
    (test_invoke_streaming: the messages of each turn are yielded as the chat goes, tagged with the
    agent that spoke)."""
    writer = ScriptedProvider(["draft 1", "draft 2"])
    reviewer = ScriptedProvider(["no", "approved"])
    events = list(review_loop(writer, reviewer).run_stream("tides"))
    said = [(e.node, e.data.get("text")) for e in events if e.type == "agent_text"]

    assert said == [("writer", "draft 1"), ("reviewer", "no"), ("writer", "draft 2"), ("reviewer", "approved")]
    assert events[-1].type == "run_finished"


def test_chats_run_at_once_through_one_started_formation_never_mix_their_turns() -> None:
    """From semantic-kernel python/tests/unit/agents/orchestration/test_group_chat.py (each invoke of an
    orchestration on the runtime is its own conversation)."""

    def write(request: Any) -> str:
        return f"w:{request.messages[-1].text}"

    def review(request: Any) -> str:
        text = request.messages[-1].text
        return f"approved {text}" if text.count("w:") >= 3 else f"again {text}"

    f = review_loop(ScriptedProvider([write], cycle=True), ScriptedProvider([review], cycle=True))
    with f.start() as running:
        futures = [running.submit(f"t{i}") for i in range(6)]
        outputs = [future.result(timeout=30).output for future in futures]

    assert outputs == [f"published after: approved w:again w:again w:t{i}" for i in range(6)]


def said(text: str, input_tokens: int, output_tokens: int) -> InferenceResponse:
    return InferenceResponse(
        content=[ContentBlock.text_block(text)], usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    )


def test_a_chat_usage_sums_every_turn_per_agent_and_for_the_run() -> None:
    """From semantic-kernel python/tests/unit/agents/chat_completion/test_chat_completion_agent.py (each
    response carries its usage metadata) and the group chat tests (a chat is every turn of every agent)."""
    writer = ScriptedProvider([said("d1", 10, 1), said("d2", 20, 2)])
    reviewer = ScriptedProvider([said("no", 100, 3), said("approved", 200, 4)])
    result = review_loop(writer, reviewer).run("tides")

    assert (result.nodes["writer"].usage.input_tokens, result.nodes["writer"].usage.output_tokens) == (30, 3)
    assert (result.nodes["reviewer"].usage.input_tokens, result.nodes["reviewer"].usage.output_tokens) == (300, 7)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (330, 10)


def test_a_resumed_chat_counts_only_the_tokens_the_resume_spent(store: RunStore) -> None:
    """From semantic-kernel python/tests/unit/agents/test_group_chat/test_agent_group_chat.py (a chat's usage
    is every turn's). Open question for the product owner: a journalled visit is replayed with no
    usage, so a resumed run's ``usage`` (and its nodes') leaves out what the turns before the failure
    spent, though their outputs are there; an agent interrupted mid-visit counts its replayed model
    calls again (tests/durable/test_peer_agno_durable.py). Pinned as it is."""
    writer = ScriptedProvider([said("d1", 10, 1), said("d2", 20, 2)])
    reviewer = ScriptedProvider([said("no", 100, 3), RuntimeError("reviewer crashed"), said("approved", 200, 4)])
    f = review_loop(writer, reviewer)
    with pytest.raises(FormationRuntimeError):
        f.run("tides", store=store, run_id="chat")
    result = f.resume("chat", store=store)

    assert result.nodes["writer"].visits == 2 and result.nodes["writer"].usage.input_tokens == 0
    assert (result.usage.input_tokens, result.usage.output_tokens) == (200, 4)


def test_cancelling_a_chat_before_it_completes_stops_its_turns_at_once() -> None:
    """From semantic-kernel python/tests/unit/agents/orchestration/test_group_chat.py
    (test_invoke_cancel_before_completion: no agent is invoked after the cancel)."""
    writer = ScriptedProvider(["draft"], cycle=True)
    reviewer = ScriptedProvider(["no"], cycle=True, latency_s=5)
    with review_loop(writer, reviewer).start() as running:
        future = running.submit("tides")
        assert until(lambda: reviewer.calls == 1, within=10)
        started = time.monotonic()
        assert future.cancel()
        with pytest.raises(concurrent.futures.CancelledError):
            future.result(timeout=10)
        assert time.monotonic() - started < 2

    assert (writer.calls, reviewer.calls) == (1, 1)


def test_cancelling_a_chat_after_it_completed_changes_nothing() -> None:
    """From semantic-kernel python/tests/unit/agents/orchestration/test_group_chat.py
    (test_invoke_cancel_after_completion). Differs: SK raises RuntimeError("The invocation has already
    been completed."); ours is a ``concurrent.futures.Future``: ``cancel()`` returns False and the
    result stays."""
    writer = ScriptedProvider(["draft"])
    reviewer = ScriptedProvider(["approved"])
    with review_loop(writer, reviewer).start() as running:
        future = running.submit("tides")
        result = future.result(timeout=10)
        assert not future.cancel() and not running.cancel(result.run_id)

    assert future.result().output == result.output == "published after: approved"
