"""Behaviours of agno's human-in-the-loop and persistence tests (libs/agno/tests/unit/agent/
test_continue_*.py, team/test_team_hitl_continue.py, workflow/test_executor_hitl.py,
test_hitl.py, test_workflow_resume_files.py), ported to sessions with a store and
journalled formation runs: a tool that needs the user's confirmation (agno's
requires_confirmation, then continue_run) is a tool calling ``interrupt()``, and
``continue_run`` is ``Session.resume`` / ``Formation.resume``. The store is SQLite, and
PostgreSQL where the store decides what runs again."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_peer_agno import calls, text
from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation, Session, interrupt, tool
from wingman_actors.core import Usage
from wingman_actors.events import Event, EventBus
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


@tool
def send_email(to: str) -> str:
    """Send an email (asks the user to confirm first)."""
    confirmed = interrupt({"confirm": f"send an email to {to}?"})
    return f"sent to {to}" if confirmed else "the user declined: nothing was sent"


def mailer(provider: ScriptedProvider, **options: Any) -> Agent:
    return Agent("mailer", provider=provider, tools=[send_email], **options)


def script(final: str = "Email sent.") -> ScriptedProvider:
    return ScriptedProvider([calls(("c1", "send_email", {"to": "bob"}), usage=Usage(input_tokens=10, output_tokens=2)),
                             text(final, 20, 3)])


# -- a session whose tool needs confirmation -----------------------------------------------


def test_a_tool_needing_confirmation_pauses_the_run_and_the_confirmed_run_goes_on_without_asking_the_model_again(
    store: RunStore,
) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_continue_stop_after_confirmation.py
    (requires_confirmation pauses the run; continue_run with the tool confirmed executes it)."""
    provider = script()
    session = Session(mailer(provider), store=store)
    paused = session.run("email bob")
    assert (paused.status, paused.interrupt) == ("suspended", {"confirm": "send an email to bob?"})

    done = Session(mailer(provider), store=store).resume(session.id, answer=True)
    assert (done.status, done.response) == ("succeeded", "Email sent.")
    assert [(c.name, c.output) for c in done.tool_calls] == [("send_email", "sent to bob")]
    assert provider.calls == 2  # the call that asked for the tool is not made again


def test_a_rejected_confirmation_tells_the_model_and_it_answers_from_that(store: RunStore) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_continue_rejected_dynamic_tools.py (a
    rejected tool call is reported to the model, which goes on without it)."""
    provider = script("I did not send it.")
    session = Session(mailer(provider), store=store)
    session.run("email bob")
    done = Session(mailer(provider), store=store).resume(session.id, answer=False)

    assert done.response == "I did not send it."
    [result] = provider.requests[-1].messages[-1].tool_results_blocks
    assert result.content == "the user declined: nothing was sent"


def test_a_paused_run_says_what_its_model_calls_spent_before_the_pause(store: RunStore) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_continue_run_requirements.py (a paused
    run's output carries the metrics of the model calls it made). Before the fix the
    suspended result said 0 tokens and 0 steps, though one call of 10 + 2 tokens was made."""
    paused = Session(mailer(script()), store=store).run("email bob")

    assert paused.status == "suspended"
    assert (paused.usage.input_tokens, paused.usage.output_tokens, paused.steps) == (10, 2, 1)


@pytest.mark.parametrize("driver", ["run_stream", "arun"])
def test_a_paused_streamed_or_awaited_run_says_what_it_spent_too(store: RunStore, driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_acontinue_run_background_stream.py (the
    paused run's output is the same whichever way it ran)."""
    session = Session(mailer(script()), store=store)
    if driver == "arun":
        paused = asyncio.run(session.arun("email bob"))
    else:
        stream = session.run_stream("email bob")
        list(stream)
        paused = stream.result()
    assert paused.status == "suspended" and (paused.usage.input_tokens, paused.usage.output_tokens) == (10, 2)


def test_the_resumed_run_counts_every_model_call_of_the_turn_once(store: RunStore) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_metrics.py::test_calculate_run_metrics_does_not_double_count
    (after continue_run, the run's metrics hold each model call once)."""
    provider = script()
    session = Session(mailer(provider), store=store)
    session.run("email bob")
    done = Session(mailer(provider), store=store).resume(session.id, answer=True)
    assert (done.usage.input_tokens, done.usage.output_tokens, done.steps) == (30, 5, 2)


def test_the_session_stop_event_of_a_paused_run_carries_what_it_spent(store: RunStore) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hook_run_on_continue.py (hooks see a
    paused run with its metrics). Before the fix the suspended session_stop event had no usage."""
    stops: list[Event] = []
    with EventBus() as bus:
        bus.subscribe(["session_stop"], stops.append)
        Session(mailer(script(), events=bus), store=store).run("email bob")
    [stop] = stops
    assert stop.status == "suspended"
    assert stop.usage is not None and (stop.usage.input_tokens, stop.usage.output_tokens) == (10, 2)


# -- a workflow that waits for a person --------------------------------------------------------


@pytest.fixture
def located(location: str) -> Iterator[RunStore]:
    with RunStore(location) as s:
        yield s


def approval_workflow(counter: Counter) -> Formation:
    def draft(topic: str) -> str:
        counter.hit("draft")
        return f"draft on {topic}"

    def approve(text: str) -> str:
        counter.hit("approve")
        verdict = interrupt({"review": text})
        return f"{text} ({'approved' if verdict else 'rejected'})"

    return (Formation("review").add_function("draft", draft).add_function("approve", approve)
            .add_function("publish", lambda text: f"published: {text}").connect("draft", "approve", "publish"))


def test_a_workflow_step_waiting_for_approval_resumes_with_the_answer_and_runs_no_earlier_step_again(
    located: RunStore,
) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_executor_hitl.py (a step pauses the
    workflow for a person; continuing it runs from that step)."""
    counter = Counter()
    paused = approval_workflow(counter).run("llamas", store=located)
    assert paused.status == "suspended"
    assert paused.interrupt == {"node": "approve", "payload": {"review": "draft on llamas"}}

    done = approval_workflow(counter).resume(paused.run_id, store=located, answer=True)
    assert done.output == "published: draft on llamas (approved)"
    assert counter.count("draft") == 1


def test_a_failed_workflow_resumes_from_the_step_that_failed(located: RunStore) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_failure_finalization.py (a failed
    workflow run keeps what its finished steps made)."""
    counter = Counter()
    flaky = {"fail": True}

    def publish(text: str) -> str:
        if flaky["fail"]:
            raise ConnectionError("the blog is down")
        return f"published: {text}"

    def build() -> Formation:
        def draft(topic: str) -> str:
            counter.hit("draft")
            return f"draft on {topic}"
        return Formation("pub").add_function("draft", draft).add_function("publish", publish).connect("draft", "publish")

    with pytest.raises(Exception, match=r"the blog is down") as caught:
        build().run("llamas", store=located)
    run_id = caught.value.run_id
    flaky["fail"] = False

    assert build().resume(run_id, store=located).output == "published: draft on llamas"
    assert counter.count("draft") == 1


def test_an_agent_step_paused_in_a_tool_resumes_without_asking_its_model_again(tmp_path: Path) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_executor_continue_run_context.py (an
    agent step paused for confirmation continues inside the workflow)."""
    provider = script()
    with RunStore(tmp_path / "runs.sqlite") as store:
        f = Formation("mail").add_agent("mailer", mailer(provider))
        paused = f.run("email bob", store=store)
        assert paused.status == "suspended" and paused.interrupt["payload"] == {"confirm": "send an email to bob?"}

        done = f.resume(paused.run_id, store=store, answer=True)
    assert done.output == "Email sent." and provider.calls == 2
    assert (done.usage.input_tokens, done.usage.output_tokens) == (30, 5)


def _by_request(request: Any) -> Any:
    """The script's replies chosen by the request (a Ray replica's copy of the provider starts its script anew)."""
    if any(block.type == "tool_result" for block in request.messages[-1].content):
        return text("Email sent.", 20, 3)
    return calls(("c1", "send_email", {"to": "bob"}), usage=Usage(input_tokens=10, output_tokens=2))


def _paused_and_resumed(tmp_path: Path, backend: str) -> None:
    provider = ScriptedProvider([_by_request], cycle=True)
    with RunStore(tmp_path / "runs.sqlite") as store:
        f = Formation("mail").add_agent("mailer", mailer(provider))
        paused = f.run("email bob", store=store, backend=backend)
        assert paused.status == "suspended"
        assert (paused.usage.input_tokens, paused.usage.output_tokens) == (10, 2)
        assert paused.nodes["mailer"].usage == paused.usage
        done = f.resume(paused.run_id, store=store, answer=True, backend=backend)
    assert (done.usage.input_tokens, done.usage.output_tokens) == (30, 5)
    assert done.nodes["mailer"].usage == done.usage


def test_a_formation_paused_in_an_agents_tool_says_what_the_agent_spent_before_the_pause(tmp_path: Path) -> None:
    """Found porting agno (its paused run reports its metrics): the suspended result counted 0 tokens for the
    agent's model call made before the interrupt, though it was paid for. The resumed result counts the whole
    turn once, as before (the journalled trace of the pause does not carry it)."""
    _paused_and_resumed(tmp_path, "threads")


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_formation_paused_in_an_agents_tool_on_ray_says_what_the_agent_spent_before_the_pause(tmp_path: Path) -> None:
    _paused_and_resumed(tmp_path, "ray")


def test_a_fleet_paused_by_an_items_tool_says_what_its_items_spent_before_the_pause(tmp_path: Path) -> None:
    provider = ScriptedProvider([_by_request], cycle=True)
    with RunStore(tmp_path / "runs.sqlite") as store:
        f = Formation("mail").add_fleet("mailers", mailer(provider), max_workers=1)
        paused = f.run(["email bob"], store=store)
    assert paused.status == "suspended"
    assert (paused.nodes["mailers"].usage.input_tokens, paused.nodes["mailers"].usage.output_tokens) == (10, 2)


@pytest.mark.parametrize("how", ["add_formation", "add_map"])
def test_a_formation_paused_in_a_nested_agents_tool_says_what_the_inner_agent_spent_before_the_pause(
        tmp_path: Path, how: str) -> None:
    """The agno finding above, one level down: an agent inside a nested formation (or a map of
    formations) whose tool asks. The outer suspended result counted 0 tokens on the node, though
    its inner trace said 10 + 2; it now counts them, and the resumed result the whole turn once."""
    provider = ScriptedProvider([_by_request], cycle=True)
    inner = Formation("inner").add_agent("mailer", mailer(provider))
    f = Formation("outer")
    f = f.add_formation("box", inner) if how == "add_formation" else f.add_map("box", formation=inner)
    given: Any = "email bob" if how == "add_formation" else ["email bob"]
    with RunStore(tmp_path / "runs.sqlite") as store:
        paused = f.run(given, store=store)
        assert paused.status == "suspended"
        assert (paused.usage.input_tokens, paused.usage.output_tokens) == (10, 2)
        assert paused.nodes["box"].usage == paused.usage
        done = f.resume(paused.run_id, store=store, answer=True)
    assert (done.usage.input_tokens, done.usage.output_tokens) == (30, 5)
    assert done.nodes["box"].usage == done.usage
