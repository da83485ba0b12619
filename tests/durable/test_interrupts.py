"""interrupt() from a function node, a tool or middleware suspends a journalled run;
resume(answer=...) continues it and that interrupt() call returns the answer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Agent, Formation, ask_human, interrupt, tool
from wingman_actors._interrupts import NoStoreError
from wingman_actors.agents._middleware import Middleware, RunContext
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import FormationRuntimeError, WingmanError
from wingman_actors.store import NoPendingInterruptError, RunNotResumableError, RunStore
from wingman_actors.testing import ScriptedProvider


def approve(draft: str) -> str:
    verdict = interrupt({"approve?": draft})
    return f"{draft}: {verdict}"


def approval() -> Formation:
    return (Formation("approval").add_function("draft", lambda x: x.upper()).add_function("approve", approve)
            .connect("draft", "approve"))


def test_a_function_node_interrupt_suspends_the_run(store: RunStore) -> None:
    result = approval().run("memo", store=store)
    assert result.status == "suspended"
    assert result.interrupt == {"node": "approve", "payload": {"approve?": "MEMO"}}
    record = store.get(result.run_id)
    assert record.status == "suspended"
    assert record.interrupt is not None and record.interrupt.payload == {"approve?": "MEMO"}


def test_resume_with_an_answer_returns_it_from_interrupt(store: RunStore) -> None:
    f = approval()
    run_id = f.run("memo", store=store).run_id
    result = f.resume(run_id, store=store, answer="yes")
    assert (result.status, result.output) == ("succeeded", "MEMO: yes")
    assert store.get(run_id).status == "succeeded"


def test_the_ith_interrupt_of_a_visit_returns_the_ith_answer(store: RunStore) -> None:
    f = Formation("two").add_function("ask", lambda x: (interrupt("first"), interrupt("second")))
    first = f.run(0, store=store)
    assert first.interrupt == {"node": "ask", "payload": "first"}
    second = f.resume(first.run_id, store=store, answer=1)
    assert second.interrupt == {"node": "ask", "payload": "second"}
    assert f.resume(first.run_id, store=store, answer=2).output == (1, 2)


def test_interrupt_without_a_store_raises_a_clear_error() -> None:
    with pytest.raises(FormationRuntimeError) as info:
        approval().run("memo")
    assert isinstance(info.value.__cause__, NoStoreError)
    assert "store" in str(info.value.__cause__)
    with pytest.raises(NoStoreError, match="needs a journalled formation run"):
        interrupt("outside any formation")


def test_interrupt_without_a_store_is_not_retried_whatever_retries_says() -> None:
    calls: list[str] = []

    def ask(draft: str) -> str:
        calls.append(draft)
        return str(interrupt({"draft": draft}))

    f = Formation("ask").add_function("ask", ask, retries=3, backoff=0.5)
    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt\(s\)") as info:
        f.run("memo")
    assert isinstance(info.value.__cause__, NoStoreError) and calls == ["memo"]


def test_a_suspended_run_expires_after_the_store_suspend_ttl(path: Path) -> None:
    f = approval()
    with RunStore(path, suspend_ttl=0.2) as store:
        run_id = f.run("memo", store=store).run_id
        time.sleep(0.3)
        assert store.get(run_id).status == "expired"
        with pytest.raises(RunNotResumableError, match="expired"):
            f.resume(run_id, store=store, answer="yes")


@tool
def charge(amount: int) -> str:
    """Charge an amount after a person approves it."""
    return "charged" if interrupt({"charge": amount}) == "ok" else "refused"


def agent_formation(provider: ScriptedProvider, *tools: Any, middleware: Any = ()) -> Formation:
    agent = Agent("clerk", provider=provider, tools=tools, middleware=middleware)
    return Formation("clerk").add_agent("clerk", agent)


def test_a_tool_interrupt_suspends_and_resumes_without_repeating_model_calls(store: RunStore) -> None:
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "charge", {"amount": 5})]), "done"])
    f = agent_formation(provider, charge)
    result = f.run("charge 5", store=store)
    assert result.interrupt == {"node": "clerk", "payload": {"charge": 5}}
    assert len(provider.requests) == 1
    resumed = f.resume(result.run_id, store=store, answer="ok")
    assert resumed.output == "done"
    assert len(provider.requests) == 2  # the tool-call response came from the journal
    last = provider.requests[-1].messages[-1]
    assert last.content[0].content == "charged"


def test_ask_human_hands_the_answer_to_the_model(store: RunStore) -> None:
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "ask_human", {"question": "Color?"})]),
                                 lambda request: f"you said {request.messages[-1].content[0].content}"])
    f = agent_formation(provider, ask_human)
    result = f.run("pick", store=store)
    assert result.interrupt == {"node": "clerk", "payload": {"question": "Color?"}}
    assert f.resume(result.run_id, store=store, answer="teal").output == "you said teal"
    assert len(provider.requests) == 2


class Gate(Middleware):
    def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
        if ctx.step == 1:
            interrupt("may I call the model?")
        return None


def test_a_middleware_interrupt_suspends_and_resumes(store: RunStore) -> None:
    provider = ScriptedProvider(["fine"])
    f = agent_formation(provider, middleware=[Gate()])
    result = f.run("hi", store=store)
    assert result.interrupt == {"node": "clerk", "payload": "may I call the model?"}
    assert provider.requests == []
    assert f.resume(result.run_id, store=store, answer=True).output == "fine"


def test_an_answer_for_a_run_without_a_pending_interrupt_is_refused_and_the_run_stays_resumable(
    store: RunStore,
) -> None:
    state = {"down": True}

    def flaky(x: int) -> int:
        if state["down"]:
            raise RuntimeError("down")
        return x

    f = Formation("f").add_function("a", flaky)
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    run_id = info.value.run_id or ""
    with pytest.raises(ValueError, match="no pending interrupt") as refused:
        f.resume(run_id, store=store, answer="yes")
    # a ValueError as before, and one of the package's own errors, saying which run and why
    assert isinstance(refused.value, NoPendingInterruptError) and isinstance(refused.value, WingmanError)
    assert (refused.value.run_id, refused.value.status) == (run_id, "failed")
    assert store.get(run_id).status == "failed"
    state["down"] = False
    assert f.resume(run_id, store=store).output == 1


class FailOnce(Middleware):
    """Fails the session after its first model response, once (the node then retries)."""

    def __init__(self) -> None:
        self.failed = False

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("flaky middleware")
        return None


def test_a_retried_agent_visit_resumes_from_the_responses_of_the_attempt_that_interrupted(store: RunStore) -> None:
    noted: list[str] = []

    @tool
    def note(text: str) -> str:
        """Note something down."""
        noted.append(text)
        return "noted"

    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("n1", "note", {"text": "from the failed attempt"})]),
        InferenceResponse.of_tool_calls([("c1", "charge", {"amount": 5})]),
        "done",
    ])
    agent = Agent("clerk", provider=provider, tools=[note, charge], middleware=[FailOnce()])
    f = Formation("clerk").add_agent("clerk", agent, retries=1, backoff=0.01)
    result = f.run("charge 5", store=store)
    assert result.interrupt == {"node": "clerk", "payload": {"charge": 5}}
    resumed = f.resume(result.run_id, store=store, answer="ok")
    assert resumed.output == "done"
    assert noted == []  # the failed attempt's tool call is not replayed into the resumed session
    assert len(provider.requests[-1].messages) == 3  # the prompt, the charge call, its result


def test_an_answer_for_a_run_that_already_succeeded_is_refused_saying_it_succeeded(store: RunStore) -> None:
    # DESIGN: resume continues an unfinished run; a finished one is refused with the reason,
    # not with "no pending interrupt: resume it without answer=" (which fails again)
    f = Formation("f").add_function("a", lambda x: x)
    run_id = f.run(1, store=store).run_id
    with pytest.raises(RunNotResumableError, match="already succeeded"):
        f.resume(run_id, store=store, answer="yes")
