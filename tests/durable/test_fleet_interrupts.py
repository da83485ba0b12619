"""interrupt() inside one item of a fleet node: the run suspends once the other items have
finished (they are journalled and never run again); resume(answer=...) runs only the
interrupted item, which continues its session from its journalled model responses.
Several items interrupting are answered one at a time: the others ask again on resume."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from wingman_actors import Agent, Formation, interrupt, tool
from wingman_actors.agents._middleware import Middleware, RunContext
from wingman_actors.core import InferenceRequest, InferenceResponse, Role
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


@tool
def approve(item: str) -> str:
    """Ask a person to approve an item."""
    return str(interrupt({"approve": item}))


class Model:
    """A scripted model for a fleet of reviewers: the user message is the item; items named
    ``ask*`` call the ``approve`` tool, then report the answer; the others answer at once
    (``slow`` after a while). Counts its calls per item."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.provider = ScriptedProvider([self.reply], cycle=True)

    def reply(self, request: InferenceRequest) -> InferenceResponse | str:
        item = request.messages[0].text
        with self._lock:
            self.calls[item] += 1
        last = request.messages[-1]
        if last.role is Role.USER and last.content[0].type == "tool_result":
            return f"{item} approved: {last.content[0].content}"
        if item.startswith("ask"):
            return InferenceResponse.of_tool_calls([(f"call-{item}", "approve", {"item": item})])
        if item == "slow":
            time.sleep(0.3)
        return f"done {item}"


def reviewers(model: Model, *, max_workers: int = 0, middleware: Any = ()) -> Formation:
    agent = Agent("reviewer", provider=model.provider, tools=[approve], middleware=middleware)
    return Formation("review").add_fleet("review", agent, max_workers=max_workers)


def test_an_interrupt_in_a_fleet_item_suspends_the_run_after_the_other_items_finish(store: RunStore) -> None:
    model = Model()
    f = reviewers(model)
    result = f.run(["slow", "ask-b", "c"], store=store)
    assert result.status == "suspended"
    assert result.interrupt == {"node": "review", "payload": {"approve": "ask-b"}}
    journal = store.load(result.run_id)
    assert journal.items[("review", 1)] == {0: "done slow", 2: "done c"}  # the siblings finished first
    pending = store.get(result.run_id).interrupt
    assert pending is not None and (pending.node, pending.item) == ("review", 1)


def test_resuming_a_fleet_item_runs_only_that_item_without_repeating_its_model_calls(store: RunStore) -> None:
    model = Model()
    f = reviewers(model)
    run_id = f.run(["a", "ask-b", "c"], store=store).run_id
    assert model.calls == Counter({"a": 1, "ask-b": 1, "c": 1})
    resumed = f.resume(run_id, store=store, answer="yes")
    assert (resumed.status, resumed.output) == ("succeeded", ["done a", "ask-b approved: yes", "done c"])
    # one more call in all: ask-b's tool call came from the journal, a and c were journalled
    assert model.calls == Counter({"a": 1, "ask-b": 2, "c": 1})
    assert store.get(run_id).status == "succeeded"


def test_with_one_worker_the_items_after_an_interrupted_one_still_run(store: RunStore) -> None:
    model = Model()
    f = reviewers(model, max_workers=1)
    result = f.run(["ask-a", "b", "c"], store=store)
    assert result.interrupt == {"node": "review", "payload": {"approve": "ask-a"}}
    assert store.load(result.run_id).items[("review", 1)] == {1: "done b", 2: "done c"}
    assert f.resume(result.run_id, store=store, answer="ok").output == ["ask-a approved: ok", "done b", "done c"]
    assert model.calls == Counter({"ask-a": 2, "b": 1, "c": 1})


def test_two_items_that_interrupt_are_answered_one_at_a_time_without_repeating_their_model_calls(store: RunStore) -> None:
    model = Model()
    f = reviewers(model)
    first = f.run(["ask-x", "plain", "ask-y"], store=store)
    assert first.interrupt == {"node": "review", "payload": {"approve": "ask-x"}}  # the lowest index first
    second = f.resume(first.run_id, store=store, answer="ok-x")
    assert second.status == "suspended"
    assert second.interrupt == {"node": "review", "payload": {"approve": "ask-y"}}  # asked again on resume
    assert store.load(first.run_id).items[("review", 1)] == {0: "ask-x approved: ok-x", 1: "done plain"}
    done = f.resume(first.run_id, store=store, answer="ok-y")
    assert done.output == ["ask-x approved: ok-x", "done plain", "ask-y approved: ok-y"]
    # ask-y's model call before its question was journalled with the first suspension (though
    # ask-x's interrupt was the one recorded): the resumes replay it, so ask-y, like ask-x,
    # made one call before its question and one after its answer
    assert model.calls == Counter({"ask-x": 2, "plain": 1, "ask-y": 2})


class Gate(Middleware):
    """Asks before the first model call of an item named ``gate*``."""

    def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
        item = request.messages[0].text
        if ctx.step == 1 and item.startswith("gate"):
            if interrupt({"may I review": item}) != "go":
                raise RuntimeError("not allowed")
        return None


def test_a_middleware_interrupt_in_a_fleet_item_suspends_and_resumes(store: RunStore) -> None:
    model = Model()
    f = reviewers(model, middleware=[Gate()])
    result = f.run(["a", "gate-b"], store=store)
    assert result.interrupt == {"node": "review", "payload": {"may I review": "gate-b"}}
    assert model.calls == Counter({"a": 1})
    assert f.resume(result.run_id, store=store, answer="go").output == ["done a", "done gate-b"]
    assert model.calls == Counter({"a": 1, "gate-b": 1})


def test_a_run_that_never_interrupts_journals_no_model_responses(store: RunStore) -> None:
    model = Model()
    result = reviewers(model).run(["a", "b"], store=store)
    kinds = [entry.kind for entry in store.load(result.run_id).entries]
    assert kinds == ["item", "item", "visit"]  # outputs only: responses are kept for a suspending visit


def test_an_interrupt_in_a_fleet_item_without_a_store_reaches_the_model_as_a_clear_tool_error() -> None:
    model = Model()
    output = reviewers(model).run(["ask-a"]).output
    assert output[0].startswith("ask-a approved: ")
    assert "needs a journalled formation run" in output[0] and "store" in output[0]
